use std::os::unix::fs::{MetadataExt as _, symlink};

use super::*;
use crate::analysis::durations_file::{FORMAT, KernelEntry};
use crate::collect::kept_file::suffixed;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracer-durations-library-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn kernel(name: &str, median: u64) -> KernelEntry {
    KernelEntry {
        kernel: name.into(),
        grid: [1, 1, 1],
        block: [32, 1, 1],
        shared_mem: 0,
        count: 1,
        median_ns: median,
        p10_ns: median,
        p90_ns: median,
    }
}

fn measured(kernels: Vec<KernelEntry>) -> DurationsFile {
    DurationsFile {
        format: FORMAT.into(),
        version: 1,
        source: "cupti".into(),
        gpu: Some("NVIDIA H200".into()),
        kernels,
        copies: vec![],
    }
}

fn key() -> GpuKey {
    GpuKey::new("NVIDIA H200", "580.159.04")
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().mode() & 0o7777
}

#[test]
fn the_default_path() {
    let s = |x: &str| Some(OsString::from(x));
    assert_eq!(path_from(s("/x/lib.json"), 0, None, None), Some(PathBuf::from("/x/lib.json")));
    // empty: no library
    assert_eq!(path_from(s(""), 1000, s("/state"), s("/home/u")), None);
    assert_eq!(path_from(None, 0, s("/state"), s("/root")), Some(PathBuf::from("/var/lib/tracer/durations.json")));
    assert_eq!(path_from(None, 1000, s("/state"), s("/home/u")), Some(PathBuf::from("/state/tracer/durations.json")));
    assert_eq!(
        path_from(None, 1000, s("relative"), s("/home/u")),
        Some(PathBuf::from("/home/u/.local/state/tracer/durations.json"))
    );
    assert_eq!(
        path_from(None, 1000, None, s("/home/u")),
        Some(PathBuf::from("/home/u/.local/state/tracer/durations.json"))
    );
    assert_eq!(path_from(None, 1000, None, None), None);
}

