//! What a correct `tracer record --replayable` must capture from
//! tests/fakecuda/replayable.c, computed here independently of tracer: the
//! fixture kernels' parameter layouts (as documented in
//! tests/fixtures/cuda/kernels.cu), the argument values of every launch, the
//! parameter buffer each kernel receives, the images loaded and the bytes
//! copied to the device. Pure functions (plus reading the fixtures).
//!
//! Keep in step with replayable.c: `args` with its fill_args(), `plan` with
//! its main() and worker(), `loads` and `copies` with the load and copy calls.
//! fakecuda_lib.rs checks the program's own account of what it passed
//! against these, without tracing.

use std::path::PathBuf;

use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// Kernels and layouts
// ---------------------------------------------------------------------------

/// A kernel's parameter layout: `(offset, size)` per parameter in ordinal
/// order, and the size of the parameter buffer.
#[derive(Debug)]
pub struct KernelLayout {
    pub name: &'static str,
    pub size: u32,
    pub params: &'static [(u32, u32)],
}

/// The 11 kernels of kernels.cu with the layouts its comments document.
pub const KERNELS: [KernelLayout; 11] = [
    KernelLayout { name: "k_pointers", size: 20, params: &[(0, 8), (8, 8), (16, 4)] },
    KernelLayout { name: "k_scalars", size: 40, params: &[(0, 1), (2, 2), (4, 4), (8, 8), (16, 4), (24, 8), (32, 8)] },
    KernelLayout { name: "k_struct", size: 48, params: &[(0, 1), (8, 24), (32, 3), (36, 2), (40, 8)] },
    KernelLayout { name: "k_vec", size: 32, params: &[(0, 16), (16, 1), (24, 8)] },
    KernelLayout { name: "k_big", size: 1040, params: &[(0, 1028), (1032, 8)] },
    KernelLayout { name: "k_huge", size: 6008, params: &[(0, 6000), (6000, 8)] },
    KernelLayout { name: "k_gridconst", size: 32, params: &[(0, 24), (24, 8)] },
    KernelLayout { name: "k_noparams", size: 0, params: &[] },
    KernelLayout { name: CPP, size: 12, params: &[(0, 8), (8, 4)] },
    KernelLayout { name: TMPL_D, size: 16, params: &[(0, 8), (8, 8)] },
    KernelLayout { name: TMPL_F, size: 12, params: &[(0, 8), (8, 4)] },
];

/// `__global__ void k_cpp(int *, float)`.
pub const CPP: &str = "_Z5k_cppPif";
/// `k_template<double, 8>`.
pub const TMPL_D: &str = "_Z10k_templateIdLi8EEvPT_S0_";
/// `k_template<float, 4>`.
pub const TMPL_F: &str = "_Z10k_templateIfLi4EEvPT_S0_";

pub fn kernel(name: &str) -> &'static KernelLayout {
    KERNELS.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("no fixture kernel named {name}"))
}

/// The parameter buffer a kernel with `layout` receives: `values[i]` at the
/// offset of parameter i, `pad` in every byte no parameter covers. Panics if
/// the values do not fit the layout (a mistake in the test, not in tracer).
pub fn param_buffer(layout: &KernelLayout, values: &[Vec<u8>], pad: u8) -> Vec<u8> {
    assert_eq!(
        values.len(),
        layout.params.len(),
        "{}: {} values for {} parameters",
        layout.name,
        values.len(),
        layout.params.len()
    );
    let mut b = vec![pad; layout.size as usize];
    let mut covered = vec![false; b.len()];
    for (i, (&(off, size), v)) in layout.params.iter().zip(values).enumerate() {
        let (off, size) = (off as usize, size as usize);
        assert_eq!(v.len(), size, "{} parameter {i}: {} bytes for a {size}-byte slot", layout.name, v.len());
        assert!(off + size <= b.len(), "{} parameter {i}: {off}+{size} past the {}-byte buffer", layout.name, b.len());
        assert!(!covered[off..off + size].contains(&true), "{} parameter {i} overlaps another", layout.name);
        covered[off..off + size].fill(true);
        b[off..off + size].copy_from_slice(v);
    }
    b
}

/// A struct of `size` bytes filled with `pad`, with `fields` (offset, bytes) written in.
fn fields(size: usize, pad: u8, fields: &[(usize, Vec<u8>)]) -> Vec<u8> {
    let mut b = vec![pad; size];
    for (off, v) in fields {
        b[*off..off + v.len()].copy_from_slice(v);
    }
    b
}

