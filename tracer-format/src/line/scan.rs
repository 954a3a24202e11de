//! The trace reader's fast path: one trace line scanned straight into a
//! borrowed [`RawLine`] by a small JSON scanner that knows the fields the model
//! reads, instead of serde_json's derived visitor (which took ~70 % of
//! `tracer report` on a launch-bound trace).
//!
//! The scanner is strict: it takes a line only when serde_json would read
//! the same line into the same `RawLine` without error. Anything it is not
//! sure about — an escape sequence in any string, a duplicate field, a
//! value of another type than expected, a number of a shape it does not
//! read itself, a non-object line, nesting deeper than 64, trailing bytes —
//! gives `None` and the caller takes serde_json's path (which also gives
//! the errors, so their messages do not change). Floating-point values are
//! converted by serde_json itself, so they are the same to the bit.
//! `scan_tests.rs` checks both paths field for field on every line of every
//! committed recording.
use std::borrow::Cow;

use super::raw::{RawArgs, RawLine, StrOrNum};

/// The line as serde_json would read it, or `None` when unsure.
pub fn raw_line(b: &[u8]) -> Option<RawLine<'_>> {
    let mut r = RawLine::default();
    scan_into(b, &mut r).then_some(r)
}

/// Fills `r` (a default `RawLine`) from the line; false when unsure (then
/// `r` holds part of the line and is to be thrown away). In place: a
/// `RawLine` is ~1 KB, and moving it cost more than scanning a line.
pub fn scan_into<'a>(b: &'a [u8], r: &mut RawLine<'a>) -> bool {
    let mut c = Cur { b, i: 0 };
    c.ws();
    if c.line(r).is_none() {
        return false;
    }
    c.ws();
    c.i == b.len()
}

struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

/// Deepest nesting skipped (serde_json's own limit is 128).
const MAX_DEPTH: u32 = 64;

impl<'a> Cur<'a> {
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn eat(&mut self, ch: u8) -> Option<()> {
        self.ws();
        (self.peek()? == ch).then(|| self.i += 1)
    }

