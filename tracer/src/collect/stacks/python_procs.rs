//! Keeps the kernel's `PY_PROCS` map (tgid -> [`PyLayout`]) in step with
//! the recorded processes: a process is looked at ([`python_layout::find`])
//! when its first stack without Python frames (`py_status` NONE) arrives,
//! again at most every [`RETRY`] while it has no interpreter mapped (it may
//! not have loaded libpython yet), at most [`MAX_TRIES`] times; again after
//! an exec; its entry is removed when it exits.
//!
//! Those looks come after the stacks that ask for them, and a look takes
//! tens of ms: a program's first driver calls could come before its layout
//! is in the map, and have no Python frames. So a process that opens
//! libcuda, stopped by the kernel side until its probes are in place
//! (libcuda_watch.rs), is also looked at before it is continued
//! ([`PythonProcs::before_resume`]) when it maps an interpreter: none of
//! its calls runs before its layout is in the map.
//!
//! The looks run on a thread of their own: one reads and parses the
//! interpreter's file (~60 ms for libpython3.11 in a debug build), which on
//! the collector's thread would hold back the drain, and with it the
//! resolution of the stacks already taken while the process's memory is
//! still there.
use std::collections::HashMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aya::maps::{HashMap as BpfHashMap, MapData};
use serde_json::{Value, json};
use tracer_common::decode::Record;
use tracer_common::stack::{PyLayout, py_status};

use crate::collect::stacks::python_layout::{self, PyProcess};

/// Least time between two looks at a process without an interpreter.
pub const RETRY: Duration = Duration::from_millis(100);
/// Looks at a process before it is taken for one without Python.
pub const MAX_TRIES: u32 = 20;
/// Longest wait for the look at a stopped process ([`PythonProcs::before_resume`]):
/// past it, the process is continued all the same.
pub const RESUME_WAIT: Duration = Duration::from_secs(2);

enum State {
    /// Not found yet: tries so far, and when the last was (None: look at
    /// the next stack).
    Looking { tries: u32, last: Option<Instant> },
    /// Its layout is in the map.
    Known,
    /// Looked at [`MAX_TRIES`] times without an interpreter, or its layout
    /// is unknown: not looked at again.
    Done,
}

/// What the processes were found to be (footer `python_layouts`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Processes whose layout went to the kernel, per version ("3.11").
    pub found: std::collections::BTreeMap<String, u64>,
    /// Processes with an interpreter whose layout is unknown, with the
    /// first reasons (one line each).
    pub unknown: u64,
    pub reasons: Vec<String>,
    /// Processes given up on without an interpreter found.
    pub not_python: u64,
    /// Layouts the kernel's map refused (full).
    pub map_full: u64,
}

enum Msg {
    /// A stack of the process without Python frames.
    Stack(u32),
    /// The process exited.
    Forget(u32),
    /// The process exec'd: another program.
    Exec(u32),
    /// The process is stopped until its layout is looked at: the look is
    /// made now (whatever [`RETRY`] says), then the sender told.
    BeforeResume(u32, Sender<()>),
}

/// The collector's handle: records go in, the looks happen on the worker.
pub struct PythonProcs {
    tx: Option<Sender<Msg>>,
    worker: Option<std::thread::JoinHandle<()>>,
    counts: Arc<Mutex<Counts>>,
}

impl PythonProcs {
    pub fn new(map: BpfHashMap<MapData, u32, PyLayout>) -> Self {
        let counts = Arc::new(Mutex::new(Counts::default()));
        let (tx, rx) = channel();
        let mut w = Worker { map, procs: HashMap::new(), counts: counts.clone(), counted: Default::default() };
        let worker = std::thread::Builder::new()
            .name("python-layouts".into())
            .spawn(move || {
                crate::collect::own_sched::apply(crate::collect::own_sched::Role::Keeps);
                w.run(rx)
            })
            .map_err(|e| log::warn!("no Python layouts: starting their thread failed: {e}"))
            .ok();
        PythonProcs { tx: worker.as_ref().map(|_| tx), worker, counts }
    }

    /// Looks at one record: a stack that asks for the process's layout, or
    /// the process's exit or exec.
    pub fn saw(&mut self, rec: &Record) {
        let msg = match rec {
            Record::Stack(s) if s.py_status == py_status::NONE => Msg::Stack(s.hdr.pid),
            Record::ProcExit(e) if e.group_dead == 1 => Msg::Forget(e.hdr.pid),
            // A new program: looked at again.
            Record::Exec { hdr, .. } => Msg::Exec(hdr.pid),
            _ => return,
        };
        if let Some(tx) = &self.tx {
            let _ = tx.send(msg);
        }
    }

    /// Called with a process stopped at its open of libcuda, before it is
    /// continued: if it maps an interpreter and its layout is not in the
    /// map yet, waits (at most [`RESUME_WAIT`]) for the look that puts it
    /// there, so that its driver calls have their Python frames.
    pub fn before_resume(&mut self, pid: u32) {
        let Some(tx) = &self.tx else { return };
        let (done_tx, done_rx) = channel();
        if tx.send(Msg::BeforeResume(pid, done_tx)).is_ok() && done_rx.recv_timeout(RESUME_WAIT).is_err() {
            log::warn!("process {pid}: continued before its Python layout was looked at (more than {RESUME_WAIT:?})");
        }
    }

