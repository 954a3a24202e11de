//! Parsing of raw ring-buffer records (user side). Input is untrusted in the
//! sense that a short or unknown record must give an error, never a panic.
use crate::event::*;

/// One decoded record, borrowing variable parts from the input bytes.
#[derive(Debug, Clone, Copy)]
pub enum Record<'a> {
    Enter {
        hdr: Header,
        args: [u64; MAX_ARGS],
        /// Captured string (without the NUL), if the function has one.
        string: Option<&'a [u8]>,
        /// True when the string filled the capture buffer (possibly cut).
        string_truncated: bool,
        /// Captured struct bytes, if the function has one.
        blob: Option<&'a [u8]>,
        nattrs: u32,
        /// A launch's parameter bytes (`--replayable` launch records).
        params: Option<Params<'a>>,
    },
    Exit {
        x: CallExit,
        /// The string argument, when it could only be read at return.
        string: Option<&'a [u8]>,
        string_truncated: bool,
    },
    Fork(ProcFork),
    Exec {
        hdr: Header,
        filename: &'a [u8],
    },
    ProcExit(ProcExit),
    IoctlEnter {
        r: IoctlEnter,
        data: &'a [u8],
        tail: &'a [u8],
    },
    IoctlExit {
        r: IoctlExit,
        data: &'a [u8],
        tail: &'a [u8],
    },
    NvFile {
        r: NvFileOp,
        path: &'a [u8],
    },
    Switch(SchedSwitch),
    Waking(SchedWaking),
    /// The stack of the thread's next record ([`crate::stack`]).
    Stack(Stack<'a>),
}

/// A decoded [`crate::stack::StackRec`]: its frames as the bytes that
/// follow the fixed part (read with [`Stack::native`], [`Stack::py`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stack<'a> {
    pub hdr: Header,
    /// [`crate::stack::site`].
    pub site: u32,
    /// `bpf_get_stack`'s errno (0: none).
    pub native_err: u32,
    /// [`crate::stack::py_status`].
    pub py_status: u32,
    native: &'a [u8],
    py: &'a [u8],
}

impl<'a> Stack<'a> {
    /// Native return addresses, leaf first.
    pub fn native(&self) -> impl Iterator<Item = u64> + 'a {
        self.native.chunks_exact(8).map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
    }
    pub fn native_len(&self) -> usize {
        self.native.len() / 8
    }
    /// Python frames, innermost first.
    pub fn py(&self) -> impl Iterator<Item = crate::stack::PyFrame> + 'a {
        self.py.chunks_exact(16).map(|c| {
            let u = |o: usize| {
                u64::from_le_bytes([c[o], c[o + 1], c[o + 2], c[o + 3], c[o + 4], c[o + 5], c[o + 6], c[o + 7]])
            };
            crate::stack::PyFrame { code: u(0), instr: u(8) }
        })
    }
    pub fn py_len(&self) -> usize {
        self.py.len() / 16
    }
}

/// The parameter part of a [`crate::params::LaunchParams`] record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params<'a> {
    pub layout: u32,
    /// [`crate::params::status`].
    pub status: u32,
    pub data: &'a [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer bytes than the record type needs.
    Short {
        kind: u16,
        need: usize,
        got: usize,
    },
    UnknownKind(u16),
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DecodeError::Short { kind, need, got } => {
                write!(f, "record of kind {kind} is {got} bytes, expected at least {need}")
            }
            DecodeError::UnknownKind(k) => write!(f, "unknown record kind {k}"),
        }
    }
}

fn read<T: Copy>(b: &[u8], kind: u16) -> Result<T, DecodeError> {
    let need = core::mem::size_of::<T>();
    if b.len() < need {
        return Err(DecodeError::Short { kind, need, got: b.len() });
    }
    // SAFETY: length checked; T is a plain-old-data repr(C) record.
    Ok(unsafe { core::ptr::read_unaligned(b.as_ptr() as *const T) })
}

fn cstr(data: &[u8], len: usize) -> &[u8] {
    let d = &data[..len.min(data.len())];
    match d.iter().position(|&c| c == 0) {
        Some(n) => &d[..n],
        None => d,
    }
}

