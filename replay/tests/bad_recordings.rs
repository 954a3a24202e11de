//! Bad recordings give an error naming the file (and line) and what is wrong.

mod common;

use common::*;
use replay::plan;
use replay::recording::Recording;
use serde_json::json;

fn base() -> (Rec, String) {
    let mut r = Rec::new();
    let cubin = r.cubin_function("k_pointers"); // lines 2-3
    (r, cubin)
}

fn launch(r: &mut Rec, params: &str) {
    r.call("kernel", "launch", "cuLaunchKernel", json!({"func": "0xf1", "kernel": "k_pointers", "grid": [1, 1, 1], "block": [1, 1, 1], "shared_mem": 0, "stream": "0x0", "params": params, "params_from": "layout"}));
}

fn err(dir: &std::path::Path) -> String {
    match Recording::open(dir).and_then(|rec| {
        let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl")?;
        replay::data_check::check(&rec, &p)
    }) {
        Ok(()) => panic!("no error"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn missing_image() {
    let (r, cubin) = base();
    let dir = r.write();
    std::fs::remove_file(dir.join("images").join(&cubin)).unwrap();
    let e = err(&dir);
    assert!(
        e.contains("manifest.json: image ") && e.contains(&format!("images/{cubin}")) && e.contains("file missing"),
        "{e}"
    );
}

#[test]
fn image_sha_mismatch() {
    let (r, cubin) = base();
    let dir = r.write();
    let p = dir.join("images").join(&cubin);
    let mut b = std::fs::read(&p).unwrap();
    b[100] ^= 1;
    std::fs::write(&p, b).unwrap();
    let e = err(&dir);
    assert!(e.contains(&cubin) && e.contains("the file does not match its name"), "{e}");
}

#[test]
fn newer_schema_version() {
    let (mut r, _) = base();
    r.schema_version = 2;
    let e = err(&r.write());
    assert!(
        e.contains("manifest.json: schema_version 2 is newer than this replay understands (schema_version 1)"),
        "{e}"
    );
}

#[test]
fn truncated_trace_line_in_the_middle() {
    let (mut r, _) = base();
    launch(&mut r, &params(20, &[]));
    let dir = r.write_with(|lines| {
        let l = &mut lines[2]; // line 3
        l.truncate(l.len() / 2);
    });
    let e = err(&dir);
    assert!(e.contains("trace.jsonl:3: not valid JSON") && e.contains("truncated"), "{e}");
}

#[test]
fn truncated_last_line_without_footer_is_a_warning() {
    let (mut r, _) = base();
    launch(&mut r, &params(20, &[]));
    let dir = r.write_with(|lines| {
        lines.pop(); // footer
        let l = lines.last_mut().unwrap();
        l.truncate(20);
    });
    let rec = Recording::open(&dir).unwrap();
    assert_eq!(rec.trace.calls.len(), 2);
    assert_eq!(rec.trace.warnings.len(), 1);
    assert!(rec.trace.warnings[0].contains("trace.jsonl:4: not valid JSON"), "{:?}", rec.trace.warnings);
}

#[test]
fn params_of_the_wrong_length() {
    let (mut r, cubin) = base();
    launch(&mut r, &params(19, &[]));
    let e = err(&r.write());
    assert_eq!(
        e,
        format!(
            "trace.jsonl:4: cuLaunchKernel: params are 19 bytes but kernel k_pointers of image {cubin} has param_size 20 (params_from layout)"
        )
    );
}

#[test]
fn params_not_hex() {
    let (mut r, _) = base();
    launch(&mut r, "abc");
    let e = err(&r.write());
    assert!(e.ends_with("trace.jsonl:4: cuLaunchKernel: \"params\": odd number of hex digits (3)"), "{e}");
}

/// A recording whose line 4 is a 64-byte host-to-device copy with its data file: the
/// recording (its directory lives as long as it does), the directory and the data's SHA-256.
fn with_copied_data() -> (Rec, std::path::PathBuf, String) {
    let (mut r, _) = base();
    let d = r.data(&[1u8; 64]);
    r.call(
        "memcpy",
        "copy",
        "cuMemcpyHtoD_v2",
        json!({"ret": 0, "direction": "h2d", "dst": "0x7f0000000000", "src": "0x1000", "size": 64, "data": d}),
    ); // 4
    let dir = r.write();
    (r, dir, d)
}

#[test]
fn truncated_data_file() {
    let (_r, dir, d) = with_copied_data();
    std::fs::write(dir.join("data").join(&d), [1u8; 10]).unwrap();
    let e = err(&dir);
    assert!(
        e.contains(&format!("trace.jsonl:4: data {d}: ")) && e.contains("is 10 bytes, the copy is 64 bytes"),
        "{e}"
    );
}

#[test]
fn image_not_in_manifest() {
    let (mut r, _) = base();
    let other = "ab".repeat(32);
    r.call(
        "module",
        "module_load_data",
        "cuModuleLoadData",
        json!({"ret": 0, "args": {"module": "0xb00"}, "image": other}),
    );
    let e = err(&r.write());
    assert_eq!(e, format!("trace.jsonl:4: cuModuleLoadData: image {other} is not listed in manifest.json"));
}

#[test]
fn newer_schema_in_the_trace_header() {
    let (r, _) = base();
    let dir = r.write_with(|lines| {
        lines[0] = json!({"type": "header", "format": "tracer-jsonl", "format_version": 1, "replayable": {"capture_data": false, "data_cap_bytes": 0, "schema_version": 3}}).to_string();
    });
    let e = err(&dir);
    assert!(
        e.ends_with(
            "trace.jsonl:1: header replayable.schema_version 3 is newer than this replay understands (schema_version 1)"
        ),
        "{e}"
    );
}

/// tracer's reading rule (tracer_format::read::check), as tracer's commands
/// apply it: a newer format_version, a field out of range, a second trace.
#[test]
fn the_trace_is_read_under_tracers_rule() {
    let (r, _) = base();
    let dir = r.write_with(|lines| {
        lines[0] = lines[0].replace("\"format_version\":1", "\"format_version\":999");
        assert!(lines[0].contains("999"), "{}", lines[0]);
    });
    let e = err(&dir);
    assert!(
        e.ends_with("trace.jsonl:1: header field `format_version` = 999: written by a newer tracer (this one reads version 2); use a newer tracer"),
        "{e}"
    );
    let (r, _) = base();
    let dir = r.write_with(|lines| lines[1] = lines[1].replacen("\"ts\":", "\"ts\":9223372036854775808,\"was\":", 1));
    let e = err(&dir);
    assert!(e.ends_with("trace.jsonl:2: field `ts` = 9223372036854775808 is out of range (at most 2^62 ns)"), "{e}");
    let (r, _) = base();
    let dir = r.write_with(|lines| {
        let again = lines.clone();
        lines.extend(again);
    });
    let e = err(&dir);
    assert!(e.contains("a `header` line after the footer") && e.contains("two traces in one file"), "{e}");
}

/// A manifest naming a file outside the recording directory is refused
/// before anything is opened.
#[test]
fn manifest_paths_stay_inside_the_recording() {
    let (r, cubin) = base();
    let dir = r.write();
    let m = dir.join("manifest.json");
    let text = std::fs::read_to_string(&m).unwrap().replace(&format!("images/{cubin}"), "../../../../etc/passwd");
    std::fs::write(&m, text).unwrap();
    let e = err(&dir);
    assert!(
        e.ends_with(&format!(
            "manifest.json: images[0] ({cubin}): file: \"../../../../etc/passwd\" leaves the recording directory (paths must be relative, without `..`)"
        )),
        "{e}"
    );
}

/// The messages of a link inside the recording: the link named, its target neither named nor measured.
fn link_refused(dir: &std::path::Path, rel: &str) -> String {
    format!(
        "{}: a symbolic link inside {}: refused (a recording's files are read from inside it, never through a link)",
        dir.join(rel).display(),
        dir.display()
    )
}

/// A copy's data file made a link to an outside file of the same size: refused as a link,
/// the outside file neither named nor measured (it once passed the size check).
#[test]
fn data_linked_out_of_the_recording() {
    let (_r, dir, d) = with_copied_data();
    let outside = dir.parent().unwrap().join(format!("outside-{}", std::process::id()));
    std::fs::write(&outside, [7u8; 64]).unwrap();
    let data = dir.join("data").join(&d);
    std::fs::remove_file(&data).unwrap();
    std::os::unix::fs::symlink(&outside, &data).unwrap();
    let e = err(&dir);
    assert_eq!(e, format!("trace.jsonl:4: data {d}: {}", link_refused(&dir, &format!("data/{d}"))));
    assert!(!e.contains("outside") && !e.contains("64 bytes"), "{e}");
    // A file of the copy's size whose bytes are not the ones named: refused by the plan's check.
    std::fs::remove_file(&data).unwrap();
    std::fs::write(&data, [7u8; 64]).unwrap();
    let e = err(&dir);
    assert!(
        e.starts_with(&format!("trace.jsonl:4: data {d}: ")) && e.ends_with("the file does not match its name"),
        "{e}"
    );
    // The whole data folder a link to a directory outside.
    std::fs::remove_dir_all(dir.join("data")).unwrap();
    let out_dir = dir.parent().unwrap().join(format!("outside-dir-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join(&d), [1u8; 64]).unwrap();
    std::os::unix::fs::symlink(&out_dir, dir.join("data")).unwrap();
    assert_eq!(err(&dir), format!("trace.jsonl:4: data {d}: {}", link_refused(&dir, &format!("data/{d}"))));
    let _ = std::fs::remove_file(&outside);
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// An image folder linked elsewhere, a manifest linked to /dev/zero, a trace that is a pipe:
/// each refused in one line, nothing read through them.
#[test]
fn images_manifest_and_trace_that_lead_out() {
    let (r, cubin) = base();
    let dir = r.write();
    let elsewhere = dir.parent().unwrap().join(format!("images-elsewhere-{}", std::process::id()));
    std::fs::rename(dir.join("images"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("images")).unwrap();
    let e = err(&dir);
    assert!(e.ends_with(&link_refused(&dir, &format!("images/{cubin}"))), "{e}");
    std::fs::remove_file(dir.join("images")).unwrap();
    std::fs::rename(&elsewhere, dir.join("images")).unwrap();

    let manifest = dir.join("manifest.json");
    let kept = std::fs::read(&manifest).unwrap();
    std::fs::remove_file(&manifest).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &manifest).unwrap();
    assert_eq!(err(&dir), link_refused(&dir, "manifest.json"));
    std::fs::remove_file(&manifest).unwrap();
    std::fs::write(&manifest, kept).unwrap();

    let trace = dir.join("trace.jsonl");
    std::fs::remove_file(&trace).unwrap();
    let c = std::ffi::CString::new(trace.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert_eq!(
        err(&dir),
        format!("{}: not a regular file (a named pipe): a trace must be a regular file", trace.display())
    );
}
