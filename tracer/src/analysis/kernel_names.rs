//! Kernel names as a person reads them. A kernel is recorded under its
//! symbol: C++ kernels mangled (Itanium ABI, `_Z…`), C kernels and vendor
//! libraries' (`nvjet_…`) as written. Three spellings:
//!
//! - `short` (the default of every command that prints names): the base
//!   name as Nsight Systems prints it, without namespaces, return type and
//!   parameter list, template arguments elided:
//!   `vectorized_elementwise_kernel<…>` (outputs print it through
//!   analysis/short_names.rs, which keeps what tells apart the kernels of a
//!   trace that share a base name);
//! - `full`: the whole demangled name (`void at::native::vectorized_…<8,
//!   …>(int, …)`);
//! - `mangled`: as recorded.
//!
//! Demangled in-process with the `cpp_demangle` crate; a name it cannot
//! read stays as recorded in all three.
use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;

/// Which spelling of kernel names a command prints (`--names`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NameStyle {
    /// Base name, template arguments elided: `vectorized_elementwise_kernel<…>`.
    #[default]
    Short,
    /// The whole demangled C++ name, with namespaces, template arguments and parameters.
    Full,
    /// As recorded (C++ names mangled).
    Mangled,
}

/// The whole demangled name of `raw`; `None` when `raw` is not a mangled
/// C++ name or cannot be demangled.
pub fn demangle(raw: &str) -> Option<String> {
    if !raw.starts_with("_Z") {
        return None;
    }
    let sym = cpp_demangle::Symbol::new(raw.as_bytes()).ok()?;
    let s = sym.demangle().ok()?;
    (s != raw).then_some(s)
}

/// The base name of a demangled C++ name: namespaces, return type and
/// parameter list dropped, template arguments elided as `<…>`.
pub fn base_name(full: &str) -> String {
    let s = full.trim();
    // The parameter list: the last top-level (...), unless it is the name
    // itself ("operator()" is followed by its own list).
    let mut end = s.len();
    if let Some(open) = last_top_level_group(s, b'(', b')') {
        end = open;
    }
    let head = &s[..end];
    // The return type (template functions): before the last top-level space.
    let name = match split_top_level(head, |b, i| b[i] == b' ') {
        v if v.len() > 1 => v[v.len() - 1],
        v => v[0],
    };
    // Namespaces and classes: the last top-level `::` component.
    let parts = split_top_level(name, |b, i| b[i] == b':' && i + 1 < b.len() && b[i + 1] == b':');
    let last = parts.last().copied().unwrap_or(name).trim_start_matches(':');
    elide_templates(last)
}

/// The index of the `open` byte of the last top-level group `open … close`
/// that ends the string (after trailing qualifiers such as ` const`).
fn last_top_level_group(s: &str, open: u8, close: u8) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = b.len();
    // trailing " const", " &", " volatile"
    while i > 0 && b[i - 1] != close {
        i -= 1;
    }
    if i == 0 {
        return None;
    }
    let mut depth = 0i32;
    let mut j = i;
    while j > 0 {
        j -= 1;
        match b[j] {
            c if c == close => depth += 1,
            c if c == open => {
                depth -= 1;
                if depth == 0 {
                    // "operator()" / "operator()(int)": keep the name's own ()
                    let before = &s[..j];
                    if before.ends_with("operator") {
                        return None;
                    }
                    return (j > 0).then_some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// `s` split at the top-level positions where `at` holds (outside <>, (),
/// [] and {}), the separators left out.
fn split_top_level(s: &str, at: impl Fn(&[u8], usize) -> bool) -> Vec<&str> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' | b')' | b']' | b'}' => depth -= 1,
            _ if depth == 0 && at(b, i) => {
                out.push(&s[start..i]);
                // `::` is two bytes
                let w = if b[i] == b':' { 2 } else { 1 };
                i += w;
                start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&s[start..]);
    out.retain(|p| !p.is_empty());
    if out.is_empty() {
        out.push(s);
    }
    out
}

