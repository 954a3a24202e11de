use proptest::prelude::*;

use super::*;

/// GPT-2's elementwise kernels (traces/transformer_inference.jsonl.gz):
/// 19 instantiations of `vectorized_elementwise_kernel` and three of
/// `unrolled_elementwise_kernel`, each with its short name in that trace.
const GPT2: &[(&str, &str)] = &[
    (
        "_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE2_clEvEUllE_St5arrayIPcLm2EELi4E23TrivialOffsetCalculatorILi1EjESB_NS0_6memory12LoadWithCastILi1EEENSC_13StoreWithCastILi1EEEEEviT_T0_T2_T3_T4_T5_",
        "unrolled_elementwise_kernel<…{lambda(long)#1}…>",
    ),
    (
        "_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_St5arrayIPcLm2EELi4E23TrivialOffsetCalculatorILi1EjESB_NS0_6memory12LoadWithCastILi1EEENSC_13StoreWithCastILi1EEEEEviT_T0_T2_T3_T4_T5_",
        "unrolled_elementwise_kernel<…{lambda(float)#1}…>",
    ),
    (
        "_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE9_clEvEUlbE_St5arrayIPcLm2EELi4E23TrivialOffsetCalculatorILi1EjESB_NS0_6memory12LoadWithCastILi1EEENSC_13StoreWithCastILi1EEEEEviT_T0_T2_T3_T4_T5_",
        "unrolled_elementwise_kernel<…{lambda(bool)#1}…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_11FillFunctorIlEESt5arrayIPcLm1EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…FillFunctor<long>…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_13BinaryFunctorIllbNS0_51_GLOBAL__N__28ce311f_18_CompareEQKernel_cu_d8008c9616CompareEqFunctorIlEEEESt5arrayIPcLm3EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…>#9ee85d",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_13BinaryFunctorIlllNS0_15binary_internal10MulFunctorIlEEEESt5arrayIPcLm3EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…MulFunctor<long>…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_15CUDAFunctor_addIlEESt5arrayIPcLm3EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…CUDAFunctor_add<long>…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_21CUDAFunctorOnSelf_addIlEESt5arrayIPcLm2EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…CUDAFunctorOnSelf_add<long>…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_22CUDAFunctorOnOther_addIlEESt5arrayIPcLm2EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…CUDAFunctorOnOther_add…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi2EZZZNS0_44_GLOBAL__N__50c743a2_11_Indexing_cu_89862edb18masked_fill_kernelERNS_14TensorIteratorERKN3c106ScalarEENKUlvE_clEvENKUlvE2_clEvEUllbE_St5arrayIPcLm3EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…masked_fill_kernel…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIbEESt5arrayIPcLm1EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…FillFunctor<bool>…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…FillFunctor<float>…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIllbNS0_51_GLOBAL__N__28ce311f_18_CompareEQKernel_cu_d8008c9616CompareEqFunctorIlEEEESt5arrayIPcLm2EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…AUnaryFunctor<long, long, bool, CompareEqFunctor<long> >…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIbbbNS0_16BitwiseOrFunctorIbEEEESt5arrayIPcLm3EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…BitwiseOrFunctor…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIllbNS0_51_GLOBAL__N__28ce311f_18_CompareEQKernel_cu_d8008c9616CompareEqFunctorIlEEEESt5arrayIPcLm3EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…>#bfdc96",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_21compare_scalar_kernelIlEEvRNS_18TensorIteratorBaseENS0_50_GLOBAL__N__e50ef81d_17_CompareKernels_cu_8f1b29aa6OpTypeET_EUllE_St5arrayIPcLm2EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…compare_scalar_kernel…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_23bitwise_not_kernel_cudaERNS_18TensorIteratorBaseEEUlbE_St5arrayIPcLm2EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…bitwise_not_kernel_cuda…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_13AUnaryFunctorIN3c104HalfES4_S4_NS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…AUnaryFunctor<Half, Half, Half, MulFunctor<float> >…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_13BinaryFunctorIN3c104HalfES4_S4_NS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm3EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…BinaryFunctor<Half, Half, Half, MulFunctor<float> >…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_15CUDAFunctor_addIN3c104HalfEEESt5arrayIPcLm3EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…CUDAFunctor_add<Half>…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_21CUDAFunctorOnSelf_addIN3c104HalfEEESt5arrayIPcLm2EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…CUDAFunctorOnSelf_add<Half>…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi8EZNS0_51_GLOBAL__N__b1108092_12_PowKernel_cu_751192d7_2139629pow_tensor_scalar_kernel_implIN3c104HalfES5_EEvRNS_18TensorIteratorBaseET0_EUlS5_E0_St5arrayIPcLm2EEEEviS8_T1_",
        "vectorized_elementwise_kernel<…pow_tensor_scalar_kernel_impl…>",
    ),
    (
        "_ZN2at6native29vectorized_elementwise_kernelILi8EZZZNS0_16tanh_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE0_clEvENKUlvE1_clEvEUlN3c104HalfEE_St5arrayIPcLm2EEEEviT0_T1_",
        "vectorized_elementwise_kernel<…tanh_kernel_cuda…>",
    ),
];

