//! Fuzz the PTX parser: no input may panic it, and an error must carry a
//! position inside the input.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = String::from_utf8_lossy(data);
    if let Err(e) = gpucheck_analysis::ptx::parse(&src) {
        let lines = src.lines().count().max(1) as u32 + 1;
        assert!(e.line >= 1 && e.line <= lines, "error line {} outside input of {} lines", e.line, lines);
    }
});
