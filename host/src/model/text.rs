//! [`Text`]: a cached object's JSON text, shared like an `Arc<str>` but
//! allocated to its exact size by the C library's allocator.
//!
//! Why not `Arc<str>`: the binary's allocator (mimalloc) serves a request
//! from size classes four to a doubling, so a typical pod's 1.1 KB of JSON
//! takes a 1.25 KB block; at a million cached objects that rounding alone
//! was about 150 MB, and put the scale row past its memory target. The C
//! library's `malloc` fits blocks to 16 bytes, and for a few long-lived
//! blocks per object its speed does not matter; everything short-lived
//! stays with the fast allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering, fence};

/// Immutable, shared JSON text. Cheap to clone (a reference count).
pub struct Text {
    /// The block: a reference count, then `len` bytes of UTF-8.
    block: NonNull<Header>,
    len: usize,
}

#[repr(C)]
struct Header {
    count: AtomicUsize,
}

/// Bytes before the text in a block.
const HEAD: usize = std::mem::size_of::<Header>();

// SAFETY: the bytes are never written after the block is made, and the
// count is atomic: sharing a `Text` between threads is sharing `&str` and
// an `Arc`'s count.
#[allow(unsafe_code)]
unsafe impl Send for Text {}
#[allow(unsafe_code)]
unsafe impl Sync for Text {}

impl Text {
    fn layout(len: usize) -> Layout {
        Layout::from_size_align(HEAD + len, std::mem::align_of::<Header>())
            .expect("a text's size fits a layout")
    }

    fn header(&self) -> &Header {
        // SAFETY: `block` points to a live block (we hold one of its counts)
        // that starts with an initialized `Header`.
        #[allow(unsafe_code)]
        unsafe {
            self.block.as_ref()
        }
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        let layout = Self::layout(s.len());
        // SAFETY: the layout's size is at least `HEAD`, never zero. The block
        // is written in full before anyone can read it: the header, then the
        // bytes, each within the `HEAD + len` bytes allocated.
        #[allow(unsafe_code)]
        unsafe {
            let Some(block) = NonNull::new(System.alloc(layout)) else {
                std::alloc::handle_alloc_error(layout);
            };
            let header = block.cast::<Header>();
            header.write(Header {
                count: AtomicUsize::new(1),
            });
            std::ptr::copy_nonoverlapping(s.as_ptr(), block.as_ptr().add(HEAD), s.len());
            Text {
                block: header,
                len: s.len(),
            }
        }
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Self::from(s.as_str())
    }
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        // SAFETY: the `len` bytes after the header were copied from a `&str`
        // when the block was made and are never written again.
        #[allow(unsafe_code)]
        unsafe {
            let bytes = self.block.cast::<u8>().as_ptr().add(HEAD);
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(bytes, self.len))
        }
    }
}

impl Clone for Text {
    fn clone(&self) -> Self {
        // As `Arc::clone`: relaxed, since a new count can only come from an
        // existing one; a count past `isize::MAX` (leaked clones) aborts.
        if self.header().count.fetch_add(1, Ordering::Relaxed) > isize::MAX as usize {
            std::process::abort();
        }
        Text {
            block: self.block,
            len: self.len,
        }
    }
}

impl Drop for Text {
    fn drop(&mut self) {
        // As `Arc`'s drop: release our count, and the last one acquires
        // every other holder's reads before the block goes.
        if self.header().count.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        // SAFETY: this was the last count, so nobody else can reach the
        // block; it was allocated by `System` with this very layout.
        #[allow(unsafe_code)]
        unsafe {
            System.dealloc(self.block.cast::<u8>().as_ptr(), Self::layout(self.len));
        }
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self
    }
}

impl std::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&**self, f)
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        &**self == other
    }
}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_reads_back_what_it_was_made_from() {
        for s in ["", "x", r#"{"kind":"Pod","metadata":{"name":"é"}}"#] {
            let t = Text::from(s);
            assert_eq!(&*t, s);
            assert_eq!(t.len(), s.len());
            assert_eq!(format!("{t}"), s);
            assert_eq!(format!("{t:?}"), format!("{s:?}"));
        }
    }

    #[test]
    fn clones_share_one_block_until_the_last_is_dropped() {
        let a = Text::from("shared".to_owned());
        let b = a.clone();
        assert_eq!(a.block, b.block, "one block");
        assert_eq!(a.header().count.load(Ordering::Relaxed), 2);
        drop(a);
        assert_eq!(b.header().count.load(Ordering::Relaxed), 1);
        assert_eq!(&*b, "shared");
    }

    #[test]
    fn clones_on_many_threads_drop_the_block_once() {
        let t = Text::from("x".repeat(2000));
        std::thread::scope(|s| {
            for _ in 0..4 {
                let t = t.clone();
                s.spawn(move || {
                    let held: Vec<Text> = (0..1000).map(|_| t.clone()).collect();
                    assert!(held.iter().all(|h| h.len() == 2000));
                });
            }
        });
        assert_eq!(t.header().count.load(Ordering::Relaxed), 1);
    }
}
