//! Synthetic PTX modules of a chosen size, for benchmarks and scale tests.
//!
//! Owns: a generator of realistic kernel bodies (thread-id arithmetic,
//! divergent and uniform branches, loops with back edges, barriers, global
//! loads and stores, register reuse that needs phis). Does not own any
//! analysis.

use std::fmt::Write;

/// A module of `kernels` kernels of about `segments × 20` instructions each.
pub fn module(kernels: usize, segments: usize) -> String {
    let mut s = String::with_capacity(kernels * segments * 600);
    s.push_str("//\n// synthetic module (gpucheck-analysis synth)\n//\n.version 7.0\n.target sm_70\n.address_size 64\n\n");
    for k in 0..kernels {
        let _ = writeln!(s, ".visible .entry k{k}(\n\t.param .u64 k{k}_param_0,\n\t.param .u32 k{k}_param_1\n)\n{{");
        s.push_str("\t.reg .pred \t%p<8>;\n\t.reg .b32 \t%r<16>;\n\t.reg .f32 \t%f<8>;\n\t.reg .b64 \t%rd<8>;\n\n");
        let _ = writeln!(
            s,
            "\tld.param.u64 \t%rd1, [k{k}_param_0];\n\tcvta.to.global.u64 \t%rd1, %rd1;\n\tld.param.u32 \t%r1, [k{k}_param_1];"
        );
        s.push_str("\tmov.u32 \t%r2, %tid.x;\n\tmov.u32 \t%r10, %ctaid.x;\n\tmov.u32 \t%r11, %ntid.x;\n\tmad.lo.s32 \t%r12, %r10, %r11, %r2;\n\tmov.u32 \t%r9, 0;\n");
        for i in 0..segments {
            if i % 10 == 0 {
                let _ = writeln!(s, "$L_k{k}_loop{i}:");
            }
            let _ = write!(
                s,
                "\tadd.s32 \t%r3, %r2, {i};\n\tshl.b32 \t%r4, %r3, 2;\n\tand.b32 \t%r5, %r3, 1;\n\tsetp.eq.s32 \t%p1, %r5, 0;\n\t@%p1 bra \t$L_k{k}_e{i};\n\tcvt.u64.u32 \t%rd2, %r4;\n\tadd.s64 \t%rd3, %rd1, %rd2;\n\tld.global.f32 \t%f1, [%rd3];\n\tadd.rn.f32 \t%f2, %f1, 0f3F800000;\n\tst.global.f32 \t[%rd3], %f2;\n$L_k{k}_e{i}:\n\tbar.sync \t0;\n\tsetp.ge.s32 \t%p2, %r12, %r1;\n\t@%p2 bra \t$L_k{k}_f{i};\n\tmul.wide.s32 \t%rd4, %r12, 4;\n\tadd.s64 \t%rd5, %rd1, %rd4;\n\tst.global.u32 \t[%rd5], %r9;\n$L_k{k}_f{i}:\n\tadd.s32 \t%r9, %r9, 1;\n"
            );
            if i % 10 == 9 {
                let _ = writeln!(s, "\tsetp.lt.s32 \t%p3, %r9, %r1;\n\t@%p3 bra \t$L_k{k}_loop{};", i - 9);
            }
        }
        s.push_str("\tret;\n}\n\n");
    }
    s
}

