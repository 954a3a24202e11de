use super::*;

fn k(name: &str, grid: u32, count: u64, median: u64, p10: u64, p90: u64) -> KernelEntry {
    KernelEntry {
        kernel: name.into(),
        grid: [grid, 1, 1],
        block: [32, 1, 1],
        shared_mem: 0,
        count,
        median_ns: median,
        p10_ns: p10,
        p90_ns: p90,
    }
}

fn measured(kernels: Vec<KernelEntry>, copies: Vec<CopyEntry>) -> DurationsFile {
    DurationsFile {
        format: durations_file::FORMAT.into(),
        version: 1,
        source: "cupti".into(),
        gpu: Some("NVIDIA H200".into()),
        kernels,
        copies,
    }
}

fn h200() -> GpuKey {
    GpuKey::new("NVIDIA H200", "580.159.04")
}

fn geom(grid: u32) -> Geom {
    Geom { grid: [grid, 1, 1], block: [32, 1, 1], shared_mem: 0 }
}

#[test]
fn merge_sums_counts_and_weights_the_medians() {
    let mut lib = Library::default();
    let key = h200();
    let r = merge(
        &mut lib,
        &key,
        &measured(
            vec![k("kA", 1, 3, 100, 90, 120), k("kB", 1, 2, 50, 40, 60)],
            vec![CopyEntry { kind: "h2d".into(), count: 2, base_ns: 2000, ns_per_byte: 0.25 }],
        ),
        1_000,
    );
    assert_eq!(r, MergeReport { added: 2, updated: 0, copies: 1, dropped: 0, kernels: 2, runs: 1 });
    // kA again (1 launch at 200 ns), kA with another grid (new), and h2d
    let r = merge(
        &mut lib,
        &key,
        &measured(
            vec![k("kA", 1, 1, 200, 190, 240), k("kA", 2, 5, 400, 300, 500)],
            vec![
                CopyEntry { kind: "h2d".into(), count: 2, base_ns: 3000, ns_per_byte: 0.5 },
                CopyEntry { kind: "d2h".into(), count: 1, base_ns: 2500, ns_per_byte: 0.125 },
            ],
        ),
        2_000,
    );
    assert_eq!(r, MergeReport { added: 1, updated: 1, copies: 2, dropped: 0, kernels: 3, runs: 2 });
    assert_eq!(r.sentence(), "1 kernel entries added, 1 updated, 2 copy kinds; 3 entries, 2 runs");
    let g = lib.gpu(&key).unwrap();
    assert_eq!((g.runs, g.updated_unix), (2, 2_000));
    // (3·100 + 1·200) / 4 = 125; (3·90 + 190) / 4 = 115; (3·120 + 240) / 4 = 150
    assert_eq!(g.kernels, vec![k("kA", 1, 4, 125, 115, 150), k("kA", 2, 5, 400, 300, 500), k("kB", 1, 2, 50, 40, 60)]);
    assert_eq!(
        g.copies,
        vec![
            CopyEntry { kind: "d2h".into(), count: 1, base_ns: 2500, ns_per_byte: 0.125 },
            // (2·2000 + 2·3000) / 4, (2·0.25 + 2·0.5) / 4
            CopyEntry { kind: "h2d".into(), count: 4, base_ns: 2500, ns_per_byte: 0.375 },
        ]
    );
    // the form round trips
    let text = lib.to_json();
    assert!(text.starts_with(r#"{"format":"tracer-durations-library","version":1,"gpus":[{"model":"NVIDIA H200","driver":"580.159.04","runs":2,"updated_unix":2000,"kernels":[{"kernel":"kA","#), "{text}");
    assert_eq!(Library::parse(&text).unwrap(), lib);
}

#[test]
fn the_old_side_weighs_at_most_a_thousand_counts() {
    let mut lib = Library::default();
    let key = h200();
    merge(&mut lib, &key, &measured(vec![k("kA", 1, 5_000, 100, 100, 100)], vec![]), 1);
    merge(&mut lib, &key, &measured(vec![k("kA", 1, 1_000, 200, 200, 200)], vec![]), 2);
    // 5000 counts weigh 1000: (1000·100 + 1000·200) / 2000
    assert_eq!(lib.gpu(&key).unwrap().kernels, vec![k("kA", 1, 6_000, 150, 150, 150)]);
    merge(&mut lib, &key, &measured(vec![k("kA", 1, 3_000, 250, 250, 250)], vec![]), 3);
    // (1000·150 + 3000·250) / 4000 = 225
    assert_eq!(lib.gpu(&key).unwrap().kernels, vec![k("kA", 1, 9_000, 225, 225, 225)]);
    // rounding to the nearest ns: (1000·225 + 1·226) / 1001 = 225.0009…
    merge(&mut lib, &key, &measured(vec![k("kA", 1, 1, 226, 226, 1_226)], vec![]), 4);
    assert_eq!(lib.gpu(&key).unwrap().kernels, vec![k("kA", 1, 9_001, 225, 225, 226)]);
}

#[test]
fn other_drivers_stay_under_their_own_key() {
    let mut lib = Library::default();
    let old = GpuKey::new("NVIDIA H200", "575.57.08");
    merge(&mut lib, &old, &measured(vec![k("kA", 1, 3, 100, 90, 120)], vec![]), 1);
    merge(
        &mut lib,
        &GpuKey::new("NVIDIA H100 80GB HBM3", "580.159.04"),
        &measured(vec![k("kA", 1, 1, 70, 70, 70)], vec![]),
        1,
    );
    let r = merge(&mut lib, &h200(), &measured(vec![k("kA", 1, 1, 200, 200, 200)], vec![]), 2);
    assert_eq!((r.added, r.updated, r.runs), (1, 0, 1));
    let keys: Vec<String> = lib.gpus.iter().map(|g| g.key().to_string()).collect();
    assert_eq!(
        keys,
        ["NVIDIA H100 80GB HBM3, driver 580.159.04", "NVIDIA H200, driver 575.57.08", "NVIDIA H200, driver 580.159.04"]
    );
    assert_eq!(lib.gpu(&old).unwrap().kernels, vec![k("kA", 1, 3, 100, 90, 120)]);
}

#[test]
fn beyond_the_bound_the_least_counted_entries_go() {
    let mut lib = Library::default();
    let key = h200();
    let first: Vec<KernelEntry> = (0..4).map(|i| k(&format!("k{i}"), 1, 10 + i, 100, 100, 100)).collect();
    assert_eq!(merge_bounded(&mut lib, &key, &measured(first, vec![]), 1, 4).dropped, 0);
    // two more: k4 counted 12 (kept), k5 counted 1 (dropped), and k0 (10) goes
    let more = vec![k("k4", 1, 12, 100, 100, 100), k("k5", 1, 1, 100, 100, 100)];
    let r = merge_bounded(&mut lib, &key, &measured(more, vec![]), 2, 4);
    assert_eq!((r.added, r.dropped, r.kernels), (2, 2, 4));
    assert!(r.sentence().ends_with("; 2 least-counted entries dropped (at most 200000 per GPU)"), "{}", r.sentence());
    let names: Vec<&str> = lib.gpu(&key).unwrap().kernels.iter().map(|k| k.kernel.as_str()).collect();
    assert_eq!(names, ["k1", "k2", "k3", "k4"]);
}

#[test]
fn select_takes_what_the_run_needs() {
    let mut lib = Library::default();
    let key = h200();
    merge(
        &mut lib,
        &key,
        &measured(
            vec![
                k("kA", 1, 3, 100, 90, 120),
                k("kA", 2, 3, 400, 390, 420),
                k("kB", 1, 2, 50, 40, 60),
                k("kC", 1, 2, 70, 70, 70),
            ],
            vec![
                CopyEntry { kind: "d2h".into(), count: 1, base_ns: 2500, ns_per_byte: 0.125 },
                CopyEntry { kind: "h2d".into(), count: 2, base_ns: 2000, ns_per_byte: 0.25 },
            ],
        ),
        1,
    );
    merge(&mut lib, &key, &measured(vec![k("kA", 1, 1, 100, 90, 120)], vec![]), 2);
    // this run: kA at grid 1 (twice) and grid 3, kB at grid 9, kD; h2d and memset copies
    let run = [("kA", geom(1)), ("kA", geom(1)), ("kA", geom(3)), ("kB", geom(9)), ("kD", geom(1))];
    let s = select(&lib, &key, run, ["h2d", "memset"]);
    let f = s.durations.clone().unwrap();
    assert_eq!(f.kernels, vec![k("kA", 1, 4, 100, 90, 120), k("kA", 2, 3, 400, 390, 420), k("kB", 1, 2, 50, 40, 60)]);
    assert_eq!(f.copies, vec![CopyEntry { kind: "h2d".into(), count: 2, base_ns: 2000, ns_per_byte: 0.25 }]);
    assert_eq!(
        (f.format.as_str(), f.source.as_str(), f.gpu.as_deref()),
        ("tracer-kernel-durations", "durations library", Some("NVIDIA H200"))
    );
    assert_eq!(s.staleness, Staleness::Current);
    assert_eq!((s.runs, s.kernels, s.kernels_known, s.geometries, s.geometries_exact), (2, 3, 2, 4, 1));
    assert_eq!(
        s.note,
        "the durations library (NVIDIA H200, driver 580.159.04, 2 runs) has 2 of this run's 3 kernels (1 of 4 \
         launch geometries exactly) and 1 of its 2 copy kinds"
    );
    // the run's kernels by name only (a recording passes names): no claim about geometries
    let names = [("kA", Geom::default()), ("kB", Geom::default()), ("kD", Geom::default())];
    assert_eq!(
        select(&lib, &key, names, ["h2d", "memset"]).note,
        "the durations library (NVIDIA H200, driver 580.159.04, 2 runs) has 2 of this run's 3 kernels and 1 of its 2 \
         copy kinds"
    );
    assert_eq!(
        origin("/var/lib/tracer/durations.json", &key, s.runs),
        "durations library /var/lib/tracer/durations.json (NVIDIA H200, driver 580.159.04, 2 runs)"
    );
    // by name, kA at grid 3 gets the library's count-weighted median of its geometries
    let d = crate::analysis::durations::Durations::new(f);
    assert_eq!(d.kernel("kA", Some(&geom(3))), Some((100, crate::analysis::durations::Found::ByName)));
    // nothing of the run known: no durations
    let s = select(&lib, &key, [("kZ", geom(1))], std::iter::empty::<&str>());
    assert_eq!((s.durations, s.kernels_known), (None, 0));
}

#[test]
fn entries_of_another_driver_are_not_used() {
    let mut lib = Library::default();
    merge(&mut lib, &GpuKey::new("NVIDIA H200", "575.57.08"), &measured(vec![k("kA", 1, 3, 100, 90, 120)], vec![]), 1);
    let s = select(&lib, &h200(), [("kA", geom(1))], ["h2d"]);
    assert_eq!(s.durations, None);
    assert_eq!(s.staleness, Staleness::OtherDriver(vec!["575.57.08".into()]));
    assert_eq!(
        s.note,
        "the durations library has NVIDIA H200 entries of driver 575.57.08 only: not used (another driver)"
    );
    merge(&mut lib, &GpuKey::new("NVIDIA H200", "570.1"), &measured(vec![k("kA", 1, 3, 100, 90, 120)], vec![]), 1);
    let s = select(&lib, &h200(), [("kA", geom(1))], ["h2d"]);
    assert_eq!(
        s.note,
        "the durations library has NVIDIA H200 entries of drivers 570.1, 575.57.08 only: not used (another driver)"
    );
    let s = select(&lib, &GpuKey::new("NVIDIA B200", "580.159.04"), [("kA", geom(1))], ["h2d"]);
    assert_eq!(
        (s.staleness, s.note.as_str()),
        (Staleness::NoEntries, "the durations library has no entries for NVIDIA B200")
    );
}

#[test]
fn parse_names_what_is_wrong() {
    assert_eq!(Library::parse(&Library::default().to_json()).unwrap(), Library::default());
    assert!(matches!(Library::parse("{\"format\":"), Err(ParseError::Corrupt(_))));
    let said = |text: &str| FORM.describe(&Library::parse(text).unwrap_err());
    assert_eq!(
        said(r#"{"format":"tracer-kernel-durations","version":1}"#),
        "not a durations library (format \"tracer-kernel-durations\", expected \"tracer-durations-library\")"
    );
    assert_eq!(Library::parse("[1]").unwrap_err(), ParseError::Foreign(None));
    assert_eq!(
        said(r#"{"format":"tracer-durations-library","version":2,"gpus":[]}"#),
        "version 2, newer than this tracer reads (1)"
    );
    assert_eq!(
        said(r#"{"format":"tracer-durations-library","version":1,"gpus":[{"model":"x"}]}"#),
        "corrupt (missing field `driver`)"
    );
}

#[test]
fn a_library_too_large_for_its_file_loses_old_keys_then_the_least_counted() {
    let mut lib = Library::default();
    let key = h200();
    merge(&mut lib, &GpuKey::new("NVIDIA H200", "570.1"), &measured(vec![k("old", 1, 1, 1, 1, 1)], vec![]), 5);
    merge(&mut lib, &GpuKey::new("NVIDIA H200", "575.2"), &measured(vec![k("mid", 1, 1, 1, 1, 1)], vec![]), 7);
    let ks: Vec<KernelEntry> = (0..8).map(|i| k(&format!("k{i}"), 1, 1 + i, 100, 100, 100)).collect();
    merge(&mut lib, &key, &measured(ks, vec![]), 9);
    let whole = lib.to_json().len();
    // room for all but one other key: the older one goes
    let one_less = {
        let mut l = lib.clone();
        l.gpus.retain(|g| g.driver != "570.1");
        l.to_json().len()
    };
    let mut a = lib.clone();
    assert_eq!(fit_within(&mut a, &key, whole), Fit::default());
    assert_eq!(
        fit_within(&mut a, &key, one_less),
        Fit { keys_removed: vec![GpuKey::new("NVIDIA H200", "570.1")], dropped: 0 }
    );
    // room for 6 of the 8 kernels: both other keys, then 2 of 8 (a quarter), the least counted
    let mut b = lib.clone();
    let six = {
        let mut l = lib.clone();
        l.gpus.retain(|g| g.key() == key);
        trim(&mut l.gpus[0], 6);
        l.to_json().len()
    };
    let f = fit_within(&mut b, &key, six);
    assert_eq!((f.keys_removed.len(), f.dropped), (2, 2));
    let names: Vec<&str> = b.gpus[0].kernels.iter().map(|k| k.kernel.as_str()).collect();
    assert_eq!(names, ["k2", "k3", "k4", "k5", "k6", "k7"]);
}
