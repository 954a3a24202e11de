//! Decoding of captured arguments into JSON: scalar parameters, out-parameter
//! results and the structs passed by pointer (CUlaunchConfig, CUDA_MEMCPY2D/3D,
//! CUmemAllocationProp, ...). Pure functions over captured bytes.
use serde_json::{Map, Value, json};
use tracer_common::funcs::{Arg, FuncSpec};

use crate::decode::cuda_names;

/// A handle or address as a JSON string, `"0x…"`.
pub use tracer_format::hex::json as hex;

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4).map(|s| u32::from_le_bytes(s.try_into().unwrap()))
}
fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap()))
}

/// Results read through out-parameters at return.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outs {
    pub values: [u64; 2],
    pub ok: u32,
}

impl Outs {
    pub fn get(&self, slot: usize) -> Option<u64> {
        (self.ok & (1 << slot) != 0).then(|| self.values[slot])
    }
}

/// Value of one out-parameter, by its kind.
pub fn out_value(kind: Arg, v: u64) -> Value {
    match kind {
        Arg::OutHandle | Arg::OutDevPtr | Arg::OutPtr => hex(v),
        Arg::OutI32 => json!(v as u32 as i32),
        Arg::OutU32 => json!(v as u32),
        Arg::OutSize => json!(v),
        Arg::OutF32 => json!(f32::from_bits(v as u32)),
        _ => Value::Null,
    }
}

/// Everything captured for one call, in a form the decoders share.
pub struct Captured<'a> {
    pub args: &'a [u64],
    pub string: Option<&'a str>,
    pub string_truncated: bool,
    pub blob: Option<&'a [u8]>,
    pub nattrs: u32,
    /// None while the call has not returned (or its exit record was lost).
    pub outs: Option<Outs>,
}

/// The `args` object: every parameter by its cuda.h name.
pub fn decode_args(spec: &FuncSpec, c: &Captured) -> Map<String, Value> {
    let mut m = Map::new();
    let mut out_slot = 0;
    // Graph calls: the struct without the node lists that follow it.
    let blob = crate::decode::graph_structs::parts(spec, c.args, c.blob, c.nattrs).strukt;
    for (i, p) in spec.params.iter().enumerate() {
        let raw = c.args.get(i).copied().unwrap_or(0);
        let v = match p.kind {
            Arg::Handle | Arg::Ptr | Arg::DevPtr | Arg::Flags64 | Arg::Nodes => hex(raw),
            Arg::Flags => hex(raw as u32 as u64),
            Arg::U32 => json!(raw as u32),
            Arg::I32 | Arg::Device => json!(raw as u32 as i32),
            Arg::U64 | Arg::Size => json!(raw),
            Arg::MemLocation => json!({ "type": raw as u32, "id": (raw >> 32) as u32 as i32 }),
            Arg::Str => match c.string {
                Some(s) if c.string_truncated => json!(format!("{s}…")),
                Some(s) => json!(s),
                None if raw == 0 => Value::Null,
                None => json!({ "unreadable": hex(raw) }),
            },
            k if k.is_out() => {
                let slot = out_slot;
                out_slot += 1;
                match c.outs.and_then(|o| o.get(slot)) {
                    Some(v) => out_value(k, v),
                    None => Value::Null,
                }
            }
            k => match blob {
                Some(b) => decode_blob(k, b, c.nattrs),
                None if raw == 0 => Value::Null,
                None => json!({ "unreadable": hex(raw) }),
            },
        };
        m.insert(p.name.trim_end_matches('_').to_string(), v);
    }
    m
}

