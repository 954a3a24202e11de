//! Opening a recording and planning it, for one process of it when asked
//! (`--pid`, `--rank`: recording/ranks.rs), and what that means for the
//! output checks: outputs copied after the rank's first skipped collective
//! read memory the collective would have written, so they are not
//! comparable with the recorded bytes (counted, not failures); those
//! copied before it are compared as usual. Here, above [`crate::recording`]
//! and [`crate::plan`] (as [`crate::data_check`]).

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::plan::{self, Plan};
use crate::recording::Recording;
use crate::recording::ranks::{self, Selected, Selection};

/// A recording opened, cut down to the selected process when asked.
pub struct Opened {
    pub rec: Recording,
    pub selected: Option<Selected>,
    /// Without selection, a recording of several processes: the line that says so.
    pub processes_note: Option<String>,
}

/// A recording opened and planned.
pub struct Planned {
    pub rec: Recording,
    pub plan: Plan,
    /// The selected process (None: every process's work, as one).
    pub selected: Option<Selected>,
    /// Lines for the user: the processes of a multi-process recording replayed without
    /// selection, or the selected process and its skipped collectives.
    pub notes: Vec<String>,
}

/// Opens `dir` and keeps the selected process's lines (when `sel`). Callers print the
/// recording's warnings before planning, which may fail.
pub fn open(dir: &Path, sel: Option<Selection>) -> Result<Opened> {
    let mut rec = Recording::open(dir)?;
    let (selected, processes_note) = match sel {
        None => (None, ranks::several_processes_note(&ranks::processes(&rec.trace))),
        Some(sel) => {
            let (t, s) = ranks::select(&rec.trace, sel)?;
            rec.trace = t;
            (Some(s), None)
        }
    };
    Ok(Opened { rec, selected, processes_note })
}

impl Opened {
    /// Plans the recording (one rank of several: collectives skipped) and checks the data files the
    /// plan needs.
    pub fn plan(self) -> Result<Planned> {
        let Opened { rec, selected, processes_note } = self;
        let plan = match &selected {
            Some(s) if s.skip_collectives => plan::build_rank(&rec.manifest, &rec.trace, rec.trace_name())?,
            _ => plan::build(&rec.manifest, &rec.trace, rec.trace_name())?,
        };
        crate::data_check::check(&rec, &plan)?;
        let mut notes: Vec<String> = processes_note.into_iter().collect();
        if let Some(s) = &selected {
            notes.push(s.text(plan.coverage.collectives.map_or(0, |c| c.launches)));
        }
        Ok(Planned { rec, plan, selected, notes })
    }
}

/// [`open`], then [`Opened::plan`].
pub fn open_and_plan(dir: &Path, sel: Option<Selection>) -> Result<Planned> {
    open(dir, sel)?.plan()
}

/// The output checks (trace lines of device-to-host copies) that come after the first skipped
/// collective in recorded order: not comparable with the recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotComparable {
    pub collectives_skipped: usize,
    pub first_collective_line: usize,
    /// Lines of the checks after it.
    pub lines: Vec<usize>,
    /// Of those, how many were bit-for-bit identical anyway.
    pub identical: usize,
    pub reason: String,
}

/// Splits the checks `(line, matches)` of a plan: None when no collective was skipped (every check
/// counts).
pub fn not_comparable(plan: &Plan, checks: &[(usize, bool)]) -> Option<NotComparable> {
    let c = plan.coverage.collectives?;
    let first = (c.first_ts, c.first_line);
    let after = |line: usize| plan.ops.iter().find(|o| o.line == line).is_some_and(|o| (o.ts, o.line) > first);
    let lines: Vec<usize> = checks.iter().filter(|(l, _)| after(*l)).map(|(l, _)| *l).collect();
    let identical = checks.iter().filter(|(l, m)| *m && lines.contains(l)).count();
    Some(NotComparable {
        collectives_skipped: c.launches,
        first_collective_line: c.first_line,
        lines,
        identical,
        reason: format!("not comparable: {} collectives skipped", c.launches),
    })
}

/// Whether the run's output checks pass: every check `(line, matches)` matched, except those
/// [`not_comparable`] set aside (they do not fail the run).
pub fn checks_pass(checks: &[(usize, bool)], not_comparable: Option<&NotComparable>) -> bool {
    checks.iter().all(|(line, m)| *m || not_comparable.is_some_and(|n| n.lines.contains(line)))
}
