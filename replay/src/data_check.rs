//! Between opening a recording and replaying its plan: every `data/<sha256>`
//! the plan's copies use is in the recording with the copy's size and content. Here, above both
//! [`crate::recording`] (which knows nothing of plans) and [`crate::plan`]
//! (pure, no I/O).

use anyhow::{Context, Result};

use crate::plan::{OpKind, Plan};
use crate::recording::Recording;

/// Every `data/<sha256>` the plan's copies use is in the recording (not
/// through a link), with the copy's size and the SHA-256 its name says.
pub fn check(rec: &Recording, plan: &Plan) -> Result<()> {
    let mut checked = std::collections::HashSet::new();
    for op in &plan.ops {
        if let OpKind::Copy(c) = &op.kind
            && let Some(sha) = &c.data
            && checked.insert((sha.as_str(), c.size))
        {
            rec.check_data(sha, c.size).with_context(|| format!("{}:{}: data {sha}", rec.trace_name(), op.line))?;
        }
    }
    Ok(())
}