/// Decodes a struct argument's captured bytes.
pub fn decode_blob(kind: Arg, b: &[u8], nattrs: u32) -> Value {
    match kind {
        Arg::LaunchConfig => match LaunchConfig::parse(b, nattrs) {
            Some(cfg) => cfg.to_json(),
            None => Value::Null,
        },
        Arg::Memcpy2D | Arg::Memcpy3D => match Copy2D3D::parse(kind, b) {
            Some(c) => c.to_json(),
            None => Value::Null,
        },
        Arg::AllocProp => json!({
            "type": u32_at(b, 0),
            "requestedHandleTypes": u32_at(b, 4),
            "location": { "type": u32_at(b, 8), "id": u32_at(b, 12).map(|v| v as i32) },
            "allocFlags": u64_at(b, 24).map(hex),
        }),
        Arg::Uuid => Value::String(tracer_format::hex::uuid(b)),
        Arg::AccessDesc => json!({
            "location": { "type": u32_at(b, 0), "id": u32_at(b, 4).map(|v| v as i32) },
            "flags": u32_at(b, 8),
        }),
        Arg::KernelNode | Arg::KernelNodeV1 | Arg::MemsetNode | Arg::GraphNodeParams => {
            crate::decode::graph_structs::decode_struct(kind, b)
        }
        _ => Value::Null,
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LaunchAttr {
    pub id: u32,
    /// The 64-byte value union as 16 little-endian u32 words (first 4 kept).
    pub words: [u32; 4],
}

#[derive(Clone, Debug, PartialEq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem: u32,
    pub stream: u64,
    pub num_attrs: u32,
    pub attrs: Vec<LaunchAttr>,
}

impl LaunchConfig {
    pub fn parse(b: &[u8], nattrs: u32) -> Option<Self> {
        let w = |i: usize| u32_at(b, 4 * i);
        let mut attrs = Vec::new();
        for k in 0..nattrs.min(tracer_common::event::MAX_LAUNCH_ATTRS as u32) as usize {
            let off = 56 + 72 * k;
            attrs.push(LaunchAttr {
                id: u32_at(b, off)?,
                words: [u32_at(b, off + 8)?, u32_at(b, off + 12)?, u32_at(b, off + 16)?, u32_at(b, off + 20)?],
            });
        }
        Some(LaunchConfig {
            grid: [w(0)?, w(1)?, w(2)?],
            block: [w(3)?, w(4)?, w(5)?],
            shared_mem: w(6)?,
            stream: u64_at(b, 32)?,
            num_attrs: u32_at(b, 48)?,
            attrs,
        })
    }

    pub fn to_json(&self) -> Value {
        let attrs: Vec<Value> = self
            .attrs
            .iter()
            .map(|a| {
                let value = match a.id {
                    4 | 11 => json!(a.words[..3]),
                    2 | 8 | 10 | 6 | 14 => json!(a.words[0] as i32),
                    _ => json!(a.words),
                };
                json!({ "id": a.id, "name": cuda_names::launch_attr(a.id), "value": value })
            })
            .collect();
        json!({
            "gridDim": self.grid, "blockDim": self.block, "sharedMemBytes": self.shared_mem,
            "hStream": hex(self.stream), "numAttrs": self.num_attrs, "attrs": attrs,
        })
    }
}

/// The parts of CUDA_MEMCPY2D / CUDA_MEMCPY3D a trace needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Copy2D3D {
    pub src_type: u32,
    pub src: u64,
    pub dst_type: u32,
    pub dst: u64,
    pub width: u64,
    pub height: u64,
    pub depth: u64,
    /// Bytes from `src` / `dst` to the first byte copied (X + Y × pitch + Z × pitch × height).
    pub src_offset: u64,
    pub dst_offset: u64,
}

impl Copy2D3D {
    pub fn parse(kind: Arg, b: &[u8]) -> Option<Self> {
        // Offsets from cuda.h's struct layouts (x86-64).
        let addr = |ty: u32, host: usize, dev: usize| -> Option<u64> {
            match ty {
                1 => u64_at(b, host),
                _ => u64_at(b, dev),
            }
        };
        let offset = |x: usize, y: usize, z: Option<usize>, pitch: usize, height: Option<usize>| -> u64 {
            let g = |o: usize| u64_at(b, o).unwrap_or(0);
            let (p, rows) = (g(pitch), height.map_or(0, g));
            g(x).wrapping_add(g(y).wrapping_mul(p)).wrapping_add(z.map_or(0, g).wrapping_mul(p).wrapping_mul(rows))
        };
        if kind == Arg::Memcpy2D {
            let (st, dt) = (u32_at(b, 16)?, u32_at(b, 72)?);
            Some(Copy2D3D {
                src_type: st,
                src: addr(st, 24, 32)?,
                dst_type: dt,
                dst: addr(dt, 80, 88)?,
                width: u64_at(b, 112)?,
                height: u64_at(b, 120)?,
                depth: 1,
                src_offset: offset(0, 8, None, 48, None),
                dst_offset: offset(56, 64, None, 104, None),
            })
        } else {
            let (st, dt) = (u32_at(b, 32)?, u32_at(b, 120)?);
            Some(Copy2D3D {
                src_type: st,
                src: addr(st, 40, 48)?,
                dst_type: dt,
                dst: addr(dt, 128, 136)?,
                width: u64_at(b, 176)?,
                height: u64_at(b, 184)?,
                depth: u64_at(b, 192)?,
                src_offset: offset(0, 8, Some(16), 72, Some(80)),
                dst_offset: offset(88, 96, Some(104), 160, Some(168)),
            })
        }
    }
    pub fn bytes(&self) -> u64 {
        self.width.saturating_mul(self.height).saturating_mul(self.depth)
    }
    pub fn direction(&self) -> &'static str {
        direction(mem_side(self.src_type), mem_side(self.dst_type))
    }
    pub fn to_json(&self) -> Value {
        json!({
            "srcMemoryType": cuda_names::memory_type(self.src_type), "src": hex(self.src),
            "dstMemoryType": cuda_names::memory_type(self.dst_type), "dst": hex(self.dst),
            "WidthInBytes": self.width, "Height": self.height, "Depth": self.depth,
        })
    }
}

/// Which side of a copy an address lives on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Host,
    Device,
    Unknown,
}

fn mem_side(t: u32) -> Side {
    match t {
        1 => Side::Host,
        2 | 3 => Side::Device,
        _ => Side::Unknown,
    }
}

