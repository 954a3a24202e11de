//! The committed replayable recording traces/replay_check.rec (made on the
//! H100 by `tracer record --replayable --capture-data --gpu-timestamps`,
//! experiments/replay/replay-e2e/small.sh): its parts agree with each other, and the
//! readers take the directory for its trace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tracer_format::digest::sha256_hex;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/replay_check.rec")
}

#[test]
fn recording_parts_agree() {
    let d = dir();
    let m: Value = serde_json::from_str(&std::fs::read_to_string(d.join("manifest.json")).unwrap()).unwrap();
    let lines: Vec<Value> = std::fs::read_to_string(d.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let footer = lines.last().unwrap();
    assert_eq!(footer["type"], "footer");
    assert_eq!(footer["lost"]["total"], 0);
    assert_eq!(footer["replay"], m["coverage"], "footer replay == manifest coverage");
    assert_eq!(lines[0]["replayable"]["capture_data"], true);
    // Every stored file is named by its hash.
    for sub in ["images", "data"] {
        for e in std::fs::read_dir(d.join(sub)).unwrap() {
            let e = e.unwrap();
            let b = std::fs::read(e.path()).unwrap();
            assert_eq!(sha256_hex(&b), e.file_name().to_string_lossy(), "{sub}");
        }
    }
    // Kernel layouts from the image, by name.
    let mut layouts: BTreeMap<String, u64> = BTreeMap::new();
    for img in m["images"].as_array().unwrap() {
        assert!(d.join(img["file"].as_str().unwrap()).exists());
        for k in img["kernels"].as_array().unwrap() {
            layouts.insert(k["name"].as_str().unwrap().into(), k["param_size"].as_u64().unwrap());
        }
    }
    let mut launches = 0;
    for l in lines.iter().filter(|l| l["op"] == "launch") {
        launches += 1;
        let p = l["params"].as_str().unwrap_or_else(|| panic!("launch without params: {l}"));
        let name = l["kernel"].as_str().unwrap();
        assert_eq!(l["params_from"], "layout", "{name}");
        assert_eq!(p.len() as u64, 2 * layouts[name], "{name}: params are the layout's size");
    }
    assert_eq!(launches, 5);
    assert_eq!(m["coverage"]["params_exact"], 5);
    // Copies: data files of the right size (d2h read at the copy's return
    // or, async, at the synchronization: copy_data lines).
    let mut with_data = 0;
    for l in &lines {
        if let (Some(sha), Some(size)) = (l["data"].as_str(), l["size"].as_u64()) {
            assert_eq!(std::fs::metadata(d.join("data").join(sha)).unwrap().len(), size, "{l}");
            with_data += 1;
        }
    }
    assert_eq!(
        with_data as u64,
        m["coverage"]["h2d_captured"].as_u64().unwrap() + m["coverage"]["d2h_captured"].as_u64().unwrap()
    );
}

#[test]
fn readers_take_the_recording_directory() {
    let out = Command::new(env!("CARGO_BIN_EXE_tracer")).arg("summary").arg(dir()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(
            "replayable: 1 of 1 image loads captured; 5 of 5 launches with exact parameters (0 from extra), 0 missing"
        ),
        "{text}"
    );
}
