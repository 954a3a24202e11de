//! Round trip: a small trace exported, then read back with the parquet
//! crate's own reader, value by value (nulls included).
use std::path::Path;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

use super::schema::{SCHEMA_VERSION, TABLES, VERSION_KEY};
use super::{Options, export};
use crate::analysis::model::parse_str;
use crate::analysis::{gaps, phases, timeline};

const TRACE: &str = concat!(
    r#"{"type":"header","pid":7,"command":["app","-x"],"host":"node-a","driver":"580.1","started_at":"2026-01-01T00:00:00Z","clock":{"monotonic_ns":1000000,"realtime_ns":1767225600000000000},"gpus":[{"model":"H100","bus":"0000:01:00.0","uuid":"GPU-1234"}]}"#,
    "\n",
    r#"{"ts":2000000,"pid":7,"tid":8,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k1","grid":[4,2,1],"block":[128,1,1],"shared_mem":256,"stream":"0x5"}"#,
    "\n",
    r#"{"ts":2100000,"pid":7,"tid":8,"type":"memcpy","op":"memcpy","name":"cuMemcpyDtoHAsync_v2","direction":"d2h","size":4096,"stream":"0x5","duration_us":3,"ret":0}"#,
    "\n",
    r#"{"ts":2200000,"pid":7,"tid":8,"type":"stream","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x5","duration_us":800,"ret":0}"#,
    "\n",
    r#"{"ts":4000000,"pid":7,"tid":8,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"_ZN2at6native4fillIfEEvPT_i","grid":[1,1,1],"block":[32,1,1],"stream":"0x5"}"#,
    "\n",
    r#"{"ts":4100000,"pid":7,"tid":8,"type":"stream","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x5","duration_us":500,"ret":0}"#,
    "\n",
    r#"{"ts":2500000,"pid":7,"tid":9,"type":"marker","op":"phase","label":"load"}"#,
    "\n",
);

/// Every row of `DIR/NAME.parquet`, each as (column, value) strings.
fn rows(dir: &Path, name: &str) -> Vec<Vec<(String, String)>> {
    let f = std::fs::File::open(dir.join(format!("{name}.parquet"))).unwrap();
    let r = SerializedFileReader::new(f).unwrap();
    let kv = r.metadata().file_metadata().key_value_metadata().unwrap();
    assert!(kv.iter().any(|k| k.key == VERSION_KEY && k.value.as_deref() == Some(&SCHEMA_VERSION.to_string()[..])));
    r.get_row_iter(None)
        .unwrap()
        .map(|row| {
            row.unwrap()
                .get_column_iter()
                .map(|(n, f)| {
                    let v = match f {
                        Field::Null => "null".to_string(),
                        Field::Str(s) => s.clone(),
                        Field::TimestampMicros(us) => format!("{us}µs"),
                        other => other.to_string(),
                    };
                    (n.clone(), v)
                })
                .collect()
        })
        .collect()
}

fn get<'a>(row: &'a [(String, String)], col: &str) -> &'a str {
    &row.iter().find(|(n, _)| n == col).unwrap_or_else(|| panic!("no column {col}")).1
}

fn exported(host: Option<&str>) -> (tempfile_dir::Dir, super::Written) {
    let t = parse_str("t.jsonl", TRACE).unwrap();
    let tl = timeline::bound(&t);
    let g = gaps::analyze(&t, &tl, &phases::phases(&t), &gaps::GapOptions::default());
    let d = tempfile_dir::Dir::new();
    let w = export(&t, &tl, &g, &d.0, &Options { host: host.map(str::to_string), force: false }).unwrap();
    (d, w)
}

