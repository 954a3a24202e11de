//! Reading CUPTI activity records (the bytes CUPTI writes into our buffers).
//!
//! We declare only the fields we read, by offset: the leading fields of
//! CUpti_ActivityKernel10, CUpti_ActivityMemcpy6 and CUpti_ActivityMemset4
//! (the records CUPTI 13 writes). The offsets below were checked with offsetof() against
//! CUPTI 13.0's cupti_activity.h on the GPU machine (experiments/gpu-timestamps/cupti_offsets.sh;
//! its output, docs/gpu-timestamps/cupti_offsets_cuda13.0.txt, is compared
//! with these constants by tests/offsets.rs), and CUPTI's own record walk
//! (cuptiActivityGetNextRecord) steps over whatever follows them.

use crate::wire::{Msg, Span};

/// CUpti_ActivityKind values we enable and read.
pub mod kind {
    pub const MEMCPY: u32 = 1;
    pub const MEMSET: u32 = 2;
    pub const KERNEL: u32 = 3;
    pub const CONCURRENT_KERNEL: u32 = 10;
}

/// Offsets in CUpti_ActivityKernel* (CUPTI 13.0: checked, see module doc).
pub mod kernel_off {
    pub const START: usize = 16;
    pub const END: usize = 24;
    pub const DEVICE_ID: usize = 40;
    pub const CONTEXT_ID: usize = 44;
    pub const STREAM_ID: usize = 48;
    pub const GRID_X: usize = 52;
    pub const BLOCK_X: usize = 64;
    pub const DYNAMIC_SHARED_MEMORY: usize = 80;
    pub const CORRELATION_ID: usize = 92;
    pub const NAME: usize = 104;
    /// CUPTI's id of the graph node that launched the kernel (0 outside
    /// graphs): `uint64_t graphNodeId`, unchanged since CUpti_ActivityKernel6.
    pub const GRAPH_NODE_ID: usize = 144;
    /// CUPTI's id of the graph whose launch ran the kernel (0 outside graphs).
    pub const GRAPH_ID: usize = 156;
    /// Bytes we read: up to the end of `graphId`.
    pub const MIN_LEN: usize = 160;
}

/// Offsets in CUpti_ActivityMemcpy* (CUPTI 13.0).
pub mod memcpy_off {
    pub const COPY_KIND: usize = 4;
    pub const SRC_KIND: usize = 5;
    pub const DST_KIND: usize = 6;
    pub const FLAGS: usize = 7;
    pub const BYTES: usize = 8;
    pub const START: usize = 16;
    pub const END: usize = 24;
    pub const DEVICE_ID: usize = 32;
    pub const CONTEXT_ID: usize = 36;
    pub const STREAM_ID: usize = 40;
    pub const CORRELATION_ID: usize = 44;
    pub const MIN_LEN: usize = 48;
}

/// Offsets in CUpti_ActivityMemset* (CUPTI 13.0).
pub mod memset_off {
    pub const VALUE: usize = 4;
    pub const BYTES: usize = 8;
    pub const START: usize = 16;
    pub const END: usize = 24;
    pub const DEVICE_ID: usize = 32;
    pub const CONTEXT_ID: usize = 36;
    pub const STREAM_ID: usize = 40;
    pub const CORRELATION_ID: usize = 44;
    pub const MEMORY_KIND: usize = 50;
    pub const MIN_LEN: usize = 52;
}

