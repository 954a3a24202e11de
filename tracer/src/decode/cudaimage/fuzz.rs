//! Property tests: the parsers never panic and never allocate more than the
//! input can justify, on arbitrary bytes and on mutated real images.
//!
//! The crate's counting allocator (test builds only) records the peak bytes
//! live while `measure` runs; every property bounds it by the input size.

use proptest::prelude::*;

use super::capture::{Memory, capture};
use super::{decompress, detect, fatbin, image_extent, layouts, nvinfo, ptx, report};

/// The input mapped at 0x10000 of a fake address space.
struct OneRegion<'a>(&'a [u8]);

impl Memory for OneRegion<'_> {
    fn read(&mut self, addr: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let off = addr.checked_sub(0x10000).filter(|&o| o < self.0.len() as u64);
        match off {
            Some(o) => Ok(self.0[o as usize..(o as usize).saturating_add(len).min(self.0.len())].to_vec()),
            None => Err(std::io::Error::from_raw_os_error(libc::EIO)),
        }
    }
}

/// Peak bytes live while `f` runs, from the crate's counting allocator
/// (tracer/src/fuzz/alloc.rs, which also aborts on any single request over
/// 1 GiB).
fn measure(f: impl FnOnce()) -> usize {
    crate::fuzz::alloc::measure(&[], f).1
}

/// What any input may cost: decompression legitimately expands (nvcc's
/// entries by up to ~30x), the rest stays proportional to the input.
fn budget(input: usize) -> usize {
    (1 << 20) + input * 300
}

/// Everything a caller can do with untrusted bytes.
fn exercise(b: &[u8]) {
    let _ = detect(b);
    let _ = image_extent(b);
    if let Ok(r) = report::inspect(b) {
        let _ = report::render_text(&r, "x");
        let _ = serde_json::to_string(&r);
    }
    let (cs, _) = fatbin::parse_containers(b);
    for (_, c) in &cs {
        for e in &c.entries {
            let _ = e.code();
        }
    }
    let _ = fatbin::parse_wrapper(b);
    let _ = nvinfo::parse_attrs(b);
    let _ = nvinfo::kernel_from_attrs("k", b);
    let _ = nvinfo::parse_cubin(b);
    let _ = ptx::parse_ptx(b);
    let _ = layouts::kernel_layouts(b, Some(90));
    let _ = layouts::kernel_layouts(b, None);
    let _ = capture(&mut OneRegion(b), 0x10000);
}

fn fixtures() -> Vec<&'static [u8]> {
    macro_rules! f {
        ($n:literal) => {
            include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/", $n)).as_slice()
        };
    }
    vec![
        f!("kernels.sm_90.cubin"),
        f!("kernels.compute_80.ptx"),
        f!("kernels.no-compress.fatbin"),
        f!("kernels.compress-all.fatbin"),
        f!("kernels.mode-speed.fatbin"),
        f!("libkernels.so"),
    ]
}

/// A fixture with `muts` (position, byte) overwrites and an optional cut.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    (
        0..fixtures().len(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..12),
        prop::option::of(any::<prop::sample::Index>()),
    )
        .prop_map(|(i, muts, cut)| {
            let mut b = fixtures()[i].to_vec();
            for (at, v) in muts {
                let at = at.index(b.len());
                b[at] = v;
            }
            if let Some(c) = cut {
                b.truncate(c.index(b.len() + 1));
            }
            b
        })
}

/// Mutations aimed at header fields: 4- or 8-byte little-endian values
/// (sizes, offsets, counts) written at offsets inside the first headers.
fn header_mutated() -> impl Strategy<Value = Vec<u8>> {
    (
        2usize..6,
        0usize..0x100,
        prop_oneof![Just(0u64), Just(u32::MAX as u64), Just(u64::MAX), any::<u64>(), 0u64..0x10000],
        any::<bool>(),
    )
        .prop_map(|(i, at, v, wide)| {
            let mut b = fixtures()[i].to_vec();
            let n = if wide { 8 } else { 4 };
            if at + n <= b.len() {
                b[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
            }
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(b in prop::collection::vec(any::<u8>(), 0..2048)) {
        let peak = measure(|| exercise(&b));
        prop_assert!(peak <= budget(b.len()), "{peak} bytes allocated for {} input bytes", b.len());
    }

    #[test]
    fn arbitrary_bytes_behind_magics(
        magic in prop_oneof![
            Just(fatbin::FATBIN_MAGIC.to_le_bytes().to_vec()),
            Just(fatbin::WRAPPER_MAGIC.to_le_bytes().to_vec()),
            Just(vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0x41, 8]),
            Just(b".version 9.0\n.entry k(".to_vec()),
        ],
        tail in prop::collection::vec(any::<u8>(), 0..1024),
    ) {
        let mut b = magic;
        b.extend(tail);
        let peak = measure(|| exercise(&b));
        prop_assert!(peak <= budget(b.len()), "{peak} bytes allocated for {} input bytes", b.len());
    }

    #[test]
    fn mutated_fixtures(b in mutated()) {
        let peak = measure(|| exercise(&b));
        prop_assert!(peak <= budget(b.len()), "{peak} bytes allocated for {} input bytes", b.len());
    }

    #[test]
    fn mutated_header_fields(b in header_mutated()) {
        let peak = measure(|| exercise(&b));
        prop_assert!(peak <= budget(b.len()), "{peak} bytes allocated for {} input bytes", b.len());
    }

    #[test]
    fn decompressors_on_garbage(
        b in prop::collection::vec(any::<u8>(), 0..512),
        declared in prop_oneof![0u64..4096, Just(decompress::MAX_DECOMPRESSED), any::<u64>()],
    ) {
        let peak = measure(|| {
            let _ = decompress::lz4_block(&b, declared);
            let mut z = vec![0x28, 0xb5, 0x2f, 0xfd];
            z.extend_from_slice(&b);
            let _ = decompress::zstd_frame(&z, declared);
        });
        prop_assert!(peak <= budget(b.len()), "{peak} bytes allocated for {} input bytes", b.len());
    }
}

/// The decoded fixtures themselves stay within the budget (the bound is not
/// vacuous: the zstd fatbin expands ~9x).
#[test]
fn budget_holds_for_real_images() {
    for f in fixtures() {
        let peak = measure(|| exercise(f));
        assert!(peak <= budget(f.len()), "{peak} for {}", f.len());
        assert!(peak > f.len() / 2 || f.len() < 8192, "measuring works: {peak} for {}", f.len());
    }
}