#[test]
fn tables_read_back_value_by_value() {
    let (d, w) = exported(None);
    let n: Vec<(&str, u64)> = w.rows.clone();
    assert_eq!(
        n,
        vec![
            ("traces", 1),
            ("calls", 5),
            ("launches", 2),
            ("copies", 1),
            ("gpu_activity", 2),
            ("idle_scopes", 2),
            ("idle_gaps", 2),
            ("ioctls", 0),
            ("power", 0),
            ("markers", 1),
            ("thread_states", 0),
            ("sched_lost", 0),
            ("stacks", 0)
        ]
    );
    for t in TABLES {
        let r = rows(&d.0, t.name);
        assert_eq!(r.len() as u64, w.rows.iter().find(|x| x.0 == t.name).unwrap().1, "{}", t.name);
        if let Some(first) = r.first() {
            let cols: Vec<&str> = first.iter().map(|c| c.0.as_str()).collect();
            let want: Vec<&str> = t.all_columns().map(|c| c.name).collect();
            assert_eq!(cols, want, "{}", t.name);
        }
    }
    let l = rows(&d.0, "launches");
    let first = &l[0];
    for (col, want) in [
        ("host", "node-a"),
        ("trace_id", w.trace_id.as_str()),
        ("device", "0"),
        ("gpu_model", "H100"),
        ("gpu_bus", "0000:01:00.0"),
        ("gpu_uuid", "GPU-1234"),
        ("call_id", "0"),
        ("ts_ns", "2000000"),
        // realtime 1767225600 s at monotonic 1 ms: 1 ms later
        ("time", "1767225600001000µs"),
        ("dur_ns", "null"),
        ("pid", "7"),
        ("tid", "8"),
        ("function", "cuLaunchKernel"),
        ("kernel", "k1"),
        ("kernel_demangled", "k1"),
        ("kernel_short", "k1"),
        ("grid_x", "4"),
        ("grid_y", "2"),
        ("grid_z", "1"),
        ("block_x", "128"),
        ("block_y", "1"),
        ("block_z", "1"),
        ("shared_mem_bytes", "256"),
        ("stream", "5"),
        ("graph_exec", "null"),
        ("failed", "false"),
    ] {
        assert_eq!(get(first, col), want, "launches.{col}");
    }
    // a C++ kernel: as recorded, demangled, and its base name
    assert_eq!(get(&l[1], "kernel"), "_ZN2at6native4fillIfEEvPT_i");
    assert_eq!(get(&l[1], "kernel_demangled"), "void at::native::fill<float>(float*, int)");
    assert_eq!(get(&l[1], "kernel_short"), "fill<…>");
    let calls = rows(&d.0, "calls");
    let fill: Vec<&str> = calls
        .iter()
        .filter(|r| get(r, "kernel") == "_ZN2at6native4fillIfEEvPT_i")
        .map(|r| get(r, "kernel_short"))
        .collect();
    assert_eq!(fill, ["fill<…>"]);
    let c = &rows(&d.0, "copies")[0];
    for (col, want) in
        [("call_id", "1"), ("direction", "d2h"), ("bytes", "4096"), ("async", "true"), ("dur_ns", "3000")]
    {
        assert_eq!(get(c, col), want, "copies.{col}");
    }
    let calls = rows(&d.0, "calls");
    let kinds: Vec<&str> = calls.iter().map(|r| get(r, "kind")).collect();
    assert_eq!(kinds, ["launch", "copy_async", "stream_sync", "launch", "stream_sync"]);
    assert_eq!(get(&calls[2], "bytes"), "null");
    assert_eq!(get(&calls[1], "bytes"), "4096");
    // bound timeline: 2 ms (launch entry) to 3 ms (sync return), 4 ms to 4.6 ms
    let a = rows(&d.0, "gpu_activity");
    let iv: Vec<(&str, &str, &str, &str)> =
        a.iter().map(|r| (get(r, "source"), get(r, "kind"), get(r, "start_ns"), get(r, "end_ns"))).collect();
    assert_eq!(iv, [("bound", "pending", "2000000", "3000000"), ("bound", "pending", "4000000", "4600000")]);
    // the one gap, from the GPU's and from the process's view; nothing in flight
    let g = rows(&d.0, "idle_gaps");
    let gaps: Vec<(&str, &str, &str, &str, &str)> = g
        .iter()
        .map(|r| (get(r, "scope"), get(r, "device"), get(r, "pid"), get(r, "dur_ns"), get(r, "main_cause")))
        .collect();
    assert_eq!(
        gaps,
        [
            ("gpu 0", "0", "null", "1000000", "cpu_between_calls"),
            ("pid 7 (app)", "null", "7", "1000000", "cpu_between_calls")
        ]
    );
    let s = rows(&d.0, "idle_scopes");
    assert_eq!((get(&s[0], "window_ns"), get(&s[0], "busy_ns"), get(&s[0], "idle_ns")), ("2600000", "null", "1000000"));
    assert_eq!(get(&s[0], "idle_basis"), "lower_bound");
    let m = &rows(&d.0, "markers")[0];
    assert_eq!((get(m, "op"), get(m, "label"), get(m, "tokens"), get(m, "device")), ("phase", "load", "null", "null"));
    let t = &rows(&d.0, "traces")[0];
    for (col, want) in [
        ("command", "app -x"),
        ("driver", "580.1"),
        ("gpus", "1"),
        ("calls", "5"),
        ("lost_records", "null"),
        ("timeline", "bound"),
        ("device", "null"),
    ] {
        assert_eq!(get(t, col), want, "traces.{col}");
    }
}