/// The bytes of one record to read (at least the kind's MIN_LEN), given its kind.
pub fn min_len(kind: u32) -> Option<usize> {
    match kind {
        kind::KERNEL | kind::CONCURRENT_KERNEL => Some(kernel_off::MIN_LEN),
        kind::MEMCPY => Some(memcpy_off::MIN_LEN),
        kind::MEMSET => Some(memset_off::MIN_LEN),
        _ => None,
    }
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}
fn i32_at(b: &[u8], o: usize) -> i32 {
    u32_at(b, o) as i32
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

/// CUpti_ActivityMemcpyKind → (line name, direction as in call lines: `h2d`, `d2h`, `d2d`, `h2h`, `peer`).
pub fn copy_kind(k: u8) -> (&'static str, &'static str) {
    match k {
        1 => ("memcpy_htod", "h2d"),
        2 => ("memcpy_dtoh", "d2h"),
        3 => ("memcpy_htoa", "h2d"),
        4 => ("memcpy_atoh", "d2h"),
        5 => ("memcpy_atoa", "d2d"),
        6 => ("memcpy_atod", "d2d"),
        7 => ("memcpy_dtoa", "d2d"),
        8 => ("memcpy_dtod", "d2d"),
        9 => ("memcpy_htoh", "h2h"),
        10 => ("memcpy_ptop", "peer"),
        _ => ("memcpy_unknown", "unknown"),
    }
}

/// Adds a signed clock offset (0 when CUPTI already stamps with our clock).
pub fn shift(ts: u64, offset_ns: i64) -> u64 {
    if ts == 0 {
        return 0; // CUPTI's "no timestamp": kept, so the tracer can count it
    }
    ts.saturating_add_signed(offset_ns)
}

/// A record decoded into a wire message. Kernels come back with the address
/// of their name (the caller reads the C string and interns it) and
/// `name_id` 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub msg: Msg,
    pub name_ptr: u64,
}

