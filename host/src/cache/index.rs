//! The store's index structures, over small integer ids (an object's slot
//! in the store) instead of cloned keys: [`Ordered`], the ids sorted by
//! key, and [`Ids`], a set of ids, one per indexed value. Both report the
//! heap bytes they hold.

use std::cmp::Ordering;
use std::collections::HashMap;

pub(super) use crate::model::allocation;

/// Heap bytes of a `HashMap`'s table: a slot per bucket plus a control byte
/// per bucket (and a group's worth more), for hashbrown's bucket count at
/// this capacity (a power of two, at most 7/8 full).
pub(super) fn table_bytes<K, V, S>(map: &HashMap<K, V, S>) -> usize {
    let capacity = map.capacity();
    let buckets = match capacity {
        0 => return 0,
        1..8 => (capacity + 1).next_power_of_two(),
        _ => (capacity * 8 / 7).next_power_of_two(),
    };
    allocation(buckets * std::mem::size_of::<(K, V)>() + buckets + 16)
}

/// A position in [`Ordered`]: block, then index in the block.
pub(super) type Pos = (usize, usize);

/// Ids sorted by their objects' keys, in blocks of at most [`BLOCK`]: a
/// flat B-tree of one level. An insert or remove moves at most a block's
/// ids; appending in order (as a sorted list arrives) fills blocks whole.
/// Comparisons go through `key_of`, since the ids alone do not know their
/// keys.
#[derive(Debug, Default)]
pub(super) struct Ordered {
    blocks: Vec<Vec<u32>>,
    len: usize,
}

const BLOCK: usize = 512;

impl Ordered {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Where `key` is (`Ok`) or would go (`Err`).
    pub(super) fn search<K: Ord>(&self, key: &K, key_of: impl Fn(u32) -> K) -> Result<Pos, Pos> {
        let Some(last) = self.blocks.last() else {
            return Err((0, 0));
        };
        // A sorted list arrives in order: check the end first.
        let end = (self.blocks.len() - 1, last.len());
        match last.last().map(|&id| key_of(id).cmp(key)) {
            Some(Ordering::Less) => return Err(end),
            Some(Ordering::Equal) => return Ok((end.0, end.1 - 1)),
            _ => {}
        }
        let b = self
            .blocks
            .partition_point(|block| block.first().is_some_and(|&id| key_of(id) <= *key))
            .saturating_sub(1);
        self.blocks[b]
            .binary_search_by(|&id| key_of(id).cmp(key))
            .map(|i| (b, i))
            .map_err(|i| (b, i))
    }

    pub(super) fn id_at(&self, (b, i): Pos) -> Option<u32> {
        self.blocks.get(b)?.get(i).copied()
    }

    /// Puts `id` at `pos` (from [`Ordered::search`]), splitting a full block.
    pub(super) fn insert(&mut self, (b, i): Pos, id: u32) {
        self.len += 1;
        let Some(block) = self.blocks.get_mut(b) else {
            self.blocks.push(vec![id]);
            return;
        };
        if block.len() < BLOCK {
            block.insert(i, id);
        } else if i == BLOCK {
            // Appending: start a new block, leave this one full.
            self.blocks.insert(b + 1, vec![id]);
        } else if i == 0 {
            self.blocks.insert(b, vec![id]);
        } else {
            let mut right = block.split_off(BLOCK / 2);
            if i <= BLOCK / 2 {
                block.insert(i, id);
            } else {
                right.insert(i - BLOCK / 2, id);
            }
            self.blocks.insert(b + 1, right);
        }
    }

    /// Takes the id at `pos` out; a block left nearly empty is merged into
    /// its neighbour when they fit in one.
    pub(super) fn remove(&mut self, (b, i): Pos) -> Option<u32> {
        let block = self.blocks.get_mut(b)?;
        if i >= block.len() {
            return None;
        }
        let id = block.remove(i);
        let left = block.len();
        self.len -= 1;
        if left == 0 {
            self.blocks.remove(b);
        } else if left < BLOCK / 4
            && let Some(next) = self.blocks.get(b + 1)
            && left + next.len() <= BLOCK / 2
        {
            let next = self.blocks.remove(b + 1);
            self.blocks[b].extend(next);
        }
        Some(id)
    }

    /// Ids from `pos` on, in order.
    pub(super) fn iter_from(&self, (b, i): Pos) -> impl Iterator<Item = u32> + '_ {
        let first = self
            .blocks
            .get(b)
            .map_or(&[][..], |block| block.get(i..).unwrap_or(&[]));
        first
            .iter()
            .chain(self.blocks.iter().skip(b + 1).flatten())
            .copied()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.iter_from((0, 0))
    }

    /// Heap bytes: the block list and every block.
    pub(super) fn bytes(&self) -> usize {
        allocation(self.blocks.capacity() * std::mem::size_of::<Vec<u32>>())
            + self
                .blocks
                .iter()
                .map(|b| allocation(b.capacity() * 4))
                .sum::<usize>()
    }
}

/// A set of ids: one inline, a sorted list, or — once more than one id in
/// 32 of the id space is in it — a bitmap, so that a label every object
/// has costs a bit per object instead of four bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ids {
    One(u32),
    Sorted(Vec<u32>),
    Bits { words: Vec<u64>, len: usize },
}

impl Ids {
    pub(super) fn len(&self) -> usize {
        match self {
            Ids::One(_) => 1,
            Ids::Sorted(ids) => ids.len(),
            Ids::Bits { len, .. } => *len,
        }
    }

