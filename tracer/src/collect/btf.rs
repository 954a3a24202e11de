//! Byte offsets of kernel struct fields, from the kernel's BTF
//! (/sys/kernel/btf/vmlinux): the raw scheduler tracepoints hand tracer's
//! programs `struct task_struct *` pointers, and aya's programs have no
//! CO-RE relocations, so the offsets of `pid`, `tgid` and `comm` are read
//! here and given to the programs as globals.
//!
//! The BTF format (Documentation/bpf/btf.rst): a header, a type section of
//! `struct btf_type` records each followed by kind-specific data, and a
//! string section.
use anyhow::{Context, bail};

const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;

struct Type {
    name_off: u32,
    kind: u32,
    kind_flag: bool,
    /// (name_off, type id, offset field) for structs and unions.
    members: Vec<(u32, u32, u32)>,
}

pub struct Btf {
    types: Vec<Type>,
    strings: Vec<u8>,
}

fn u32_at(b: &[u8], o: usize) -> anyhow::Result<u32> {
    b.get(o..o + 4).map(|s| u32::from_le_bytes(s.try_into().unwrap())).context("BTF data cut short")
}

impl Btf {
    pub fn parse(b: &[u8]) -> anyhow::Result<Btf> {
        if b.len() < 24 || u16::from_le_bytes([b[0], b[1]]) != 0xeb9f {
            bail!("not BTF data (no 0xeB9F magic)");
        }
        let hdr_len = u32_at(b, 4)? as usize;
        let (type_off, type_len) = (u32_at(b, 8)? as usize, u32_at(b, 12)? as usize);
        let (str_off, str_len) = (u32_at(b, 16)? as usize, u32_at(b, 20)? as usize);
        let ts = hdr_len + type_off;
        let types_b = b.get(ts..ts + type_len).context("BTF type section out of bounds")?;
        let ss = hdr_len + str_off;
        let strings = b.get(ss..ss + str_len).context("BTF string section out of bounds")?.to_vec();
        // Type id 0 is void.
        let mut types = vec![Type { name_off: 0, kind: 0, kind_flag: false, members: vec![] }];
        let mut o = 0;
        while o + 12 <= types_b.len() {
            let name_off = u32_at(types_b, o)?;
            let info = u32_at(types_b, o + 4)?;
            let vlen = (info & 0xffff) as usize;
            let kind = (info >> 24) & 0x1f;
            let kind_flag = info >> 31 == 1;
            o += 12;
            let extra = match kind {
                1 | 14 | 17 => 4,          // int, var, decl_tag
                3 => 12,                   // array
                4 | 5 => 12 * vlen,        // struct, union
                6 | 13 => 8 * vlen,        // enum, func_proto
                15 | 19 => 12 * vlen,      // datasec, enum64
                2 | 7..=12 | 16 | 18 => 0, // ptr, fwd, typedef, qualifiers, func, float, type_tag
                k => bail!("unknown BTF kind {k}"),
            };
            let mut members = vec![];
            if kind == KIND_STRUCT || kind == KIND_UNION {
                for m in 0..vlen {
                    let p = o + 12 * m;
                    members.push((u32_at(types_b, p)?, u32_at(types_b, p + 4)?, u32_at(types_b, p + 8)?));
                }
            }
            o += extra;
            types.push(Type { name_off, kind, kind_flag, members });
        }
        Ok(Btf { types, strings })
    }

    pub fn from_sys_fs() -> anyhow::Result<Btf> {
        let p = "/sys/kernel/btf/vmlinux";
        Btf::parse(&std::fs::read(p).with_context(|| format!("reading {p} (kernel BTF)"))?)
    }

    fn name(&self, off: u32) -> &str {
        let s = self.strings.get(off as usize..).unwrap_or(&[]);
        let n = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        std::str::from_utf8(&s[..n]).unwrap_or("")
    }

    /// Byte offset of `field` in struct `st`, looking into anonymous struct
    /// and union members (randomized layouts put fields in one).
    pub fn field_offset(&self, st: &str, field: &str) -> anyhow::Result<u32> {
        let id = self
            .types
            .iter()
            .position(|t| t.kind == KIND_STRUCT && self.name(t.name_off) == st && !t.members.is_empty())
            .with_context(|| format!("kernel BTF has no struct {st}"))?;
        self.find(id, field, 0, 0).with_context(|| format!("kernel BTF: struct {st} has no field {field}"))
    }

