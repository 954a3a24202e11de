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
    // CUDA 12.x/13 entry points whose variants libcuda 580 exports too
    "cuMemPrefetchAsync_v2_ptsz",
    "cuMemcpyBatchAsync_v2_ptsz",
    "cuStreamGetCaptureInfo_ptsz",
];

/// Exported on purpose outside the table: an entry point cuGetProcAddress hands
/// out that tracer counts without decoding (see fake_proc_address in fakecuda.c).
const UNLISTED: &[&str] = &["cuFakeUnlistedAsync"];

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
    assert_eq!(extra, UNLISTED.iter().collect::<Vec<_>>(), "the fake's cu* exports tracer does not probe");
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

/// replayable.c, untraced: its own account of what it passed (each launch's
/// parameter buffer assembled from its kernelParams or `extra`, its loads and
/// copies) equals what common::replayable computes independently from
/// kernels.cu's layouts, so root_replayable.rs's expectations are right
/// before any recorder sees the program.
#[test]
fn replayable_program_passes_what_the_tests_expect() {
    use common::replayable as r;
    use std::collections::{BTreeMap, BTreeSet};

    let prog = common::fake_program("replayable");
    let out = Command::new(&prog).arg(r::fixture_dir()).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "replayable: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut launches, mut loads, mut copies, mut lookups, mut graphs) = (BTreeMap::new(), vec![], vec![], vec![], 0);
    for line in stdout.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        match w[0] {
            "launch" => {
                let id: u32 = w[1].parse().unwrap();
                let prev =
                    launches.insert(id, (w[2].to_string(), w[3].to_string(), w[4].to_string(), w[5].to_string()));
                assert!(prev.is_none(), "launch {id} twice");
            }
            "load" => loads.push((w[1].to_string(), w[2].to_string(), w[3].parse::<usize>().unwrap())),
            "copy" => copies.push((w[1].to_string(), w[2].parse::<u64>().unwrap())),
            "lookup" => lookups.push((w[1].to_string(), w[2].to_string(), w[3].to_string(), w[4].to_string())),
            "graph" => graphs += 1,
            _ => panic!("unexpected line {line:?}"),
        }
    }

    let plan = r::plan();
    assert_eq!(plan.len(), 120);
    assert_eq!(
        launches.keys().copied().collect::<Vec<_>>(),
        plan.iter().map(|l| l.id).collect::<BTreeSet<_>>().into_iter().collect::<Vec<_>>()
    );
    for l in &plan {
        let (api, kernel, via, hex) = &launches[&l.id];
        let ctx = format!("launch {}", l.id);
        assert_eq!(api, l.api, "{ctx}");
        match r::expected_params(l) {
            Some(want) => {
                assert_eq!(kernel, l.kernel.unwrap(), "{ctx}");
                assert_eq!(via, l.via.params_from(), "{ctx}");
                assert_eq!(hex, &r::hex(&want), "{ctx}");
                assert_eq!(want.len() as u32, r::kernel(kernel).size, "{ctx}");
            }
            None => assert_eq!((kernel.as_str(), via.as_str(), hex.as_str()), ("-", "-", "-"), "{ctx}"),
        }
    }
    // Spot checks of the encoding against hand-written bytes.
    let k_struct_2 = "4200000000000000\
                      0200000000000000 0000000000000240 faff000000000000\
                      020304 00 0270 0000 0200200000 7f0000";
    assert_eq!(launches[&2].3, k_struct_2.replace(' ', ""), "k_struct launch 2 (tag, Odd, Rgb, pad, h, pad, out)");
    assert!(launches[&12].3.starts_with("4ceeeeeeeeeeeeee0ceeeeeeeeeeeeee"), "extra padding: {}", launches[&12].3);
    assert_eq!(launches[&7].3, "", "k_noparams: an empty buffer");

    let want_loads: Vec<_> = r::loads()
        .iter()
        .map(|l| match l.fixture {
            Some(f) => (l.api.to_string(), f.to_string(), r::fixture(f).len()),
            None => (l.api.to_string(), if l.api == "cuModuleLoad" { "missing-file" } else { "unmapped" }.into(), 0),
        })
        .collect();
    assert_eq!(loads, want_loads);
    let want_copies: Vec<_> = r::copies().iter().map(|c| (c.api.to_string(), c.size)).collect();
    assert_eq!(copies, want_copies);
    assert_eq!(graphs, r::GRAPH_LAUNCHES);

    // The fake's handles: unique per (owner, name) and kind, the same for the
    // same pair, the documented values for the first of each name length.
    let mut by_pair: BTreeMap<(String, String, String), String> = BTreeMap::new();
    let mut by_handle: BTreeMap<(String, String), (String, String)> = BTreeMap::new();
    for (api, owner, name, handle) in &lookups {
        if let Some(h) = by_pair.insert((api.clone(), owner.clone(), name.clone()), handle.clone()) {
            assert_eq!(&h, handle, "{api} {owner} {name}: two handles");
        }
        if let Some(p) = by_handle.insert((api.clone(), handle.clone()), (owner.clone(), name.clone())) {
            assert_eq!(p, (owner.clone(), name.clone()), "{api} returned {handle} for two pairs");
        }
    }
    let h =
        |api: &str, owner: &str, name: &str| by_pair[&(api.to_string(), owner.to_string(), name.to_string())].clone();
    assert_eq!(h("cuLibraryGetKernel", "0x50001", "k_scalars"), "0x60009");
    assert_eq!(h("cuLibraryGetKernel", "0x50001", "k_big"), "0x68000", "k_vec has 0x60005");
    assert_eq!(h("cuKernelGetFunction", "0x60005", "-"), "0x70005");
    assert_eq!(h("cuModuleGetFunction", "0x30001", "k_struct"), "0x4008");
    assert_eq!(h("cuModuleGetFunction", "0x30004", "k_big"), "0x4005");
    assert_eq!(h("cuModuleGetFunction", "0x30004", r::CPP), "0x48000", "0x400b is k_gridconst's in 0x30010");
    assert_eq!(h("cuLibraryGetModule", "0x50002", "-"), "0x30010");
}