    /// Adds `id`; `universe` is the number of ids in use, which decides
    /// when a bitmap is the smaller form.
    pub(super) fn insert(&mut self, id: u32, universe: usize) {
        match self {
            Ids::One(one) if *one == id => {}
            Ids::One(one) => {
                let (a, b) = if *one < id { (*one, id) } else { (id, *one) };
                *self = Ids::Sorted(vec![a, b]);
            }
            Ids::Sorted(ids) => {
                if let Err(i) = ids.binary_search(&id) {
                    ids.insert(i, id);
                    if ids.len() * 32 > universe.max(64) {
                        *self = Ids::bits(ids, universe);
                    }
                }
            }
            Ids::Bits { words, len } => {
                let (w, bit) = (id as usize / 64, 1u64 << (id % 64));
                if w >= words.len() {
                    words.resize(w + 1, 0);
                }
                if words[w] & bit == 0 {
                    words[w] |= bit;
                    *len += 1;
                }
            }
        }
    }

    fn bits(ids: &[u32], universe: usize) -> Self {
        let top = ids.last().map_or(0, |&id| id as usize + 1).max(universe);
        let mut words = vec![0u64; top.div_ceil(64)];
        for &id in ids {
            words[id as usize / 64] |= 1 << (id % 64);
        }
        Ids::Bits {
            words,
            len: ids.len(),
        }
    }

    /// Takes `id` out; true when the set is now empty.
    pub(super) fn remove(&mut self, id: u32) -> bool {
        match self {
            Ids::One(one) => *one == id,
            Ids::Sorted(ids) => {
                if let Ok(i) = ids.binary_search(&id) {
                    ids.remove(i);
                }
                match ids[..] {
                    [] => true,
                    [one] => {
                        *self = Ids::One(one);
                        false
                    }
                    _ => false,
                }
            }
            Ids::Bits { words, len } => {
                let (w, bit) = (id as usize / 64, 1u64 << (id % 64));
                if let Some(word) = words.get_mut(w)
                    && *word & bit != 0
                {
                    *word &= !bit;
                    *len -= 1;
                }
                // Back to a list at half the bitmap's size, well below the
                // switch, so that a set near it does not flip at every change.
                if *len < words.len() {
                    let ids: Vec<u32> = self.iter().collect();
                    *self = Ids::Sorted(ids);
                    return self.len() == 0;
                }
                *len == 0
            }
        }
    }

    /// The ids, in increasing order.
    pub(super) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let (one, list, words): (Option<u32>, &[u32], &[u64]) = match self {
            Ids::One(id) => (Some(*id), &[], &[]),
            Ids::Sorted(ids) => (None, ids, &[]),
            Ids::Bits { words, .. } => (None, &[], words),
        };
        let bits = words.iter().enumerate().flat_map(|(w, &word)| {
            let mut word = word;
            std::iter::from_fn(move || {
                (word != 0).then(|| {
                    let bit = word.trailing_zeros();
                    word &= word - 1;
                    (w * 64) as u32 + bit
                })
            })
        });
        one.into_iter().chain(list.iter().copied()).chain(bits)
    }

    /// Heap bytes (not counting the map slot this set sits in).
    pub(super) fn bytes(&self) -> usize {
        match self {
            Ids::One(_) => 0,
            Ids::Sorted(ids) => allocation(ids.capacity() * 4),
            Ids::Bits { words, .. } => allocation(words.capacity() * 8),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_keeps_ids_sorted_by_key_across_splits_and_merges() {
        // The id is its own key here; insert in a scrambled order.
        let mut o = Ordered::default();
        let n = 5 * BLOCK as u32;
        for k in (0..n).map(|i| (i * 7919) % n) {
            let pos = o.search(&k, |id| id).unwrap_err();
            o.insert(pos, k);
        }
        assert_eq!(o.len(), n as usize);
        assert!(o.iter().eq(0..n));
        assert_eq!(o.search(&77, |id| id).map(|p| o.id_at(p)), Ok(Some(77)));
        for k in (0..n).filter(|k| k % 3 != 0) {
            let pos = o.search(&k, |id| id).unwrap();
            assert_eq!(o.remove(pos), Some(k));
        }
        assert!(o.iter().eq((0..n).filter(|k| k % 3 == 0)));
        assert!(o.search(&4, |id| id).is_err());
        let from = o.search(&10, |id| id).unwrap_err();
        assert_eq!(o.iter_from(from).take(2).collect::<Vec<_>>(), [12, 15]);
    }

    #[test]
    fn ordered_appends_fill_blocks() {
        let mut o = Ordered::default();
        for k in 0..(4 * BLOCK as u32) {
            let pos = o.search(&k, |id| id).unwrap_err();
            o.insert(pos, k);
        }
        assert_eq!(o.blocks.len(), 4);
        assert!(o.blocks.iter().all(|b| b.len() == BLOCK));
    }

    #[test]
    fn ids_change_form_and_keep_their_members() {
        let mut ids = Ids::One(5);
        ids.insert(3, 1000);
        assert_eq!(ids, Ids::Sorted(vec![3, 5]));
        for id in 0..100 {
            ids.insert(id * 2, 1000);
        }
        assert!(matches!(ids, Ids::Bits { .. }), "{ids:?}");
        // 0, 2, … 198, and the 3 and 5 from before.
        assert_eq!(ids.len(), 100 + 2);
        let want: std::collections::BTreeSet<u32> = (0..100).map(|i| i * 2).chain([3, 5]).collect();
        assert!(ids.iter().eq(want));
        for id in 0..100 {
            assert!(!ids.remove(id * 2));
        }
        assert!(!ids.remove(3));
        assert_eq!(ids, Ids::One(5));
        assert!(ids.remove(5));
    }

    #[test]
    fn allocation_sizes_follow_malloc() {
        assert_eq!(allocation(0), 0);
        assert_eq!(allocation(1), 32);
        assert_eq!(allocation(24), 32);
        assert_eq!(allocation(25), 48);
        assert_eq!(allocation(80), 96);
    }
}
