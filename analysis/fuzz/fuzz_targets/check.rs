//! Fuzz the whole analysis (parse, IR, divergence, lints, DWARF): no input
//! may panic it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = String::from_utf8_lossy(data);
    let _ = gpucheck_analysis::check(&src, &Default::default(), &|_| true);
});
