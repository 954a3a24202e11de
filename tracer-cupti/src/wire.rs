//! The byte stream from the injection library to the tracer.
//!
//! A stream of messages, little-endian. Every message starts with an 8-byte
//! header: `u8 type, u8 version` ([`VERSION`]; libraries built before it
//! wrote 0), `u16 len` (the whole message, header included), `u32 pid` (the
//! process that sent it). A message of another version is not decoded: it is
//! reported, naming both versions (the injection library is not the one
//! built with this tracer). The injection library only ever
//! writes whole messages in writes of at most [`MAX_WRITE`] bytes, which a
//! pipe keeps atomic, so several processes can share one FIFO.
//!
//! Timestamps are CLOCK_MONOTONIC ns already (the injection library converts
//! them); names are sent once per process ([`Msg::Name`]) and referred to by id.

/// Largest write: PIPE_BUF on Linux, the size up to which pipe writes are atomic.
pub const MAX_WRITE: usize = 4096;
/// Header bytes of every message.
pub const HEADER: usize = 8;
/// The version of the messages (header byte 1); changed with any change of a body's layout
/// that an older reader would misread.
pub const VERSION: u8 = 1;
/// Longest text (kernel name, path, error) carried; longer ones are cut.
pub const MAX_TEXT: usize = MAX_WRITE - HEADER - 16;

pub mod ty {
    pub const KERNEL: u8 = 1;
    pub const MEMCPY: u8 = 2;
    pub const MEMSET: u8 = 3;
    pub const STREAM: u8 = 4;
    pub const NAME: u8 = 5;
    pub const DROPPED: u8 = 6;
    pub const HELLO: u8 = 7;
    pub const ERROR: u8 = 8;
    pub const BYE: u8 = 9;
    pub const WINDOW: u8 = 10;
    pub const NOTE: u8 = 11;
}

/// How the records' timestamps were put on CLOCK_MONOTONIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockMethod {
    /// cuptiActivityRegisterTimestampCallback(clock_gettime(CLOCK_MONOTONIC)):
    /// CUPTI itself stamps records with our clock.
    Callback = 0,
    /// CUPTI's own clock plus an offset measured by bracketing cuptiGetTimestamp
    /// between two CLOCK_MONOTONIC reads (re-measured for every buffer).
    Offset = 1,
}

/// Where and when a kernel, copy or set ran (all CUPTI activity records share it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: u64,
    pub end: u64,
    pub device: u32,
    pub context: u32,
    pub stream: u32,
    pub correlation: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    Kernel {
        span: Span,
        grid: [i32; 3],
        block: [i32; 3],
        /// Dynamic shared memory bytes (what the launch asked for).
        shared_mem: i32,
        /// Id of a [`Msg::Name`] sent before by the same process.
        name_id: u32,
        /// CUPTI's graphId and graphNodeId (0 when not launched by a graph).
        /// Sent after `name_id`; a message without them reads as 0.
        graph_id: u32,
        graph_node_id: u64,
    },
    Memcpy {
        span: Span,
        bytes: u64,
        /// CUpti_ActivityMemcpyKind.
        copy_kind: u8,
        /// CUpti_ActivityMemoryKind of source and destination.
        src_kind: u8,
        dst_kind: u8,
        flags: u8,
    },
    Memset {
        span: Span,
        bytes: u64,
        value: u32,
        mem_kind: u16,
    },
    /// CUPTI's stream id within a context is this CUstream handle.
    Stream {
        context: u32,
        stream: u32,
        handle: u64,
    },
    Name {
        id: u32,
        name: String,
    },
    /// CUPTI dropped `count` records of this context/stream (buffer full).
    Dropped {
        context: u32,
        stream: u32,
        count: u64,
    },
    /// The library is active in this process.
    Hello {
        cupti_version: u32,
        clock: ClockMethod,
        offset_ns: i64,
        cupti_path: String,
    },
    /// The library could not start in this process (e.g. no libcupti).
    Error {
        text: String,
    },
    /// Sampling (`TRACER_CUPTI_SAMPLE`): kernel, copy and set records were
    /// on from `start` (stamped after they were enabled) to `end` (stamped
    /// before they were disabled), CLOCK_MONOTONIC ns.
    ///
    /// Adaptive windows (CUPTI attached only inside them) also say what the
    /// window cost outside the records: `attach_ns` (attaching CUPTI again,
    /// on the library's own thread), `detach_ns` (flushing and
    /// `cuptiFinalize`, on the thread whose driver call returned first after
    /// the window's end), and what it held: `records`, and `new_keys`, those
    /// of kernels (name and geometry) and copy sizes neither this process
    /// nor the durations library knew; how it came about: `extensions`
    /// (how often it was extended: for new work, or, demanded, waiting for
    /// its first records), `demanded` (it opened
    /// because the tracer asked, before its gap ended) and `planned_gap_ns`
    /// (the gap planned before it: the windows' policy and their budget; 0
    /// before the first); `launches`, the program's launches in it (a graph
    /// launch counting `sample::GRAPH_LAUNCH_WEIGHT`), and `full`: it ended
    /// early because they reached `sample::WINDOW_LAUNCHES`. 0 for duty-cycle
    /// windows (and from libraries built before these fields).
    Window {
        start: u64,
        end: u64,
        attach_ns: u64,
        detach_ns: u64,
        records: u64,
        new_keys: u64,
        extensions: u64,
        demanded: bool,
        planned_gap_ns: u64,
        launches: u64,
        full: bool,
    },
    /// A fact about this process's CUPTI that is not a problem (e.g. whether
    /// hardware kernel timestamps are available), for the footer.
    Note {
        text: String,
    },
    /// Sent at process exit after the final flush.
    Bye {
        records: u64,
        buffers: u64,
        dropped_cupti: u64,
        dropped_sink: u64,
    },
}

