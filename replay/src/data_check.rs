//! Between opening a recording and replaying its plan: every `data/<sha256>`
//! the plan's copies use is on disk with the copy's size. Here, above both
//! [`crate::recording`] (which knows nothing of plans) and [`crate::plan`]
//! (pure, no I/O).

use anyhow::{Context, Result, bail};

use crate::plan::{OpKind, Plan};
use crate::recording::Recording;

/// Every `data/<sha256>` the plan's copies use exists with the copy's size
/// (the content is checked against its name when replay reads it).
pub fn check(rec: &Recording, plan: &Plan) -> Result<()> {
    for op in &plan.ops {
        if let OpKind::Copy(c) = &op.kind
            && let Some(sha) = &c.data
        {
            let p = rec.data_path(sha);
            let meta = std::fs::metadata(&p)
                .with_context(|| format!("{}:{}: data {sha}: {} missing", rec.trace_name(), op.line, p.display()))?;
            if meta.len() != c.size {
                bail!(
                    "{}:{}: data {sha}: {} is {} bytes, the copy is {} bytes (truncated?)",
                    rec.trace_name(),
                    op.line,
                    p.display(),
                    meta.len(),
                    c.size
                );
            }
        }
    }
    Ok(())
}
