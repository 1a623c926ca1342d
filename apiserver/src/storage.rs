//! Durable storage: a SQLite revision log in the style of kine, written by one
//! thread that commits concurrent writes as a group.
//!
//! Every write appends a row `(rv, key, deleted, value)`; the current state is
//! the newest row per key, loaded into memory at start. Writes are queued by
//! the in-memory store in revision order; the writer thread takes everything
//! queued, commits it in one transaction (one fsync with `synchronous=FULL`),
//! then acknowledges each write. Nothing is acknowledged before its commit.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use bytes::Bytes;
use rusqlite::{Connection, params};
use tokio::sync::oneshot;

/// How far the revision counter jumps on every start: writes that were
/// visible but not yet durable when the process died may have shown
/// revisions to watchers, and those numbers must never be reused.
pub(crate) const RESTART_GAP: u64 = 1_000_000;

/// Upper bound on writes committed in one transaction.
const MAX_BATCH: usize = 20_000;

/// One appended revision.
#[derive(Debug)]
pub(crate) struct Record {
    pub(crate) rv: u64,
    pub(crate) key: String,
    /// `None` for a deletion.
    pub(crate) value: Option<Bytes>,
}

pub(crate) type Ack = oneshot::Sender<Result<(), String>>;

enum Msg {
    Write(Record, Option<Ack>),
    Stop,
}

/// What the log held at start.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// `(key, object JSON)` for every live key.
    pub(crate) objects: Vec<(String, Bytes)>,
    /// The first revision this run may hand out is `start_rv + 1`.
    pub(crate) start_rv: u64,
}

/// Storage errors at open time.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("cannot create data directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
}

/// The writer side; `None` inside means in-memory (acknowledge at once).
pub(crate) struct Storage {
    tx: Option<mpsc::Sender<Msg>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("durable", &self.tx.is_some())
            .finish()
    }
}

impl Storage {
    pub(crate) fn in_memory() -> (Self, Loaded) {
        (
            Self {
                tx: None,
                thread: None,
            },
            Loaded::default(),
        )
    }

    /// Opens (creating if needed) `dir/state.db`, compacts superseded rows and
    /// loads the live objects.
    pub(crate) fn open(dir: &Path) -> Result<(Self, Loaded), StorageError> {
        std::fs::create_dir_all(dir).map_err(|source| StorageError::CreateDir {
            path: dir.into(),
            source,
        })?;
        let path = dir.join("state.db");
        let err = |source| StorageError::Open {
            path: path.clone(),
            source,
        };
        let conn = Connection::open(&path).map_err(err)?;
        let loaded = prepare(&conn).map_err(err)?;
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("apiserver-writer".into())
            .spawn(move || writer(conn, rx))
            .expect("spawning the storage writer thread");
        Ok((
            Self {
                tx: Some(tx),
                thread: Some(thread),
            },
            loaded,
        ))
    }

    /// Queues a revision. Must be called in revision order.
    pub(crate) fn append(&self, record: Record, ack: Option<Ack>) {
        match &self.tx {
            Some(tx) => {
                if let Err(mpsc::SendError(Msg::Write(_, Some(ack)))) =
                    tx.send(Msg::Write(record, ack))
                {
                    let _ = ack.send(Err("storage writer has stopped".into()));
                }
            }
            None => {
                if let Some(ack) = ack {
                    let _ = ack.send(Ok(()));
                }
            }
        }
    }

    /// Commits everything queued and stops the writer.
    pub(crate) fn close(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Msg::Stop);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        self.close();
    }
}