pub fn direction(src: Side, dst: Side) -> &'static str {
    match (src, dst) {
        (Side::Host, Side::Device) => "h2d",
        (Side::Device, Side::Host) => "d2h",
        (Side::Device, Side::Device) => "d2d",
        (Side::Host, Side::Host) => "h2h",
        _ => "default",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracer_common::funcs::{FUNCS, lookup};

    fn spec(name: &str) -> &'static FuncSpec {
        lookup(name).unwrap().spec().unwrap()
    }

    #[test]
    fn scalar_and_out_args() {
        let s = spec("cuMemAlloc_v2");
        let args = [0x7ffd_0000_1000, 1 << 20, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let c = Captured {
            args: &args,
            string: None,
            string_truncated: false,
            blob: None,
            nattrs: 0,
            outs: Some(Outs { values: [0x7f00_0020_0000, 0], ok: 1 }),
        };
        let m = decode_args(s, &c);
        assert_eq!(m["dptr"], json!("0x7f0000200000"));
        assert_eq!(m["bytesize"], json!(1048576));
        let c2 = Captured { outs: None, ..c };
        assert_eq!(decode_args(s, &c2)["dptr"], Value::Null);
    }

    #[test]
    fn thirty_two_bit_flags_ignore_the_upper_register_half() {
        let s = spec("cuInit");
        let args = [0xdead_beef_0000_0077u64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let c = Captured { args: &args, string: None, string_truncated: false, blob: None, nattrs: 0, outs: None };
        assert_eq!(decode_args(s, &c)["Flags"], json!("0x77"));
        let s = spec("cuMemAddressReserve");
        let args = [0, 4096, 0, 0, 0xdead_beef_0000_0001, 0, 0, 0, 0, 0, 0];
        let c = Captured { args: &args, string: None, string_truncated: false, blob: None, nattrs: 0, outs: None };
        assert_eq!(decode_args(s, &c)["flags"], json!("0xdeadbeef00000001"));
    }

    #[test]
    fn signed_and_float_outs() {
        assert_eq!(out_value(Arg::OutI32, 0xffff_ffff), json!(-1));
        assert_eq!(out_value(Arg::OutF32, 1.5f32.to_bits() as u64), json!(1.5));
        assert_eq!(out_value(Arg::OutHandle, 0xabc), json!("0xabc"));
    }

    #[test]
    fn launch_config_with_attrs() {
        let mut b = vec![0u8; 56 + 72 * 2];
        for (i, v) in [2u32, 3, 4, 128, 1, 1, 4096].iter().enumerate() {
            b[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        b[32..40].copy_from_slice(&0x5000u64.to_le_bytes());
        b[48..52].copy_from_slice(&2u32.to_le_bytes());
        b[56..60].copy_from_slice(&4u32.to_le_bytes()); // cluster dims
        for (k, v) in [2u32, 1, 1].iter().enumerate() {
            b[64 + 4 * k..68 + 4 * k].copy_from_slice(&v.to_le_bytes());
        }
        b[128..132].copy_from_slice(&8u32.to_le_bytes()); // priority
        b[136..140].copy_from_slice(&(-3i32).to_le_bytes());
        let cfg = LaunchConfig::parse(&b, 2).unwrap();
        assert_eq!(cfg.grid, [2, 3, 4]);
        assert_eq!(cfg.block, [128, 1, 1]);
        assert_eq!(cfg.shared_mem, 4096);
        assert_eq!(cfg.stream, 0x5000);
        let j = cfg.to_json();
        assert_eq!(j["attrs"][0]["name"], "CLUSTER_DIMENSION");
        assert_eq!(j["attrs"][0]["value"], json!([2, 1, 1]));
        assert_eq!(j["attrs"][1]["name"], "PRIORITY");
        assert_eq!(j["attrs"][1]["value"], json!(-3));
        // truncated bytes: no panic, no config
        assert!(LaunchConfig::parse(&b[..40], 0).is_none());
        assert!(LaunchConfig::parse(&b[..60], 2).is_none());
    }

    #[test]
    fn memcpy2d() {
        let mut b = vec![0u8; 128];
        b[16..20].copy_from_slice(&1u32.to_le_bytes());
        b[24..32].copy_from_slice(&0x1000u64.to_le_bytes());
        b[72..76].copy_from_slice(&2u32.to_le_bytes());
        b[88..96].copy_from_slice(&0x7f00u64.to_le_bytes());
        b[112..120].copy_from_slice(&256u64.to_le_bytes());
        b[120..128].copy_from_slice(&4u64.to_le_bytes());
        let c = Copy2D3D::parse(Arg::Memcpy2D, &b).unwrap();
        assert_eq!((c.src, c.dst, c.bytes(), c.direction()), (0x1000, 0x7f00, 1024, "h2d"));
        assert!(Copy2D3D::parse(Arg::Memcpy2D, &b[..100]).is_none());
    }

    #[test]
    fn every_table_entry_decodes_zeroes() {
        // No parameter kind is left without a decoder.
        for s in FUNCS {
            let args = [0u64; 11];
            let c = Captured {
                args: &args,
                string: None,
                string_truncated: false,
                blob: None,
                nattrs: 0,
                outs: Some(Outs::default()),
            };
            assert_eq!(decode_args(s, &c).len(), s.params.len(), "{}", s.name);
        }
    }
}
