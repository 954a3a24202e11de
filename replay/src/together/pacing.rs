//! A together run paces each tenant by its recorded host gaps: op `i` is
//! submitted the recorded host time after op `i − 1`, counted from that
//! call's return when the recording measured its duration (a return-probed
//! call: a synchronization, a synchronous copy), else from its start. A delay
//! of the GPU then delays what the program did after waiting for it, as it
//! would in the program; `timed` mode's offsets from the pass's start would
//! absorb it into the next recorded gap instead.

use crate::exec::session::HostGap;
use crate::plan::Op;

/// Each op's wait before its submission (the first op's is 0).
pub fn host_gaps(ops: &[Op]) -> Vec<HostGap> {
    let mut v = Vec::with_capacity(ops.len());
    for (i, o) in ops.iter().enumerate() {
        if i == 0 {
            v.push(HostGap { ns: 0, after_return: false });
            continue;
        }
        let prev = &ops[i - 1];
        v.push(match prev.duration_ns {
            Some(d) => HostGap { ns: o.ts.saturating_sub(prev.ts + d), after_return: true },
            None => HostGap { ns: o.ts.saturating_sub(prev.ts), after_return: false },
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::OpKind;

    fn op(ts: u64, duration_ns: Option<u64>) -> Op {
        Op { line: 0, ts, duration_ns, pid: 1, tid: 1, stream: None, kind: OpKind::CtxSync }
    }

    #[test]
    fn gaps_from_start_or_from_return() {
        let ops = vec![op(1_000, None), op(1_500, Some(3_000)), op(4_700, None), op(4_600, None)];
        assert_eq!(
            host_gaps(&ops),
            vec![
                HostGap { ns: 0, after_return: false },
                HostGap { ns: 500, after_return: false },
                HostGap { ns: 200, after_return: true },
                HostGap { ns: 0, after_return: false },
            ]
        );
    }
}
