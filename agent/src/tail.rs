//! The last bytes a job wrote to one stream: what the store keeps of its stderr and stdout.

/// How much of each stream is kept and reported.
pub const TAIL_BYTES: usize = 4096;

#[derive(Debug, Default)]
pub struct Tail {
    buf: Vec<u8>,
    /// Whether bytes fell off the front (then a character may be cut in half there).
    truncated: bool,
    /// Bumped by every write: a heartbeat sends a tail only when it changed since the last one.
    pub version: u64,
}

impl Tail {
    pub fn new() -> Tail {
        Tail::default()
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.version += 1;
        if bytes.len() >= TAIL_BYTES {
            self.buf.clear();
            self.buf
                .extend_from_slice(&bytes[bytes.len() - TAIL_BYTES..]);
            self.truncated = true;
            return;
        }
        let keep = TAIL_BYTES - bytes.len();
        if self.buf.len() > keep {
            self.buf.drain(..self.buf.len() - keep);
            self.truncated = true;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The tail as text PostgreSQL accepts: a character cut in half at the start is dropped,
    /// invalid UTF-8 becomes U+FFFD, and NUL bytes (which text cannot hold) become U+FFFD too.
    pub fn text(&self) -> String {
        let mut start = 0;
        // At most 3 continuation bytes of a character whose first byte fell off.
        while self.truncated && start < self.buf.len().min(3) && (self.buf[start] & 0xC0) == 0x80 {
            start += 1;
        }
        String::from_utf8_lossy(&self.buf[start..]).replace('\0', "\u{FFFD}")
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_below_the_limit() {
        let mut t = Tail::new();
        t.push(b"hello ");
        t.push(b"world");
        assert_eq!(t.text(), "hello world");
        assert_eq!(t.version, 2);
        t.push(b"");
        assert_eq!(t.version, 2);
    }

    #[test]
    fn keeps_the_last_bytes() {
        let mut t = Tail::new();
        for i in 0..2000 {
            t.push(format!("line {i}\n").as_bytes());
        }
        assert_eq!(t.len(), TAIL_BYTES);
        let text = t.text();
        assert!(text.ends_with("line 1999\n"));
        assert!(!text.contains("line 1000\n"));
        // One write bigger than the limit keeps its end.
        let mut big = vec![b'a'; TAIL_BYTES * 3];
        big.extend_from_slice(b"END");
        t.push(&big);
        assert_eq!(t.len(), TAIL_BYTES);
        assert!(t.text().ends_with("aaaEND"));
    }

    #[test]
    fn exactly_at_the_limit() {
        let mut t = Tail::new();
        t.push(&vec![b'x'; TAIL_BYTES - 1]);
        t.push(b"yz");
        assert_eq!(t.len(), TAIL_BYTES);
        assert!(t.text().starts_with("xx") && t.text().ends_with("xyz"));
    }

    #[test]
    fn a_character_cut_at_the_start_is_dropped() {
        let mut t = Tail::new();
        // 'é' is two bytes: 4095 of them ('é' × 2047 + one half) fit only partly.
        let s = "é".repeat(3000);
        t.push(s.as_bytes());
        let text = t.text();
        assert!(
            !text.contains('\u{FFFD}'),
            "no replacement character: {:?}",
            &text[..8]
        );
        assert_eq!(text.chars().count(), TAIL_BYTES / 2);
        // A 4-byte character cut after its first byte.
        let mut t = Tail::new();
        let mut bytes = "😀".as_bytes()[1..].to_vec();
        bytes.extend(vec![b'a'; TAIL_BYTES - 3]);
        t.push(&bytes);
        assert_eq!(t.text(), "a".repeat(TAIL_BYTES - 3));
    }

    #[test]
    fn text_is_safe_for_postgres() {
        let mut t = Tail::new();
        t.push(b"a\0b\xffc");
        assert_eq!(t.text(), "a\u{FFFD}b\u{FFFD}c");
    }
}
