//! The rank of a process of a distributed job (torchrun, mpirun, a serving
//! framework's workers), read from its environment when its exec line is
//! written: `RANK`, `LOCAL_RANK` and `WORLD_SIZE` (torch.distributed's
//! names; `OMPI_COMM_WORLD_RANK` / `PMI_RANK` when `RANK` is absent) from
//! /proc/PID/environ. The exec line gets `rank`, `local_rank` and
//! `world_size` for those found; a process that exited before its exec line
//! was written, or whose environ tracer may not read, gets none (its lanes
//! are labelled by pid).
use serde_json::Value;

/// The variables, in the order they are looked for, and the field each sets
/// (the first variable found for a field wins).
const VARS: &[(&str, &str)] = &[
    ("RANK", "rank"),
    ("OMPI_COMM_WORLD_RANK", "rank"),
    ("PMI_RANK", "rank"),
    ("LOCAL_RANK", "local_rank"),
    ("OMPI_COMM_WORLD_LOCAL_RANK", "local_rank"),
    ("WORLD_SIZE", "world_size"),
    ("OMPI_COMM_WORLD_SIZE", "world_size"),
];

/// The rank fields of an environment block (NUL-separated `NAME=value`).
pub fn rank_fields(environ: &[u8]) -> Vec<(&'static str, u64)> {
    let mut out: Vec<(&'static str, u64)> = Vec::new();
    for (var, field) in VARS {
        if out.iter().any(|(f, _)| f == field) {
            continue;
        }
        let value = environ.split(|&b| b == 0).find_map(|kv| {
            let rest = kv.strip_prefix(var.as_bytes())?.strip_prefix(b"=")?;
            std::str::from_utf8(rest).ok()?.trim().parse::<u64>().ok()
        });
        if let Some(v) = value {
            out.push((field, v));
        }
    }
    out
}

/// Adds the rank fields to an exec line (`type` process, `op` exec) from
/// the process's environment; other lines are left alone.
pub fn annotate_exec(v: &mut Value) {
    if v["type"] != "process" || v["op"] != "exec" {
        return;
    }
    let Some(pid) = v["pid"].as_u64() else { return };
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else { return };
    if let Value::Object(m) = v {
        for (field, n) in rank_fields(&env) {
            m.insert(field.into(), n.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torchrun_and_mpi_variables() {
        let env = b"PATH=/bin\0LOCAL_RANK=1\0RANK=3\0WORLD_SIZE=4\0MASTER_PORT=29500\0";
        assert_eq!(rank_fields(env), [("rank", 3), ("local_rank", 1), ("world_size", 4)]);
        let mpi = b"OMPI_COMM_WORLD_RANK=2\0OMPI_COMM_WORLD_LOCAL_RANK=0\0OMPI_COMM_WORLD_SIZE=8\0";
        assert_eq!(rank_fields(mpi), [("rank", 2), ("local_rank", 0), ("world_size", 8)]);
        // Not a number, a prefix of another name: nothing.
        assert_eq!(rank_fields(b"RANK=x\0RANKS=1\0MY_RANK=2\0"), []);
        assert_eq!(rank_fields(b""), []);
    }

    #[test]
    fn annotates_exec_lines_from_the_live_process() {
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .env("RANK", "5")
            .env("LOCAL_RANK", "1")
            .env("WORLD_SIZE", "6")
            .spawn()
            .expect("running sleep");
        let pid = child.id();
        let mut exec = serde_json::json!({"type": "process", "op": "exec", "pid": pid});
        // The environment is there once exec is done (at most 60 s of tries).
        for _ in 0..6000 {
            annotate_exec(&mut exec);
            if exec.get("rank").is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let mut fork = serde_json::json!({"type": "process", "op": "fork", "pid": pid});
        annotate_exec(&mut fork);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            exec,
            serde_json::json!({"type": "process", "op": "exec", "pid": pid, "rank": 5, "local_rank": 1, "world_size": 6})
        );
        assert!(fork.get("rank").is_none(), "only exec lines");
        let mut gone = serde_json::json!({"type": "process", "op": "exec", "pid": u32::MAX});
        annotate_exec(&mut gone);
        assert!(gone.get("rank").is_none(), "no such process: no fields");
    }
}
