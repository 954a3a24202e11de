//! Synthetic recordings for the tests: manifest.json + trace.jsonl + images/
//! (the real fixture images of tracer/tests/fixtures/cuda) in a temp dir.
#![allow(dead_code, reason = "shared by several test binaries, each uses part")]

pub mod together;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The `replay` binary with `args`: (exit code, stdout, stderr).
pub fn replay(args: &[&str]) -> (i32, String, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_replay")).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tracer/tests/fixtures/cuda").join(name)
}

pub fn sha(b: &[u8]) -> String {
    tracer_format::digest::sha256_hex(b)
}

pub struct Rec {
    pub dir: tempfile::TempDir,
    pub lines: Vec<Value>,
    pub images: Vec<Value>,
    pub schema_version: u64,
}

/// Layouts documented in tracer/tests/fixtures/cuda/kernels.cu.
pub fn fixture_kernels() -> Value {
    json!([
        {"name": "k_pointers", "param_size": 20, "params": [[0, 8], [8, 8], [16, 4]]},
        {"name": "k_struct", "param_size": 48, "params": [[0, 1], [8, 24], [32, 3], [36, 2], [40, 8]]},
        {"name": "k_noparams", "param_size": 0, "params": []}
    ])
}

impl Rec {
    pub fn new() -> Rec {
        Rec { dir: tempfile::tempdir().unwrap(), lines: vec![], images: vec![], schema_version: 1 }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    /// Add a fixture image; returns its sha256.
    pub fn image(&mut self, fixture_name: &str, kind: &str) -> String {
        let b = std::fs::read(fixture(fixture_name)).unwrap();
        let s = sha(&b);
        std::fs::create_dir_all(self.path().join("images")).unwrap();
        std::fs::write(self.path().join("images").join(&s), &b).unwrap();
        self.images.push(json!({"sha256": s, "file": format!("images/{s}"), "bytes": b.len(), "kind": kind, "loads": 1, "kernels": fixture_kernels()}));
        s
    }
    pub fn data(&mut self, b: &[u8]) -> String {
        let s = sha(b);
        std::fs::create_dir_all(self.path().join("data")).unwrap();
        std::fs::write(self.path().join("data").join(&s), b).unwrap();
        s
    }
    /// A call line: `ts` = 1000 × (its line number), pid 7, tid 7.
    /// Two lines: `cuModuleLoadData` of the sm_90 fixture cubin into module
    /// 0xa00, then `cuModuleGetFunction` of `kernel` as 0xf1. Returns the
    /// image's hash.
    pub fn cubin_function(&mut self, kernel: &str) -> String {
        let cubin = self.image("kernels.sm_90.cubin", "cubin");
        self.call(
            "module",
            "module_load_data",
            "cuModuleLoadData",
            json!({"ret": 0, "args": {"module": "0xa00"}, "image": cubin}),
        );
        self.call(
            "module",
            "module_get_function",
            "cuModuleGetFunction",
            json!({"ret": 0, "args": {"hmod": "0xa00", "name": kernel}, "handle": "0xf1", "kernel": kernel}),
        );
        cubin
    }

    /// The first six lines both plan tests build on (lines 2..=7): buffers
    /// A (0x7f0000000000, 4096 bytes) and B (0x7f0000200000, `b_bytes`),
    /// `cuModuleLoadData` of image `cubin` as module 0xa00, k_pointers as
    /// 0xf1, stream 0x5000 and event 0xe1.
    pub fn prelude(&mut self, cubin: &str, b_bytes: u64) {
        self.call(
            "memory",
            "alloc",
            "cuMemAlloc_v2",
            json!({"ret": 0, "args": {"dptr": "0x7f0000000000", "bytesize": 4096}, "ptr": "0x7f0000000000", "size": 4096}),
        ); // 2
        self.call("memory", "alloc", "cuMemAlloc_v2", json!({"ret": 0, "args": {"dptr": "0x7f0000200000", "bytesize": b_bytes}, "ptr": "0x7f0000200000", "size": b_bytes})); // 3
        self.call(
            "module",
            "module_load_data",
            "cuModuleLoadData",
            json!({"ret": 0, "args": {"module": "0xa00", "image": "0x1234"}, "image": cubin}),
        ); // 4
        self.call("module", "module_get_function", "cuModuleGetFunction", json!({"ret": 0, "args": {"hfunc": "0xf1", "hmod": "0xa00", "name": "k_pointers"}, "handle": "0xf1", "kernel": "k_pointers"})); // 5
        self.call(
            "stream",
            "stream_create",
            "cuStreamCreate",
            json!({"ret": 0, "args": {"phStream": "0x5000", "Flags": "0x1"}}),
        ); // 6
        self.call(
            "event",
            "event_create",
            "cuEventCreate",
            json!({"ret": 0, "args": {"phEvent": "0xe1", "Flags": "0x2"}}),
        ); // 7
    }

    pub fn call(&mut self, ty: &str, op: &str, name: &str, mut fields: Value) {
        let line = self.lines.len() + 2; // line 1 is the header
        let o = fields.as_object_mut().unwrap();
        o.insert("ts".into(), json!(1000 * line as u64));
        o.insert("pid".into(), json!(7));
        o.insert("tid".into(), json!(7));
        o.insert("type".into(), json!(ty));
        o.insert("op".into(), json!(op));
        o.insert("name".into(), json!(name));
        self.lines.push(fields);
    }
    pub fn write(&self) -> PathBuf {
        self.write_with(|_| {})
    }
    /// Write manifest.json and trace.jsonl; `edit` may change the trace text.
    pub fn write_with(&self, edit: impl FnOnce(&mut Vec<String>)) -> PathBuf {
        let mut text = vec![json!({"type": "header", "format": "tracer-jsonl", "format_version": 1, "replayable": {"capture_data": true, "data_cap_bytes": 1 << 30}}).to_string()];
        text.extend(self.lines.iter().map(|l| l.to_string()));
        text.push(json!({"type": "footer", "calls": self.lines.len()}).to_string());
        edit(&mut text);
        std::fs::write(self.path().join("trace.jsonl"), text.join("\n") + "\n").unwrap();
        let m = json!({
            "format": "tracer-recording", "schema_version": self.schema_version, "tracer_version": "0.1.0",
            "trace": "trace.jsonl", "capture_data": true, "images": self.images,
        });
        std::fs::write(self.path().join("manifest.json"), serde_json::to_string_pretty(&m).unwrap()).unwrap();
        self.path().to_owned()
    }
}

/// Parameter bytes from (offset, bytes) pieces, zero padded to `size`.
pub fn params(size: usize, pieces: &[(usize, &[u8])]) -> String {
    let mut b = vec![0u8; size];
    for (off, p) in pieces {
        b[*off..*off + p.len()].copy_from_slice(p);
    }
    tracer_format::hex::bytes(&b)
}