#[test]
fn a_library_round_trips_through_its_file_in_new_directories() {
    let d = scratch("round");
    let path = d.join("a/b/durations.json");
    assert_eq!(load(&path).unwrap(), None);
    let r = update_at(&path, &key(), &measured(vec![kernel("kA", 100), kernel("kB", 50)]), 1_000).unwrap();
    assert_eq!(
        r.lines(),
        [format!(
            "durations library {} (NVIDIA H200, driver 580.159.04): 2 kernel entries added, 0 updated, 0 copy kinds; 2 \
             entries, 1 runs",
            path.display()
        )]
    );
    for dir in [d.join("a"), d.join("a/b")] {
        assert_eq!(mode(&dir), 0o755);
    }
    assert_eq!(mode(&path), 0o644);
    assert_eq!(mode(&suffixed(&path, ".lock")), 0o644);
    update_at(&path, &key(), &measured(vec![kernel("kA", 200)]), 2_000).unwrap();
    let l = load(&path).unwrap().unwrap();
    let g = l.gpu(&key()).unwrap();
    assert_eq!((g.runs, g.updated_unix, g.kernels[0].count, g.kernels[0].median_ns), (2, 2_000, 2, 150));
    // no temporary file is left
    let mut names: Vec<String> =
        std::fs::read_dir(d.join("a/b")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
    names.sort();
    assert_eq!(names, ["durations.json", "durations.json.lock"]);
    // the line a run on this GPU carries
    let (line, sel) = durations_line_for(
        &path,
        &key(),
        [("kA", Geom { grid: [1, 1, 1], block: [32, 1, 1], shared_mem: 0 })],
        ["h2d"],
        5,
    )
    .unwrap();
    let line = line.unwrap();
    assert_eq!(
        line["origin"],
        format!("durations library {} (NVIDIA H200, driver 580.159.04, 2 runs)", path.display()).as_str()
    );
    assert_eq!((line["type"].as_str(), line["kernels"].as_array().unwrap().len()), (Some("durations"), 1));
    assert_eq!(sel.unwrap().kernels_known, 1);
    assert_eq!(
        durations_line_for(&d.join("none.json"), &key(), [("kA", Geom::default())], ["h2d"], 5).unwrap(),
        (None, None)
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_corrupt_library_is_moved_aside_and_a_new_one_started() {
    let d = scratch("corrupt");
    let path = d.join("durations.json");
    std::fs::write(&path, "{\"format\":").unwrap();
    let e = load(&path).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Corrupt);
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the durations library is corrupt (EOF while parsing a value at line 1 column 10): move it away or \
             delete it (the next measured run moves it aside and starts a new one), or set TRACER_DURATIONS_LIBRARY \
             to another file (empty: no library)",
            path.display()
        )
    );
    let r = update_at(&path, &key(), &measured(vec![kernel("kA", 100)]), 1_700_000_000).unwrap();
    let aside = d.join("durations.json.corrupt-1700000000");
    assert_eq!(
        r.lines()[0],
        format!(
            "{}: the durations library was corrupt (EOF while parsing a value at line 1 column 10): moved aside to {}; \
             a new one started",
            path.display(),
            aside.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&aside).unwrap(), "{\"format\":");
    assert_eq!(load(&path).unwrap().unwrap().gpu(&key()).unwrap().kernels.len(), 1);
    // a foreign file too; the name taken, the next one gets `.1`
    std::fs::write(&path, r#"{"format":"tracer-kernel-durations","version":1}"#).unwrap();
    let r = update_at(&path, &key(), &measured(vec![kernel("kA", 100)]), 1_700_000_000).unwrap();
    assert_eq!(r.moved_aside.unwrap().0, d.join("durations.json.corrupt-1700000000.1"));
    // a newer version's library is left alone
    let newer = r#"{"format":"tracer-durations-library","version":2,"gpus":[]}"#;
    std::fs::write(&path, newer).unwrap();
    let e = update_at(&path, &key(), &measured(vec![kernel("kA", 100)]), 1).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Newer);
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the durations library is version 2, newer than this tracer reads (1): use a newer tracer, or set \
             TRACER_DURATIONS_LIBRARY to another file (empty: no library)",
            path.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), newer);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_link_or_a_directory_is_refused() {
    let d = scratch("link");
    let real = d.join("real.json");
    update_at(&real, &key(), &measured(vec![kernel("kA", 100)]), 1).unwrap();
    let link = d.join("durations.json");
    symlink(&real, &link).unwrap();
    for e in [load(&link).unwrap_err(), update_at(&link, &key(), &measured(vec![kernel("kB", 1)]), 2).unwrap_err()] {
        assert_eq!(e.kind, ErrorKind::Refused);
        assert_eq!(
            e.to_string(),
            format!(
                "{}: a symbolic link: the durations library must be a regular file (never read through a link); or \
                 set TRACER_DURATIONS_LIBRARY to another file (empty: no library)",
                link.display()
            )
        );
    }
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(load(&real).unwrap().unwrap().gpu(&key()).unwrap().kernels.len(), 1);
    let e = load(&d).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Refused);
    assert!(e.to_string().contains("not a regular file (a directory)"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn concurrent_updates_all_land() {
    let d = scratch("concurrent");
    let path = d.join("state/durations.json");
    const N: u64 = 25;
    let writers: Vec<_> = ["kA", "kB", "kC"]
        .into_iter()
        .map(|k| {
            let path = path.clone();
            std::thread::spawn(move || {
                for i in 0..N {
                    update_at(&path, &key(), &measured(vec![kernel(k, 100 + i)]), i).unwrap();
                }
            })
        })
        .collect();
    writers.into_iter().for_each(|w| w.join().unwrap());
    let l = load(&path).unwrap().unwrap();
    let g = l.gpu(&key()).unwrap();
    assert_eq!(g.runs, 3 * N);
    let counts: Vec<(&str, u64)> = g.kernels.iter().map(|k| (k.kernel.as_str(), k.count)).collect();
    assert_eq!(counts, [("kA", N), ("kB", N), ("kC", N)]);
    let _ = std::fs::remove_dir_all(&d);
}
