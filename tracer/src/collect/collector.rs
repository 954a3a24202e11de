//! Drains the ring buffer into the assembler, the summary and the writer.
use aya::maps::{MapData, RingBuf};
use serde_json::Value;
use std::collections::HashMap;

use tracer_common::decode::{self, Record};
use tracer_common::event::{nvdev, nvop};

use crate::analysis::summary::Summary;
use crate::collect::writer::TraceWriter;
use crate::decode::calls::Assembler;

pub struct Collector {
    pub asm: Assembler,
    pub summary: Summary,
    pub writer: TraceWriter,
    /// pid -> NVIDIA fds it has open (fd -> opened with O_CLOEXEC).
    pub nv_fds: HashMap<u32, HashMap<u32, bool>>,
    /// Keys of the kernel's NVFDS map to delete (process exited, or exec
    /// closed its O_CLOEXEC fds): left there, a recycled pid or fd number
    /// would be taken for an NVIDIA file.
    pub stale_fds: Vec<u64>,
    /// Power samples and markers from their threads (side.rs).
    pub side: Option<std::sync::mpsc::Receiver<Value>>,
    /// `--replayable`: images, data and parameter coverage.
    pub replay: Option<crate::collect::replayable::recorder::Recorder>,
    /// `--system` / `--cgroup`: every line carries its process's cgroup id.
    pub cgroups: Option<crate::collect::cgroups::CgroupTable>,
    /// Footer fields from elsewhere (the libcuda files, the cgroups).
    pub footer_extra: serde_json::Map<String, Value>,
    /// The pointers cuGetProcAddress handed out, checked against the probes.
    pub entry_points: Option<crate::collect::entry_points::EntryPoints>,
    /// `--check-coverage`: call lines per function after each process's cuInit.
    pub coverage: Option<crate::collect::coverage::CallCounts>,
}

const O_CLOEXEC: u64 = 0o2000000;

impl Collector {
    pub fn new(asm: Assembler, writer: TraceWriter) -> Self {
        Collector {
            asm,
            summary: Summary::default(),
            writer,
            nv_fds: HashMap::new(),
            stale_fds: Vec::new(),
            side: None,
            replay: None,
            cgroups: None,
            footer_extra: serde_json::Map::new(),
            entry_points: None,
            coverage: None,
        }
    }

    /// Keeps the fd mirror in step with the kernel side.
    fn track_fds(&mut self, rec: &Record) {
        let key = nvdev::fd_key;
        match rec {
            Record::NvFile { r, .. } if r.op == nvop::OPEN && r.ret >= 0 => {
                self.nv_fds.entry(r.hdr.pid).or_default().insert(r.fd as u32, r.flags & O_CLOEXEC != 0);
            }
            Record::NvFile { r, .. } if r.op == nvop::CLOSE => {
                if let Some(m) = self.nv_fds.get_mut(&r.hdr.pid) {
                    m.remove(&(r.fd as u32));
                }
            }
            Record::Exec { hdr, .. } => {
                if let Some(m) = self.nv_fds.get_mut(&hdr.pid) {
                    m.retain(|&fd, cloexec| {
                        if *cloexec {
                            self.stale_fds.push(key(hdr.pid, fd));
                        }
                        !*cloexec
                    });
                }
            }
            Record::ProcExit(e) if e.group_dead == 1 => {
                if let Some(m) = self.nv_fds.remove(&e.hdr.pid) {
                    self.stale_fds.extend(m.keys().map(|&fd| key(e.hdr.pid, fd)));
                }
            }
            _ => {}
        }
    }
}

impl Collector {
    pub fn emit(&mut self, v: Value) {
        self.summary.add(&v);
        self.writer.write(&v);
    }

    /// Reads every record available now. Returns how many were read.
    pub fn drain(&mut self, ring: &mut RingBuf<MapData>) -> usize {
        let mut n = 0;
        while let Some(item) = ring.next() {
            n += 1;
            match decode::parse(&item) {
                Ok(rec) => {
                    self.track_fds(&rec);
                    let Collector { asm, summary, writer, replay, cgroups, entry_points, coverage, .. } = self;
                    if let Some(r) = replay.as_mut() {
                        r.before(&rec);
                    }
                    asm.push(&rec, &mut |mut l| {
                        if let Some(r) = replay.as_mut() {
                            r.annotate(&mut l);
                        }
                        if let Some(e) = entry_points.as_mut() {
                            e.observe(&l);
                        }
                        if let Some(c) = coverage.as_mut() {
                            c.observe(&l);
                        }
                        if let crate::decode::fastline::Line::Value(v) = &mut l {
                            crate::collect::ranks::annotate_exec(v);
                        }
                        summary.add_line(&l);
                        match cgroups.as_mut() {
                            Some(c) => crate::collect::cgroups::write_tagged(c, writer, &mut l),
                            None => writer.write_line(&l),
                        }
                    });
                    if let (Some(c), Record::Fork(f)) = (cgroups.as_mut(), &rec) {
                        c.forked(f.hdr.pid, f.child);
                    }
                    if let Some(r) = replay.as_mut() {
                        for v in r.extra_lines.drain(..) {
                            writer.write(&v);
                        }
                    }
                    // Other processes may keep the buffer busy: a stopped
                    // one waits for at most this many records.
                    if n % 1024 == 0
                        && let Some(r) = replay.as_mut()
                    {
                        r.resume_stopped();
                    }
                }
                Err(e) => {
                    self.asm.stats.bad_records += 1;
                    log::warn!("undecodable record: {e}");
                }
            }
        }
        if let Some(r) = self.replay.as_mut() {
            r.resume_stopped();
        }
        n
    }

    pub fn finish_calls(&mut self) {
        let Collector { asm, summary, writer, replay, cgroups, entry_points, coverage, .. } = self;
        asm.finish(&mut |mut l| {
            if let Some(r) = replay.as_mut() {
                r.annotate(&mut l);
            }
            if let Some(e) = entry_points.as_mut() {
                e.observe(&l);
            }
            if let Some(c) = coverage.as_mut() {
                c.observe(&l);
            }
            summary.add_line(&l);
            match cgroups.as_mut() {
                Some(c) => crate::collect::cgroups::write_tagged(c, writer, &mut l),
                None => writer.write_line(&l),
            }
        });
    }
}