    /// A string without escapes (the cursor on its opening quote):
    /// borrowed, UTF-8 checked, no control characters.
    #[inline]
    fn string(&mut self) -> Option<&'a str> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i + 1;
        let mut j = start;
        let mut ascii = true;
        loop {
            let ch = *self.b.get(j)?;
            match ch {
                b'"' => break,
                b'\\' | 0..0x20 => return None,
                0x80.. => ascii = false,
                _ => {}
            }
            j += 1;
        }
        let s = &self.b[start..j];
        self.i = j + 1;
        if ascii {
            // SAFETY: every byte is ASCII, hence valid UTF-8.
            Some(unsafe { std::str::from_utf8_unchecked(s) })
        } else {
            std::str::from_utf8(s).ok()
        }
    }

    /// `true`, `false`, `null`.
    #[inline]
    fn word(&mut self, w: &[u8]) -> bool {
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            true
        } else {
            false
        }
    }

    /// `null` (then the field is None, as serde reads an Option).
    #[inline]
    fn null(&mut self) -> bool {
        self.peek() == Some(b'n') && self.word(b"null")
    }

    /// The extent of a JSON number (the grammar of RFC 8259), cursor moved
    /// past it; `integer` says whether it has no fraction and no exponent.
    fn number(&mut self) -> Option<(&'a [u8], bool)> {
        let start = self.i;
        let b = self.b;
        let mut j = self.i;
        if b.get(j) == Some(&b'-') {
            j += 1;
        }
        match b.get(j)? {
            b'0' => j += 1,
            b'1'..=b'9' => {
                while b.get(j).is_some_and(u8::is_ascii_digit) {
                    j += 1;
                }
            }
            _ => return None,
        }
        let mut integer = true;
        if b.get(j) == Some(&b'.') {
            integer = false;
            j += 1;
            if !b.get(j)?.is_ascii_digit() {
                return None;
            }
            while b.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
        }
        if let Some(b'e' | b'E') = b.get(j) {
            integer = false;
            j += 1;
            if let Some(b'+' | b'-') = b.get(j) {
                j += 1;
            }
            if !b.get(j)?.is_ascii_digit() {
                return None;
            }
            while b.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
        }
        self.i = j;
        Some((&b[start..j], integer))
    }

    /// A non-negative integer that fits in u64 (no sign, fraction or exponent).
    #[inline]
    fn u64(&mut self) -> Option<u64> {
        let b = self.b;
        let mut j = self.i;
        let first = *b.get(j)?;
        if !first.is_ascii_digit() {
            return None;
        }
        let mut v = u64::from(first - b'0');
        j += 1;
        if first == b'0' {
            if b.get(j).is_some_and(u8::is_ascii_digit) {
                return None; // a leading zero: invalid JSON
            }
        } else {
            while let Some(&d) = b.get(j) {
                if !d.is_ascii_digit() {
                    break;
                }
                v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
                j += 1;
            }
        }
        if let Some(b'.' | b'e' | b'E') = b.get(j) {
            return None; // a float
        }
        self.i = j;
        Some(v)
    }

    #[inline]
    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.u64()?).ok()
    }

    /// An integer that fits in i64.
    fn i64(&mut self) -> Option<i64> {
        let (t, integer) = self.number()?;
        if !integer {
            return None;
        }
        let (neg, digits) = match t.split_first() {
            Some((b'-', d)) => (true, d),
            _ => (false, t),
        };
        if neg && digits == b"0" {
            return None; // serde_json reads -0 as a float
        }
        let mut v: i64 = 0;
        for &d in digits {
            let d = i64::from(d - b'0');
            v = v.checked_mul(10)?;
            v = if neg { v.checked_sub(d)? } else { v.checked_add(d)? };
        }
        Some(v)
    }

    /// Any number, converted by serde_json itself (bit-identical).
    fn f64(&mut self) -> Option<f64> {
        let (t, _) = self.number()?;
        serde_json::from_slice(t).ok()
    }

    /// `[a, b, c]` of u32.
    fn dim3(&mut self) -> Option<[u32; 3]> {
        if self.peek()? != b'[' {
            return None;
        }
        self.i += 1;
        let mut v = [0u32; 3];
        for (k, x) in v.iter_mut().enumerate() {
            if k > 0 {
                self.eat(b',')?;
            }
            self.ws();
            *x = self.u32()?;
        }
        self.eat(b']')?;
        Some(v)
    }

    /// A string or a non-negative integer (what the untagged [`StrOrNum`]
    /// reads as `Str` or `Num`; other shapes are left to serde).
    fn str_or_num(&mut self) -> Option<StrOrNum<'a>> {
        match self.peek()? {
            b'"' => Some(StrOrNum::Str(Cow::Borrowed(self.string()?))),
            _ => Some(StrOrNum::Num(self.u64()?)),
        }
    }

    /// Skips any value, checking its syntax.
    #[inline]
    fn skip(&mut self, depth: u32) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'-' | b'0'..=b'9' => self.number().map(drop),
            _ => self.skip_nested(depth),
        }
    }

    #[inline(never)]
    fn skip_nested(&mut self, depth: u32) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                let close = if self.peek()? == b'{' { b'}' } else { b']' };
                self.i += 1;
                self.ws();
                if self.peek()? == close {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    if close == b'}' {
                        self.ws();
                        self.string()?;
                        self.eat(b':')?;
                    }
                    self.skip(depth + 1)?;
                    self.ws();
                    match self.peek()? {
                        b',' => self.i += 1,
                        c if c == close => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b't' => self.word(b"true").then_some(()),
            b'f' => self.word(b"false").then_some(()),
            b'n' => self.word(b"null").then_some(()),
            _ => self.number().map(drop),
        }
    }

    /// Calls `field(self, key)` for each member of an object (the cursor on
    /// its `{`); `field` reads the value, or returns false for "skip it".
    #[inline]
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a [u8]) -> Option<bool>) -> Option<()> {
        self.ws();
        if self.peek()? != b'{' {
            return None;
        }
        self.i += 1;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            let key = self.string()?.as_bytes();
            self.eat(b':')?;
            self.ws();
            if !field(self, key)? {
                self.skip(1)?;
            }
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn args(&mut self) -> Option<RawArgs<'a>> {
        let mut a = RawArgs::default();
        let mut seen = 0u8;
        self.object(|c, key| {
            let bit = match key {
                b"Flags" => 1,
                b"phStream" => 2,
                _ => return Some(false),
            };
            if seen & bit != 0 {
                return None; // serde: duplicate field
            }
            seen |= bit;
            if c.null() {
                return Some(true);
            }
            match bit {
                1 => a.flags = Some(c.str_or_num()?),
                _ => a.ph_stream = Some(Cow::Borrowed(c.string()?)),
            }
            Some(true)
        })?;
        Some(a)
    }

    fn line(&mut self, r: &mut RawLine<'a>) -> Option<()> {
        let mut seen = 0u64;
        self.object(|c, key| {
            // One bit per field of RawLine, for serde's duplicate-field error.
            let Some(bit) = field_bit(key) else { return Some(false) };
            if seen & (1 << bit) != 0 {
                return None;
            }
            seen |= 1 << bit;
            if c.null() {
                return Some(true);
            }
            let s = |c: &mut Cur<'a>| c.string().map(Cow::Borrowed);
            match bit {
                0 => r.ty = Some(s(c)?),
                1 => r.ts = Some(c.u64()?),
                2 => r.end_ts = Some(c.u64()?),
                3 => r.pid = Some(c.u32()?),
                4 => r.tid = Some(c.u32()?),
                5 => r.op = Some(s(c)?),
                6 => r.name = Some(s(c)?),
                7 => r.duration_us = Some(c.f64()?),
                8 => r.ret = Some(c.i64()?),
                9 | 10 => {
                    let v = if c.word(b"true") {
                        true
                    } else if c.word(b"false") {
                        false
                    } else {
                        return None;
                    };
                    if bit == 9 {
                        r.incomplete = Some(v);
                    } else {
                        r.entry_lost = Some(v);
                    }
                }
                11 => r.error = Some(s(c)?),
                12 => r.kernel = Some(s(c)?),
                13 => r.grid = Some(c.dim3()?),
                14 => r.block = Some(c.dim3()?),
                15 => r.shared_mem = Some(c.u32()?),
                16 => r.stream = Some(s(c)?),
                17 => r.size = Some(c.u64()?),
                18 => r.direction = Some(s(c)?),
                19 => r.event = Some(s(c)?),
                20 => r.cpu = Some(c.u32()?),
                21 => r.seq = Some(c.u64()?),
                22 => r.exit_cpu = Some(c.u32()?),
                23 => r.exit_seq = Some(c.u64()?),
                24 => r.child = Some(c.u32()?),
                25 => r.filename = Some(s(c)?),
                26 => r.args = Some(c.args()?),
                27 => r.cuda_call = Some(s(c)?),
                28 => r.status = Some(c.u64()?),
                29 => r.errno = Some(s(c)?),
                30 => r.label = Some(c.str_or_num()?),
                31 => r.tokens = Some(c.u64()?),
                32 => r.gpu = Some(c.u32()?),
                33 => r.energy_mj = Some(c.u64()?),
                34 => r.power_mw = Some(c.u64()?),
                35 => r.sm_clock_mhz = Some(c.u32()?),
                36 => r.mem_clock_mhz = Some(c.u32()?),
                37 => r.util_gpu_pct = Some(c.u32()?),
                38 => r.util_mem_pct = Some(c.u32()?),
                39 => r.temp_c = Some(c.u32()?),
                40 => r.device = Some(c.str_or_num()?),
                41 => r.stream_id = Some(c.u64()?),
                42 => r.correlation_id = Some(c.u64()?),
                43 => r.rank = Some(c.u64()?),
                44 => r.capture = Some(c.u64()?),
                45 => r.graph_id = Some(c.u64()?),
                46 => r.graph_node_id = Some(c.u64()?),
                _ => r.stack = Some(c.u64()?),
            }
            Some(true)
        })
    }
}

