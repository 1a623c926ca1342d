//! Small, fast, deterministic hashing: a word-at-a-time multiplicative hash
//! (FxHash's) for the per-decision hash maps (no need for SipHash's flood
//! resistance on keys a decision builds itself from the index), FNV-1a for
//! stable hashes of names, and a mixer for the pure "random" choices a
//! decision makes (where to start looking, which of equally good nodes to
//! take).

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

/// FxHash: eight bytes per multiply.
#[derive(Clone, Copy, Default)]
pub(crate) struct Fx(u64);

impl Fx {
    const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl Hasher for Fx {
    /// Mixed before use: the multiply leaves the low bits a function of
    /// the inputs' low bytes only, and a map picks buckets by the low bits,
    /// so names that differ only at their end (`node-123`, `node-124`: the
    /// digits in a word's high bytes) would all share one bucket chain and
    /// a lookup would compare against every key (found at 1,000 nodes:
    /// two thirds of a decision with pod anti-affinity spent in `memcmp`).
    fn finish(&self) -> u64 {
        mix(self.0)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in chunks.by_ref() {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

/// A `HashMap` for a decision's own keys.
pub(crate) type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

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

    /// The decision maps' hash spreads names that differ only in their
    /// last bytes over the low bits (which pick a map's bucket).
    #[test]
    fn decision_map_keys_spread_over_the_low_bits() {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let build = BuildHasherDefault::<Fx>::default();
        let mut buckets = [0usize; 64];
        for i in 100..1_000 {
            let key = (b"kubernetes.io/hostname".as_slice(), format!("node-{i}"));
            buckets[(build.hash_one((key.0, key.1.as_bytes())) % 64) as usize] += 1;
        }
        assert!(buckets.iter().all(|&n| (4..40).contains(&n)), "{buckets:?}");
    }
}