    fn find(&self, id: usize, field: &str, base_bits: u32, depth: u32) -> Option<u32> {
        let t = self.types.get(id)?;
        for &(name_off, ty, off) in &t.members {
            let bits = base_bits + if t.kind_flag { off & 0xff_ffff } else { off };
            let name = self.name(name_off);
            if name == field {
                return Some(bits / 8);
            }
            if name.is_empty() && depth < 4 {
                let inner = self.resolve(ty as usize)?;
                if let Some(o) = self.find(inner, field, bits, depth + 1) {
                    return Some(o);
                }
            }
        }
        None
    }

    /// An anonymous member's type: a struct or union (directly, as C
    /// writes anonymous members).
    fn resolve(&self, id: usize) -> Option<usize> {
        matches!(self.types.get(id)?.kind, KIND_STRUCT | KIND_UNION).then_some(id)
    }
}

/// `struct task_struct` offsets the raw scheduler programs read.
#[derive(Clone, Copy, Debug)]
pub struct TaskOffsets {
    pub pid: u32,
    pub tgid: u32,
    pub comm: u32,
}

pub fn task_offsets() -> anyhow::Result<TaskOffsets> {
    let b = Btf::from_sys_fs()?;
    Ok(TaskOffsets {
        pid: b.field_offset("task_struct", "pid")?,
        tgid: b.field_offset("task_struct", "tgid")?,
        comm: b.field_offset("task_struct", "comm")?,
    })
}

/// Offset of `thread.fsbase` in `struct task_struct` (x86-64): the fs
/// base of a task, which is `pthread_self()` of its thread.
pub fn fsbase_offset() -> anyhow::Result<u32> {
    let b = Btf::from_sys_fs()?;
    Ok(b.field_offset("task_struct", "thread")? + b.field_offset("thread_struct", "fsbase")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-made BTF: int, struct inner { int a; int b; }, struct task_struct
    /// { int x; <anon inner at 64 bits>; int pid (bit 128); }.
    fn sample() -> Vec<u8> {
        let strings = b"\0int\0inner\0a\0b\0task_struct\0x\0pid\0".to_vec();
        let off = |s: &str| {
            strings
                .windows(s.len() + 2)
                .position(|w| &w[1..w.len() - 1] == s.as_bytes() && w[0] == 0 && w[w.len() - 1] == 0)
                .unwrap() as u32
                + 1
        };
        let mut t = vec![];
        let mut put = |v: u32| t.extend_from_slice(&v.to_le_bytes());
        // 1: int
        put(off("int"));
        put(1 << 24);
        put(4);
        put(32);
        // 2: struct inner { a @0, b @32 }
        put(off("inner"));
        put((4 << 24) | 2);
        put(8);
        put(off("a"));
        put(1);
        put(0);
        put(off("b"));
        put(1);
        put(32);
        // 3: struct task_struct { x @0, <anon: inner> @64, pid @128 }
        put(off("task_struct"));
        put((4 << 24) | 3);
        put(24);
        put(off("x"));
        put(1);
        put(0);
        put(0);
        put(2);
        put(64);
        put(off("pid"));
        put(1);
        put(128);
        let mut b = vec![];
        b.extend_from_slice(&0xeb9fu16.to_le_bytes());
        b.extend_from_slice(&[1, 0]);
        for v in [24u32, 0, t.len() as u32, t.len() as u32, strings.len() as u32] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&t);
        b.extend_from_slice(&strings);
        b
    }

    #[test]
    fn offsets_including_anonymous_members() {
        let b = Btf::parse(&sample()).unwrap();
        assert_eq!(b.field_offset("task_struct", "x").unwrap(), 0);
        assert_eq!(b.field_offset("task_struct", "b").unwrap(), 12, "anonymous member at 8 bytes + b at 4");
        assert_eq!(b.field_offset("task_struct", "pid").unwrap(), 16);
        assert!(b.field_offset("task_struct", "tgid").is_err());
        assert!(Btf::parse(b"not btf at all, long enough..").is_err());
    }

    #[test]
    fn this_kernel() {
        // Every kernel tracer runs on has BTF (the raw scheduler programs need it).
        if std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
            let o = task_offsets().unwrap();
            assert!(o.pid > 0 && o.tgid == o.pid + 4, "{o:?}");
            assert!(o.comm > o.tgid, "{o:?}");
        }
    }
}
