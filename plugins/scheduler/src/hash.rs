//! Small, fast, deterministic hashing: FNV-1a for the per-decision hash maps
//! (no need for SipHash's flood resistance on keys a decision builds itself)
//! and a mixer for the pure "random" choices a decision makes (where to
//! start looking, which of equally good nodes to take).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a, 64 bits.
#[derive(Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// A `HashMap` with FNV-1a.
pub(crate) type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// FNV-1a of some byte strings, mixed (so that nearby inputs land far apart).
pub(crate) fn of(parts: &[&[u8]]) -> u64 {
    let mut h = Fnv::default();
    for p in parts {
        h.write(p);
        h.write(&[0xff]);
    }
    mix(h.finish())
}

/// The splitmix64 finalizer.
pub(crate) fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_stable_and_spread() {
        assert_eq!(of(&[b"a", b"b"]), of(&[b"a", b"b"]));
        assert_ne!(of(&[b"ab"]), of(&[b"a", b"b"]));
        // Consecutive names spread over buckets.
        let mut buckets = [0usize; 8];
        for i in 0..800 {
            buckets[(of(&[format!("web-{i}").as_bytes()]) % 8) as usize] += 1;
        }
        assert!(buckets.iter().all(|&n| n > 60), "{buckets:?}");
    }
}