fn u64b(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}
fn u32b(v: u32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}
fn u16b(v: u16) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}
fn f32b(v: f32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}
fn f64b(v: f64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

/// `struct Odd { char c; double d; short s; }`: 24 bytes, c@0, d@8, s@16.
fn odd(c: u8, d: f64, s: u16, pad: u8) -> Vec<u8> {
    fields(24, pad, &[(0, vec![c]), (8, f64b(d)), (16, u16b(s))])
}

/// The argument values (bytes of each parameter, in ordinal order) of launch
/// `id` of `kernel`, as replayable.c's fill_args() passes them; bytes of a
/// struct that belong to no member are `pad`.
pub fn args(kernel: &str, id: u32, pad: u8) -> Vec<Vec<u8>> {
    let id64 = id as u64;
    match kernel {
        "k_pointers" => vec![u64b(0x7f00_0000_0000 + id64 * 0x1000), u64b(0x7f00_0080_0000 + id64), u32b(id * 3)],
        "k_scalars" => vec![
            vec![id.wrapping_mul(7) as u8],
            u16b(0u32.wrapping_sub(id * 13) as u16),
            u32b(0x1234_5678 ^ id),
            u64b(0x0123_4567_89ab_cdef ^ (id64 << 40)),
            f32b(id as f32 + 0.5),
            f64b(id as f64 * -2.25),
            u64b(0x7f00_0010_0000 + id64),
        ],
        "k_struct" => vec![
            vec![(0x40 + id % 32) as u8],
            odd(id as u8, id as f64 * 1.125, 0u32.wrapping_sub(id * 3) as u16, pad),
            vec![id as u8, (id + 1) as u8, (id + 2) as u8],
            u16b((0x7000 + id) as u16),
            u64b(0x7f00_0020_0000 + id64),
        ],
        "k_vec" => vec![
            [u32b(id), u32b(0u32.wrapping_sub(id)), u32b(id * 1000), u32b(0x7fff_ffff - id)].concat(),
            vec![(id + 1) as u8],
            u64b(0x7f00_0030_0000 + id64),
        ],
        "k_big" => {
            let mut f: Vec<(usize, Vec<u8>)> =
                (0..256u32).map(|j| (4 * j as usize, f32b(id as f32 + j as f32 * 0.25))).collect();
            f.push((1024, u32b(id * 5)));
            vec![fields(1028, pad, &f), u64b(0x7f00_0040_0000 + id64)]
        }
        "k_huge" => {
            let f: Vec<(usize, Vec<u8>)> = (0..1500u32).map(|j| (4 * j as usize, u32b(id * 10000 + j))).collect();
            vec![fields(6000, pad, &f), u64b(0x7f00_0050_0000 + id64)]
        }
        "k_gridconst" => vec![
            odd(0u32.wrapping_sub(id) as u8, id as f64 * -0.5, (id * 11) as u16, pad),
            u64b(0x7f00_0060_0000 + id64),
        ],
        "k_noparams" => vec![],
        CPP => vec![u64b(0x7f00_0070_0000 + id64), f32b(id as f32 * 0.75)],
        TMPL_D => vec![u64b(0x7f00_0090_0000 + id64), f64b(id as f64 * 3.5)],
        TMPL_F => vec![u64b(0x7f00_00a0_0000 + id64), f32b(id as f32 * 0.125)],
        other => panic!("no argument values for {other}"),
    }
}

// ---------------------------------------------------------------------------
// Launches
// ---------------------------------------------------------------------------

/// How the parameters were passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// `kernelParams` (a pointer per parameter): `params_from: "layout"`.
    Layout,
    /// `extra` = {BUFFER_POINTER, buf, BUFFER_SIZE, &size, END}, every
    /// padding byte of buf [`EXTRA_PAD`]: `params_from: "extra"`.
    Extra,
}

impl Via {
    pub fn params_from(self) -> &'static str {
        match self {
            Via::Layout => "layout",
            Via::Extra => "extra",
        }
    }
}

/// Padding bytes of `extra` buffers (kernelParams structs are zeroed).
pub const EXTRA_PAD: u8 = 0xee;

/// cuLaunchKernelEx attribute sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attrs {
    None,
    /// cluster (2, 1, 1), priority -3
    ClusterPrio,
    /// cooperative 1
    Coop,
    /// cluster (1, 2, 1), cooperative 1, priority 2
    All,
}

impl Attrs {
    /// `args.config.attrs` of the launch line, as tracer decodes CUlaunchConfig.
    pub fn json(self) -> Value {
        let cluster = |x: u32, y: u32| json!({"id": 4, "name": "CLUSTER_DIMENSION", "value": [x, y, 1]});
        let coop = json!({"id": 2, "name": "COOPERATIVE", "value": 1});
        let prio = |p: i32| json!({"id": 8, "name": "PRIORITY", "value": p});
        match self {
            Attrs::None => json!([]),
            Attrs::ClusterPrio => json!([cluster(2, 1), prio(-3)]),
            Attrs::Coop => json!([coop]),
            Attrs::All => json!([cluster(1, 2), coop, prio(2)]),
        }
    }
}

