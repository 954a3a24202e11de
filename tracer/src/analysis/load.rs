//! Reads a trace file (.jsonl or .jsonl.gz) into a [`Trace`], with progress
//! on a terminal. The parsing itself is in `model` (pure).
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::model::{Trace, TraceBuilder};
use super::progress::Progress;

pub fn load(path: &Path) -> anyhow::Result<Trace> {
    let total = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let counter = Arc::new(AtomicU64::new(0));
    let mut progress = Progress::new(total, &format!("reading {}", path.display()));
    let mut b = TraceBuilder::new(&path.display().to_string());
    let (_, truncated) = crate::reader::for_each_raw(path, counter.clone(), |n, bytes| {
        if n % 4096 == 0 {
            progress.set(counter.load(Ordering::Relaxed));
        }
        b.add_line(n, bytes)
    })?;
    if truncated {
        b.set_truncated();
    }
    progress.message("sorting");
    let t = b.finish();
    progress.finish();
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_the_committed_recording() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/simple_inference.jsonl.gz");
        let t = load(&p).unwrap();
        assert_eq!(t.lines, 1979);
        assert_eq!(t.calls.len(), 1979 - 2 - 36);
        assert_eq!(t.procs.len(), 36);
        assert_eq!(t.calls.iter().filter(|c| c.kind == crate::analysis::model::Kind::Launch).count(), 88);
        assert!(t.calls.windows(2).all(|w| w[0].ts <= w[1].ts));
        assert_eq!(t.loss.missing(), 0);
        assert!(t.footer.is_some() && t.header.is_some() && !t.truncated);
    }

    #[test]
    fn partial_last_line_is_skipped_and_flagged() {
        let dir = std::env::temp_dir().join(format!("tracer-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("cut.jsonl");
        std::fs::write(
            &p,
            "{\"type\":\"header\"}\n{\"ts\":1,\"pid\":1,\"tid\":1,\"type\":\"init\",\"op\":\"init\",\"name\":\"cuInit\"}\n{\"ts\":2,\"pid\"",
        )
        .unwrap();
        let t = load(&p).unwrap();
        assert!(t.truncated);
        assert_eq!(t.calls.len(), 1);
        std::fs::write(
            &p,
            "{\"type\":\"header\"}\n{\"ts\":1,\"pid\":1,\"type\":\"kernel\",\"op\":\"launch\",\"grid\":[1,2]}\n",
        )
        .unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("cut.jsonl: line 2: invalid length 2, expected an array of length 3"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
