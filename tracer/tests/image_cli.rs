//! `tracer image`: output and exit codes on the committed nvcc fixtures
//! (tracer/tests/fixtures/cuda). No root, no GPU.
use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cuda").join(name)
}

fn tracer(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracer")).args(args).output().expect("run tracer")
}

fn image(path: &std::path::Path, json: bool) -> Output {
    let mut a = vec!["image".as_ref(), path.as_os_str()];
    if json {
        a.push("--json".as_ref());
    }
    tracer(&a)
}

#[test]
fn text_report_of_a_cubin() {
    let o = image(&fixture("kernels.sm_90.cubin"), false);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("cubin sm_90 (ELF ABI 8, e_flags 0x6005a04), 11 kernels\n"), "{out}");
    let want = "  k_struct: 5 params, 48 bytes (c[0x0][0x210], 14 regs)\n\
                \x20   #0   offset     0  size     1\n\
                \x20   #1   offset     8  size    24\n\
                \x20   #2   offset    32  size     3\n\
                \x20   #3   offset    36  size     2\n\
                \x20   #4   offset    40  size     8\n";
    assert!(out.contains(want), "{out}");
    assert!(out.contains("  k_pointers: 3 params, 20 bytes (c[0x0][0x210], 10 regs, max threads 256x1x1)\n"), "{out}");
}

#[test]
fn json_report_of_a_library() {
    let o = image(&fixture("libkernels.so"), true);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "host_elf");
    assert_eq!(v["totals"]["containers"], 2);
    assert_eq!(v["totals"]["cubins"], 4);
    assert_eq!(v["totals"]["ptx"], 1);
    assert_eq!(v["totals"]["kernels"], 22);
    assert_eq!(v["host"]["wrappers"][1]["container_offset"], 0x3cf0);
    let ptx = &v["containers"][1]["entries"][2];
    assert_eq!(ptx["kind"], "ptx");
    assert_eq!(ptx["compression"], "zstd");
    let huge = ptx["ptx"]["kernels"].as_array().unwrap().iter().find(|k| k["name"] == "k_huge").unwrap();
    assert_eq!(huge["param_size"], 6008);
}

#[test]
fn errors_exit_1_with_the_offset() {
    let o = image(&fixture("README.md"), false);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("README.md: at offset 0x0: not a CUDA image"), "{err}");

    let o = image(&fixture("no-such-file"), false);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("tracer: cannot open {} (No such file or directory (os error 2))\n", fixture("no-such-file").display()),
        "{o:?}"
    );

    // A fatbin cut in the middle: the header promises more than the file has.
    let dir = std::env::temp_dir().join(format!("tracer-image-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.fatbin");
    let bytes = std::fs::read(fixture("kernels.compress-all.fatbin")).unwrap();
    std::fs::write(&cut, &bytes[..3000]).unwrap();
    let o = image(&cut, false);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("error: at offset 0x8: fatbin container 0: fatbin of 7368 bytes (header 16 + entries 7352) but only 3000 bytes available"),
        "{out}"
    );
    assert!(err.contains("1 part(s) could not be decoded"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn image_from_a_process_memory() {
    // This test process holds the image; `tracer image --pid` reads it from
    // /proc/<pid>/mem (root, or ptrace_scope 0, as for recording).
    let fat = std::fs::read(fixture("kernels.compress-all.fatbin")).unwrap();
    let mut held = fat.clone();
    held.extend(std::iter::repeat_n(0u8, 4096));
    let dir = std::env::temp_dir().join(format!("tracer-image-pid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("saved.fatbin");
    let pid = std::process::id().to_string();
    let addr = format!("{:#x}", held.as_ptr() as u64);
    let o = tracer(&[
        "image".as_ref(),
        "--pid".as_ref(),
        pid.as_ref(),
        "--addr".as_ref(),
        addr.as_ref(),
        "--save".as_ref(),
        saved.as_os_str(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("Permission denied") {
        eprintln!("skipped: no permission to read /proc/{pid}/mem ({err})");
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.starts_with(&format!("pid {pid} {addr}: Fatbin, 7368 bytes\n")), "{out}");
    assert!(out.contains("1 containers, 2 cubins, 1 PTX, 22 kernels in cubins; archs sm_80 compute_90 sm_90"), "{out}");
    assert_eq!(std::fs::read(&saved).unwrap(), fat);
    std::hint::black_box(&held);
    std::fs::remove_dir_all(&dir).unwrap();

    let o = tracer(&["image".as_ref(), "--pid".as_ref(), pid.as_ref(), "--addr".as_ref(), "0x8".as_ref()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("process {pid}: reading 4096 bytes at 0x8: ")), "{err}");

    let o = tracer(&["image".as_ref(), "--pid".as_ref(), pid.as_ref()]);
    assert_eq!(o.status.code(), Some(2), "clap usage error: --pid requires --addr");
}

#[test]
fn layouts_view_for_an_arch() {
    let f = fixture("kernels.compress-all.fatbin");
    let o = tracer(&["image".as_ref(), f.as_os_str(), "--layouts".as_ref(), "--arch".as_ref(), "86".as_ref()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out.lines().count(), 11, "{out}");
    assert!(out.contains("\nk_struct size=48 [0:1 8:24 32:3 36:2 40:8] (sm_80 cubin)\n"), "{out}");
    assert!(out.contains("\nk_noparams size=0 [] (sm_80 cubin)\n"), "{out}");
}
