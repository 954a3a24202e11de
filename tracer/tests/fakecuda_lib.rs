//! Checks of the test fixtures themselves (no root needed): the fake
//! libcuda exports every function tracer probes, each starts with
//! `push %rbp` like real libcuda's, and the driver's scenarios run.
mod common;

use std::collections::BTreeSet;
use std::process::Command;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use tracer_common::funcs::FUNCS;

/// The per-thread-default-stream variants the fake exports (as real drivers do).
const VARIANTS: &[&str] = &[
    "cuLaunchKernel_ptsz",
    "cuLaunchKernelEx_ptsz",
    "cuMemcpyAsync_ptsz",
    "cuMemcpyHtoDAsync_v2_ptsz",
    "cuStreamSynchronize_ptsz",
    "cuMemcpy_ptds",
    "cuMemcpyHtoD_v2_ptds",
    "cuEventRecord_ptsz",
];

/// Exported function name -> its first 4 bytes.
fn exported_functions() -> Vec<(String, Vec<u8>)> {
    let data = std::fs::read(&common::fake().lib).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let mut out = Vec::new();
    for sym in file.dynamic_symbols() {
        if sym.kind() != SymbolKind::Text || !sym.is_definition() {
            continue;
        }
        let name = sym.name().unwrap().to_string();
        let section = file.section_by_index(sym.section_index().unwrap()).unwrap();
        let bytes = section.data().unwrap();
        let off = (sym.address() - section.address()) as usize;
        out.push((name, bytes[off..off + 4].to_vec()));
    }
    out
}

#[test]
fn fake_exports_every_probed_function_and_variant() {
    let exported: BTreeSet<String> = exported_functions().into_iter().map(|(n, _)| n).collect();
    let mut wanted: BTreeSet<String> = FUNCS.iter().map(|f| f.name.to_string()).collect();
    wanted.extend(VARIANTS.iter().map(|s| s.to_string()));
    let missing: Vec<_> = wanted.difference(&exported).collect();
    assert!(missing.is_empty(), "the fake libcuda does not export {missing:?}");
    let extra: Vec<_> = exported.iter().filter(|n| n.starts_with("cu") && !wanted.contains(*n)).collect();
    assert!(extra.is_empty(), "the fake exports cu* functions tracer does not probe: {extra:?}");
    assert_eq!(FUNCS.len() + VARIANTS.len(), wanted.len());
}

#[test]
fn every_fake_function_starts_with_push_rbp() {
    let funcs = exported_functions();
    let bad: Vec<_> = funcs
        .iter()
        .filter(|(n, _)| n.starts_with("cu"))
        // push %rbp; mov %rsp,%rbp
        .filter(|(_, b)| b[..] != [0x55, 0x48, 0x89, 0xe5])
        .map(|(n, b)| format!("{n}: {b:02x?}"))
        .collect();
    assert!(bad.is_empty(), "functions not starting with push %rbp; mov %rsp,%rbp: {bad:?}");
    assert!(funcs.len() >= FUNCS.len());

    // The same, as objdump sees it, for one function.
    let nm = Command::new("nm").args(["-D", "--defined-only"]).arg(&common::fake().lib).output();
    let Ok(nm) = nm else {
        println!("nm not found: objdump cross-check skipped");
        return;
    };
    let nm = String::from_utf8_lossy(&nm.stdout);
    let addr = nm
        .lines()
        .find_map(|l| l.strip_suffix(" T cuLaunchKernel"))
        .map(|a| u64::from_str_radix(a, 16).unwrap())
        .expect("nm -D lists cuLaunchKernel");
    let dis = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(format!("--start-address={addr:#x}"))
        .arg(format!("--stop-address={:#x}", addr + 1))
        .arg(&common::fake().lib)
        .output();
    let Ok(dis) = dis else {
        println!("objdump not found: cross-check skipped");
        return;
    };
    let text = String::from_utf8_lossy(&dis.stdout);
    let first = text.lines().rev().find(|l| l.contains(':') && l.trim_start().starts_with(&format!("{addr:x}")));
    assert!(
        first.is_some_and(|l| l.contains("push") && l.contains("%rbp")),
        "objdump: the first instruction of cuLaunchKernel is not push %rbp:\n{text}"
    );
}

#[test]
fn driver_scenarios_run_untraced() {
    for args in [
        &["all"][..],
        &["fork"],
        &["grandchild"],
        &["dirty"],
        &["loop", "1000"],
        &["threads", "3", "100"],
        &["longname", "5000"],
        &["coldstr"],
    ] {
        let out = common::driver_cmd(args).env("FAKECUDA_SYNC_US", "1000").output().unwrap();
        assert!(
            out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
            "driver {args:?}: {}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = common::driver_cmd(&["crash"]).env("FAKECUDA_SYNC_US", "5000000").output().unwrap();
    assert_eq!(common::shell_code(&out.status), 139, "driver crash: {}", out.status);
    let out = common::driver_cmd(&["bogus"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
