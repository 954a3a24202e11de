use std::os::unix::fs::symlink;

use super::*;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracer-format-open-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn mkfifo(p: &Path) {
    let c = c_path(p).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

const KINDS: [Kind; 8] = [
    Kind::Manifest,
    Kind::Durations,
    Kind::WebConfig,
    Kind::Image,
    Kind::Data,
    Kind::Sidecar,
    Kind::DurationsLibrary,
    Kind::HostSpeedHistory,
];

#[test]
fn devices_pipes_and_directories_are_refused_at_the_open() {
    let d = scratch("kinds");
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    for kind in KINDS.iter().copied().chain([Kind::Trace]) {
        let w = kind.what();
        assert_eq!(
            read(Path::new("/dev/zero"), kind).unwrap_err().to_string(),
            format!("/dev/zero: not a regular file (a character device): {w} must be a regular file")
        );
        // No writer: a blocking open would wait for one forever.
        assert_eq!(
            read(&fifo, kind).unwrap_err().to_string(),
            format!("{}: not a regular file (a named pipe): {w} must be a regular file", fifo.display())
        );
        assert_eq!(
            open(&d, kind).unwrap_err().to_string(),
            format!("{}: not a regular file (a directory): {w} must be a regular file", d.display())
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_file_over_its_kinds_cap_is_refused_unread() {
    let d = scratch("cap");
    let big = d.join("sparse");
    // 2 GB of holes: nothing is read, the size alone refuses it.
    std::fs::File::create(&big).unwrap().set_len(2_000_000_000).unwrap();
    for kind in KINDS {
        let e = read(&big, kind).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: 1.9 GiB is larger than {} may be ({}): is it the right file?",
                big.display(),
                kind.what(),
                size_text(kind.cap())
            )
        );
    }
    // A trace is a stream: any size opens.
    assert_eq!(open(&big, Kind::Trace).unwrap().len, 2_000_000_000);
    std::fs::write(d.join("small"), b"{}").unwrap();
    assert_eq!(read(&d.join("small"), Kind::Manifest).unwrap(), b"{}");
    assert_eq!(read_to_string(&d.join("small"), Kind::WebConfig).unwrap(), "{}");
    std::fs::write(d.join("latin1"), b"\xff").unwrap();
    assert_eq!(
        read_to_string(&d.join("latin1"), Kind::WebConfig).unwrap_err().to_string(),
        format!("{}: not UTF-8 text (a web config file)", d.join("latin1").display())
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_caps() {
    assert_eq!(size_text(Kind::Manifest.cap()), "64.0 MiB");
    assert_eq!(size_text(Kind::WebConfig.cap()), "1.0 MiB");
    assert_eq!(size_text(Kind::Image.cap()), "1.0 GiB");
    assert_eq!(size_text(656), "656 bytes");
}

/// A recording `rec/` with a file, a subdirectory, and links of every kind out of it.
fn recording(name: &str) -> (PathBuf, PathBuf) {
    let root = scratch(name);
    let rec = root.join("x.rec");
    let outside = root.join("outside");
    std::fs::create_dir_all(rec.join("images")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(rec.join("manifest.json"), b"{\"ok\":1}").unwrap();
    std::fs::write(rec.join("images/aa"), b"image").unwrap();
    std::fs::write(outside.join("secret"), b"656 bytes of secret").unwrap();
    symlink(outside.join("secret"), rec.join("images/bb")).unwrap();
    symlink("../manifest.json", rec.join("images/cc")).unwrap();
    symlink(&outside, rec.join("data")).unwrap();
    mkfifo(&rec.join("trace.jsonl"));
    (root, rec)
}

#[test]
fn nothing_below_a_recording_leads_out_of_it() {
    let (root, rec) = recording("beneath");
    let b = Beneath::new(&rec).unwrap();
    assert_eq!(b.read(Path::new("manifest.json"), Kind::Manifest).unwrap(), b"{\"ok\":1}");
    assert_eq!(b.read(Path::new("images/aa"), Kind::Image).unwrap(), b"image");
    let link = |rel: &str| {
        format!(
            "{}: a symbolic link inside {}: refused (a recording's files are read from inside it, never through a link)",
            rec.join(rel).display(),
            rec.display()
        )
    };
    // A link to a file outside, a link to a file inside, a linked directory: all refused
    // as links, and the target's name and size are not in the message.
    assert_eq!(b.read(Path::new("images/bb"), Kind::Image).unwrap_err().to_string(), link("images/bb"));
    assert_eq!(b.read(Path::new("images/cc"), Kind::Image).unwrap_err().to_string(), link("images/cc"));
    let e = b.read(Path::new("data/secret"), Kind::Data).unwrap_err().to_string();
    assert_eq!(e, link("data/secret"));
    assert!(!e.contains("outside") && !e.contains("656"), "{e}");
    for rel in ["../outside/secret", "/etc/passwd", "images/../manifest.json", ""] {
        assert_eq!(
            b.read(Path::new(rel), Kind::Data).unwrap_err().to_string(),
            format!("{}: not a plain relative path inside {}: refused", rec.join(rel).display(), rec.display())
        );
    }
    assert_eq!(
        b.open(Path::new("trace.jsonl"), Kind::Trace).unwrap_err().to_string(),
        format!(
            "{}: not a regular file (a named pipe): a trace must be a regular file",
            rec.join("trace.jsonl").display()
        )
    );
    assert!(b.exists(Path::new("images/bb")) && b.exists(Path::new("images/aa")));
    assert!(!b.exists(Path::new("images/zz")));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn without_openat2_each_component_is_opened_without_following() {
    let (root, rec) = recording("components");
    let b = Beneath::new(&rec).unwrap();
    let read = |rel: &str| -> std::io::Result<Vec<u8>> {
        let mut f = File::from(b.open_by_components(Path::new(rel))?);
        let mut v = Vec::new();
        f.read_to_end(&mut v)?;
        Ok(v)
    };
    assert_eq!(read("images/aa").unwrap(), b"image");
    for rel in ["images/bb", "images/cc", "data/secret"] {
        assert_eq!(read(rel).unwrap_err().raw_os_error(), Some(libc::ELOOP), "{rel}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_kept_file_is_never_read_through_a_link() {
    let d = scratch("kept");
    let k = Kind::DurationsLibrary;
    assert!(read_kept(&d.join("missing"), k).unwrap().is_none());
    std::fs::write(d.join("lib"), b"{}").unwrap();
    assert_eq!(read_kept(&d.join("lib"), k).unwrap().unwrap(), b"{}");
    symlink(d.join("lib"), d.join("link")).unwrap();
    assert_eq!(
        read_kept(&d.join("link"), k).unwrap_err().to_string(),
        format!(
            "{}: a symbolic link: the durations library must be a regular file (never read through a link)",
            d.join("link").display()
        )
    );
    // a dangling link too
    symlink(d.join("nowhere"), d.join("dangling")).unwrap();
    assert!(read_kept(&d.join("dangling"), k).unwrap_err().to_string().contains(": a symbolic link: "));
    assert_eq!(
        read_kept(&d, k).unwrap_err().to_string(),
        format!("{}: not a regular file (a directory): the durations library must be a regular file", d.display())
    );
    let _ = std::fs::remove_dir_all(&d);
}
