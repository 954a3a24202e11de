//! Struct-layout primitives shared by the frontend table (`escapes.rs`) and the
//! UVM table (`uvm.rs`): a field list with byte offsets, and the reader that
//! turns the captured entry/exit bytes into JSON values without ever indexing
//! out of bounds.
//!
//! All layouts are x86-64 (LP64), little-endian, as the NVIDIA headers compile.

use serde_json::{Map, Value};

use super::{classes, controls};

/// How a field is read and rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Unsigned integers, rendered as JSON numbers.
    U8,
    U16,
    U32,
    U64,
    /// Signed integers (fds, NUMA nodes, `NvS16`), rendered as JSON numbers.
    I16,
    I32,
    /// `NvBool` (one byte), rendered as `true`/`false`.
    Bool,
    /// A 32-bit flag word or opaque id, rendered `"0x…"`.
    Hex32,
    /// A 64-bit flag word or opaque id, rendered `"0x…"`.
    Hex64,
    /// `NvHandle`, rendered `"0x%08x"`.
    Handle,
    /// `NvP64` / a user virtual address, rendered `"0x…"`.
    Ptr,
    /// An RM class id (`hClass`): `"0x%04x"` plus `<key>_name` (null when unknown).
    Class,
    /// An RM control command id (`NVOS54.cmd`): `"0x%08x"` plus `<key>_name`
    /// and the `ctrl_*` routing fields derived from the id.
    Cmd,
    /// `NvProcessorUuid` (16 bytes), rendered `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    Uuid,
    /// `char[n]`, rendered up to the first NUL (lossy UTF-8).
    CStr(usize),
}

impl Kind {
    /// How many bytes the field occupies.
    pub(crate) const fn len(self) -> usize {
        match self {
            Kind::U8 | Kind::Bool => 1,
            Kind::U16 | Kind::I16 => 2,
            Kind::U32 | Kind::I32 | Kind::Hex32 | Kind::Handle | Kind::Class | Kind::Cmd => 4,
            Kind::U64 | Kind::Hex64 | Kind::Ptr => 8,
            Kind::Uuid => 16,
            Kind::CStr(n) => n,
        }
    }
}

/// Which capture a field is meaningful in: what the caller passed (entry),
/// what the driver returned (exit), or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    /// `[IN]`: read from the entry bytes only.
    In,
    /// `[OUT]`: read from the exit bytes only (absent when there is no exit capture).
    Out,
    /// `[IN/OUT]`: the exit value when there is an exit capture, else the entry
    /// value; the entry value is also kept as `<key>_in` when it differs (or when
    /// the exit capture is too short to hold the field).
    InOut,
}

/// One field of a parameter struct. `key` is the C field name, except that
/// `hClass` is keyed `class` and `paramsSize`/`paramSize` are keyed `params_size`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field {
    pub key: &'static str,
    pub off: usize,
    pub kind: Kind,
    pub dir: Dir,
}

/// Shorthand for table rows.
pub(crate) const fn f(key: &'static str, off: usize, kind: Kind, dir: Dir) -> Field {
    Field { key, off, kind, dir }
}

/// A captured parameter buffer: the first bytes of the struct (`head`, from
/// offset 0) and optionally a second window further in (`tail`, at its offset),
/// for structs larger than the eBPF copy cap.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct View<'a> {
    pub head: &'a [u8],
    pub tail: Option<(usize, &'a [u8])>,
}

