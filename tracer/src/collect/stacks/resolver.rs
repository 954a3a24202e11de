//! The collector's stack resolver: a stack record's native frames
//! symbolized (native.rs), its Python frames read (python.rs), the two
//! merged (merge.rs).
use std::collections::BTreeMap;

use tracer_common::decode::Stack;
use tracer_common::stack::PY_ENTRY;

use crate::collect::stacks::merge::merge;
use crate::collect::stacks::native::NativeResolver;
use crate::collect::stacks::python::{PythonResolver, VersionOf};
use crate::decode::stacks::{Frame, StackResolver};

pub struct Resolver {
    pub native: NativeResolver,
    pub python: PythonResolver,
}

impl Resolver {
    /// `python_version`: the Python version of a process (None: not Python
    /// or not known), from the layout finder.
    pub fn new(python_version: VersionOf) -> Self {
        Resolver { native: NativeResolver::default(), python: PythonResolver::new(python_version) }
    }
}

impl StackResolver for Resolver {
    fn resolve(&mut self, s: &Stack) -> Vec<Frame> {
        let pid = s.hdr.pid;
        let native: Vec<Frame> = s.native().enumerate().map(|(i, a)| self.native.frame(pid, a, i == 0)).collect();
        let py: Vec<_> = s.py().collect();
        let python: Vec<(Frame, bool)> =
            self.python.frames(pid, &py).into_iter().zip(&py).map(|(fr, f)| (fr, f.code & PY_ENTRY != 0)).collect();
        merge(native, python)
    }

    fn version(&mut self, s: &Stack) -> u64 {
        self.python.version(s.hdr.pid, s.py())
    }

    fn forget_process(&mut self, pid: u32) {
        self.native.forget(pid);
        self.python.forget(pid);
    }

    fn errors(&self) -> BTreeMap<String, u64> {
        let mut e = BTreeMap::new();
        for (k, v) in &self.native.errors {
            e.insert(format!("native: {k}"), *v);
        }
        if self.native.maps.read_errors > 0 {
            e.insert("native: /proc/PID/maps unreadable".into(), self.native.maps.read_errors);
        }
        if self.native.maps.unmapped_lookups > 0 {
            // Not an error either: frame chains through code without frame pointers end so.
            e.insert(
                "native: frames at addresses the process has not mapped ([unknown])".into(),
                self.native.maps.unmapped_lookups,
            );
        }
        for (k, v) in &self.python.errors {
            e.insert(k.clone(), *v);
        }
        if self.python.changed > 0 {
            // Not an error: counted so a reader sees the addresses were reused.
            e.insert("python code object replaced at its address (read again)".into(), self.python.changed);
        }
        e
    }
}
