//! Every picture in docs/images is what the documented command draws today:
//! docs/images/commands.tsv names each picture, the file its command writes
//! and the command; each command runs once (with this build's `tracer`
//! first in PATH) in an empty folder, and each picture must be byte for byte
//! the committed one. Rendering is deterministic (checked: the first command
//! is run twice). After an intended change of the pictures:
//!
//!   TRACER_DOCS_IMAGES_WRITE=1 cargo test -p tracer --test docs_images
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// (picture, written file, command) per line of commands.tsv.
fn entries() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(repo().join("docs/images/commands.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 3, "commands.tsv: not three tab-separated fields: {l}");
            (f[0].to_string(), f[1].to_string(), f[2].to_string())
        })
        .collect()
}

/// Runs `cmd` in the repository root with `{O}` = `out` (emptied first).
fn run(cmd: &str, out: &Path) {
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out).unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_tracer")).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let o = Command::new("sh")
        .arg("-c")
        .arg(cmd.replace("{O}", &out.display().to_string()))
        .current_dir(repo())
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{cmd}: {}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn docs_images_are_what_the_documented_commands_draw() {
    let entries = entries();
    let work = std::env::temp_dir().join(format!("tracer-docs-images-{}", std::process::id()));
    let write = std::env::var_os("TRACER_DOCS_IMAGES_WRITE").is_some();
    // Each distinct command once.
    let mut dirs: BTreeMap<&str, PathBuf> = BTreeMap::new();
    for (_, _, cmd) in &entries {
        if !dirs.contains_key(cmd.as_str()) {
            let d = work.join(dirs.len().to_string());
            run(cmd, &d);
            dirs.insert(cmd, d);
        }
    }
    // Deterministic: the first command again gives the same bytes.
    let (_, file, cmd) = &entries[0];
    let again = work.join("again");
    run(cmd, &again);
    assert!(
        std::fs::read(again.join(file)).unwrap() == std::fs::read(dirs[cmd.as_str()].join(file)).unwrap(),
        "{cmd}: two runs drew different {file}"
    );
    let images = repo().join("docs/images");
    let mut stale = Vec::new();
    for (picture, file, cmd) in &entries {
        let new = std::fs::read(dirs[cmd.as_str()].join(file)).unwrap_or_else(|e| panic!("{cmd}: no {file}: {e}"));
        if write {
            std::fs::write(images.join(picture), &new).unwrap();
        } else if std::fs::read(images.join(picture)).ok().as_deref() != Some(&new[..]) {
            stale.push(format!("docs/images/{picture} (from `{cmd}`)"));
        }
    }
    // Every committed picture is listed.
    let listed: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
    let mut unlisted = Vec::new();
    for e in std::fs::read_dir(&images).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if (name.ends_with(".png") || name.ends_with(".svg")) && !listed.contains(&name.as_str()) {
            unlisted.push(name);
        }
    }
    std::fs::remove_dir_all(&work).ok();
    assert!(unlisted.is_empty(), "pictures in docs/images without a command in commands.tsv: {unlisted:?}");
    assert!(
        stale.is_empty(),
        "not what the documented command draws today (TRACER_DOCS_IMAGES_WRITE=1 rewrites them):\n{}",
        stale.join("\n")
    );
}