    /// Waits for the looks asked for so far, then gives the counts.
    pub fn finish(&mut self) -> Counts {
        drop(self.tx.take());
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
        self.counts.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The footer's `python_layouts` (after [`Self::finish`]).
    pub fn footer(&mut self) -> Value {
        let c = self.finish();
        json!({
            "found": c.found,
            "unknown": c.unknown,
            "unknown_reasons": c.reasons,
            "not_python": c.not_python,
            "map_full": c.map_full,
        })
    }
}

struct Worker {
    map: BpfHashMap<MapData, u32, PyLayout>,
    procs: HashMap<u32, State>,
    counts: Arc<Mutex<Counts>>,
    /// (pid, what was found) already counted: a process looked at again
    /// after its exec (whose record may come after the look that already
    /// saw the new program) counts once.
    counted: std::collections::HashSet<(u32, String)>,
}

impl Worker {
    fn run(&mut self, rx: Receiver<Msg>) {
        for m in rx {
            match m {
                Msg::Stack(pid) => self.look(pid),
                Msg::Forget(pid) => {
                    if let Some(State::Known) = self.procs.remove(&pid) {
                        let _ = self.map.remove(&pid);
                    }
                }
                Msg::Exec(pid) => self.exec(pid),
                Msg::BeforeResume(pid, done) => {
                    self.before_resume(pid);
                    let _ = done.send(());
                }
            }
        }
    }

    /// Counts `what` of `pid` once.
    fn count(&mut self, pid: u32, what: &str, f: impl FnOnce(&mut Counts)) {
        if !self.counted.insert((pid, what.to_string())) {
            return;
        }
        if let Ok(mut c) = self.counts.lock() {
            f(&mut c);
        }
    }

    /// After an exec: the layout found before it may be the new program's
    /// already (the look can come after the exec it precedes in the
    /// records), so the process is looked at now: found, it stays in the
    /// map; not (its interpreter not mapped yet), it leaves it and is looked
    /// at again at its next stack.
    fn exec(&mut self, pid: u32) {
        let was_known = matches!(self.procs.remove(&pid), Some(State::Known));
        match python_layout::find(pid) {
            Ok(Some(p)) if python_layout::walkable(&p.layout) => {
                let s = self.known(pid, &p);
                self.procs.insert(pid, s);
            }
            _ => {
                if was_known {
                    let _ = self.map.remove(&pid);
                }
                self.procs.insert(pid, State::Looking { tries: 0, last: None });
            }
        }
    }

    /// A process stopped before its first instruction of libcuda: looked
    /// at now, unless its layout is known, it was given up on, or it maps
    /// no file that may be an interpreter (the look of a process without
    /// Python, which reads its executable, is left to its stacks).
    fn before_resume(&mut self, pid: u32) {
        match self.procs.get(&pid) {
            Some(State::Known | State::Done) => {}
            Some(State::Looking { tries, .. }) if python_layout::maps_interpreter(pid) => self.look_now(pid, *tries),
            None if python_layout::maps_interpreter(pid) => self.look_now(pid, 0),
            _ => {}
        }
    }

    fn look(&mut self, pid: u32) {
        let now = Instant::now();
        let tries = match self.procs.get(&pid) {
            None => 0,
            Some(State::Looking { tries, last }) if last.is_none_or(|l| now.duration_since(l) >= RETRY) => *tries,
            Some(_) => return,
        };
        self.look_now(pid, tries);
    }

    /// Looks at `pid`, its `tries`-th look.
    fn look_now(&mut self, pid: u32, tries: u32) {
        let now = Instant::now();
        let state = match python_layout::find(pid) {
            Ok(Some(p)) if python_layout::walkable(&p.layout) => self.known(pid, &p),
            Ok(Some(p)) => {
                self.unknown(pid, format!("{}: frame fields beyond the bytes the walker reads", p.path.display()))
            }
            Ok(None) if tries + 1 >= MAX_TRIES => {
                self.count(pid, "not python", |c| c.not_python += 1);
                State::Done
            }
            Ok(None) => State::Looking { tries: tries + 1, last: Some(now) },
            Err(e) => self.unknown(pid, e.to_string()),
        };
        self.procs.insert(pid, state);
    }

    fn known(&mut self, pid: u32, p: &PyProcess) -> State {
        match self.map.insert(pid, p.layout, 0) {
            Ok(()) => {
                let (maj, min) = p.version();
                let v = format!("{maj}.{min}");
                self.count(pid, &v.clone(), |c| *c.found.entry(v).or_default() += 1);
                State::Known
            }
            Err(e) => {
                self.count(pid, "map full", |c| c.map_full += 1);
                log::warn!("process {pid}: its Python layout could not be given to the kernel: {e}");
                State::Done
            }
        }
    }

    fn unknown(&mut self, pid: u32, why: String) -> State {
        log::info!("process {pid}: no Python stacks: {why}");
        self.count(pid, &why.clone(), |c| {
            c.unknown += 1;
            if c.reasons.len() < 8 && !c.reasons.contains(&why) {
                c.reasons.push(why);
            }
        });
        State::Done
    }
}