/// A shared-memory-heavy module: `kernels` kernels that each stage
/// `segments` rounds through a shared tile (a store of the thread's own
/// element, a barrier, two loads of neighbours, a barrier), in loops of
/// ten rounds: about 14 instructions and 3 shared accesses a round; then
/// an unrolled inner product of 64 shared loads in one barrier interval.
pub fn shared_module(kernels: usize, segments: usize) -> String {
    let mut s = String::with_capacity(kernels * segments * 400);
    s.push_str("//\n// synthetic shared-memory module (gpucheck-analysis synth)\n//\n.version 7.0\n.target sm_80\n.address_size 64\n\n");
    for k in 0..kernels {
        let _ = writeln!(s, ".shared .align 4 .b8 tile_k{k}[4352];");
        let _ = writeln!(s, ".visible .entry s{k}(\n\t.param .u64 s{k}_param_0,\n\t.param .u32 s{k}_param_1\n)\n{{");
        s.push_str("\t.reg .pred \t%p<8>;\n\t.reg .b32 \t%r<16>;\n\t.reg .f32 \t%f<8>;\n\t.reg .b64 \t%rd<8>;\n\n");
        let _ = writeln!(
            s,
            "\tld.param.u64 \t%rd1, [s{k}_param_0];\n\tcvta.to.global.u64 \t%rd1, %rd1;\n\tld.param.u32 \t%r1, [s{k}_param_1];"
        );
        let _ = writeln!(
            s,
            "\tmov.u32 \t%r2, %tid.x;\n\tshl.b32 \t%r3, %r2, 2;\n\tmov.u32 \t%r4, tile_k{k};\n\tadd.s32 \t%r5, %r4, %r3;\n\tmov.u32 \t%r9, 0;\n\tmov.f32 \t%f1, 0f3F800000;"
        );
        for i in 0..segments {
            if i % 10 == 0 {
                let _ = writeln!(s, "$L_s{k}_loop{i}:");
            }
            let _ = write!(
                s,
                "\tst.shared.f32 \t[%r5], %f1;\n\tbar.sync \t0;\n\tld.shared.f32 \t%f2, [%r5+4];\n\tld.shared.f32 \t%f3, [%r5+128];\n\tadd.rn.f32 \t%f4, %f2, %f3;\n\tfma.rn.f32 \t%f5, %f4, %f2, %f3;\n\tfma.rn.f32 \t%f6, %f5, %f4, %f2;\n\tsub.rn.f32 \t%f7, %f6, %f5;\n\tmax.f32 \t%f4, %f7, %f4;\n\tmin.f32 \t%f4, %f4, %f6;\n\tmul.rn.f32 \t%f1, %f4, 0f3F000000;\n\tbar.sync \t0;\n\tadd.s32 \t%r9, %r9, 1;\n"
            );
            if i % 10 == 9 {
                let _ = writeln!(s, "\tsetp.lt.s32 \t%p3, %r9, %r1;\n\t@%p3 bra \t$L_s{k}_loop{};", i - 9);
            }
        }
        // an unrolled inner product over the tile: 64 loads in one barrier interval
        for j in 0..64 {
            let _ = writeln!(s, "\tld.shared.f32 \t%f2, [%r5+{}];\n\tfma.rn.f32 \t%f1, %f2, %f2, %f1;", (j % 16) * 256);
        }
        s.push_str(
            "\tbar.sync \t0;\n\tmul.wide.u32 \t%rd2, %r2, 4;\n\tadd.s64 \t%rd3, %rd1, %rd2;\n\tst.global.f32 \t[%rd3], %f1;\n\tret;\n}\n\n",
        );
    }
    s
}

/// The shapes that once made the check cost far more than `ptxas`
/// (issue 28): N accesses through one pointer with no barrier between
/// them (fully unrolled loops), jump tables, long chains of branches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cliff {
    /// Pairs of a shared store and a load of the element the thread
    /// stored, `s[(i % 40)·256 + t]`: one barrier interval, the ranges of
    /// two rows apart.
    SharedPairs,
    /// Shared stores of a thread's own row of 16 (`s[t·16 + i % 16]`):
    /// every range overlaps every other, no two threads meet.
    SharedStores,
    /// Pairs of a global load and a store at constant offsets from the
    /// thread's element (`a[gid + i·stride]`, the stride a whole grid row).
    GlobalPairs,
    /// Race-free global load/store pairs, each thread its own 16 elements
    /// (`a[gid·16 + i % 16]`).
    GlobalRowPairs,
    /// A `brx.idx` jump table of N targets on the thread index.
    JumpTable,
    /// N diamonds on a parameter (uniform branches).
    UniformDiamonds,
    /// N diamonds on the thread index, each side storing.
    ThreadDiamonds,
    /// N tiny kernels.
    TinyKernels,
}

impl Cliff {
    /// Every shape, with the size the issue measured it at.
    pub const ALL: [(Cliff, usize); 8] = [
        (Cliff::SharedPairs, 1000),
        (Cliff::SharedStores, 4000),
        (Cliff::GlobalPairs, 1000),
        (Cliff::GlobalRowPairs, 8000),
        (Cliff::JumpTable, 4000),
        (Cliff::UniformDiamonds, 4000),
        (Cliff::ThreadDiamonds, 10000),
        (Cliff::TinyKernels, 100_000),
    ];

    /// A short name (benchmark ids, file names).
    pub fn name(self) -> &'static str {
        match self {
            Cliff::SharedPairs => "shared_pairs",
            Cliff::SharedStores => "shared_stores",
            Cliff::GlobalPairs => "global_pairs",
            Cliff::GlobalRowPairs => "global_row_pairs",
            Cliff::JumpTable => "jump_table",
            Cliff::UniformDiamonds => "uniform_diamonds",
            Cliff::ThreadDiamonds => "thread_diamonds",
            Cliff::TinyKernels => "tiny_kernels",
        }
    }
}

const CLIFF_HEAD: &str = "//\n// generated cliff shape (gpucheck-analysis synth)\n//\n.version 7.0\n.target sm_80\n.address_size 64\n\n";