/// The bit of each field of [`RawLine`] (by its JSON key), for the
/// duplicate check; `None`: a key the model does not read. Dispatched on
/// the length first: most keys of a line are compared once.
#[inline]
fn field_bit(key: &[u8]) -> Option<u32> {
    Some(match key.len() {
        2 => match key {
            b"ts" => 1,
            b"op" => 5,
            _ => return None,
        },
        3 => match key {
            b"pid" => 3,
            b"tid" => 4,
            b"ret" => 8,
            b"cpu" => 20,
            b"seq" => 21,
            b"gpu" => 32,
            _ => return None,
        },
        4 => match key {
            b"type" => 0,
            b"name" => 6,
            b"grid" => 13,
            b"size" => 17,
            b"args" => 26,
            b"rank" => 43,
            _ => return None,
        },
        5 => match key {
            b"error" => 11,
            b"block" => 14,
            b"event" => 19,
            b"child" => 24,
            b"errno" => 29,
            b"label" => 30,
            b"stack" => 47,
            _ => return None,
        },
        6 => match key {
            b"end_ts" => 2,
            b"kernel" => 12,
            b"stream" => 16,
            b"status" => 28,
            b"tokens" => 31,
            b"temp_c" => 39,
            b"device" => 40,
            _ => return None,
        },
        7 => match key {
            b"capture" => 44,
            _ => return None,
        },
        8 => match key {
            b"graph_id" => 45,
            b"exit_cpu" => 22,
            b"exit_seq" => 23,
            b"filename" => 25,
            b"power_mw" => 34,
            _ => return None,
        },
        9 => match key {
            b"direction" => 18,
            b"cuda_call" => 27,
            b"energy_mj" => 33,
            b"stream_id" => 41,
            _ => return None,
        },
        10 => match key {
            b"shared_mem" => 15,
            b"incomplete" => 9,
            b"entry_lost" => 10,
            _ => return None,
        },
        11 => match key {
            b"duration_us" => 7,
            _ => return None,
        },
        12 => match key {
            b"sm_clock_mhz" => 35,
            b"util_gpu_pct" => 37,
            b"util_mem_pct" => 38,
            _ => return None,
        },
        13 => match key {
            b"mem_clock_mhz" => 36,
            b"graph_node_id" => 46,
            _ => return None,
        },
        14 => match key {
            b"correlation_id" => 42,
            _ => return None,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    /// Every field of RawLine, in the order of its bits.
    #[test]
    fn every_field_has_its_bit() {
        let fields = [
            "type",
            "ts",
            "end_ts",
            "pid",
            "tid",
            "op",
            "name",
            "duration_us",
            "ret",
            "incomplete",
            "entry_lost",
            "error",
            "kernel",
            "grid",
            "block",
            "shared_mem",
            "stream",
            "size",
            "direction",
            "event",
            "cpu",
            "seq",
            "exit_cpu",
            "exit_seq",
            "child",
            "filename",
            "args",
            "cuda_call",
            "status",
            "errno",
            "label",
            "tokens",
            "gpu",
            "energy_mj",
            "power_mw",
            "sm_clock_mhz",
            "mem_clock_mhz",
            "util_gpu_pct",
            "util_mem_pct",
            "temp_c",
            "device",
            "stream_id",
            "correlation_id",
            "rank",
            "capture",
            "graph_id",
            "graph_node_id",
            "stack",
        ];
        for (i, f) in fields.iter().enumerate() {
            assert_eq!(super::field_bit(f.as_bytes()), Some(i as u32), "{f}");
        }
        for f in ["", "func", "Type", "tss", "args ", "exit_cpuX"] {
            assert_eq!(super::field_bit(f.as_bytes()), None, "{f}");
        }
    }
}