fn cut(s: &str) -> &[u8] {
    let b = s.as_bytes();
    if b.len() <= MAX_TEXT {
        return b;
    }
    let mut n = MAX_TEXT;
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    &b[..n]
}

fn put_span(o: &mut Vec<u8>, s: &Span) {
    o.extend_from_slice(&s.start.to_le_bytes());
    o.extend_from_slice(&s.end.to_le_bytes());
    for v in [s.device, s.context, s.stream, s.correlation] {
        o.extend_from_slice(&v.to_le_bytes());
    }
}

impl Msg {
    /// Appends the encoded message to `out`.
    pub fn encode(&self, pid: u32, out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(&[0; HEADER]);
        let t = match self {
            Msg::Kernel { span, grid, block, shared_mem, name_id, graph_id, graph_node_id } => {
                put_span(out, span);
                for v in grid.iter().chain(block.iter()).chain([shared_mem]) {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out.extend_from_slice(&name_id.to_le_bytes());
                out.extend_from_slice(&graph_id.to_le_bytes());
                out.extend_from_slice(&graph_node_id.to_le_bytes());
                ty::KERNEL
            }
            Msg::Memcpy { span, bytes, copy_kind, src_kind, dst_kind, flags } => {
                put_span(out, span);
                out.extend_from_slice(&bytes.to_le_bytes());
                out.extend_from_slice(&[*copy_kind, *src_kind, *dst_kind, *flags]);
                ty::MEMCPY
            }
            Msg::Memset { span, bytes, value, mem_kind } => {
                put_span(out, span);
                out.extend_from_slice(&bytes.to_le_bytes());
                out.extend_from_slice(&value.to_le_bytes());
                out.extend_from_slice(&mem_kind.to_le_bytes());
                ty::MEMSET
            }
            Msg::Stream { context, stream, handle } => {
                out.extend_from_slice(&context.to_le_bytes());
                out.extend_from_slice(&stream.to_le_bytes());
                out.extend_from_slice(&handle.to_le_bytes());
                ty::STREAM
            }
            Msg::Name { id, name } => {
                out.extend_from_slice(&id.to_le_bytes());
                out.extend_from_slice(cut(name));
                ty::NAME
            }
            Msg::Dropped { context, stream, count } => {
                out.extend_from_slice(&context.to_le_bytes());
                out.extend_from_slice(&stream.to_le_bytes());
                out.extend_from_slice(&count.to_le_bytes());
                ty::DROPPED
            }
            Msg::Hello { cupti_version, clock, offset_ns, cupti_path } => {
                out.extend_from_slice(&cupti_version.to_le_bytes());
                out.extend_from_slice(&(*clock as u32).to_le_bytes());
                out.extend_from_slice(&offset_ns.to_le_bytes());
                out.extend_from_slice(cut(cupti_path));
                ty::HELLO
            }
            Msg::Error { text } => {
                out.extend_from_slice(cut(text));
                ty::ERROR
            }
            Msg::Bye { records, buffers, dropped_cupti, dropped_sink } => {
                for v in [records, buffers, dropped_cupti, dropped_sink] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                ty::BYE
            }
            Msg::Window {
                start,
                end,
                attach_ns,
                detach_ns,
                records,
                new_keys,
                extensions,
                demanded,
                planned_gap_ns,
                launches,
                full,
            } => {
                let (demanded, full) = (*demanded as u64, *full as u64);
                for v in [
                    start,
                    end,
                    attach_ns,
                    detach_ns,
                    records,
                    new_keys,
                    extensions,
                    &demanded,
                    planned_gap_ns,
                    launches,
                    &full,
                ] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                ty::WINDOW
            }
            Msg::Note { text } => {
                out.extend_from_slice(cut(text));
                ty::NOTE
            }
        };
        let len = (out.len() - at) as u16;
        out[at] = t;
        out[at + 1] = VERSION;
        out[at + 2..at + 4].copy_from_slice(&len.to_le_bytes());
        out[at + 4..at + 8].copy_from_slice(&pid.to_le_bytes());
    }
}

/// A malformed message: what was wrong and where in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    /// Offset of the message in the stream (bytes since the first read).
    pub offset: u64,
    pub what: String,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CUPTI record stream, byte {}: {}", self.offset, self.what)
    }
}