/// Decodes the record `b` of kind `kind` (its first bytes: at least
/// `min_len(kind)`). None for kinds we do not read or a short slice.
pub fn decode(kind: u32, b: &[u8], offset_ns: i64) -> Option<Decoded> {
    if b.len() < min_len(kind)? {
        return None;
    }
    let d = match kind {
        kind::KERNEL | kind::CONCURRENT_KERNEL => {
            use kernel_off as k;
            let g = |o: usize| [i32_at(b, o), i32_at(b, o + 4), i32_at(b, o + 8)];
            Decoded {
                msg: Msg::Kernel {
                    span: Span {
                        start: shift(u64_at(b, k::START), offset_ns),
                        end: shift(u64_at(b, k::END), offset_ns),
                        device: u32_at(b, k::DEVICE_ID),
                        context: u32_at(b, k::CONTEXT_ID),
                        stream: u32_at(b, k::STREAM_ID),
                        correlation: u32_at(b, k::CORRELATION_ID),
                    },
                    grid: g(k::GRID_X),
                    block: g(k::BLOCK_X),
                    shared_mem: i32_at(b, k::DYNAMIC_SHARED_MEMORY),
                    name_id: 0,
                    graph_id: u32_at(b, k::GRAPH_ID),
                    graph_node_id: u64_at(b, k::GRAPH_NODE_ID),
                },
                name_ptr: u64_at(b, k::NAME),
            }
        }
        kind::MEMCPY => {
            use memcpy_off as m;
            Decoded {
                msg: Msg::Memcpy {
                    span: Span {
                        start: shift(u64_at(b, m::START), offset_ns),
                        end: shift(u64_at(b, m::END), offset_ns),
                        device: u32_at(b, m::DEVICE_ID),
                        context: u32_at(b, m::CONTEXT_ID),
                        stream: u32_at(b, m::STREAM_ID),
                        correlation: u32_at(b, m::CORRELATION_ID),
                    },
                    bytes: u64_at(b, m::BYTES),
                    copy_kind: b[m::COPY_KIND],
                    src_kind: b[m::SRC_KIND],
                    dst_kind: b[m::DST_KIND],
                    flags: b[m::FLAGS],
                },
                name_ptr: 0,
            }
        }
        kind::MEMSET => {
            use memset_off as m;
            Decoded {
                msg: Msg::Memset {
                    span: Span {
                        start: shift(u64_at(b, m::START), offset_ns),
                        end: shift(u64_at(b, m::END), offset_ns),
                        device: u32_at(b, m::DEVICE_ID),
                        context: u32_at(b, m::CONTEXT_ID),
                        stream: u32_at(b, m::STREAM_ID),
                        correlation: u32_at(b, m::CORRELATION_ID),
                    },
                    bytes: u64_at(b, m::BYTES),
                    value: u32_at(b, m::VALUE),
                    mem_kind: u16_at(b, m::MEMORY_KIND),
                },
                name_ptr: 0,
            }
        }
        _ => return None,
    };
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put32(b: &mut [u8], o: usize, v: u32) {
        b[o..o + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn put64(b: &mut [u8], o: usize, v: u64) {
        b[o..o + 8].copy_from_slice(&v.to_le_bytes());
    }

    /// A CUpti_ActivityKernel record as CUPTI lays it out (fields we do not
    /// read filled with junk, so a wrong offset shows).
    pub fn kernel_record() -> Vec<u8> {
        let mut b = vec![0xAB; 200];
        put32(&mut b, 0, kind::CONCURRENT_KERNEL);
        put64(&mut b, 16, 5_000_000_123);
        put64(&mut b, 24, 5_000_004_623);
        put64(&mut b, 32, 0); // completed
        put32(&mut b, 40, 0);
        put32(&mut b, 44, 1);
        put32(&mut b, 48, 7);
        for (i, v) in [80u32, 2, 1, 128, 1, 1].into_iter().enumerate() {
            put32(&mut b, 52 + 4 * i, v);
        }
        put32(&mut b, 76, 4096); // static shared memory
        put32(&mut b, 80, 512); // dynamic
        put32(&mut b, 92, 1234);
        put64(&mut b, 96, 99); // gridId
        put64(&mut b, 104, 0x7f00_1234_5678);
        put64(&mut b, 144, 0x0000_0003_0000_0011); // graphNodeId
        put32(&mut b, 152, 1); // shmemLimitConfig
        put32(&mut b, 156, 5); // graphId
        b
    }

    #[test]
    fn kernel_record_decodes_exactly() {
        let d = decode(kind::CONCURRENT_KERNEL, &kernel_record(), 0).unwrap();
        assert_eq!(d.name_ptr, 0x7f00_1234_5678);
        assert_eq!(
            d.msg,
            Msg::Kernel {
                span: Span {
                    start: 5_000_000_123,
                    end: 5_000_004_623,
                    device: 0,
                    context: 1,
                    stream: 7,
                    correlation: 1234
                },
                grid: [80, 2, 1],
                block: [128, 1, 1],
                shared_mem: 512,
                name_id: 0,
                graph_id: 5,
                graph_node_id: 0x0000_0003_0000_0011,
            }
        );
    }

    #[test]
    fn offset_clock_is_applied_and_zero_kept() {
        let d = decode(kind::KERNEL, &kernel_record(), -123).unwrap();
        let Msg::Kernel { span, .. } = d.msg else { panic!() };
        assert_eq!((span.start, span.end), (5_000_000_000, 5_000_004_500));
        assert_eq!(shift(0, 1000), 0);
        assert_eq!(shift(10, 1000), 1010);
    }

    #[test]
    fn memcpy_and_memset_records() {
        let mut b = vec![0xCD; 64];
        put32(&mut b, 0, kind::MEMCPY);
        b[4..8].copy_from_slice(&[1, 1, 3, 1]); // HtoD, pageable -> device, async
        put64(&mut b, 8, 1 << 20);
        put64(&mut b, 16, 100);
        put64(&mut b, 24, 900);
        for (i, v) in [0u32, 1, 13, 77].into_iter().enumerate() {
            put32(&mut b, 32 + 4 * i, v);
        }
        assert_eq!(
            decode(kind::MEMCPY, &b, 0).unwrap().msg,
            Msg::Memcpy {
                span: Span { start: 100, end: 900, device: 0, context: 1, stream: 13, correlation: 77 },
                bytes: 1 << 20,
                copy_kind: 1,
                src_kind: 1,
                dst_kind: 3,
                flags: 1,
            }
        );
        let mut s = vec![0xEF; 64];
        put32(&mut s, 0, kind::MEMSET);
        put32(&mut s, 4, 0);
        put64(&mut s, 8, 256);
        put64(&mut s, 16, 10);
        put64(&mut s, 24, 20);
        for (i, v) in [0u32, 1, 7, 78].into_iter().enumerate() {
            put32(&mut s, 32 + 4 * i, v);
        }
        s[50..52].copy_from_slice(&3u16.to_le_bytes());
        assert_eq!(
            decode(kind::MEMSET, &s, 0).unwrap().msg,
            Msg::Memset {
                span: Span { start: 10, end: 20, device: 0, context: 1, stream: 7, correlation: 78 },
                bytes: 256,
                value: 0,
                mem_kind: 3,
            }
        );
    }

    #[test]
    fn short_or_unknown_records_are_refused() {
        assert_eq!(decode(kind::KERNEL, &kernel_record()[..159], 0), None);
        assert_eq!(decode(kind::MEMSET, &[0; 51], 0), None);
        assert_eq!(decode(25, &[0; 200], 0), None);
    }
}
