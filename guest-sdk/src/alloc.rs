//! The plugin's global allocator on wasm32: size classes over the system
//! allocator, because a reconcile is a burst of small allocations in an
//! instance that is thrown away afterwards.
//!
//! Strategy: requests up to [`MAX_SIZE`] bytes (and alignment up to
//! [`ALIGN`]) are rounded up to a power of two, one class per power. A freed
//! block goes onto its class's free list and is handed out again by the next
//! request of that class; a class with an empty list carves a block from a
//! chunk shared by all classes and taken from the system allocator (the
//! first 8 KiB, each next one twice as large up to 64 KiB, so a small call
//! stays small), or takes a block of 4 KiB or more from the system allocator
//! directly. Everything else goes to the system allocator (wasi-libc's
//! dlmalloc). Memory of a class is never
//! given back, which is fine for an instance that lives one call and bounded
//! by peak use for one that lives longer.
//!
//! Against dlmalloc behind Rust's `System`, an allocation and its free cost a
//! tenth of the instructions; the boundary of a call (every string the host
//! passes in is one) and the JSON work of a reconcile are made of them.
//!
//! A plugin that wants another allocator turns off the SDK's default
//! `allocator` feature and declares its own `#[global_allocator]`.
#![allow(unsafe_code)] // An allocator is raw memory by definition.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr;

/// Smallest block: a free block holds the next-pointer of its list.
const MIN_SHIFT: u32 = 4;
/// Classes of 16 B, 32 B, … up to `MAX_SIZE`.
const CLASSES: usize = 12;
/// The largest size served from a class (32 KiB).
const MAX_SIZE: usize = 1 << (MIN_SHIFT as usize + CLASSES - 1);
/// Alignment of every class block (the chunk's, and each block's size is a
/// multiple of it).
const ALIGN: usize = 1 << MIN_SHIFT;
/// The first chunk classes carve from; each next one is twice as large.
const FIRST_CHUNK: usize = 8 << 10;
/// The largest chunk.
const MAX_CHUNK: usize = 64 << 10;
/// Blocks this large are taken from the system allocator one by one rather
/// than carved, so the end of a chunk too small for them is not wasted.
const DIRECT: usize = 4 << 10;

/// The size-class allocator; see the module docs.
pub struct SizeClasses {
    state: UnsafeCell<State>,
}

struct State {
    /// Per class, the first free block; each free block starts with a
    /// pointer to the next.
    free: [*mut u8; CLASSES],
    /// The unused rest of the current chunk.
    next: *mut u8,
    end: *mut u8,
    /// The size of the next chunk.
    chunk: usize,
}

// SAFETY: a wasm32-wasip2 component instance runs on one thread and cannot
// be re-entered while it is in the allocator (the allocator calls nothing
// but the system allocator, which does not call back).
#[cfg(target_arch = "wasm32")]
unsafe impl Sync for SizeClasses {}

impl SizeClasses {
    /// An allocator with nothing allocated yet.
    pub const fn new() -> Self {
        Self {
            state: UnsafeCell::new(State {
                free: [ptr::null_mut(); CLASSES],
                next: ptr::null_mut(),
                end: ptr::null_mut(),
                chunk: FIRST_CHUNK,
            }),
        }
    }
}

impl Default for SizeClasses {
    fn default() -> Self {
        Self::new()
    }
}

/// The class serving `layout`, or `None` for the system allocator.
#[inline(always)]
fn class_of(size: usize, align: usize) -> Option<usize> {
    if size > MAX_SIZE || align > ALIGN {
        return None;
    }
    // Bits needed for `size - 1`: 4 up to 16 bytes, 5 up to 32, and so on.
    let bits = usize::BITS - (size.max(1 << MIN_SHIFT) - 1).leading_zeros();
    Some((bits - MIN_SHIFT) as usize)
}

impl State {
    /// A block of `class`, or null if the system allocator is out of memory.
    ///
    /// # Safety
    ///
    /// No other reference to the state may be live.
    #[inline(always)]
    unsafe fn take(&mut self, class: usize) -> *mut u8 {
        let head = self.free[class];
        if !head.is_null() {
            // SAFETY: a free block starts with the (aligned) next pointer.
            self.free[class] = unsafe { head.cast::<*mut u8>().read() };
            return head;
        }
        // SAFETY: as for this function.
        unsafe { self.carve(class) }
    }

