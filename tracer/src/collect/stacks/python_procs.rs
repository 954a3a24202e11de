//! Keeps the kernel's `PY_PROCS` map (tgid -> [`PyLayout`]) in step with
//! the recorded processes: a process is looked at ([`python_layout::find`])
//! when its first stack without Python frames (`py_status` NONE) arrives,
//! again at most every [`RETRY`] while it has no interpreter mapped (it may
//! not have loaded libpython yet), at most [`MAX_TRIES`] times; its entry is
//! removed when it exits.
use std::collections::HashMap;
use std::time::{Duration, Instant};

use aya::maps::{HashMap as BpfHashMap, MapData};
use serde_json::{Value, json};
use tracer_common::decode::Record;
use tracer_common::stack::{PyLayout, py_status};

use crate::collect::stacks::python_layout::{self, LayoutError, PyProcess};

/// Least time between two looks at a process without an interpreter.
pub const RETRY: Duration = Duration::from_millis(100);
/// Looks at a process before it is taken for one without Python.
pub const MAX_TRIES: u32 = 20;

enum State {
    /// Not found yet: tries so far, and when the last was.
    Looking { tries: u32, last: Instant },
    /// Its layout is in the map.
    Known(Box<PyProcess>),
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

pub struct PythonProcs {
    map: BpfHashMap<MapData, u32, PyLayout>,
    procs: HashMap<u32, State>,
    pub counts: Counts,
}

impl PythonProcs {
    pub fn new(map: BpfHashMap<MapData, u32, PyLayout>) -> Self {
        PythonProcs { map, procs: HashMap::new(), counts: Counts::default() }
    }

    /// Looks at one record: a stack that asks for the process's layout, or
    /// the process's exit.
    pub fn saw(&mut self, rec: &Record) {
        match rec {
            Record::Stack(s) if s.py_status == py_status::NONE => self.look(s.hdr.pid),
            Record::ProcExit(e) if e.group_dead == 1 => self.forget(e.hdr.pid),
            // A new program: looked at again at its first stack.
            Record::Exec { hdr, .. } => self.forget(hdr.pid),
            _ => {}
        }
    }

    fn forget(&mut self, pid: u32) {
        if let Some(State::Known(_)) = self.procs.remove(&pid) {
            let _ = self.map.remove(&pid);
        }
    }

    fn look(&mut self, pid: u32) {
        let now = Instant::now();
        let tries = match self.procs.get(&pid) {
            None => 0,
            Some(State::Looking { tries, last }) if now.duration_since(*last) >= RETRY => *tries,
            Some(_) => return,
        };
        let state = match python_layout::find(pid) {
            Ok(Some(p)) if python_layout::walkable(&p.layout) => match self.map.insert(pid, p.layout, 0) {
                Ok(()) => {
                    let (maj, min) = p.version();
                    *self.counts.found.entry(format!("{maj}.{min}")).or_default() += 1;
                    State::Known(Box::new(p))
                }
                Err(e) => {
                    self.counts.map_full += 1;
                    log::warn!("process {pid}: its Python layout could not be given to the kernel: {e}");
                    State::Done
                }
            },
            Ok(Some(p)) => {
                self.unknown(pid, format!("{}: frame fields beyond the bytes the walker reads", p.path.display()))
            }
            Ok(None) if tries + 1 >= MAX_TRIES => {
                self.counts.not_python += 1;
                State::Done
            }
            Ok(None) => State::Looking { tries: tries + 1, last: now },
            Err(e) => self.unknown(pid, layout_reason(&e)),
        };
        self.procs.insert(pid, state);
    }

    fn unknown(&mut self, pid: u32, why: String) -> State {
        self.counts.unknown += 1;
        log::info!("process {pid}: no Python stacks: {why}");
        if self.counts.reasons.len() < 8 && !self.counts.reasons.contains(&why) {
            self.counts.reasons.push(why);
        }
        State::Done
    }

    /// The layout found for `pid`, if any.
    pub fn process(&self, pid: u32) -> Option<&PyProcess> {
        match self.procs.get(&pid) {
            Some(State::Known(p)) => Some(p),
            _ => None,
        }
    }

    /// The footer's `python_layouts`.
    pub fn footer(&self) -> Value {
        let c = &self.counts;
        json!({
            "found": c.found,
            "unknown": c.unknown,
            "unknown_reasons": c.reasons,
            "not_python": c.not_python,
            "map_full": c.map_full,
        })
    }
}

fn layout_reason(e: &LayoutError) -> String {
    e.to_string()
}