/// The head (`len` bytes, or all of a capture without tail) and tail window.
fn ioctl_parts(d: &[u8], len: u32, tail_len: u32) -> (&[u8], &[u8]) {
    if tail_len == 0 {
        (&d[..(len as usize).min(IOCTL_CAP)], &[])
    } else {
        let head = (len as usize).min(IOCTL_HEAD_CAP);
        let tail = (tail_len as usize).min(IOCTL_TAIL_CAP);
        (&d[..head], &d[IOCTL_HEAD_CAP..IOCTL_HEAD_CAP + tail])
    }
}

pub fn parse(b: &[u8]) -> Result<Record<'_>, DecodeError> {
    let hdr: Header = read(b, 0)?;
    let kind = hdr.kind;
    match EventKind::from_u16(kind) {
        Some(EventKind::CallEnter) => {
            let r: CallEnter = read(b, kind)?;
            Ok(Record::Enter {
                hdr,
                args: r.args,
                string: None,
                string_truncated: false,
                blob: None,
                nattrs: 0,
                params: None,
            })
        }
        Some(EventKind::CallEnterStr) => {
            read::<CallEnterStr>(b, kind)?;
            let off = core::mem::offset_of!(CallEnterStr, data);
            let args = read::<CallEnter>(b, kind)?.args;
            let len = u32::from_le_bytes([b[off - 8], b[off - 7], b[off - 6], b[off - 5]]) as usize;
            let data = &b[off..off + STR_CAP];
            let string = if len == 0 { None } else { Some(cstr(data, len)) };
            Ok(Record::Enter {
                hdr,
                args,
                string,
                string_truncated: len >= STR_CAP,
                blob: None,
                nattrs: 0,
                params: None,
            })
        }
        Some(EventKind::CallEnterBlob) => {
            read::<CallEnterBlob>(b, kind)?;
            let off = core::mem::offset_of!(CallEnterBlob, data);
            let args = read::<CallEnter>(b, kind)?.args;
            let len = u32::from_le_bytes([b[off - 8], b[off - 7], b[off - 6], b[off - 5]]) as usize;
            let nattrs = u32::from_le_bytes([b[off - 4], b[off - 3], b[off - 2], b[off - 1]]);
            let blob = if len == 0 { None } else { Some(&b[off..off + len.min(BLOB_CAP)]) };
            Ok(Record::Enter { hdr, args, string: None, string_truncated: false, blob, nattrs, params: None })
        }
        Some(EventKind::LaunchParams) => {
            use crate::params::{LaunchParams, PARAMS_CAP, PARAMS_OFFSET};
            // Variable length: the fixed part, then `len` bytes.
            if b.len() < PARAMS_OFFSET {
                return Err(DecodeError::Short { kind, need: PARAMS_OFFSET, got: b.len() });
            }
            let args = read::<CallEnter>(b, kind)?.args;
            let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
            let blob_len = u32_at(core::mem::offset_of!(LaunchParams, blob_len)) as usize;
            let nattrs = u32_at(core::mem::offset_of!(LaunchParams, nattrs));
            let layout = u32_at(core::mem::offset_of!(LaunchParams, layout));
            let status = u32_at(core::mem::offset_of!(LaunchParams, status));
            let len = u32_at(core::mem::offset_of!(LaunchParams, len)) as usize;
            let need = PARAMS_OFFSET + len;
            if len > PARAMS_CAP || b.len() < need {
                return Err(DecodeError::Short { kind, need, got: b.len() });
            }
            let boff = core::mem::offset_of!(LaunchParams, blob);
            let blob = if blob_len == 0 { None } else { Some(&b[boff..boff + blob_len.min(BLOB_CAP)]) };
            let params = Some(Params { layout, status, data: &b[PARAMS_OFFSET..need] });
            Ok(Record::Enter { hdr, args, string: None, string_truncated: false, blob, nattrs, params })
        }
        Some(EventKind::CallExit) => Ok(Record::Exit { x: read(b, kind)?, string: None, string_truncated: false }),
        Some(EventKind::CallExitStr) => {
            let r: CallExitStr = read(b, kind)?;
            let off = core::mem::offset_of!(CallExitStr, data);
            let len = r.len as usize;
            let string = if len == 0 { None } else { Some(cstr(&b[off..off + STR_CAP], len)) };
            Ok(Record::Exit { x: r.exit, string, string_truncated: len >= STR_CAP })
        }
        Some(EventKind::ProcFork) => Ok(Record::Fork(read(b, kind)?)),
        Some(EventKind::ProcExec) => {
            let r: ProcExec = read(b, kind)?;
            let off = core::mem::offset_of!(ProcExec, filename);
            let filename = cstr(&b[off..off + PATH_CAP], r.len as usize);
            Ok(Record::Exec { hdr, filename })
        }
        Some(EventKind::ProcExit) => Ok(Record::ProcExit(read(b, kind)?)),
        Some(EventKind::IoctlEnter) => {
            let r: IoctlEnter = read(b, kind)?;
            let off = core::mem::offset_of!(IoctlEnter, data);
            let (data, tail) = ioctl_parts(&b[off..off + IOCTL_CAP], r.len, r.tail_len);
            Ok(Record::IoctlEnter { r, data, tail })
        }
        Some(EventKind::IoctlExit) => {
            let r: IoctlExit = read(b, kind)?;
            let off = core::mem::offset_of!(IoctlExit, data);
            let (data, tail) = ioctl_parts(&b[off..off + IOCTL_CAP], r.len, r.tail_len);
            Ok(Record::IoctlExit { r, data, tail })
        }
        Some(EventKind::NvFileOp) => {
            let r: NvFileOp = read(b, kind)?;
            let off = core::mem::offset_of!(NvFileOp, path);
            let path = cstr(&b[off..off + NVPATH_CAP], NVPATH_CAP);
            Ok(Record::NvFile { r, path })
        }
        Some(EventKind::SchedSwitch) => Ok(Record::Switch(read(b, kind)?)),
        Some(EventKind::SchedWaking) => Ok(Record::Waking(read(b, kind)?)),
        Some(EventKind::Stack) => {
            use crate::stack::{NATIVE_CAP, PY_CAP, STACK_REC_PY_OFFSET, StackRec, stack_rec_len};
            // Variable length: the fixed part, then `py_n` frames.
            if b.len() < STACK_REC_PY_OFFSET {
                return Err(DecodeError::Short { kind, need: STACK_REC_PY_OFFSET, got: b.len() });
            }
            let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
            let native_n = (u32_at(core::mem::offset_of!(StackRec, native_n)) as usize).min(NATIVE_CAP);
            let py_n = u32_at(core::mem::offset_of!(StackRec, py_n)) as usize;
            let need = stack_rec_len(py_n);
            if py_n > PY_CAP || b.len() < need {
                return Err(DecodeError::Short { kind, need, got: b.len() });
            }
            let noff = core::mem::offset_of!(StackRec, native);
            Ok(Record::Stack(Stack {
                hdr,
                site: u32_at(core::mem::offset_of!(StackRec, site)),
                native_err: u32_at(core::mem::offset_of!(StackRec, native_err)),
                py_status: u32_at(core::mem::offset_of!(StackRec, py_status)),
                native: &b[noff..noff + 8 * native_n],
                py: &b[STACK_REC_PY_OFFSET..need],
            }))
        }
        None => Err(DecodeError::UnknownKind(kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<T>(v: &T) -> &[u8] {
        unsafe { core::slice::from_raw_parts(v as *const T as *const u8, core::mem::size_of::<T>()) }
    }

    fn hdr(kind: EventKind) -> Header {
        Header { kind: kind as u16, func: 9, cpu: 1, seq: 42, ts: 1000, pid: 10, tid: 11 }
    }

    #[test]
    fn enter_str_round_trip() {
        let mut r = CallEnterStr {
            hdr: hdr(EventKind::CallEnterStr),
            args: [7; MAX_ARGS],
            len: 6,
            _pad: 0,
            data: [0; STR_CAP],
        };
        r.data[..6].copy_from_slice(b"hello\0");
        match parse(bytes(&r)).unwrap() {
            Record::Enter { hdr, args, string, string_truncated, blob, .. } => {
                assert_eq!(hdr.seq, 42);
                assert_eq!(args, [7; MAX_ARGS]);
                assert_eq!(string, Some(&b"hello"[..]));
                assert!(!string_truncated);
                assert!(blob.is_none());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn blob_len_is_bounded() {
        let mut r = CallEnterBlob {
            hdr: hdr(EventKind::CallEnterBlob),
            args: [0; MAX_ARGS],
            len: 9999,
            nattrs: 2,
            data: [3; BLOB_CAP],
        };
        r.data[0] = 1;
        match parse(bytes(&r)).unwrap() {
            Record::Enter { blob: Some(b), nattrs, .. } => {
                assert_eq!(b.len(), BLOB_CAP);
                assert_eq!(nattrs, 2);
                assert_eq!(b[0], 1);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn launch_params_are_variable_length() {
        use crate::params::{LaunchParams, PARAMS_CAP, PARAMS_OFFSET, status};
        let mut r = LaunchParams {
            hdr: hdr(EventKind::LaunchParams),
            args: [5; MAX_ARGS],
            blob_len: 0,
            nattrs: 0,
            blob: [0; BLOB_CAP],
            layout: 7,
            status: status::LAYOUT,
            len: 12,
            _pad: 0,
            data: [0; 2 * PARAMS_CAP],
        };
        r.data[..12].copy_from_slice(b"abcdefghijkl");
        let b = &bytes(&r)[..PARAMS_OFFSET + 12];
        match parse(b).unwrap() {
            Record::Enter { args, blob, params: Some(p), .. } => {
                assert_eq!(args, [5; MAX_ARGS]);
                assert!(blob.is_none());
                assert_eq!(p, Params { layout: 7, status: status::LAYOUT, data: b"abcdefghijkl" });
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse(&b[..PARAMS_OFFSET + 11]).unwrap_err(),
            DecodeError::Short { kind: 12, need: PARAMS_OFFSET + 12, got: PARAMS_OFFSET + 11 }
        );
        r.len = u32::MAX;
        assert!(parse(&bytes(&r)[..PARAMS_OFFSET]).is_err());
    }

    #[test]
    fn stacks_are_variable_length() {
        use crate::stack::{NATIVE_CAP, PY_CAP, PyFrame, StackRec, py_status, site, stack_rec_len};
        let mut r = StackRec {
            hdr: hdr(EventKind::Stack),
            site: site::CALL,
            native_n: 3,
            native_err: 0,
            py_status: py_status::OK,
            py_n: 2,
            _pad: 0,
            native: [0; NATIVE_CAP],
            py: [PyFrame::default(); PY_CAP],
        };
        r.native[..3].copy_from_slice(&[0x1000, 0x2000, 0x3000]);
        r.py[0] = PyFrame { code: 0x7f00_0001, instr: 0x7f10 };
        r.py[1] = PyFrame { code: 0x7e00, instr: 0x7e20 };
        let b = &bytes(&r)[..stack_rec_len(2)];
        match parse(b).unwrap() {
            Record::Stack(s) => {
                assert_eq!((s.site, s.py_status, s.native_err), (site::CALL, py_status::OK, 0));
                assert!(s.native().eq([0x1000, 0x2000, 0x3000]));
                assert!(s.py().eq([r.py[0], r.py[1]]));
            }
            other => panic!("{other:?}"),
        }
        assert!(parse(&b[..b.len() - 1]).is_err());
        r.py_n = PY_CAP as u32 + 1;
        assert!(parse(bytes(&r)).is_err());
        r.py_n = 0;
        r.native_n = u32::MAX;
        match parse(&bytes(&r)[..stack_rec_len(0)]).unwrap() {
            Record::Stack(s) => assert_eq!((s.native_len(), s.py_len()), (NATIVE_CAP, 0)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn short_and_unknown_records_are_errors() {
        let r = CallExit { hdr: hdr(EventKind::CallExit), ret: 0, out: [0; 2], out_ok: 0, flags: 0 };
        let b = bytes(&r);
        assert_eq!(parse(&b[..40]).unwrap_err(), DecodeError::Short { kind: 4, need: 64, got: 40 });
        assert!(matches!(parse(&b[..3]), Err(DecodeError::Short { kind: 0, .. })));
        let mut h = hdr(EventKind::CallExit);
        h.kind = 77;
        assert_eq!(parse(bytes(&h)).unwrap_err(), DecodeError::UnknownKind(77));
        // every prefix of every record type is an error or a record, never a panic
        let e = ProcExec { hdr: hdr(EventKind::ProcExec), len: 500, _pad: 0, filename: [b'a'; PATH_CAP] };
        for n in 0..bytes(&e).len() {
            let _ = parse(&bytes(&e)[..n]);
        }
        match parse(bytes(&e)).unwrap() {
            Record::Exec { filename, .. } => assert_eq!(filename.len(), PATH_CAP),
            other => panic!("{other:?}"),
        }
    }
}
