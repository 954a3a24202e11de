//! Drains the ring buffer into the assembler, the summary and the writer.
use aya::maps::{MapData, RingBuf};
use serde_json::Value;
use std::collections::HashMap;

use tracer_common::decode::{self, Record};
use tracer_common::event::{nvdev, nvop};

use crate::analysis::summary::Summary;
use crate::collect::writer::TraceWriter;
use crate::decode::calls::Assembler;
use crate::decode::fastline::Line;

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
    /// Stacks: the Python layouts given to the kernel (collect/stacks/).
    pub python: Option<crate::collect::stacks::python_procs::PythonProcs>,
    /// tracer's own CPU time (user, system; s) when the command was let go: loading and
    /// verifying the programs, before the program ran ([`crate::collect::footer::cpu_times`]).
    pub cpu_before_command: Option<(f64, f64)>,
    /// Windows on demand: the run's kernel configurations (launch_configs.rs).
    pub launch_configs: Option<crate::collect::launch_configs::LaunchConfigs>,
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
            python: None,
            cpu_before_command: None,
            launch_configs: None,
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

    /// A process stopped at its open of libcuda is about to be continued:
    /// its Python layout, if it has one, goes to the kernel first.
    pub fn before_resume(&mut self, pid: u32) {
        if let Some(p) = self.python.as_mut() {
            p.before_resume(pid);
        }
    }

    /// Reads every record available now. Returns how many were read.
    pub fn drain(&mut self, ring: &mut RingBuf<MapData>) -> usize {
        self.drain_upto(ring, usize::MAX)
    }

    /// [`Self::drain`], at most `max` records: a collector that is behind returns to its loop
    /// now and then (the GPU lines, the window demands), instead of when the buffer is empty.
    pub fn drain_upto(&mut self, ring: &mut RingBuf<MapData>, max: usize) -> usize {
        let mut n = 0;
        // A launch's parameter buffer cut out of its span (Recorder::unpack).
        let mut params = Vec::new();
        while n < max
            && let Some(item) = ring.next()
        {
            n += 1;
            match decode::parse(&item) {
                Ok(rec) => {
                    let rec = match self.replay.as_ref() {
                        Some(r) => r.unpack(rec, &mut params),
                        None => rec,
                    };
                    self.track_fds(&rec);
                    if let Some(p) = self.python.as_mut() {
                        p.saw(&rec);
                    }
                    if let Some(r) = self.replay.as_mut() {
                        r.before(&rec);
                    }
                    let (asm, mut chain) = self.chain();
                    asm.push(&rec, &mut |l| chain.line(l));
                    let Collector { writer, replay, cgroups, .. } = self;
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

    /// The lines still pending at the end (incomplete calls, ioctls in
    /// flight, off-CPU intervals), through the same chain as [`Self::drain`]'s.
    pub fn finish_calls(&mut self) {
        let (asm, mut chain) = self.chain();
        asm.finish(&mut |l| chain.line(l));
    }

    /// The assembler, and the chain its lines go through.
    fn chain(&mut self) -> (&mut Assembler, Chain<'_>) {
        let Collector { asm, summary, writer, replay, cgroups, entry_points, coverage, launch_configs, .. } = self;
        let chain = Chain {
            replay: replay.as_mut(),
            configs: launch_configs.as_mut(),
            entry_points: entry_points.as_mut(),
            coverage: coverage.as_mut(),
            summary,
            cgroups: cgroups.as_mut(),
            writer,
        };
        (asm, chain)
    }
}

/// What every assembled line goes through, in this order: the recorder's
/// annotation (`--replayable`), the entry points and the coverage counts
/// that observe it, the rank fields of an exec line (ranks.rs), the
/// summary, and the write (tagged with its cgroup under `--system` and
/// `--cgroup`).
pub struct Chain<'a> {
    pub replay: Option<&'a mut crate::collect::replayable::recorder::Recorder>,
    pub entry_points: Option<&'a mut crate::collect::entry_points::EntryPoints>,
    pub coverage: Option<&'a mut crate::collect::coverage::CallCounts>,
    pub configs: Option<&'a mut crate::collect::launch_configs::LaunchConfigs>,
    pub summary: &'a mut Summary,
    pub cgroups: Option<&'a mut crate::collect::cgroups::CgroupTable>,
    pub writer: &'a mut TraceWriter,
}

impl Chain<'_> {
    /// Takes one line through the chain.
    pub fn line(&mut self, mut l: Line) {
        if let Some(r) = self.replay.as_mut() {
            r.annotate(&mut l);
        }
        if let Some(e) = self.entry_points.as_mut() {
            e.observe(&l);
        }
        if let Some(c) = self.coverage.as_mut() {
            c.observe(&l);
        }
        if let Some(c) = self.configs.as_mut() {
            c.observe(&l);
        }
        if let Line::Value(v) = &mut l {
            crate::collect::ranks::annotate_exec(v);
        }
        self.summary.add_line(&l);
        match self.cgroups.as_mut() {
            Some(c) => crate::collect::cgroups::write_tagged(c, self.writer, &mut l),
            None => self.writer.write_line(&l),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chain gives an exec line its process's rank fields, whichever
    /// way it comes (drain, finish_calls), counts it and writes it.
    #[test]
    fn chain_annotates_exec_lines_counts_and_writes() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("RANK", "3")
            .env("LOCAL_RANK", "1")
            .env("WORLD_SIZE", "8")
            .spawn()
            .unwrap();
        // The environment is there once exec is done.
        let environ = format!("/proc/{}/environ", child.id());
        for _ in 0..100 {
            if std::fs::read(&environ).is_ok_and(|e| e.windows(7).any(|w| w == b"RANK=3\0")) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let dir = std::env::temp_dir().join(format!("tracer-chain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.jsonl");
        let file = std::fs::File::create(&path).unwrap();
        let mut writer = TraceWriter::new(crate::collect::zstd_out::TraceFile::Plain(file));
        let mut summary = Summary::default();
        let mut chain = Chain {
            replay: None,
            entry_points: None,
            coverage: None,
            configs: None,
            summary: &mut summary,
            cgroups: None,
            writer: &mut writer,
        };
        let exec = serde_json::json!({ "type": "process", "op": "exec", "pid": child.id(), "ts": 5 });
        chain.line(Line::Value(exec));
        writer.flush();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(writer.lines, 1);
        let written: Value = serde_json::from_str(std::fs::read_to_string(&path).unwrap().trim()).unwrap();
        let expect = serde_json::json!({
            "type": "process", "op": "exec", "pid": child.id(), "ts": 5,
            "rank": 3, "local_rank": 1, "world_size": 8,
        });
        assert_eq!(written, expect);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