impl<'a> View<'a> {
    pub(crate) fn new(head: &'a [u8], tail: Option<(usize, &'a [u8])>) -> Self {
        View { head, tail }
    }

    /// A view of the bytes from `start` on (used for the struct behind an XFER header).
    pub(crate) fn skip(&self, start: usize) -> View<'a> {
        let head = self.head.get(start..).unwrap_or(&[]);
        let tail = self.tail.and_then(|(off, bytes)| off.checked_sub(start).map(|o| (o, bytes)));
        View { head, tail }
    }

    /// `len` bytes at `off`, when one window holds all of them.
    pub(crate) fn get(&self, off: usize, len: usize) -> Option<&'a [u8]> {
        let end = off.checked_add(len)?;
        if let Some(b) = self.head.get(off..end) {
            return Some(b);
        }
        let (toff, bytes) = self.tail?;
        let rel = off.checked_sub(toff)?;
        bytes.get(rel..rel.checked_add(len)?)
    }

    pub(crate) fn u32(&self, off: usize) -> Option<u32> {
        self.get(off, 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn u64(&self, off: usize) -> Option<u64> {
        self.get(off, 8).map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }
}

/// Decoding state for one ioctl: the two captures and what has been found so far.
pub(crate) struct Ctx<'a> {
    pub entry: View<'a>,
    pub exit: Option<View<'a>>,
    pub fields: Map<String, Value>,
    pub truncated: bool,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(entry: View<'a>, exit: Option<View<'a>>) -> Self {
        Ctx { entry, exit, fields: Map::new(), truncated: false }
    }

    pub(crate) fn set(&mut self, key: &str, v: impl Into<Value>) {
        self.fields.insert(key.to_owned(), v.into());
    }

    /// Bytes from the entry capture; a miss marks the decode truncated.
    pub(crate) fn entry_bytes(&mut self, off: usize, len: usize) -> Option<&'a [u8]> {
        let b = self.entry.get(off, len);
        self.truncated |= b.is_none();
        b
    }

    /// Bytes from the exit capture; a miss marks the decode truncated, while a
    /// missing exit capture is simply `None`.
    pub(crate) fn exit_bytes(&mut self, off: usize, len: usize) -> Option<&'a [u8]> {
        let exit = self.exit?;
        let b = exit.get(off, len);
        self.truncated |= b.is_none();
        b
    }

    pub(crate) fn entry_u32(&mut self, off: usize) -> Option<u32> {
        self.entry_bytes(off, 4).map(le32)
    }
    pub(crate) fn entry_u64(&mut self, off: usize) -> Option<u64> {
        self.entry_bytes(off, 8).map(le64)
    }
    pub(crate) fn exit_u32(&mut self, off: usize) -> Option<u32> {
        self.exit_bytes(off, 4).map(le32)
    }

    /// Decodes every field of `fields` into `self.fields`.
    pub(crate) fn apply(&mut self, fields: &[Field]) {
        for fld in fields {
            let len = fld.kind.len();
            let (val, val_in) = match fld.dir {
                Dir::In => (self.entry_bytes(fld.off, len), None),
                Dir::Out => (self.exit_bytes(fld.off, len), None),
                Dir::InOut => {
                    let i = self.entry_bytes(fld.off, len);
                    match self.exit {
                        Some(_) => {
                            let o = self.exit_bytes(fld.off, len);
                            match (o, i) {
                                (Some(o), Some(i)) if o != i => (Some(o), Some(i)),
                                (Some(o), _) => (Some(o), None),
                                // Exit captured but short: the result is unknown.
                                (None, i) => (None, i),
                            }
                        }
                        None => (i, None),
                    }
                }
            };
            if let Some(bytes) = val {
                render_into(&mut self.fields, fld.key, fld.kind, bytes);
            }
            if let Some(bytes) = val_in {
                self.fields.insert(format!("{}_in", fld.key), render(fld.kind, bytes));
            }
        }
    }

    /// Reads the struct's main `NV_STATUS` at `off`: from the exit capture when
    /// there is one, else from the entry bytes (then `status_from: "entry"` is set,
    /// as the entry value is only what the caller passed in).
    pub(crate) fn status(&mut self, off: usize) -> Option<u32> {
        if self.exit.is_some() {
            self.exit_u32(off)
        } else {
            let s = self.entry_u32(off);
            if s.is_some() {
                self.set("status_from", "entry");
            }
            s
        }
    }
}

pub(crate) fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

pub(crate) fn le64(b: &[u8]) -> u64 {
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

pub(crate) use crate::decode::args::hex;

pub(crate) fn handle(v: u32) -> Value {
    Value::String(format!("{v:#010x}"))
}

/// Renders `bytes` (exactly `kind.len()` long) as one JSON value.
pub(crate) fn render(kind: Kind, bytes: &[u8]) -> Value {
    match kind {
        Kind::U8 => bytes[0].into(),
        Kind::Bool => (bytes[0] != 0).into(),
        Kind::U16 => u16::from_le_bytes([bytes[0], bytes[1]]).into(),
        Kind::I16 => i16::from_le_bytes([bytes[0], bytes[1]]).into(),
        Kind::U32 => le32(bytes).into(),
        Kind::I32 => (le32(bytes) as i32).into(),
        Kind::U64 => le64(bytes).into(),
        Kind::Hex32 => hex(le32(bytes).into()),
        Kind::Hex64 | Kind::Ptr => hex(le64(bytes)),
        Kind::Handle | Kind::Cmd => handle(le32(bytes)),
        Kind::Class => Value::String(format!("{:#06x}", le32(bytes))),
        Kind::Uuid => Value::String(uuid(bytes)),
        Kind::CStr(_) => {
            let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
            Value::String(String::from_utf8_lossy(&bytes[..end]).into_owned())
        }
    }
}

/// Renders a field and the values derived from it (names of ids).
pub(crate) fn render_into(out: &mut Map<String, Value>, key: &str, kind: Kind, bytes: &[u8]) {
    out.insert(key.to_owned(), render(kind, bytes));
    match kind {
        Kind::Class => {
            out.insert(format!("{key}_name"), classes::class_name(le32(bytes)).into());
        }
        Kind::Cmd => {
            let cmd = le32(bytes);
            out.insert(format!("{key}_name"), controls::control_name(cmd).into());
            controls::control_route(cmd).insert_into(out);
        }
        _ => {}
    }
}

/// `NvProcessorUuid` bytes in memory order, as nvidia-smi prints them (without "GPU-").
pub(crate) use tracer_format::hex::uuid;
