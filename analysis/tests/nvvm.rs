//! NVVM idioms (what rustc_codegen_nvvm + libNVVM emit) in
//! `tests/nvvm/idioms.ptx`, and the real Rust-CUDA PTX of the shared corpus.

use gpucheck_analysis::ir::inst::Space;
use gpucheck_analysis::{check, demangle, Options};
use std::collections::BTreeMap;

fn counts(r: &gpucheck_analysis::Report) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for f in &r.findings {
        *m.entry(f.lint.name).or_insert(0) += 1;
    }
    m
}

#[test]
fn nvvm_idioms() {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/nvvm/idioms.ptx")).unwrap();
    let opts = Options { block: Some([256, 1, 1]), ..Default::default() };
    let r = check(&src, &opts, &|_| true).unwrap();
    assert_eq!((r.kernels, r.functions), (3, 4), "three kernels and the libdevice function");

    // ld.global.nc is a global load; slices and the struct parameter give plain affine addresses
    let global: Vec<_> = r.accesses.iter().filter(|a| a.space == Space::Global).collect();
    let by_kernel = |k: &str| global.iter().filter(|a| a.site.kernel == k).map(|a| (a.kind.name(), a.sectors)).collect::<Vec<_>>();
    assert_eq!(by_kernel("exp_slice"), [("load", Some((4, 4, 4))), ("store", Some((4, 4, 4)))]);
    // ptr[8·i] of f32: 32 bytes apart, one sector per lane
    assert_eq!(by_kernel("strided_struct"), [("load", Some((32, 32, 4))), ("store", Some((4, 4, 4)))]);
    // the .local depot is neither global nor shared
    assert!(r.accesses.iter().all(|a| a.space != Space::Local));
    assert_eq!(r.accesses.iter().filter(|a| a.site.kernel == "block_sum" && a.space == Space::Shared).count(), 2);

    // verdicts: bounds checks that end in `trap` are not divergence findings
    let c = counts(&r);
    assert_eq!(c.get("uncoalesced_global_access"), Some(&1), "{c:?}");
    assert_eq!(c.get("shared_memory_race"), Some(&1), "{c:?}");
    // nor is `t > 254` (one lane of one warp, a tail guard)
    assert_eq!(c.values().sum::<usize>(), 2, "{:#?}", r.findings);
    let strided = r.findings.iter().find(|f| f.lint.name == "uncoalesced_global_access").unwrap();
    assert_eq!(&*strided.kernel, "strided_struct");

    // the mangled shared array is named as Rust writes it
    let race = r.findings.iter().find(|f| f.lint.name == "shared_memory_race").unwrap();
    let notes: Vec<&str> = race.notes.iter().filter_map(|n| n.plain()).collect();
    assert!(notes.iter().any(|n| n.contains("element 1 of `kernels::block_sum::SHARED`, in 4-byte elements")), "{notes:#?}");
    assert!(race.message.contains("thread 0 reads element 1 while thread 1 writes it"), "{}", race.message);
}

#[test]
fn rust_names_are_demangled() {
    assert_eq!(demangle("_ZN7kernels9block_sum6SHARED17h5f0c3e1a2b4d6e8fE"), "kernels::block_sum::SHARED");
    assert_eq!(demangle("_RNvCs1234_7kernels3add"), "kernels::add");
    assert_eq!(demangle("add"), "add");
    assert_eq!(demangle("_Z6kernelPf"), "_Z6kernelPf", "C++ names are left alone");
}