    /// A new block of `class`, for when its list is empty.
    ///
    /// # Safety
    ///
    /// As for `take`.
    #[inline(never)]
    unsafe fn carve(&mut self, class: usize) -> *mut u8 {
        let size = 1 << (class as u32 + MIN_SHIFT);
        if size >= DIRECT {
            // SAFETY: the size is non-zero and the alignment a power of two.
            return unsafe { System.alloc(Layout::from_size_align_unchecked(size, ALIGN)) };
        }
        if (self.end as usize) - (self.next as usize) < size {
            // SAFETY: as above.
            let chunk =
                unsafe { System.alloc(Layout::from_size_align_unchecked(self.chunk, ALIGN)) };
            if chunk.is_null() {
                return chunk;
            }
            self.next = chunk;
            // SAFETY: the chunk is `self.chunk` bytes long.
            self.end = unsafe { chunk.add(self.chunk) };
            self.chunk = (self.chunk * 2).min(MAX_CHUNK);
        }
        let block = self.next;
        // SAFETY: at least `size` bytes are left in the chunk.
        self.next = unsafe { block.add(size) };
        block
    }

    /// Puts a block back on its class's list.
    ///
    /// # Safety
    ///
    /// `block` came from `take(class)` and is no longer used.
    #[inline(always)]
    unsafe fn give(&mut self, block: *mut u8, class: usize) {
        // SAFETY: every block is at least 16 bytes and 16-aligned.
        unsafe { block.cast::<*mut u8>().write(self.free[class]) };
        self.free[class] = block;
    }
}