/// Kernels of the same trace whose base names no other kernel shares.
const ALONE: &[(&str, &str)] = &[
    (
        "_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a28vectorized_layer_norm_kernelIN3c104HalfEfLb0EEEviT0_PKT_S8_S8_PS5_S9_PS6_",
        "vectorized_layer_norm_kernel<…>",
    ),
    ("nvjet_sm90_hsh_64x8_64x16_4x1_v_bz_bias_NNT", "nvjet_sm90_hsh_64x8_64x16_4x1_v_bz_bias_NNT"),
    (
        "_ZN8cublasLt19splitKreduce_kernelILi32ELi16Eif6__halffS1_Lb0EfS1_S1_Lb1ELb1ELb0ELb0EEEvNS_18cublasSplitKParamsIT4_EEPKT2_PKT8_PT7_PT3_PKS3_SG_PKT9_S7_PSH_PvlPS3_PiSM_SM_SG_SG_SG_SG_SG_",
        "splitKreduce_kernel<…>",
    ),
];

fn of(set: &[(&str, &str)]) -> ShortNames {
    ShortNames::of(set.iter().map(|(raw, _)| *raw))
}

#[test]
fn gpt2_elementwise_kernels_are_told_apart() {
    let all: Vec<(&str, &str)> = GPT2.iter().chain(ALONE).copied().collect();
    let s = of(&all);
    for (raw, short) in &all {
        assert_eq!(s.short(raw), *short, "{raw}");
    }
    // alone, a kernel keeps its plain base name
    let one = ShortNames::of([GPT2[3].0]);
    assert_eq!(one.short(GPT2[3].0), "vectorized_elementwise_kernel<…>");
    // a name outside the set: the plain base name
    assert_eq!(one.short(GPT2[4].0), "vectorized_elementwise_kernel<…>");
    assert_eq!(s.display(GPT2[3].0, NameStyle::Mangled), GPT2[3].0);
    assert_eq!(s.display(GPT2[3].0, NameStyle::Full), kernel_names::display(GPT2[3].0, NameStyle::Full));
    assert_eq!(s.display(GPT2[3].0, NameStyle::Short), GPT2[3].1);
}

#[test]
fn order_and_repeats_do_not_matter() {
    let fwd = of(GPT2);
    let mut rev: Vec<&str> = GPT2.iter().rev().map(|(r, _)| *r).collect();
    rev.extend(GPT2.iter().map(|(r, _)| *r));
    let back = ShortNames::of(rev);
    for (raw, _) in GPT2 {
        assert_eq!(fwd.short(raw), back.short(raw));
    }
}

#[test]
fn labels_depend_on_the_others() {
    // add<Half> and add<long> differ in their type; against mul, the functor's name alone does
    let add_half = GPT2.iter().find(|(_, s)| s.contains("CUDAFunctor_add<Half>")).unwrap().0;
    let add_long = GPT2.iter().find(|(_, s)| s.contains("CUDAFunctor_add<long>")).unwrap().0;
    let mul = GPT2.iter().find(|(_, s)| s.contains("BinaryFunctor<Half")).unwrap().0;
    let s = ShortNames::of([add_half, mul]);
    assert_eq!(s.short(add_half), "vectorized_elementwise_kernel<…CUDAFunctor_add…>");
    assert_eq!(s.short(mul), "vectorized_elementwise_kernel<…BinaryFunctor…>");
    let s = ShortNames::of([add_half, add_long]);
    assert_eq!(s.short(add_half), "vectorized_elementwise_kernel<…Half…>");
    assert_eq!(s.short(add_long), "vectorized_elementwise_kernel<…CUDAFunctor_add<long>…>");
}