/// Every top-level `<…>` of `s` replaced by `<…>`.
fn elide_templates(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '<' => {
                if depth == 0 {
                    out.push_str("<…>");
                }
                depth += 1;
            }
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The three spellings of one kernel name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KernelName {
    /// As recorded.
    pub mangled: String,
    /// Demangled (equal to `mangled` for names that are not C++).
    pub full: String,
    /// The base name.
    pub short: String,
}

impl KernelName {
    pub fn of(raw: &str) -> KernelName {
        KernelName {
            mangled: raw.to_string(),
            full: display(raw, NameStyle::Full).into_owned(),
            short: display(raw, NameStyle::Short).into_owned(),
        }
    }

    pub fn get(&self, style: NameStyle) -> &str {
        match style {
            NameStyle::Short => &self.short,
            NameStyle::Full => &self.full,
            NameStyle::Mangled => &self.mangled,
        }
    }
}

/// The longest short name; longer ones (generated kernels such as
/// Triton's `triton_poi_fused_…`) keep their start and end around `…`.
pub const SHORT_MAX: usize = 96;

/// `raw` in the spelling `style`.
pub fn display(raw: &str, style: NameStyle) -> Cow<'_, str> {
    match style {
        NameStyle::Mangled => Cow::Borrowed(raw),
        NameStyle::Full => demangle(raw).map_or(Cow::Borrowed(raw), Cow::Owned),
        NameStyle::Short => {
            let base = match demangle(raw) {
                Some(full) => Cow::Owned(base_name(&full)),
                None => mangled_base(raw).map_or(Cow::Borrowed(raw), Cow::Owned),
            };
            match elide_middle(&base, SHORT_MAX) {
                Some(e) => Cow::Owned(e),
                None => base,
            }
        }
    }
}

/// `s` cut to `max` characters around a middle `…`, if longer.
fn elide_middle(s: &str, max: usize) -> Option<String> {
    let n = s.chars().count();
    if n <= max {
        return None;
    }
    let head = (max - 1) / 2;
    let tail = max - 1 - head;
    Some(s.chars().take(head).chain(std::iter::once('…')).chain(s.chars().skip(n - tail)).collect())
}

/// The base name read straight from a mangled name that `cpp_demangle`
/// refused: the last source name of `_ZN…` (or `_Z<len><name>`), `<…>`
/// when template arguments follow.
fn mangled_base(raw: &str) -> Option<String> {
    let b = raw.strip_prefix("_Z")?.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'N'));
    while i < b.len() && matches!(b[i], b'K' | b'V' | b'r') {
        i += 1;
    }
    let mut last: Option<&[u8]> = None;
    loop {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            break;
        }
        let len: usize = std::str::from_utf8(&b[start..i]).ok()?.parse().ok()?;
        let name = b.get(i..i + len)?;
        last = Some(name);
        i += len;
    }
    let name = std::str::from_utf8(last?).ok()?;
    Some(if b.get(i) == Some(&b'I') { format!("{name}<…>") } else { name.to_string() })
}