struct Rd<'a>(&'a [u8], usize);

impl Rd<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let b = self.0.get(self.1..self.1 + N)?;
        self.1 += N;
        b.try_into().ok()
    }
    fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take().map(u16::from_le_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }
    fn i32(&mut self) -> Option<i32> {
        self.take().map(i32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take().map(i64::from_le_bytes)
    }
    fn rest(&mut self) -> String {
        let s = String::from_utf8_lossy(&self.0[self.1..]).into_owned();
        self.1 = self.0.len();
        s
    }
    fn span(&mut self) -> Option<Span> {
        Some(Span {
            start: self.u64()?,
            end: self.u64()?,
            device: self.u32()?,
            context: self.u32()?,
            stream: self.u32()?,
            correlation: self.u32()?,
        })
    }
}

/// Decodes one message body of type `t` (`body` excludes the header).
fn decode_body(t: u8, body: &[u8]) -> Result<Msg, String> {
    let mut r = Rd(body, 0);
    let short = || format!("message type {t}: {} body bytes is too short", body.len());
    let m = match t {
        ty::KERNEL => (|| {
            let span = r.span()?;
            let g = [r.i32()?, r.i32()?, r.i32()?];
            let b = [r.i32()?, r.i32()?, r.i32()?];
            let (shared_mem, name_id) = (r.i32()?, r.u32()?);
            // graph ids: absent from messages of libraries built before them
            let (graph_id, graph_node_id) = (r.u32().unwrap_or(0), r.u64().unwrap_or(0));
            Some(Msg::Kernel { span, grid: g, block: b, shared_mem, name_id, graph_id, graph_node_id })
        })(),
        ty::MEMCPY => (|| {
            Some(Msg::Memcpy {
                span: r.span()?,
                bytes: r.u64()?,
                copy_kind: r.u8()?,
                src_kind: r.u8()?,
                dst_kind: r.u8()?,
                flags: r.u8()?,
            })
        })(),
        ty::MEMSET => {
            (|| Some(Msg::Memset { span: r.span()?, bytes: r.u64()?, value: r.u32()?, mem_kind: r.u16()? }))()
        }
        ty::STREAM => (|| Some(Msg::Stream { context: r.u32()?, stream: r.u32()?, handle: r.u64()? }))(),
        ty::NAME => (|| Some(Msg::Name { id: r.u32()?, name: r.rest() }))(),
        ty::DROPPED => (|| Some(Msg::Dropped { context: r.u32()?, stream: r.u32()?, count: r.u64()? }))(),
        ty::HELLO => (|| {
            let cupti_version = r.u32()?;
            let clock = match r.u32()? {
                0 => ClockMethod::Callback,
                _ => ClockMethod::Offset,
            };
            Some(Msg::Hello { cupti_version, clock, offset_ns: r.i64()?, cupti_path: r.rest() })
        })(),
        ty::ERROR => Some(Msg::Error { text: r.rest() }),
        ty::BYE => (|| {
            Some(Msg::Bye { records: r.u64()?, buffers: r.u64()?, dropped_cupti: r.u64()?, dropped_sink: r.u64()? })
        })(),
        ty::WINDOW => (|| {
            let (start, end) = (r.u64()?, r.u64()?);
            // the costs: absent from duty-cycle windows of libraries built before them
            let mut more = || r.u64().unwrap_or(0);
            let (attach_ns, detach_ns, records, new_keys) = (more(), more(), more(), more());
            let (extensions, demanded, planned_gap_ns) = (more(), more() != 0, more());
            let (launches, full) = (more(), more() != 0);
            Some(Msg::Window {
                start,
                end,
                attach_ns,
                detach_ns,
                records,
                new_keys,
                extensions,
                demanded,
                planned_gap_ns,
                launches,
                full,
            })
        })(),
        ty::NOTE => Some(Msg::Note { text: r.rest() }),
        _ => return Err(format!("unknown message type {t}")),
    };
    m.ok_or_else(short)
}

