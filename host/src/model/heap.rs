//! Heap accounting: what an allocation of some size really takes, so the
//! cache can count the memory it holds as the allocator sees it.

/// Bytes the allocator hands out for a request of `size` bytes, as glibc's
/// malloc does on 64-bit targets: an 8-byte header, then rounded up to 16
/// bytes, at least 32. An estimate elsewhere, but a close one.
pub(crate) fn allocation(size: usize) -> usize {
    if size == 0 {
        0
    } else {
        (size + 8).next_multiple_of(16).max(32)
    }
}
