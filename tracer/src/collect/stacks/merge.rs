//! Native and Python frames → one stack, innermost first (pure).
//!
//! Each native frame of the interpreter loop (`_PyEval_EvalFrameDefault`)
//! ran a series of Python frames: from the next Python frame not yet
//! placed through the next one flagged `PY_ENTRY` (the outermost of that
//! run). It is replaced by them. Python frames left when the native frames
//! end (an interpreter built without frame pointers, whose loop frames were
//! not found) follow the native frames; no Python frames: native only.
use crate::decode::stacks::Frame;

/// A native frame of CPython's interpreter loop (GCC's split-off
/// `.cold` part included).
pub fn is_eval_loop(f: &Frame) -> bool {
    let n = &*f.func;
    n == "_PyEval_EvalFrameDefault" || n.starts_with("_PyEval_EvalFrameDefault.")
}

/// `native` leaf first; `python` innermost first, each with its
/// `PY_ENTRY` flag.
pub fn merge(native: Vec<Frame>, python: Vec<(Frame, bool)>) -> Vec<Frame> {
    let mut out = Vec::with_capacity(native.len() + python.len());
    let mut py = python.into_iter().peekable();
    for f in native {
        if is_eval_loop(&f) && py.peek().is_some() {
            for (p, entry) in py.by_ref() {
                out.push(p);
                if entry {
                    break;
                }
            }
        } else {
            out.push(f);
        }
    }
    out.extend(py.map(|(p, _)| p));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::stacks::FrameKind;

    fn n(name: &str) -> Frame {
        Frame::named(FrameKind::Native, name)
    }
    fn p(name: &str, entry: bool) -> (Frame, bool) {
        (Frame::named(FrameKind::Python, name), entry)
    }
    fn names(v: &[Frame]) -> Vec<&str> {
        v.iter().map(|f| &*f.func).collect()
    }

    #[test]
    fn each_loop_frame_takes_one_run_of_python_frames() {
        let native = [
            "cuLaunchKernel",
            "ffi_call",
            "_PyEval_EvalFrameDefault",
            "PyObject_Call",
            "_PyEval_EvalFrameDefault",
            "main",
        ];
        let python = vec![p("launch", false), p("step", true), p("train", false), p("<module>", true)];
        let v = merge(native.iter().map(|s| n(s)).collect(), python);
        assert_eq!(
            names(&v),
            ["cuLaunchKernel", "ffi_call", "launch", "step", "PyObject_Call", "train", "<module>", "main"]
        );
    }

    #[test]
    fn python_frames_left_follow_the_native_ones() {
        // No frame pointers in the interpreter: the chain stops before its loop.
        let v = merge(vec![n("cuLaunchKernel"), n("[unknown]")], vec![p("f", false), p("g", true), p("h", true)]);
        assert_eq!(names(&v), ["cuLaunchKernel", "[unknown]", "f", "g", "h"]);
        // More loop frames than runs: the extra ones stay native.
        let v = merge(vec![n("_PyEval_EvalFrameDefault.cold"), n("_PyEval_EvalFrameDefault")], vec![p("f", true)]);
        assert_eq!(names(&v), ["f", "_PyEval_EvalFrameDefault"]);
        // A run with no entry flag (a cut chain) takes every frame left.
        let v = merge(vec![n("_PyEval_EvalFrameDefault"), n("main")], vec![p("f", false), p("g", false)]);
        assert_eq!(names(&v), ["f", "g", "main"]);
        assert_eq!(names(&merge(vec![n("a"), n("b")], vec![])), ["a", "b"]);
        assert_eq!(names(&merge(vec![], vec![p("f", true)])), ["f"]);
    }
}