/// A kernel `c` with a pointer and a `u32` parameter, `%r2` = `tid.x`,
/// `%r3` = the global index, `%rd1` = the global pointer, `%f1` = 1.0.
fn cliff_entry(s: &mut String, name: &str) {
    let _ = writeln!(s, ".visible .entry {name}(\n\t.param .u64 {name}_param_0,\n\t.param .u32 {name}_param_1\n)\n{{");
    s.push_str("\t.reg .pred \t%p<4>;\n\t.reg .b32 \t%r<16>;\n\t.reg .f32 \t%f<8>;\n\t.reg .b64 \t%rd<8>;\n\n");
    let _ = writeln!(
        s,
        "\tld.param.u64 \t%rd1, [{name}_param_0];\n\tcvta.to.global.u64 \t%rd1, %rd1;\n\tld.param.u32 \t%r1, [{name}_param_1];"
    );
    s.push_str("\tmov.u32 \t%r2, %tid.x;\n\tmov.u32 \t%r4, %ctaid.x;\n\tmov.u32 \t%r5, %ntid.x;\n\tmad.lo.s32 \t%r3, %r4, %r5, %r2;\n\tmov.f32 \t%f1, 0f3F800000;\n");
}

/// The generated module of shape `c` with `n` repetitions (accesses,
/// pairs, targets, diamonds or kernels, as the shape says).
pub fn cliff(c: Cliff, n: usize) -> String {
    let mut s = String::with_capacity(n * 80 + 1024);
    s.push_str(CLIFF_HEAD);
    match c {
        Cliff::SharedPairs | Cliff::SharedStores => {
            let pairs = c == Cliff::SharedPairs;
            let bytes = if pairs { 1024 * 40 } else { 1024 * 16 };
            let _ = writeln!(s, ".shared .align 4 .b8 tile[{bytes}];");
            cliff_entry(&mut s, "k");
            let scale = if pairs { 2 } else { 6 };
            let _ = writeln!(s, "\tshl.b32 \t%r6, %r2, {scale};\n\tmov.u32 \t%r7, tile;\n\tadd.s32 \t%r8, %r7, %r6;");
            for i in 0..n {
                if pairs {
                    let off = 1024 * (i % 40);
                    let _ = writeln!(
                        s,
                        "\tst.shared.f32 \t[%r8+{off}], %f1;\n\tld.shared.f32 \t%f2, [%r8+{off}];\n\tadd.rn.f32 \t%f1, %f1, %f2;"
                    );
                } else {
                    let _ = writeln!(s, "\tst.shared.f32 \t[%r8+{}], %f1;", 4 * (i % 16));
                }
            }
            s.push_str("\tbar.sync \t0;\n");
        }
        Cliff::GlobalPairs | Cliff::GlobalRowPairs => {
            cliff_entry(&mut s, "k");
            let rows = c == Cliff::GlobalRowPairs;
            let scale = if rows { 6 } else { 2 };
            let _ = writeln!(s, "\tmul.wide.u32 \t%rd2, %r3, {};\n\tadd.s64 \t%rd3, %rd1, %rd2;", 1 << scale);
            for i in 0..n {
                let off = if rows { 4 * (i % 16) } else { 4 * 65536 * i };
                let _ = writeln!(
                    s,
                    "\tld.global.f32 \t%f2, [%rd3+{off}];\n\tadd.rn.f32 \t%f3, %f2, %f1;\n\tst.global.f32 \t[%rd3+{off}], %f3;"
                );
            }
        }
        Cliff::JumpTable => {
            cliff_entry(&mut s, "k");
            s.push_str("\tmul.wide.u32 \t%rd2, %r3, 4;\n\tadd.s64 \t%rd3, %rd1, %rd2;\n\trem.u32 \t%r6, %r2, ");
            let _ = writeln!(s, "{n};");
            s.push_str("\tts: .branchtargets ");
            for i in 0..n {
                let _ = write!(s, "{}$L_t{i}", if i == 0 { "" } else { ", " });
            }
            s.push_str(";\n\tbrx.idx \t%r6, ts;\n");
            for i in 0..n {
                let _ = writeln!(s, "$L_t{i}:\n\tmov.u32 \t%r9, {i};\n\tbra.uni \t$L_end;");
            }
            s.push_str("$L_end:\n\tcvt.rn.f32.u32 \t%f2, %r9;\n\tst.global.f32 \t[%rd3], %f2;\n");
        }
        Cliff::UniformDiamonds | Cliff::ThreadDiamonds => {
            cliff_entry(&mut s, "k");
            s.push_str("\tmul.wide.u32 \t%rd2, %r3, 4;\n\tadd.s64 \t%rd3, %rd1, %rd2;\n");
            let on = if c == Cliff::UniformDiamonds { "%r1" } else { "%r2" };
            for i in 0..n {
                let _ = writeln!(
                    s,
                    "\tand.b32 \t%r6, {on}, {};\n\tsetp.eq.s32 \t%p1, %r6, 0;\n\t@%p1 bra \t$L_e{i};\n\tadd.rn.f32 \t%f1, %f1, 0f3F800000;\n\tst.global.f32 \t[%rd3], %f1;\n\tbra.uni \t$L_j{i};\n$L_e{i}:\n\tmul.rn.f32 \t%f1, %f1, 0f3F000000;\n$L_j{i}:",
                    1u32 << (i % 8)
                );
            }
            s.push_str("\tst.global.f32 \t[%rd3], %f1;\n");
        }
        Cliff::TinyKernels => {
            for k in 0..n {
                let name = format!("t{k}");
                let _ = writeln!(s, ".visible .entry {name}(\n\t.param .u64 {name}_param_0\n)\n{{");
                s.push_str("\t.reg .b32 \t%r<4>;\n\t.reg .b64 \t%rd<4>;\n");
                let _ = writeln!(s, "\tld.param.u64 \t%rd1, [{name}_param_0];\n\tcvta.to.global.u64 \t%rd1, %rd1;\n\tmov.u32 \t%r1, %tid.x;\n\tmul.wide.u32 \t%rd2, %r1, 4;\n\tadd.s64 \t%rd3, %rd1, %rd2;\n\tst.global.u32 \t[%rd3], %r1;\n\tret;\n}}\n");
            }
            return s;
        }
    }
    s.push_str("\tret;\n}\n");
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_modules_parse_and_check() {
        let src = super::module(3, 25);
        let r = crate::check(&src, &Default::default(), &|_| true).unwrap();
        assert_eq!(r.kernels, 3);
        assert!(r.instructions > 3 * 25 * 17, "{}", r.instructions);
        // the tid%2 branches are divergent, the barriers after their joins are not
        let shown: Vec<_> = r.findings.iter().filter(|f| f.lint.default != crate::Level::Allow).collect();
        assert!(
            shown.iter().all(|f| matches!(f.lint.name, "divergent_branch" | "global_memory_race" | "grid_memory_race")),
            "{:?}",
            shown.iter().map(|f| f.lint.name).collect::<Vec<_>>()
        );
        // (each decides a few straight-line instructions: cheap, a pedantic finding)
        let split = |f: &&crate::Finding| matches!(f.lint.name, "divergent_branch" | "cheap_divergent_branch");
        assert_eq!(r.findings.iter().filter(split).count(), 3 * 25);
        // segment i stores a[gid] after its barrier; segment i+1 touches a[tid + i + 1]
        // before the next one: a real write-write race in every segment but the last
        assert!(shown.iter().filter(|f| f.lint.name == "global_memory_race").count() >= 3 * 24);
        // a[tid + i] is the same element in every block: the blocks race too
        assert!(shown.iter().any(|f| f.lint.name == "grid_memory_race"));
        // and the 25 loads of a[tid + i] are one stencil: a shared-memory opportunity per kernel
        assert_eq!(r.findings.iter().filter(|f| f.lint.name == "shared_memory_opportunity").count(), 3);
    }

    #[test]
    fn silent_lints_lose_their_findings_and_no_other() {
        let src = super::module(2, 6);
        let key = |f: &crate::Finding| (f.lint.name, f.ptx_line, f.ptx_col, f.message.clone());
        let run = |silent: &[&'static str]| {
            let opts = crate::Options { silent: silent.to_vec(), ..Default::default() };
            let mut r: Vec<_> = crate::check(&src, &opts, &|_| true).unwrap().findings.iter().map(key).collect();
            r.sort();
            r
        };
        let all = run(&[]);
        let without = |names: &[&str]| all.iter().filter(|k| !names.contains(&k.0)).cloned().collect::<Vec<_>>();
        let has = |name: &str| all.iter().any(|k| k.0 == name);
        assert!(has("shared_memory_opportunity") && has("cheap_divergent_branch") && !has("divergent_branch"));
        // the passes of silent lints do not run: their findings, and only theirs, are gone
        let pedantic = ["shared_memory_opportunity", "vectorizable_access", "stride_dependent_access"];
        assert_eq!(run(&pedantic), without(&pedantic));
        // a pass runs while a lint it finds is not silent: `divergent_branch`'s finds the cheap ones
        assert_eq!(run(&["divergent_branch"]), all);
        let branches = ["divergent_branch", "cheap_divergent_branch", "conditional_divergent_branch"];
        assert_eq!(run(&branches), without(&branches));
    }
}