fn prepare(conn: &Connection) -> rusqlite::Result<Loaded> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS log (
             rv INTEGER PRIMARY KEY,
             key TEXT NOT NULL,
             deleted INTEGER NOT NULL,
             value BLOB
         );
         CREATE INDEX IF NOT EXISTS log_key ON log(key, rv);
         CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);",
    )?;
    // Compaction: only the newest row per key matters, and tombstones only
    // while they carry the highest revision.
    conn.execute_batch(
        "BEGIN;
         DELETE FROM log WHERE rv < (SELECT MAX(l2.rv) FROM log l2 WHERE l2.key = log.key);
         DELETE FROM log WHERE deleted = 1 AND rv < (SELECT MAX(rv) FROM log);
         COMMIT;",
    )?;
    let max_rv: u64 = conn.query_row("SELECT COALESCE(MAX(rv), 0) FROM log", [], |r| {
        r.get::<_, i64>(0)
    })? as u64;
    let prev_start: u64 = conn
        .query_row("SELECT v FROM meta WHERE k = 'start'", [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap_or(0) as u64;
    let start_rv = max_rv.max(prev_start) + RESTART_GAP;
    conn.execute(
        "INSERT INTO meta (k, v) VALUES ('start', ?1) ON CONFLICT(k) DO UPDATE SET v = excluded.v",
        params![start_rv as i64],
    )?;
    let mut stmt = conn.prepare("SELECT key, value FROM log WHERE deleted = 0 ORDER BY key")?;
    let objects = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, Bytes::from(r.get::<_, Vec<u8>>(1)?)))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Loaded { objects, start_rv })
}

fn writer(mut conn: Connection, rx: mpsc::Receiver<Msg>) {
    let mut batch: Vec<(Record, Option<Ack>)> = Vec::new();
    let mut stop = false;
    while !stop {
        match rx.recv() {
            Ok(Msg::Write(r, a)) => batch.push((r, a)),
            Ok(Msg::Stop) | Err(_) => break,
        }
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(Msg::Write(r, a)) => batch.push((r, a)),
                Ok(Msg::Stop) | Err(mpsc::TryRecvError::Disconnected) => {
                    stop = true;
                    break;
                }
                Err(mpsc::TryRecvError::Empty) => break,
            }
        }
        let result = commit(&mut conn, &batch).map_err(|e| format!("storage write failed: {e}"));
        if let Err(e) = &result {
            tracing::error!(error = %e, "apiserver storage commit failed");
        }
        for (_, ack) in batch.drain(..) {
            if let Some(ack) = ack {
                let _ = ack.send(result.clone());
            }
        }
    }
    // Drain anything still queued so shutdown loses nothing.
    while let Ok(Msg::Write(r, a)) = rx.try_recv() {
        batch.push((r, a));
    }
    if !batch.is_empty() {
        let result = commit(&mut conn, &batch).map_err(|e| e.to_string());
        for (_, ack) in batch.drain(..) {
            if let Some(ack) = ack {
                let _ = ack.send(result.clone());
            }
        }
    }
    let _ = conn.pragma_update(None, "wal_checkpoint", "TRUNCATE");
}

fn commit(conn: &mut Connection, batch: &[(Record, Option<Ack>)]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut stmt =
            tx.prepare_cached("INSERT INTO log (rv, key, deleted, value) VALUES (?1, ?2, ?3, ?4)")?;
        for (r, _) in batch {
            stmt.execute(params![
                r.rv as i64,
                r.key,
                r.value.is_none() as i64,
                r.value.as_deref()
            ])?;
        }
    }
    tx.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_survive_reopen_and_revisions_jump() {
        let dir = tempfile::tempdir().unwrap();
        let (s, loaded) = Storage::open(dir.path()).unwrap();
        assert_eq!(loaded.start_rv, RESTART_GAP);
        let (tx, rx) = oneshot::channel();
        s.append(
            Record {
                rv: RESTART_GAP + 1,
                key: "/configmaps/a/x".into(),
                value: Some(Bytes::from_static(b"{}")),
            },
            None,
        );
        s.append(
            Record {
                rv: RESTART_GAP + 2,
                key: "/configmaps/a/y".into(),
                value: Some(Bytes::from_static(b"{}")),
            },
            None,
        );
        s.append(
            Record {
                rv: RESTART_GAP + 3,
                key: "/configmaps/a/x".into(),
                value: None,
            },
            Some(tx),
        );
        rx.await.unwrap().unwrap();
        drop(s);
        let (_s, loaded) = Storage::open(dir.path()).unwrap();
        assert_eq!(loaded.objects.len(), 1);
        assert_eq!(loaded.objects[0].0, "/configmaps/a/y");
        assert_eq!(loaded.start_rv, 2 * RESTART_GAP + 3);
    }
}