#[test]
fn host_override_and_existing_files() {
    let (d, w) = exported(Some("node-b"));
    assert_eq!(get(&rows(&d.0, "calls")[0], "host"), "node-b");
    let (_, w_a) = exported(None);
    assert_ne!(w.trace_id, w_a.trace_id, "another host, another trace");
    assert_eq!(w.trace_id.len(), 16);
    let t = parse_str("t.jsonl", TRACE).unwrap();
    let tl = timeline::bound(&t);
    let g = gaps::analyze(&t, &tl, &phases::phases(&t), &gaps::GapOptions::default());
    let e = export(&t, &tl, &g, &d.0, &Options::default()).unwrap_err().to_string();
    assert_eq!(e, format!("output file {} exists (use --force to overwrite)", d.0.join("traces.parquet").display()));
    export(&t, &tl, &g, &d.0, &Options { host: None, force: true }).unwrap();
    assert_eq!(get(&rows(&d.0, "calls")[0], "host"), "node-a");
}

/// A fresh directory under the system temp dir, removed on drop.
mod tempfile_dir {
    pub struct Dir(pub std::path::PathBuf);
    impl Dir {
        pub fn new() -> Dir {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let p = std::env::temp_dir().join(format!(
                "tracer-parquet-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&p);
            Dir(p)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// docs/parquet.md lists every table's columns (name, type, nullability) in
/// schema order: the context table once, then one table per `### \`NAME\``.
#[test]
fn docs_list_the_schema() {
    use super::schema::CONTEXT;
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/parquet.md")).unwrap();
    /// (name, type, nullable) of a column
    type Col = (String, String, bool);
    // (section title, its column rows)
    let mut sections: Vec<(String, Vec<Col>)> = Vec::new();
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ").or_else(|| line.strip_prefix("### ")) {
            sections.push((h.trim().to_string(), Vec::new()));
        } else if let (Some(s), Some(row)) = (sections.last_mut(), line.strip_prefix("| `")) {
            let cells: Vec<&str> = row.split(" | ").collect();
            let name = cells[0].trim_end_matches('`').to_string();
            s.1.push((name, cells[1].to_string(), cells[2] == "yes"));
        }
    }
    let cols = |c: &mut dyn Iterator<Item = &super::schema::Column>| -> Vec<Col> {
        c.map(|c| (c.name.to_string(), c.ty.sql().to_string(), c.nullable)).collect()
    };
    let find = |title: &str| {
        sections.iter().find(|s| s.0 == title).map(|s| s.1.clone()).unwrap_or_else(|| panic!("no section {title}"))
    };
    assert_eq!(find("Context columns (every table, first)"), cols(&mut CONTEXT.iter()));
    for t in TABLES {
        assert_eq!(find(&format!("`{}`", t.name)), cols(&mut t.columns.iter()), "docs/parquet.md, table {}", t.name);
    }
}

/// tests/fixtures/stacks/train.jsonl: every frame a row of `stacks`, the
/// `stack` id each call and off-CPU row named (even one no line defines).
#[test]
fn stacks_table_and_stack_columns() {
    let t = parse_str("train.jsonl", include_str!("../../../tests/fixtures/stacks/train.jsonl")).unwrap();
    let tl = timeline::measured(&t);
    let g = gaps::analyze(&t, &tl, &phases::phases(&t), &gaps::GapOptions::default());
    let d = tempfile_dir::Dir::new();
    export(&t, &tl, &g, &d.0, &Options::default()).unwrap();
    let st = rows(&d.0, "stacks");
    // stacks 1-3: 4 frames each, stack 4: 5 (addresses 0x7f1000003000, 0x7f2000000400, 0x55d0c0a01234)
    assert_eq!(st.len(), 17);
    let row = |r: &[(String, String)]| -> String {
        ["stack_id", "pid", "depth", "kind", "function", "file", "line", "module", "address", "offset"]
            .iter()
            .map(|c| get(r, c))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let four: Vec<String> = st.iter().filter(|r| get(r, "stack_id") == "4").map(|r| row(r)).collect();
    assert_eq!(
        four,
        [
            "4 100 0 native read null null /usr/lib/x86_64-linux-gnu/libc.so.6 139706696216576 12288",
            "4 100 1 native [unknown] null null /opt/lib/libstripped.so 139775415682048 1024",
            "4 100 2 python load_batch /home/u/data.py 41 null null null",
            "4 100 3 python main /home/u/train.py 38 null null null",
            "4 100 4 native main Programs/python.c 15 /usr/bin/python3.11 94355073274420 4660",
        ]
    );
    let col = |table: &str| -> Vec<String> { rows(&d.0, table).iter().map(|r| get(r, "stack").to_string()).collect() };
    assert_eq!(col("calls"), ["1", "2", "3", "1", "null", "9"]);
    assert_eq!(col("launches"), ["1", "2", "1", "null"]);
    assert_eq!(col("thread_states"), ["4", "null"]);
}