/// Raw name -> spelling `style`, for the names that change.
pub fn map<'a>(names: impl IntoIterator<Item = &'a str>, style: NameStyle) -> HashMap<String, String> {
    names
        .into_iter()
        .filter_map(|n| match display(n, style) {
            Cow::Owned(s) => Some((n.to_string(), s)),
            Cow::Borrowed(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VEC: &str = "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_13AUnaryFunctorIN3c104HalfES4_S4_NS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_";

    #[test]
    fn three_spellings() {
        let k = KernelName::of(VEC);
        assert_eq!(
            k.full,
            "void at::native::vectorized_elementwise_kernel<8, at::native::AUnaryFunctor<c10::Half, c10::Half, \
             c10::Half, at::native::binary_internal::MulFunctor<float> >, std::array<char*, (unsigned long)2> >(int, \
             at::native::AUnaryFunctor<c10::Half, c10::Half, c10::Half, at::native::binary_internal::MulFunctor<float> >, \
             std::array<char*, (unsigned long)2>)"
        );
        assert_eq!(k.short, "vectorized_elementwise_kernel<…>");
        assert_eq!(k.mangled, VEC);
        assert_eq!(KernelName::of("_Z6kernelPfi").full, "kernel(float*, int)");
        assert_eq!(KernelName::of("_Z6kernelPfi").short, "kernel");
        assert_eq!(KernelName::of("_ZN2at6native4fillIfEEvPT_i").short, "fill<…>");
        // not C++: the same in all three
        let n = KernelName::of("nvjet_sm90_hsh_64x8_2x1_v_bz_coopA_NNT");
        assert_eq!((n.full.as_str(), n.short.as_str()), ("nvjet_sm90_hsh_64x8_2x1_v_bz_coopA_NNT", n.mangled.as_str()));
        // not demangleable: as recorded
        assert_eq!(KernelName::of("_Znotmangled").short, "_Znotmangled");
    }

    #[test]
    fn base_names() {
        assert_eq!(
            base_name(
                "void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false, false>(float*, float const*, int, int, int, bool const*, int, bool)"
            ),
            "softmax_warp_forward<…>"
        );
        assert_eq!(
            base_name(
                "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})"
            ),
            "elementwise_kernel<…>"
        );
        assert_eq!(
            base_name(
                "cutlass::Kernel2<cutlass_80_wmma_tensorop_s161616gemm_f16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_s161616gemm_f16_32x32_128x2_tn_align8::Params)"
            ),
            "Kernel2<…>"
        );
        assert_eq!(base_name("foo::Bar::operator()(int) const"), "operator()");
        assert_eq!(base_name("kernel"), "kernel");
    }

    #[test]
    fn refused_and_long_names() {
        // cpp_demangle refuses this cuBLASLt kernel (as of 0.5.1); its base name is read from the symbol
        let split = "_ZN8cublasLt19splitKreduce_kernelILi32ELi16Eif6__halffS1_Lb0EfS1_S1_Lb1ELb1ELb0ELb0EEEvNS_18cublasSplitKParamsIT4_EEPKT2_PKT8_PT7_PT3_PKS3_SG_PKT9_S7_PSH_PvlPS3_PiSM_SM_SG_SG_SG_SG_SG_";
        if demangle(split).is_none() {
            assert_eq!(display(split, NameStyle::Short), "splitKreduce_kernel<…>");
            assert_eq!(display(split, NameStyle::Full), split);
        }
        assert_eq!(mangled_base("_Z6kernelPfi").as_deref(), Some("kernel"));
        assert_eq!(mangled_base("_ZN2at6native4fillIfEEvPT_i").as_deref(), Some("fill<…>"));
        assert_eq!(mangled_base("_Zx"), None);
        let triton = "triton_poi_fused__scaled_dot_product_cudnn_attention_add_arange_bitwise_and_eq_expand_index_le_new_ones_scalar_tensor_split_transpose_unsqueeze_view_where_2";
        let s = display(triton, NameStyle::Short);
        assert_eq!(s.chars().count(), SHORT_MAX);
        assert_eq!(
            s,
            "triton_poi_fused__scaled_dot_product_cudnn_atte…ar_tensor_split_transpose_unsqueeze_view_where_2"
        );
        assert_eq!(display(triton, NameStyle::Full), triton);
    }

    #[test]
    fn display_and_map() {
        assert_eq!(display(VEC, NameStyle::Mangled), VEC);
        assert_eq!(display(VEC, NameStyle::Short), "vectorized_elementwise_kernel<…>");
        assert!(display(VEC, NameStyle::Full).starts_with("void at::native::vectorized_elementwise_kernel<8, "));
        let m = map([VEC, "nvjet_x"], NameStyle::Short);
        assert_eq!(m.len(), 1);
        assert_eq!(m[VEC], "vectorized_elementwise_kernel<…>");
    }
}