// SAFETY: blocks of a class are `1 << (class + MIN_SHIFT)` bytes, at least
// the requested size, and 16-aligned (chunks are, and every block size is a
// multiple of 16), at least the requested alignment; a block is on a free
// list only after it was deallocated, and leaves it when handed out.
// Requests the classes do not serve go to `System` with their own layout,
// and `dealloc`/`realloc` tell the two apart by the layout, which Rust
// guarantees is the one the block was allocated with.
unsafe impl GlobalAlloc for SizeClasses {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match class_of(layout.size(), layout.align()) {
            // SAFETY: single-threaded, not re-entered (see `Sync`).
            Some(class) => unsafe { (*self.state.get()).take(class) },
            // SAFETY: the caller's layout contract is passed on.
            None => unsafe { System.alloc(layout) },
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match class_of(layout.size(), layout.align()) {
            Some(_) => {
                // SAFETY: as `alloc`; a reused block holds old data.
                let block = unsafe { self.alloc(layout) };
                if !block.is_null() {
                    unsafe { block.write_bytes(0, layout.size()) };
                }
                block
            }
            // SAFETY: the caller's layout contract is passed on.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    #[inline]
    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        match class_of(layout.size(), layout.align()) {
            // SAFETY: the block came from `take(class)` (same layout).
            Some(class) => unsafe { (*self.state.get()).give(block, class) },
            // SAFETY: it came from `System` with this layout.
            None => unsafe { System.dealloc(block, layout) },
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = class_of(layout.size(), layout.align());
        let new = class_of(new_size, layout.align());
        match (old, new) {
            // The block is already big enough (or still the right class).
            (Some(a), Some(b)) if a == b => block,
            // SAFETY: it came from `System` with this layout.
            (None, None) => unsafe { System.realloc(block, layout, new_size) },
            _ => {
                // SAFETY: `new_size` is non-zero and, rounded up to the
                // alignment, fits an isize (the caller's contract).
                let new_layout =
                    unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
                // SAFETY: as `alloc`, `dealloc`; the regions are distinct.
                unsafe {
                    let moved = self.alloc(new_layout);
                    if !moved.is_null() {
                        ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                        self.dealloc(block, layout);
                    }
                    moved
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    /// The bytes of a block worth comparing: all of them, or under Miri
    /// (where each comparison is slow) those at both ends.
    fn ends(bytes: &[u8]) -> impl Iterator<Item = &u8> {
        let n = if cfg!(miri) { 32 } else { bytes.len() };
        let (head, rest) = bytes.split_at(n.min(bytes.len()));
        head.iter().chain(&rest[rest.len().saturating_sub(n)..])
    }

    #[test]
    fn classes_round_up_to_powers_of_two() {
        assert_eq!(class_of(1, 1), Some(0));
        assert_eq!(class_of(16, 8), Some(0));
        assert_eq!(class_of(17, 1), Some(1));
        assert_eq!(class_of(4096, 4), Some(8));
        assert_eq!(class_of(MAX_SIZE, 1), Some(CLASSES - 1));
        assert_eq!(class_of(MAX_SIZE + 1, 1), None);
        assert_eq!(class_of(8, 32), None);
    }

    /// Many live blocks of mixed sizes never overlap, keep their contents
    /// through frees of others and through `realloc`, and freed blocks are
    /// reused.
    #[test]
    fn blocks_are_disjoint_reused_and_keep_their_contents() {
        let a = SizeClasses::new();
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let check = |live: &[(*mut u8, Layout, u8)]| {
            let mut spans: Vec<(usize, usize)> = live
                .iter()
                .map(|(p, l, fill)| {
                    let bytes = unsafe { std::slice::from_raw_parts(*p, l.size()) };
                    assert!(ends(bytes).all(|b| b == fill), "block contents changed");
                    assert_eq!(*p as usize % l.align(), 0, "misaligned block");
                    (*p as usize, *p as usize + l.size())
                })
                .collect();
            spans.sort_unstable();
            for w in spans.windows(2) {
                assert!(w[0].1 <= w[1].0, "overlapping blocks");
            }
        };
        // Miri checks every access, so it gets fewer steps. Run it with
        // `MIRIFLAGS=-Zmiri-ignore-leaks cargo +nightly miri test -p
        // windlass-sdk --lib alloc`: chunks are never given back, by design.
        let steps = if cfg!(miri) { 400 } else { 4000 };
        for step in 0..steps {
            let r = rand();
            if live.len() > 64 || (r % 3 == 0 && !live.is_empty()) {
                let (p, l, _) = live.swap_remove((r as usize / 3) % live.len());
                unsafe { a.dealloc(p, l) };
            } else if r % 7 == 1 && !live.is_empty() {
                let i = (r as usize / 7) % live.len();
                let (p, l, fill) = live[i];
                let new_size = 1 + (rand() as usize % (2 * MAX_SIZE));
                let q = unsafe { a.realloc(p, l, new_size) };
                assert!(!q.is_null());
                let kept = l.size().min(new_size);
                let bytes = unsafe { std::slice::from_raw_parts(q, kept) };
                assert!(ends(bytes).all(|b| *b == fill), "realloc lost contents");
                let l = layout(new_size, l.align());
                unsafe { q.write_bytes(fill, new_size) };
                live[i] = (q, l, fill);
            } else {
                let size = match r % 5 {
                    0 => 1 + (r as usize >> 8) % 16,
                    1 | 2 => 1 + (r as usize >> 8) % 600,
                    3 => 1 + (r as usize >> 8) % 9000,
                    _ => 1 + (r as usize >> 8) % (3 * MAX_SIZE),
                };
                let align = [1, 2, 4, 8, 16, 64][(r as usize >> 40) % 6];
                let l = layout(size, align);
                let zeroed = step % 5 == 0;
                let p = unsafe {
                    if zeroed {
                        a.alloc_zeroed(l)
                    } else {
                        a.alloc(l)
                    }
                };
                assert!(!p.is_null());
                if zeroed {
                    let bytes = unsafe { std::slice::from_raw_parts(p, size) };
                    assert!(ends(bytes).all(|b| *b == 0), "alloc_zeroed left data");
                }
                let fill = (step % 251) as u8;
                unsafe { p.write_bytes(fill, size) };
                live.push((p, l, fill));
            }
            check(&live);
        }
        // A freed block is the next one handed out for its class.
        let l = layout(40, 8);
        let p = unsafe { a.alloc(l) };
        unsafe { a.dealloc(p, l) };
        assert_eq!(unsafe { a.alloc(layout(64, 4)) }, p);
        for (p, l, _) in live {
            unsafe { a.dealloc(p, l) };
        }
    }
}