/// Splits a byte stream that arrives in arbitrary pieces into messages.
#[derive(Default)]
pub struct StreamDecoder {
    pending: Vec<u8>,
    /// Stream offset of `pending[0]`.
    offset: u64,
    /// Set after a framing error: the stream cannot be resynchronised.
    pub broken: Option<WireError>,
}

impl StreamDecoder {
    /// Feeds bytes; calls `f(pid, msg)` for every complete message. A
    /// malformed body is reported and skipped; a malformed header (length
    /// below 8) breaks the stream for good (returned once, then ignored).
    pub fn feed(&mut self, bytes: &[u8], f: &mut dyn FnMut(u32, Result<Msg, WireError>)) {
        if self.broken.is_some() {
            return;
        }
        self.pending.extend_from_slice(bytes);
        let mut at = 0;
        while self.pending.len() - at >= HEADER {
            let h = &self.pending[at..at + HEADER];
            let len = u16::from_le_bytes([h[2], h[3]]) as usize;
            let pid = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
            let off = self.offset + at as u64;
            if len < HEADER {
                let e = WireError { offset: off, what: format!("message length {len} is below the header's 8 bytes") };
                self.broken = Some(e.clone());
                f(pid, Err(e));
                self.pending.clear();
                return;
            }
            if self.pending.len() - at < len {
                break;
            }
            if h[1] != VERSION {
                let what = format!(
                    "message of wire version {}, this tracer reads version {VERSION}: the injection library (libtracer_cupti.so) is not the one built with this tracer; use the one beside it",
                    h[1]
                );
                f(pid, Err(WireError { offset: off, what }));
                at += len;
                continue;
            }
            let m = decode_body(h[0], &self.pending[at + HEADER..at + len]);
            f(pid, m.map_err(|what| WireError { offset: off, what }));
            at += len;
        }
        self.pending.drain(..at);
        self.offset += at as u64;
    }

