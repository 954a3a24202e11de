//! Kernel families for the report's breakdown: GEMM, attention, elementwise,
//! reduction, other (copies and sets are their own family in the report).

pub const FAMILIES: &[&str] = &["gemm", "attention", "elementwise", "reduction", "copy", "set", "other"];

/// The family of a (mangled) kernel name, by the substrings the common
/// libraries use (cuBLAS/cuBLASLt nvjet/xmma/cutlass GEMMs, cuDNN/flash SDPA,
/// PyTorch's elementwise and reduce templates).
pub fn family(kernel: &str) -> &'static str {
    let k = kernel.to_ascii_lowercase();
    let any = |subs: &[&str]| subs.iter().any(|s| k.contains(s));
    if any(&["sdpa", "flash", "fmha", "attention", "attn"]) {
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

#[cfg(test)]
mod tests {
    use super::family;

    #[test]
    fn families_of_real_kernel_names() {
        assert_eq!(family("nvjet_sm90_hsh_64x8_64x16_4x2_h_bz_bias_NNT"), "gemm");
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
        assert_eq!(family("k_noparams"), "other");
    }
}
