//! cudaimage-check FILE... : parses every fatbin container, entry, cubin and
//! PTX of host libraries (their .nv_fatbin) or image files with the tracer's
//! parsers, in parallel, and prints one JSON summary line per file. With
//! `--layouts DIR`, also writes DIR/<file name>.layouts: one line per kernel
//! of every cubin, `sm_XX NAME psize=N ord:off:size ...`, sorted, to compare
//! with cuobjdump -elf.
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use tracer::decode::cudaimage::{Format, detect, elf, fatbin, nvinfo, ptx};

#[derive(Default, serde::Serialize)]
struct Summary {
    file: String,
    format: String,
    bytes: u64,
    fatbin_bytes: u64,
    containers: usize,
    container_error: Option<String>,
    entries: usize,
    cubins: usize,
    ptx: usize,
    other_entries: usize,
    compressed_zstd: usize,
    compressed_lz4: usize,
    decompressed_bytes: u64,
    kernels_in_cubins: usize,
    params_in_cubins: usize,
    kernels_in_ptx: usize,
    kernels_with_warnings: usize,
    max_param_size: u32,
    v2_kernels: usize,
    failed_entries: usize,
    errors: Vec<String>,
    warnings: Vec<String>,
    archs: BTreeMap<String, usize>,
    seconds: f64,
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut layouts_dir = None;
    if let Some(i) = args.iter().position(|a| a == "--layouts") {
        layouts_dir = Some(args.remove(i + 1));
        args.remove(i);
    }
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4);
    let mut bad = 0;
    for path in &args {
        let t0 = Instant::now();
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{path}: {e}");
                bad += 1;
                continue;
            }
        };
        let mut s = Summary { file: path.clone(), bytes: bytes.len() as u64, ..Default::default() };
        let fat: &[u8] = match detect(&bytes) {
            Some(Format::HostElf) => match elf::Elf::parse(&bytes) {
                Ok(e) => match e.section(".nv_fatbin").map(|sec| e.bytes_of(sec)) {
                    Some(Ok(d)) => d,
                    Some(Err(err)) => {
                        s.errors.push(err.to_string());
                        &[]
                    }
                    None => &[],
                },
                Err(err) => {
                    s.errors.push(err.to_string());
                    &[]
                }
            },
            Some(Format::Fatbin) => &bytes,
            other => {
                s.errors.push(format!("not a host ELF or fatbin: {other:?}"));
                &[]
            }
        };
        s.format = format!("{:?}", detect(&bytes));
        s.fatbin_bytes = fat.len() as u64;
        let (containers, err) = fatbin::parse_containers(fat);
        s.containers = containers.len();
        s.container_error = err.map(|e| e.to_string());
        let entries: Vec<&fatbin::Entry> = containers.iter().flat_map(|(_, c)| &c.entries).collect();
        s.entries = entries.len();
        let next = AtomicUsize::new(0);
        let shared = Mutex::new((s, Vec::<String>::new()));
        std::thread::scope(|sc| {
            for _ in 0..threads {
                sc.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(e) = entries.get(i) else { break };
                        let mut lines = Vec::new();
                        let mut local = Summary::default();
                        match e.compression() {
                            fatbin::Compression::Zstd => local.compressed_zstd += 1,
                            fatbin::Compression::Lz4 => local.compressed_lz4 += 1,
                            fatbin::Compression::None => {}
                        }
                        let tag = match e.kind {
                            fatbin::EntryKind::Cubin => format!("sm_{}", e.arch),
                            fatbin::EntryKind::Ptx => format!("compute_{}", e.arch),
                            fatbin::EntryKind::Other(k) => format!("kind{k}_{}", e.arch),
                        };
                        *local.archs.entry(tag.clone()).or_default() += 1;
                        let res = e.code().and_then(|code| {
                            local.decompressed_bytes += code.len() as u64;
                            match e.kind {
                                fatbin::EntryKind::Cubin => {
                                    local.cubins += 1;
                                    let c = nvinfo::parse_cubin(&code)?;
                                    if c.arch != e.arch {
                                        local
                                            .warnings
                                            .push(format!("entry sm_{} holds a cubin for sm_{}", e.arch, c.arch));
                                    }
                                    for k in &c.kernels {
                                        local.kernels_in_cubins += 1;
                                        local.params_in_cubins += k.params.len();
                                        local.max_param_size = local.max_param_size.max(k.param_size);
                                        if k.params.iter().any(|p| p.v2) {
                                            local.v2_kernels += 1;
                                        }
                                        if !k.warnings.is_empty() {
                                            local.kernels_with_warnings += 1;
                                            local.warnings.push(format!("{tag} {}: {}", k.name, k.warnings.join("; ")));
                                        }
                                        let ps: Vec<String> = k
                                            .params
                                            .iter()
                                            .map(|p| format!("{}:{}:{}", p.ordinal, p.offset, p.size))
                                            .collect();
                                        lines.push(format!("{tag} {} psize={} {}", k.name, k.param_size, ps.join(" ")));
                                    }
                                }
                                fatbin::EntryKind::Ptx => {
                                    local.ptx += 1;
                                    local.kernels_in_ptx += ptx::parse_ptx(&code)?.kernels.len();
                                }
                                fatbin::EntryKind::Other(_) => local.other_entries += 1,
                            }
                            Ok(())
                        });
                        let mut g = shared.lock().unwrap();
                        let (s, all) = &mut *g;
                        if let Err(err) = res {
                            s.failed_entries += 1;
                            if s.errors.len() < 10 {
                                s.errors.push(format!("{tag} entry at fatbin offset {:#x}: {err}", e.offset));
                            }
                        }
                        s.cubins += local.cubins;
                        s.ptx += local.ptx;
                        s.other_entries += local.other_entries;
                        s.compressed_zstd += local.compressed_zstd;
                        s.compressed_lz4 += local.compressed_lz4;
                        s.decompressed_bytes += local.decompressed_bytes;
                        s.kernels_in_cubins += local.kernels_in_cubins;
                        s.params_in_cubins += local.params_in_cubins;
                        s.kernels_in_ptx += local.kernels_in_ptx;
                        s.kernels_with_warnings += local.kernels_with_warnings;
                        s.max_param_size = s.max_param_size.max(local.max_param_size);
                        s.v2_kernels += local.v2_kernels;
                        for w in local.warnings {
                            if s.warnings.len() < 10 {
                                s.warnings.push(w);
                            }
                        }
                        for (k, v) in local.archs {
                            *s.archs.entry(k).or_default() += v;
                        }
                        all.extend(lines);
                    }
                });
            }
        });
        let (mut s, mut lines) = shared.into_inner().unwrap();
        s.seconds = t0.elapsed().as_secs_f64();
        if s.failed_entries > 0 || s.container_error.is_some() {
            bad += 1;
        }
        if let Some(dir) = &layouts_dir {
            lines.sort();
            let name = std::path::Path::new(path).file_name().unwrap().to_string_lossy().into_owned();
            std::fs::write(format!("{dir}/{name}.layouts"), lines.join("\n") + "\n").unwrap();
        }
        println!("{}", serde_json::to_string(&s).unwrap());
    }
    std::process::exit(if bad > 0 { 1 } else { 0 });
}
