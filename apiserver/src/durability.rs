//! What an acknowledged write survives, and the SQLite setting that gives it.

use std::fmt;
use std::str::FromStr;

/// What an acknowledged write survives. Only matters with a data directory.
///
/// Either way the database is in WAL mode, every acknowledged write has been
/// committed, and a crash never corrupts it; the difference is whether each
/// commit also waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// An acknowledged write survives a crash of the server process
    /// (`kill -9`, a panic, the OOM killer): before it is acknowledged it is
    /// in the write-ahead log, handed to the operating system
    /// (`synchronous=NORMAL`). An operating system crash or a power loss can
    /// lose the most recent acknowledged writes.
    #[default]
    Process,
    /// An acknowledged write also survives an operating system crash or a
    /// power loss: every group commit is fsynced before its writes are
    /// acknowledged (`synchronous=FULL`). Concurrent writers share an fsync,
    /// but a client that waits for each write is bounded by the disk's fsync
    /// latency (8 such clients: at most 8 writes per fsync).
    PowerLoss,
}

impl Durability {
    /// The name used on the command line: `process` or `power-loss`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Process => "process",
            Self::PowerLoss => "power-loss",
        }
    }

    /// The SQLite `synchronous` setting that gives this guarantee in WAL mode.
    pub(crate) fn synchronous(self) -> &'static str {
        match self {
            Self::Process => "NORMAL",
            Self::PowerLoss => "FULL",
        }
    }

    /// The guarantee a connection in WAL mode has with this `PRAGMA
    /// synchronous` level, if it is one of ours (`OFF` is not: it may
    /// corrupt the database on power loss).
    pub(crate) fn from_synchronous(level: i64) -> Option<Self> {
        match level {
            1 => Some(Self::Process),
            2 | 3 => Some(Self::PowerLoss),
            _ => None,
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A durability name that is neither `process` nor `power-loss`.
#[derive(Debug, thiserror::Error)]
#[error("unknown durability {0:?} (expected \"process\" or \"power-loss\")")]
pub struct ParseDurabilityError(String);

impl FromStr for Durability {
    type Err = ParseDurabilityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "process" => Ok(Self::Process),
            "power-loss" => Ok(Self::PowerLoss),
            _ => Err(ParseDurabilityError(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in [Durability::Process, Durability::PowerLoss] {
            assert_eq!(d.to_string().parse::<Durability>().unwrap(), d);
        }
        assert_eq!(Durability::default(), Durability::Process);
        let e = "full".parse::<Durability>().unwrap_err().to_string();
        assert!(e.contains("power-loss"), "{e}");
    }

    #[test]
    fn synchronous_levels_map_back() {
        for d in [Durability::Process, Durability::PowerLoss] {
            let level = match d.synchronous() {
                "NORMAL" => 1,
                "FULL" => 2,
                other => panic!("unexpected level {other}"),
            };
            assert_eq!(Durability::from_synchronous(level), Some(d));
        }
        assert_eq!(Durability::from_synchronous(0), None);
    }
}