/// One launch of replayable.c. Its line in the trace has `grid[0] == id`.
#[derive(Clone, Debug)]
pub struct Launch {
    pub id: u32,
    /// The function called (`name` of the line).
    pub api: &'static str,
    /// None: the handle no lookup returned.
    pub kernel: Option<&'static str>,
    pub via: Via,
    /// cuLaunchKernelEx(_ptsz) only.
    pub attrs: Attrs,
}

/// cuGraphLaunch calls (after the threads): `coverage.graph_launches`, not in `launches`.
pub const GRAPH_LAUNCHES: u64 = 1;

/// The launch through a handle no lookup returned (0xdead000): `params_error`.
pub const UNKNOWN_HANDLE_ID: u32 = 99;
pub const UNKNOWN_HANDLE: &str = "0xdead000";

const KL: &str = "cuLaunchKernel";
const KL_PTSZ: &str = "cuLaunchKernel_ptsz";
const EX: &str = "cuLaunchKernelEx";
const EX_PTSZ: &str = "cuLaunchKernelEx_ptsz";
const COOP: &str = "cuLaunchCooperativeKernel";

/// Every launch replayable.c makes, by id.
pub fn plan() -> Vec<Launch> {
    use Attrs as A;
    use Via::{Extra as X, Layout as L};
    let l = |id, api, kernel, via, attrs| Launch { id, api, kernel: Some(kernel), via, attrs };
    let mut v = vec![
        // Library A (no-compress fatbin, cuLibraryLoadData twice): each launched right after its lookup.
        l(1, KL, "k_scalars", L, A::None),
        l(2, KL, "k_struct", L, A::None),
        l(3, KL, "k_vec", L, A::None),
        l(4, EX, "k_big", L, A::ClusterPrio),
        l(5, KL, "k_huge", L, A::None),
        l(6, COOP, "k_gridconst", L, A::None),
        l(7, KL, "k_noparams", L, A::None),
        l(8, KL_PTSZ, "k_pointers", L, A::None),
        l(9, KL, CPP, L, A::None),
        l(10, EX_PTSZ, TMPL_D, L, A::Coop),
        l(11, KL, TMPL_F, L, A::None),
        // compress-all fatbin: cuModuleLoad(path), cuLibraryLoadFromFile(path) (+ its module), wrapper.
        l(12, KL, "k_struct", X, A::None),
        l(13, EX, "k_scalars", X, A::None),
        l(14, KL, "k_huge", X, A::None),
        l(15, KL, "k_vec", L, A::None),
        l(16, KL, "k_gridconst", L, A::None),
        l(17, EX, "k_pointers", L, A::All),
        l(18, KL, "k_big", L, A::None),
        l(19, KL, CPP, X, A::None),
        // sm_90 cubin: cuModuleLoadDataEx, cuModuleLoadData.
        l(20, KL, "k_struct", L, A::None),
        l(21, KL, TMPL_D, L, A::None),
        l(22, KL, "k_scalars", L, A::None),
        l(23, EX, "k_huge", L, A::None),
        // PTX.
        l(24, KL, "k_struct", L, A::None),
        l(25, KL, "k_vec", L, A::None),
        l(26, KL, "k_noparams", L, A::None),
        // mode-speed fatbin, its buffer overwritten and freed once loaded.
        l(27, KL, "k_big", L, A::None),
        l(28, KL, "k_gridconst", X, A::None),
        // The same handles again, after the copies.
        l(29, KL, "k_scalars", L, A::None),
        l(30, KL, "k_struct", X, A::None),
        l(31, EX, "k_vec", L, A::ClusterPrio),
        l(32, KL, "k_struct", L, A::None),
        l(33, COOP, "k_vec", L, A::None),
        l(34, KL, "k_gridconst", L, A::None),
        l(35, EX, "k_big", X, A::All),
        l(36, KL, "k_struct", L, A::None),
        l(37, KL_PTSZ, "k_huge", L, A::None),
    ];
    // Two threads at once (worker()).
    for t in 0..2u32 {
        let base = 1000 * (t + 1);
        let own = if t == 0 { "k_struct" } else { "k_big" };
        v.push(l(base, KL, own, L, A::None));
        for i in 1..=40 {
            v.push(match i % 5 {
                0 => l(base + i, KL, "k_scalars", L, A::None),
                1 => l(base + i, KL, "k_struct", L, A::None),
                2 => l(base + i, EX, TMPL_D, L, A::Coop),
                3 => l(base + i, KL, "k_struct", X, A::None),
                _ => l(base + i, KL, own, L, A::None),
            });
        }
    }
    v.push(Launch { id: UNKNOWN_HANDLE_ID, api: KL, kernel: None, via: L, attrs: A::None });
    v
}

