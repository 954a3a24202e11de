//! Splits the bytes read from the marker FIFO into lines, with a bound on
//! memory: a line longer than [`MAX_LINE`] is skipped up to its newline and
//! reported by length.
use super::parse::MAX_LINE;

#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Line(&'a [u8]),
    /// A line of this many bytes (without newline), not kept.
    TooLong(usize),
}

#[derive(Default)]
pub struct LineSplitter {
    buf: Vec<u8>,
    /// Bytes of an overlong line seen so far (its rest is skipped).
    skipping: Option<usize>,
}

impl LineSplitter {
    pub fn push(&mut self, mut data: &[u8], out: &mut dyn FnMut(Piece<'_>)) {
        while !data.is_empty() {
            let nl = data.iter().position(|&b| b == b'\n');
            let (seg, rest) = match nl {
                Some(i) => (&data[..i], &data[i + 1..]),
                None => (data, &data[data.len()..]),
            };
            data = rest;
            if let Some(n) = self.skipping.as_mut() {
                *n += seg.len();
                if nl.is_some() {
                    out(Piece::TooLong(*n));
                    self.skipping = None;
                }
                continue;
            }
            if self.buf.len() + seg.len() > MAX_LINE {
                let n = self.buf.len() + seg.len();
                self.buf.clear();
                if nl.is_some() {
                    out(Piece::TooLong(n));
                } else {
                    self.skipping = Some(n);
                }
                continue;
            }
            if nl.is_some() {
                if self.buf.is_empty() {
                    out(Piece::Line(seg));
                } else {
                    self.buf.extend_from_slice(seg);
                    out(Piece::Line(&self.buf));
                    self.buf.clear();
                }
            } else {
                self.buf.extend_from_slice(seg);
            }
        }
    }

    /// At the end: a last line without newline counts as a line.
    pub fn finish(&mut self, out: &mut dyn FnMut(Piece<'_>)) {
        if let Some(n) = self.skipping.take() {
            out(Piece::TooLong(n));
        } else if !self.buf.is_empty() {
            out(Piece::Line(&self.buf));
        }
        self.buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Vec<Result<String, usize>> {
        let mut s = LineSplitter::default();
        let mut v = vec![];
        let mut f = |p: Piece<'_>| {
            v.push(match p {
                Piece::Line(l) => Ok(String::from_utf8_lossy(l).into_owned()),
                Piece::TooLong(n) => Err(n),
            })
        };
        for c in chunks {
            s.push(c, &mut f);
        }
        s.finish(&mut f);
        v
    }

    #[test]
    fn lines_across_reads() {
        assert_eq!(
            split(&[b"phase a\nmark b", b" c\n\n", b"iteration 1"]),
            vec![Ok("phase a".into()), Ok("mark b c".into()), Ok("".into()), Ok("iteration 1".into())]
        );
        assert_eq!(split(&[b""]), vec![]);
    }

    #[test]
    fn overlong_lines_are_skipped_by_length() {
        let long = vec![b'x'; MAX_LINE + 1];
        let mut a = long.clone();
        a.extend_from_slice(b"\nphase ok\n");
        assert_eq!(split(&[&a]), vec![Err(MAX_LINE + 1), Ok("phase ok".into())]);
        // Over several reads, and one exactly MAX_LINE long is kept.
        let exact = vec![b'y'; MAX_LINE];
        let r = split(&[&long[..3000], &long[3000..], b"tail\n", &exact, b"\n"]);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0], Err(MAX_LINE + 5));
        assert_eq!(r[1].as_ref().map(|s| s.len()), Ok(MAX_LINE));
        // Unterminated and overlong at the end.
        assert_eq!(split(&[&long]), vec![Err(MAX_LINE + 1)]);
    }
}
