//! Kernel families, for the breakdowns of `replay`'s report and `tracer plot
//! --compare` and the per-GPU figures: GEMM, attention, elementwise,
//! reduction, copy, set, NCCL (collectives and point-to-point), other.
//! By the substrings the common libraries put in their (mangled) kernel
//! names; no allocation, so it lives here, shared by both.

/// The families in the order reports and figures list them.
pub const FAMILIES: &[&str] = &["gemm", "attention", "elementwise", "reduction", "copy", "set", "nccl", "other"];

/// `needle` (lower case ASCII) in `hay`, ignoring ASCII case.
fn contains_ignore_case(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    n.is_empty() || h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
}

/// The family of a GPU activity: copies (`op` "memcpy") and sets (`op`
/// "memset") are their own families; kernels go by their name.
pub fn of_op(op: &str, kernel: &str) -> &'static str {
    match op {
        "memcpy" => "copy",
        "memset" => "set",
        _ => family(kernel),
    }
}

/// The family of a (mangled) kernel name, by the substrings the common
/// libraries use (cuBLAS/cuBLASLt nvjet/xmma/cutlass GEMMs, cuDNN/flash SDPA,
/// PyTorch's elementwise and reduce templates). NCCL's kernels
/// (`ncclKernel_*` before NCCL 2.19, `ncclDevKernel_*` since, mangled or
/// not) are tested first: their names contain "AllReduce", "Sum", ...
/// Attention is tested next: flash-attention kernels contain "wgmma" too.
pub fn family(kernel: &str) -> &'static str {
    let any = |subs: &[&str]| subs.iter().any(|s| contains_ignore_case(kernel, s));
    if kernel.contains("ncclKernel") || kernel.contains("ncclDevKernel") {
        "nccl"
    } else if any(&["sdpa", "flash", "fmha", "attention", "attn"]) {
        "attention"
    } else if any(&["gemm", "nvjet", "xmma", "cutlass", "cublas", "matmul", "gemv", "wgmma", "splitk"]) {
        "gemm"
    } else if any(&[
        "reduce",
        "softmax",
        "norm",
        "scan",
        "argmax",
        "argmin",
        "topk",
        "sort",
        "radix",
        "cumsum",
        "histogram",
    ]) {
        "reduction"
    } else if any(&[
        "elementwise",
        "functor",
        "fill",
        "copy",
        "catarray",
        "index",
        "gather",
        "scatter",
        "where",
        "embedding",
        "cast",
        "arange",
        "random",
        "distribution",
    ]) {
        "elementwise"
    } else {
        "other"
    }
}

/// The position of a family in [`FAMILIES`] (unknown names last).
pub fn index(f: &str) -> usize {
    FAMILIES.iter().position(|x| *x == f).unwrap_or(FAMILIES.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_of_real_kernel_names() {
        // Names from the committed H100 recordings (traces/).
        assert_eq!(family("nvjet_sm90_hsh_64x8_64x16_4x2_h_bz_bias_NNT"), "gemm");
        assert_eq!(family("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1"), "gemm");
        assert_eq!(
            family(
                "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"
            ),
            "attention"
        );
        assert_eq!(
            family("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"),
            "elementwise"
        );
        assert_eq!(
            family("_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_9ArgMaxOpsIfEEjlLi4ELi4EEEEEvT1_"),
            "reduction"
        );
        assert_eq!(family("_ZN2at6native43_GLOBAL__N__softmax_warp_forwardIN3c104HalfEEEvPT_"), "reduction");
        assert_eq!(family("_Z6vecAddPfS_S_i"), "other");
        // NCCL's kernels, before and after NCCL 2.19 (the second as nvcc mangles it).
        assert_eq!(family("ncclKernel_AllReduce_RING_LL_Sum_float"), "nccl");
        assert_eq!(family("_Z28ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"), "nccl");
        assert_eq!(family("ncclDevKernel_Generic_4"), "nccl");
        assert_eq!(family("_ZN4vllm25cross_device_reduce_1stageIfLi2EEEvPNS_7RankDataE"), "reduction");
        assert_eq!(family(""), "other");
    }

    #[test]
    fn copies_and_sets_by_op() {
        assert_eq!(of_op("memcpy", "memcpy_htod"), "copy");
        assert_eq!(of_op("memset", "memset"), "set");
        assert_eq!(of_op("kernel", "nvjet_sm90_x"), "gemm");
        // A kernel named like a copy is an elementwise kernel, not a copy.
        assert_eq!(of_op("kernel", "_ZN2at6native18copy_device_to_device"), "elementwise");
        for (i, f) in FAMILIES.iter().enumerate() {
            assert_eq!(index(f), i);
        }
        assert_eq!(index("nonsense"), 7);
    }

    #[test]
    fn case_is_ignored() {
        assert_eq!(family("Flash_FWD"), "attention");
        assert_eq!(family("MyGEMMKernel"), "gemm");
        assert!(contains_ignore_case("abc", ""));
        assert!(!contains_ignore_case("ab", "abc"));
    }
}