    /// Bytes of an incomplete message still waiting for the rest.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

/// CUpti_ActivityMemoryKind as a name: `pageable`, `pinned`, `device`,
/// `array`, `managed`, `device_static`, `managed_static`, else `unknown`.
pub fn memory_kind_name(k: u8) -> &'static str {
    match k {
        1 => "pageable",
        2 => "pinned",
        3 => "device",
        4 => "array",
        5 => "managed",
        6 => "device_static",
        7 => "managed_static",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Msg> {
        let span = Span { start: 1_000, end: 3_500, device: 0, context: 1, stream: 7, correlation: 42 };
        vec![
            Msg::Kernel {
                span,
                grid: [80, 1, 1],
                block: [256, 1, 1],
                shared_mem: 1024,
                name_id: 3,
                graph_id: 2,
                graph_node_id: 1 << 33,
            },
            Msg::Memcpy { span, bytes: 4096, copy_kind: 1, src_kind: 1, dst_kind: 3, flags: 1 },
            Msg::Memset { span, bytes: 64, value: 0, mem_kind: 3 },
            Msg::Stream { context: 1, stream: 13, handle: 0x5555_dead_beef },
            Msg::Name { id: 3, name: "_Z6kernelPfi".into() },
            Msg::Dropped { context: 1, stream: 7, count: 9 },
            Msg::Hello {
                cupti_version: 26,
                clock: ClockMethod::Callback,
                offset_ns: -5,
                cupti_path: "/usr/local/cuda/lib64/libcupti.so.13".into(),
            },
            Msg::Error { text: "libcupti not found".into() },
            Msg::Bye { records: 10, buffers: 2, dropped_cupti: 9, dropped_sink: 0 },
            Msg::Window {
                start: 1_000,
                end: 21_000_000,
                attach_ns: 3,
                detach_ns: 4,
                records: 5,
                new_keys: 6,
                extensions: 2,
                demanded: true,
                planned_gap_ns: 7,
                launches: 4_096,
                full: true,
            },
            Msg::Note { text: "hw_trace: CUPTI_ERROR_NOT_SUPPORTED (27)".into() },
        ]
    }

    #[test]
    fn kernel_bytes_are_exact() {
        let mut o = vec![];
        all()[0].encode(77, &mut o);
        assert_eq!(o.len(), 84);
        assert_eq!(&o[..8], &[1, VERSION, 84, 0, 77, 0, 0, 0]);
        assert_eq!(u64::from_le_bytes(o[8..16].try_into().unwrap()), 1_000);
        assert_eq!(u32::from_le_bytes(o[36..40].try_into().unwrap()), 42); // correlation
        assert_eq!(u32::from_le_bytes(o[68..72].try_into().unwrap()), 3); // name id
        assert_eq!(u32::from_le_bytes(o[72..76].try_into().unwrap()), 2); // graph id
        assert_eq!(u64::from_le_bytes(o[76..84].try_into().unwrap()), 1 << 33); // graph node id
    }

    #[test]
    fn a_window_without_its_costs_reads_them_as_zero() {
        let mut o = vec![];
        let w = Msg::Window {
            start: 5,
            end: 9,
            attach_ns: 1,
            detach_ns: 2,
            records: 3,
            new_keys: 4,
            extensions: 1,
            demanded: true,
            planned_gap_ns: 6,
            launches: 9,
            full: true,
        };
        w.encode(7, &mut o);
        assert_eq!(o.len(), HEADER + 88);
        // a library built before the window's launches reads them as none
        let mut old = o.clone();
        old.truncate(HEADER + 72);
        old[2] = (HEADER + 72) as u8;
        let mut got = vec![];
        StreamDecoder::default().feed(&old, &mut |_, m| got.push(m.unwrap()));
        let Msg::Window { launches, full, planned_gap_ns, .. } = got[0] else { panic!("{got:?}") };
        assert_eq!((launches, full, planned_gap_ns), (0, false, 6));
        // a library built before the window's history reads it as none
        let mut old = o.clone();
        old.truncate(HEADER + 48);
        old[2] = (HEADER + 48) as u8;
        let mut got = vec![];
        StreamDecoder::default().feed(&old, &mut |_, m| got.push(m.unwrap()));
        let before = Msg::Window {
            start: 5,
            end: 9,
            attach_ns: 1,
            detach_ns: 2,
            records: 3,
            new_keys: 4,
            extensions: 0,
            demanded: false,
            planned_gap_ns: 0,
            launches: 0,
            full: false,
        };
        assert_eq!(got, [before]);
        o.truncate(HEADER + 16); // a duty-cycle window of a library built before the costs
        o[2] = (HEADER + 16) as u8;
        let mut got = vec![];
        StreamDecoder::default().feed(&o, &mut |_, m| got.push(m.unwrap()));
        let bare = Msg::Window {
            start: 5,
            end: 9,
            attach_ns: 0,
            detach_ns: 0,
            records: 0,
            new_keys: 0,
            extensions: 0,
            demanded: false,
            planned_gap_ns: 0,
            launches: 0,
            full: false,
        };
        assert_eq!(got, [bare]);
    }

    #[test]
    fn a_kernel_message_without_graph_ids_reads_them_as_zero() {
        let mut o = vec![];
        all()[0].encode(77, &mut o);
        o.truncate(72); // as a library built before graph ids sent it
        o[2] = 72;
        let mut d = StreamDecoder::default();
        let mut got = vec![];
        d.feed(&o, &mut |_, m| got.push(m.unwrap()));
        let Msg::Kernel { graph_id, graph_node_id, name_id, .. } = got[0] else { panic!("{got:?}") };
        assert_eq!((got.len(), graph_id, graph_node_id, name_id), (1, 0, 0, 3));
    }

    #[test]
    fn every_message_roundtrips_in_any_pieces() {
        let msgs = all();
        let mut bytes = vec![];
        for m in &msgs {
            m.encode(1234, &mut bytes);
        }
        for piece in [1usize, 3, 7, 8, 64, bytes.len()] {
            let mut d = StreamDecoder::default();
            let mut got = vec![];
            for c in bytes.chunks(piece) {
                d.feed(c, &mut |pid, m| got.push((pid, m.unwrap())));
            }
            assert_eq!(d.pending(), 0);
            assert_eq!(got.len(), msgs.len(), "piece {piece}");
            for ((pid, g), m) in got.iter().zip(&msgs) {
                assert_eq!(*pid, 1234);
                assert_eq!(g, m);
            }
        }
    }

    #[test]
    fn long_names_are_cut_to_fit_one_write() {
        let mut o = vec![];
        Msg::Name { id: 1, name: "€".repeat(2000) }.encode(1, &mut o); // 3-byte chars
        assert!(o.len() <= MAX_WRITE);
        let mut d = StreamDecoder::default();
        d.feed(&o, &mut |_, m| match m.unwrap() {
            Msg::Name { name, .. } => assert_eq!(name.len(), 4071), // 1357 whole chars of MAX_TEXT 4072
            other => panic!("{other:?}"),
        });
    }

    #[test]
    fn bad_input_is_reported_with_its_offset() {
        let mut bytes = vec![];
        Msg::Error { text: "x".into() }.encode(5, &mut bytes); // 9 bytes
        bytes.extend_from_slice(&[1, VERSION, 12, 0, 5, 0, 0, 0, 1, 2, 3, 4]); // kernel, body too short
        bytes.extend_from_slice(&[99, VERSION, 8, 0, 5, 0, 0, 0]); // unknown type
        bytes.extend_from_slice(&[1, 0, 3, 0, 5, 0, 0, 0]); // length below header
        let mut d = StreamDecoder::default();
        let mut errs = vec![];
        d.feed(&bytes, &mut |_, m| {
            if let Err(e) = m {
                errs.push(e.to_string())
            }
        });
        assert_eq!(
            errs,
            vec![
                "CUPTI record stream, byte 9: message type 1: 4 body bytes is too short",
                "CUPTI record stream, byte 21: unknown message type 99",
                "CUPTI record stream, byte 29: message length 3 is below the header's 8 bytes",
            ]
        );
        assert!(d.broken.is_some());
    }

    #[test]
    fn a_message_of_another_version_is_reported_and_the_next_read() {
        let mut bytes = vec![];
        Msg::Name { id: 1, name: "k".into() }.encode(5, &mut bytes);
        bytes[1] = 0; // as a library built before versions sent it
        Msg::Name { id: 2, name: "j".into() }.encode(5, &mut bytes);
        let mut d = StreamDecoder::default();
        let mut got = vec![];
        d.feed(&bytes, &mut |_, m| got.push(m.map_err(|e| e.to_string())));
        assert_eq!(
            got,
            vec![
                Err("CUPTI record stream, byte 0: message of wire version 0, this tracer reads version 1: the injection library (libtracer_cupti.so) is not the one built with this tracer; use the one beside it".to_string()),
                Ok(Msg::Name { id: 2, name: "j".into() }),
            ]
        );
        assert!(d.broken.is_none());
    }
}
