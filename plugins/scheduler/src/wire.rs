//! The compact binary encoding of index summaries: LEB128 varints,
//! zig-zag signed integers and length-prefixed byte strings.
//!
//! Every decision reads the summaries of every node (and of the pods its
//! affinity rules name), so they are decoded lazily and without copying:
//! strings come back as slices of the summary, and are checked as UTF-8 only
//! where a string is really needed (most label comparisons are on bytes).

/// Builds one summary.
#[derive(Default)]
pub(crate) struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub(crate) fn new() -> Self {
        Self {
            buf: Vec::with_capacity(128),
        }
    }

    pub(crate) fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    pub(crate) fn uvar(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    pub(crate) fn ivar(&mut self, v: i64) {
        self.uvar(((v << 1) ^ (v >> 63)) as u64);
    }

    pub(crate) fn fixed_i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn len(&mut self, n: usize) {
        self.uvar(n as u64);
    }

    pub(crate) fn bytes(&mut self, s: &[u8]) {
        self.len(s.len());
        self.buf.extend_from_slice(s);
    }

    pub(crate) fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// Reads one summary. Every read returns `None` past the end or on a
/// malformed value; callers treat that as a corrupt summary.
#[derive(Clone, Copy)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    #[inline]
    pub(crate) fn uvar(&mut self) -> Option<u64> {
        // Most values (lengths, counts, small numbers) fit in one byte.
        let b = *self.buf.get(self.pos)?;
        if b < 0x80 {
            self.pos += 1;
            return Some(u64::from(b));
        }
        self.uvar_long()
    }

    fn uvar_long(&mut self) -> Option<u64> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.u8()?;
            if shift >= 64 {
                return None;
            }
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
            shift += 7;
        }
    }

    pub(crate) fn ivar(&mut self) -> Option<i64> {
        let u = self.uvar()?;
        Some(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    pub(crate) fn len(&mut self) -> Option<usize> {
        let n = usize::try_from(self.uvar()?).ok()?;
        // A count can never exceed the bytes left: guards allocations sized from it.
        (n <= self.buf.len() - self.pos).then_some(n)
    }

    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.len()?;
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Some(s)
    }

    pub(crate) fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }

    /// The bytes from here to the end, and a reader at the end.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }

    #[cfg(test)]
    pub(crate) fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let mut w = Writer::new();
        let ints = [0i64, 1, -1, 63, -64, 1 << 40, i64::MAX, i64::MIN];
        for v in ints {
            w.ivar(v);
        }
        w.uvar(u64::MAX);
        w.str("héllo");
        w.bytes(b"");
        w.u8(7);
        let buf = w.finish();
        let mut r = Reader::new(&buf);
        for v in ints {
            assert_eq!(r.ivar(), Some(v));
        }
        assert_eq!(r.uvar(), Some(u64::MAX));
        assert_eq!(r.str(), Some("héllo"));
        assert_eq!(r.bytes(), Some(&b""[..]));
        assert_eq!(r.u8(), Some(7));
        assert!(r.at_end());
        assert_eq!(r.u8(), None);
    }

    #[test]
    fn truncated_input_reads_as_none() {
        let mut w = Writer::new();
        w.str("abcdef");
        let buf = w.finish();
        assert_eq!(Reader::new(&buf[..3]).str(), None);
        assert_eq!(Reader::new(&[0xff, 0xff]).uvar(), None);
        assert_eq!(Reader::new(&[0x05, b'a']).len(), None);
    }
}
