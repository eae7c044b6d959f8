//! How the binary is linked (cargo-gpucheck/build.rs, link_order.rs): the
//! linker script that places the functions a small file's check runs first
//! (the names it keeps, the patterns that still place a function whose hash
//! changed, and, where the binary is linked with it, the binary's code in
//! that order), and the static unwinder instead of libgcc_s.so.

#[path = "../cargo-gpucheck/link_order.rs"]
mod link_order;

use link_order::{hot_text_script, pattern};

/// Whether `name` matches `pattern` (`*`: any characters, as the linker's).
fn matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return pattern == name;
    }
    if !name.starts_with(first) || !name[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(k) => rest = &rest[k + p.len()..],
            None => return false,
        }
    }
    true
}

#[test]
fn a_pattern_leaves_out_the_hash_and_the_crate_disambiguators_and_still_matches_the_name() {
    let legacy = "_ZN17gpucheck_analysis5races12pairs_racing17h9c2d98a4ef9003e1E";
    assert_eq!(pattern(legacy), "_ZN17gpucheck_analysis5races12pairs_racing17h*");
    let v0 = "_RNvXs_NtNtCsgEmfK2I1SDS_4core3str7patternNtB4_12CharSearcherNtB4_8Searcher10next_match";
    assert_eq!(pattern(v0), "_RNvXs_NtNtCs*_4core3str7patternNtB4_12CharSearcherNtB4_8Searcher10next_match");
    let two = "_RNvMs4_NtCslNYArtu3iFV_5alloc7raw_vecNtB5_11RawVecInner11finish_growCsjrHSEGnQ3l9_3std";
    assert_eq!(pattern(two), "_RNvMs4_NtCs*_5alloc7raw_vecNtB5_11RawVecInner11finish_growCs*_3std");
    // (not a hash: 15 digits, or no `E`; a C name)
    for kept in ["_ZN4core3fmt5write17h0123456789abcdeE", "_ZN3foo3bar17h0123456789abcdef", "memcpy"] {
        assert_eq!(pattern(kept), kept);
    }
    for name in [legacy, v0, two, "memcpy"] {
        assert!(matches(&pattern(name), name), "{} does not match {name}", pattern(name));
    }
    assert!(matches(&pattern(legacy), "_ZN17gpucheck_analysis5races12pairs_racing17h0000000000000000E"));
    assert!(!matches(&pattern(legacy), "_ZN17gpucheck_analysis5races12pairs_racing_other17h0000000000000000E"));
}

#[test]
fn the_script_places_the_names_then_their_patterns_then_the_rest_in_text() {
    let list = "# a comment\n_ZN1a1b17h0123456789abcdefE\n\n  memcpy  # trailing\n(below main)\n0x00001050\n_ZN1a1c17hfedcba9876543210E\n";
    let script = hot_text_script(list);
    let inputs: Vec<&str> = script.lines().map(str::trim).filter(|l| l.starts_with("*(")).collect();
    assert_eq!(
        inputs,
        [
            "*(.text._ZN1a1b17h0123456789abcdefE .text.unlikely._ZN1a1b17h0123456789abcdefE)",
            "*(.text.memcpy .text.unlikely.memcpy)",
            "*(.text._ZN1a1c17hfedcba9876543210E .text.unlikely._ZN1a1c17hfedcba9876543210E)",
            "*(.text._ZN1a1b17h* .text.unlikely._ZN1a1b17h*)",
            "*(.text._ZN1a1c17h* .text.unlikely._ZN1a1c17h*)",
            "*(.text .text.*)",
        ],
        "{script}"
    );
    assert!(script.contains(".text :"), "{script}");
    assert!(script.trim_end().ends_with("INSERT BEFORE .init;"), "{script}");
}

/// Where build.rs links the binary with the script (x86-64 Linux with glibc
/// and the toolchain's LLD), its code starts with the first function of the
/// list that it has by name, else by pattern (the tests' build has other
/// hashes than the release build the list was made from for the crates'
/// own functions, and another toolchain others for all).
#[test]
fn the_binary_starts_its_code_with_the_first_function_of_the_list() {
    if !(cfg!(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu")) && link_order::links_with_rust_lld()) {
        println!("skipped: the binary is linked without the order here (not x86-64 Linux/glibc with the toolchain's LLD)");
        return;
    }
    let list = std::fs::read_to_string(gpucheck_tests::repo().join("cargo-gpucheck/link-order.txt")).unwrap();
    let listed: Vec<&str> = list.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let bin = gpucheck_tests::binary();
    let out = match std::process::Command::new("nm").args(["-n", "--defined-only"]).arg(bin).output() {
        Ok(o) if o.status.success() => o,
        _ => {
            println!("skipped: `nm` (binutils) did not run, so the binary's layout was not read");
            return;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let code: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, kind, name) = (f.next()?, f.next()?, f.next()?);
            matches!(kind, "t" | "T").then_some(name)
        })
        .collect();
    let lowest = *code.first().expect("the binary has code symbols");
    // (the script places the names the build has first, then the patterns: the first listed
    // name it has, else the first pattern one of its functions matches)
    let names: std::collections::HashSet<&str> = code.iter().copied().collect();
    let first = match listed.iter().find(|n| names.contains(*n)) {
        Some(name) => name.to_string(),
        None => match listed.iter().map(|n| pattern(n)).find(|p| code.iter().any(|name| matches(p, name))) {
            Some(p) => p,
            None => {
                println!("skipped: no function of link-order.txt is in this build (another toolchain): run cargo-gpucheck/link-order.sh");
                return;
            }
        },
    };
    assert!(matches(&first, lowest), "{}'s code starts with {lowest}, not with the list's first function it has ({first})", bin.display());
}

/// Where the C compiler has GCC's static unwinder, the binary links it and
/// does not load libgcc_s.so at its start (a panic still unwinds: the unit
/// test `a_panic_unwinds_to_its_catch_with_the_linked_unwinder`).
#[test]
fn the_binary_loads_no_shared_unwinder_where_the_static_one_is_there() {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) || link_order::static_unwinder_dir().is_none() {
        println!("skipped: no static unwinder (libgcc_eh.a) here, so the binary loads the shared one");
        return;
    }
    let bin = gpucheck_tests::binary();
    let out = match std::process::Command::new("readelf").arg("-d").arg(bin).output() {
        Ok(o) if o.status.success() => o,
        _ => {
            println!("skipped: `readelf` (binutils) did not run, so the binary's libraries were not read");
            return;
        }
    };
    let dynamic = String::from_utf8_lossy(&out.stdout);
    let needed: Vec<&str> = dynamic.lines().filter(|l| l.contains("(NEEDED)")).collect();
    assert!(!needed.is_empty(), "{dynamic}");
    assert!(!needed.iter().any(|l| l.contains("libgcc_s")), "{} loads libgcc_s: {needed:?}", bin.display());
    assert!(!needed.iter().any(|l| l.contains("libm.so")), "{} loads the C math library: {needed:?}", bin.display());
}
