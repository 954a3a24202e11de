//! CPython line tables: the source line of an instruction (pure).
//!
//! - 3.11+ (`co_linetable`, the location table, Objects/locations.md):
//!   entries of `(code << 3) | (length - 1)` with bit 7 set, `length` code
//!   units each; code 15 no location, 14 long form (signed varint line
//!   delta, then end line, column, end column varints), 13 no column
//!   (signed varint line delta), 10..12 one line (`code - 10` the line
//!   delta, two column bytes), 0..9 short form (same line, one byte).
//! - 3.10 (`co_linetable`): pairs of (byte-offset delta: u8, line delta:
//!   i8, -128 = no line), in bytes of code.
//!
//! Both start at `co_firstlineno`; a negative instruction index (a frame
//! not started yet) is the first line, as `PyCode_Addr2Line` says.

/// The line of code unit `index` from a 3.11+ location table; None: no
/// location (or past the table).
pub fn line_311(table: &[u8], first_line: i64, index: i64) -> Option<i64> {
    if index < 0 {
        return Some(first_line);
    }
    let mut line = first_line;
    let mut at: i64 = 0;
    let mut i = 0;
    while i < table.len() {
        let b = table[i];
        if b & 0x80 == 0 {
            // Not the first byte of an entry: a corrupt table.
            return None;
        }
        i += 1;
        let code = (b >> 3) & 15;
        let len = i64::from(b & 7) + 1;
        let this_line = match code {
            15 => None,
            14 => {
                line += svarint(table, &mut i)?;
                // end line, column, end column
                for _ in 0..3 {
                    varint(table, &mut i)?;
                }
                Some(line)
            }
            13 => {
                line += svarint(table, &mut i)?;
                Some(line)
            }
            10..=12 => {
                line += i64::from(code) - 10;
                i += 2;
                Some(line)
            }
            _ => {
                i += 1;
                Some(line)
            }
        };
        if index < at + len {
            return this_line;
        }
        at += len;
    }
    None
}

fn varint(t: &[u8], i: &mut usize) -> Option<i64> {
    let mut v: i64 = 0;
    let mut shift = 0;
    loop {
        let b = *t.get(*i)?;
        *i += 1;
        v |= i64::from(b & 63) << shift;
        shift += 6;
        if b & 64 == 0 || shift > 56 {
            return Some(v);
        }
    }
}

fn svarint(t: &[u8], i: &mut usize) -> Option<i64> {
    let v = varint(t, i)?;
    Some(if v & 1 != 0 { -(v >> 1) } else { v >> 1 })
}

/// The line of byte offset `offset` of the code from a 3.10 line table.
pub fn line_310(table: &[u8], first_line: i64, offset: i64) -> Option<i64> {
    if offset < 0 {
        return Some(first_line);
    }
    let mut line = first_line;
    let mut end: i64 = 0;
    for pair in table.chunks_exact(2) {
        let start = end;
        end += i64::from(pair[0]);
        let delta = pair[1] as i8;
        let this_line = if delta == -128 {
            None
        } else {
            line += i64::from(delta);
            Some(line)
        };
        if start < end && offset < end {
            return this_line;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_table_forms() {
        // first line 10: 2 units short form (line 10), 1 unit one-line form +2
        // (line 12), 3 units no-column form -3 (line 9), 1 unit no location,
        // 2 units long form +40 (line 49).
        let t = [
            0x80 | 1,
            0x05,
            0x80 | (12 << 3),
            4,
            9,
            0x80 | (13 << 3) | 2,
            0x07,
            0x80 | (15 << 3),
            0x80 | (14 << 3) | 1,
            0x50,
            0x01,
            0x00,
            0x02,
            0x05,
        ];
        let lines: Vec<Option<i64>> = (-1..10).map(|i| line_311(&t, 10, i)).collect();
        assert_eq!(
            lines,
            [Some(10), Some(10), Some(10), Some(12), Some(9), Some(9), Some(9), None, Some(49), Some(49), None]
        );
        // A varint continued: 0x50 0x01 is 16 + (1 << 6) = 80 → +40.
        let long = [0x80 | (14 << 3), 0x50 | 0x40, 0x01, 0, 0, 0];
        assert_eq!(line_311(&long, 1, 0), Some(1 + (16 + 64) / 2));
        assert_eq!(line_311(&[0x05], 1, 0), None, "a corrupt table");
    }

    #[test]
    fn table_310() {
        // first line 3: 6 bytes line 3, 0 bytes +100 (skipped), 4 bytes 103 - 99 = 4,
        // 2 bytes no line, 2 bytes +5 → 9.
        let t = [6, 0, 0, 100, 4, 0x9d_u8, 2, 0x80, 2, 5];
        let lines: Vec<Option<i64>> = [-2, 0, 5, 6, 9, 10, 12, 13, 14].iter().map(|&o| line_310(&t, 3, o)).collect();
        assert_eq!(lines, [Some(3), Some(3), Some(3), Some(4), Some(4), None, Some(9), Some(9), None]);
    }
}