#[test]
fn hashes_where_no_label_fits() {
    // cpp_demangle refuses cuBLASLt's split-K kernels: nothing to read labels from
    let a = ALONE[2].0;
    let b = a.replacen("ILi32ELi16E", "ILi64ELi16E", 1);
    let s = ShortNames::of([a, b.as_str()]);
    assert_eq!(s.short(a), "splitKreduce_kernel<…>#13e6b6");
    assert_eq!(s.short(&b), "splitKreduce_kernel<…>#c90864");
    // generated names cut to the same start and end
    let t = |mid: &str| format!("triton_poi_fused_{}_{mid}_{}", "x".repeat(60), "y".repeat(60));
    let (x, y) = (t("add"), t("mul"));
    let s = ShortNames::of([x.as_str(), y.as_str()]);
    assert_eq!(kernel_names::display(&x, NameStyle::Short), kernel_names::display(&y, NameStyle::Short));
    assert_eq!(s.short(&x), format!("{}#1f07f4", kernel_names::display(&x, NameStyle::Short)));
    assert_eq!(s.short(&y), format!("{}#855735", kernel_names::display(&y, NameStyle::Short)));
    // overloads without templates: the parameter that differs
    let s = ShortNames::of(["_Z6kernelPfi", "_Z6kernelPii"]);
    assert_eq!(s.short("_Z6kernelPfi"), "kernel(…float…)");
    assert_eq!(s.short("_Z6kernelPii"), "kernel#bdfe1e");
}

#[test]
fn hash_digits() {
    assert_eq!(hashed("k", "", 6), "k#cbf29c");
    assert_eq!(hashed("k", "a", 16), "k#af63dc4c8601ec8c");
    assert_eq!(hashed("k", "a", 20), "k#af63dc4c8601ec8c");
    assert_eq!(with_label("k<…>", "X"), "k<…X…>");
    assert_eq!(with_label("k", "X"), "k(…X…)");
}

#[test]
fn namespaces_dropped() {
    assert_eq!(
        without_namespaces("void at::native::f<c10::Half>(at::TensorIteratorBase&)::{lambda()#1}"),
        "void f<Half>(TensorIteratorBase&)::{lambda()#1}"
    );
    assert_eq!(without_namespaces("(anonymous namespace)::g<int>"), "g<int>");
}

/// Names built to collide: a few templates over a few arguments, mangled,
/// and a few that do not demangle or are cut alike.
fn names() -> impl Strategy<Value = BTreeSet<String>> {
    let template = prop::sample::select(vec!["4kern", "6kernel", "13reduce_kernel"]);
    let arg =
        prop::sample::select(vec!["i", "f", "l", "b", "N2at4HalfE", "N2at6native11FillFunctorIfEE", "Li4E", "Li8E"]);
    let mangled =
        (template, prop::collection::vec(arg, 1..4)).prop_map(|(t, a)| format!("_ZN2at6native{t}I{}EEvT_", a.concat()));
    let plain = "[ab]{1,3}".prop_map(|s| format!("k_{s}"));
    let long = "[ab]{1,4}".prop_map(|s| format!("{}{s}{}", "h".repeat(60), "t".repeat(60)));
    let refused = "[0-9]{1,2}".prop_map(|d| format!("_ZN8cublasLt1kILi{d}EEvv6__half_Q"));
    prop::collection::btree_set(prop_oneof![mangled, plain, long, refused], 1..24)
}

proptest! {
    #[test]
    fn distinct_names_get_distinct_short_names(set in names()) {
        let s = ShortNames::of(set.iter().map(|n| n.as_str()));
        let shorts: BTreeSet<String> = set.iter().map(|n| s.short(n).into_owned()).collect();
        prop_assert_eq!(shorts.len(), set.len());
        let rev = ShortNames::of(set.iter().rev().map(|n| n.as_str()));
        for n in &set {
            prop_assert_eq!(s.short(n), rev.short(n));
        }
    }
}