/// The `params` a correct recorder writes for `l`; None for the unknown handle.
pub fn expected_params(l: &Launch) -> Option<Vec<u8>> {
    let k = kernel(l.kernel?);
    let pad = match l.via {
        Via::Layout => 0,
        Via::Extra => EXTRA_PAD,
    };
    Some(param_buffer(k, &args(k.name, l.id, pad), pad))
}

// ---------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------

pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cuda")
}

pub fn fixture(name: &str) -> Vec<u8> {
    let p = fixture_dir().join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

/// One load call of replayable.c, in call order (all on the main thread).
#[derive(Clone, Debug)]
pub struct Load {
    pub api: &'static str,
    /// The fixture whose bytes the recorder must store; None: `image_error`.
    pub fixture: Option<&'static str>,
}

pub fn loads() -> Vec<Load> {
    let ld = |api, fixture| Load { api, fixture };
    vec![
        ld("cuLibraryLoadData", Some("kernels.no-compress.fatbin")),
        ld("cuLibraryLoadData", Some("kernels.no-compress.fatbin")),
        ld("cuModuleLoad", Some("kernels.compress-all.fatbin")),
        ld("cuLibraryLoadFromFile", Some("kernels.compress-all.fatbin")),
        ld("cuModuleLoadFatBinary", Some("kernels.compress-all.fatbin")),
        ld("cuModuleLoadDataEx", Some("kernels.sm_90.cubin")),
        ld("cuModuleLoadData", Some("kernels.sm_90.cubin")),
        ld("cuModuleLoadData", Some("kernels.compute_80.ptx")),
        ld("cuModuleLoadData", Some("kernels.mode-speed.fatbin")),
        // An address unmapped just before the call.
        ld("cuModuleLoadData", None),
        // A file that does not exist.
        ld("cuModuleLoad", None),
    ]
}

/// The manifest's `kind` of a fixture.
pub fn image_kind(fixture: &str) -> &'static str {
    if fixture.ends_with(".fatbin") {
        "fatbin"
    } else if fixture.ends_with(".cubin") {
        "cubin"
    } else if fixture.ends_with(".ptx") {
        "ptx"
    } else {
        panic!("{fixture}: not an image fixture")
    }
}

// ---------------------------------------------------------------------------
// Copies
// ---------------------------------------------------------------------------

/// Byte i of host buffer pattern 1, 2 or 3 (replayable.c: pattern()).
pub fn pattern(which: u32, i: usize) -> u8 {
    match which {
        1 => (i.wrapping_mul(31).wrapping_add(7)) as u8,
        2 => ((i as u32).wrapping_mul(2_654_435_761) >> 13) as u8,
        _ => (0xa0 ^ i ^ (i >> 8)) as u8,
    }
}

pub fn pattern_buf(which: u32, n: usize) -> Vec<u8> {
    (0..n).map(|i| pattern(which, i)).collect()
}

/// One copy call of replayable.c, in call order.
#[derive(Clone, Debug)]
pub struct Copy {
    pub api: &'static str,
    pub size: u64,
    /// Host-to-device: the bytes at `src` when the call was entered.
    pub h2d: Option<Vec<u8>>,
}

pub fn copies() -> Vec<Copy> {
    let c = |api, data: Vec<u8>| Copy { api, size: data.len() as u64, h2d: Some(data) };
    vec![
        c("cuMemcpyHtoD_v2", pattern_buf(1, 100)),
        c("cuMemcpyHtoD_v2", pattern_buf(2, 1 << 20)),
        c("cuMemcpyHtoDAsync_v2", pattern_buf(1, 100)),
        c("cuMemcpyHtoDAsync_v2", pattern_buf(2, 1 << 20)),
        c("cuMemcpyHtoD_v2", pattern_buf(3, 4096)),
        Copy { api: "cuMemcpyDtoH_v2", size: 100, h2d: None },
        Copy { api: "cuMemcpyDtoHAsync_v2", size: 256, h2d: None },
    ]
}

// ---------------------------------------------------------------------------
// Encodings
// ---------------------------------------------------------------------------

/// Lowercase hex, as the trace's `params`.
#[allow(unused_imports, reason = "not every test binary uses it")]
pub use tracer_format::hex::bytes as hex;

/// A content address, as `images/` and `data/` name their files.
#[allow(unused_imports, reason = "not every test binary uses it")]
pub use tracer_format::digest::sha256_hex;
