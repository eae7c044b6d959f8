//! The PTX interpreter computes what the example kernels compute: results
//! compared with plain-Rust references (saxpy, reductions, transposes, a
//! scan, a histogram), on the real PTX rustc emits for them.

use gpucheck_analysis::interp::{self, Arg, Global, Launch, Observed};
use gpucheck_analysis::ptx;
use gpucheck_tests::*;

fn module() -> &'static str {
    &example_build().1
}

/// Deterministic pseudo-random numbers (xorshift).
fn rand_u32(n: usize, seed: u32) -> Vec<u32> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        })
        .collect()
}

fn bytes_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn bytes_u32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}
fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn run(kernel: &str, grid: [u32; 3], block: [u32; 3], args: &[Arg], mem: &mut Global) -> Observed {
    let m = ptx::parse(module()).unwrap();
    interp::run(&m, kernel, &Launch { grid, block, dynamic_shared: 0 }, args, mem).unwrap_or_else(|e| panic!("{kernel}: {e}"))
}

#[test]
fn saxpy_matches_the_reference() {
    let n = 1000usize;
    let x: Vec<f32> = rand_u32(n, 1).iter().map(|v| (*v % 1000) as f32 / 7.0).collect();
    let y: Vec<f32> = rand_u32(n, 2).iter().map(|v| (*v % 1000) as f32 / 3.0).collect();
    let mut mem = Global::default();
    let (px, py) = (mem.alloc(&bytes_f32(&x)), mem.alloc(&bytes_f32(&y)));
    let a = 2.5f32;
    let obs =
        run("saxpy", [4, 1, 1], [256, 1, 1], &[Arg::Bits(a.to_bits() as u64), Arg::Bits(px), Arg::Bits(py), Arg::Bits(n as u64)], &mut mem);
    let got = f32s(&mem.read(py, n * 4).unwrap());
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| a.mul_add(*x, *y)).collect();
    // fma or mul+add: the PTX decides; compare within one rounding
    for i in 0..n {
        assert!((got[i] - want[i]).abs() <= want[i].abs() * 1e-6, "y[{i}] = {} (want {})", got[i], want[i]);
    }
    // 1024 threads, 1000 in range: the last warp of the last block splits at the bound
    let splits: u64 = obs.branches.values().map(|b| b.splits).sum();
    assert_eq!(splits, 1, "{:?}", obs.branches);
    assert!(obs.races.is_empty());
}

#[test]
fn reductions_match_the_reference() {
    let blocks = 4usize;
    let input: Vec<u32> = rand_u32(blocks * 256, 3).iter().map(|v| v % 1000).collect();
    let want: Vec<u32> = input.chunks(256).map(|c| c.iter().sum()).collect();
    for kernel in ["reduce_sequential", "reduce_interleaved"] {
        let mut mem = Global::default();
        let (pi, po) = (mem.alloc(&bytes_u32(&input)), mem.alloc(&vec![0u8; blocks * 4]));
        let obs = run(kernel, [blocks as u32, 1, 1], [256, 1, 1], &[Arg::Bits(pi), Arg::Bits(po)], &mut mem);
        assert_eq!(u32s(&mem.read(po, blocks * 4).unwrap()), want, "{kernel}");
        assert!(obs.races.is_empty(), "{kernel}: {:?}", obs.races);
    }
}

#[test]
fn transposes_match_the_reference() {
    let (w, h) = (64usize, 96usize);
    let input: Vec<f32> = (0..w * h).map(|i| i as f32).collect();
    for kernel in ["transpose_naive", "transpose_tiled"] {
        let mut mem = Global::default();
        let (pi, po) = (mem.alloc(&bytes_f32(&input)), mem.alloc(&vec![0u8; w * h * 4]));
        let obs = run(
            kernel,
            [(w / 32) as u32, (h / 32) as u32, 1],
            [32, 8, 1],
            &[Arg::Bits(pi), Arg::Bits(po), Arg::Bits(w as u64), Arg::Bits(h as u64)],
            &mut mem,
        );
        let out = f32s(&mem.read(po, w * h * 4).unwrap());
        for y in 0..h {
            for x in 0..w {
                assert_eq!(out[x * h + y], input[y * w + x], "{kernel}: ({x}, {y})");
            }
        }
        assert!(obs.races.is_empty(), "{kernel}: {:?}", obs.races);
    }
}

#[test]
fn scan_matches_the_reference_and_the_broken_one_races() {
    let input: Vec<u32> = rand_u32(256, 4).iter().map(|v| v % 100).collect();
    let want: Vec<u32> = input
        .iter()
        .scan(0, |acc, x| {
            *acc += x;
            Some(*acc)
        })
        .collect();
    let mut mem = Global::default();
    let p = mem.alloc(&bytes_u32(&input));
    let obs = run("scan_1a", [1, 1, 1], [256, 1, 1], &[Arg::Bits(p)], &mut mem);
    assert_eq!(u32s(&mem.read(p, 256 * 4).unwrap()), want);
    assert!(obs.races.is_empty(), "{:?}", obs.races);
    // without its first barrier (GPUVerify Fig. 1a minus a barrier) the shadow memory sees the race
    let mut mem = Global::default();
    let p = mem.alloc(&bytes_u32(&input));
    let obs = run("scan_no_first_barrier", [1, 1, 1], [256, 1, 1], &[Arg::Bits(p)], &mut mem);
    assert!(obs.races.iter().any(|r| r.shared), "{:?}", obs.races);
}

#[test]
fn histogram_matches_the_reference() {
    let blocks = 8usize;
    let data: Vec<u32> = rand_u32(blocks * 256, 5);
    let mut want = vec![0u32; 256];
    for d in &data {
        want[(d % 256) as usize] += 1;
    }
    let mut mem = Global::default();
    let (pd, pb) = (mem.alloc(&bytes_u32(&data)), mem.alloc(&vec![0u8; 256 * 4]));
    let obs = run("histogram", [blocks as u32, 1, 1], [256, 1, 1], &[Arg::Bits(pd), Arg::Bits(pb)], &mut mem);
    assert_eq!(u32s(&mem.read(pb, 256 * 4).unwrap()), want);
    assert!(obs.races.is_empty(), "atomics do not race: {:?}", obs.races);
}

#[test]
fn out_of_bounds_is_an_error_not_a_crash() {
    let mut mem = Global::default();
    let (pa, po) = (mem.alloc(&[0u8; 64]), mem.alloc(&[0u8; 1024]));
    let m = ptx::parse(module()).unwrap();
    let e = interp::run(
        &m,
        "contiguous_read",
        &Launch { grid: [1, 1, 1], block: [256, 1, 1], dynamic_shared: 0 },
        &[Arg::Bits(pa), Arg::Bits(po)],
        &mut mem,
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("out-of-bounds global access of 4 bytes") && text.contains("thread (16, 0, 0) of block (0, 0, 0)"), "{text}");
}

/// PTX from other producers, where the inputs are easy to make: Rust-CUDA
/// (NVVM, slices as pointer + length), nvcc (ZLUDA's vectorAdd), and
/// CUDA.jl's block reduction (nvcc: grid-stride loop, warp shuffles,
/// shared memory, `WARP_SZ`).
#[test]
fn corpus_kernels_from_other_producers() {
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();

    // Rust-CUDA add(a: &[f32], b: &[f32], c: *mut f32)
    let Some(src) = corpus_file("rust-cuda-add.ptx") else { return };
    let m = ptx::parse(&src).unwrap();
    let mut mem = Global::default();
    let (pa, pb, pc) = (mem.alloc(&bytes_f32(&a)), mem.alloc(&bytes_f32(&b)), mem.alloc(&vec![0u8; n * 4]));
    let args = [Arg::Bits(pa), Arg::Bits(n as u64), Arg::Bits(pb), Arg::Bits(n as u64), Arg::Bits(pc)];
    let obs = interp::run(&m, "add", &Launch { grid: [4, 1, 1], block: [256, 1, 1], dynamic_shared: 0 }, &args, &mut mem).unwrap();
    assert_eq!(f32s(&mem.read(pc, n * 4).unwrap()), want);
    assert!(obs.sites.values().all(|s| s.hist.mode() == 4), "{:?}", obs.sites);
    // a slice shorter than the grid: the bounds check panics (`trap`), reported, not crashed
    let short = [Arg::Bits(pa), Arg::Bits(n as u64), Arg::Bits(pb), Arg::Bits(10), Arg::Bits(pc)];
    let e = interp::run(&m, "add", &Launch { grid: [4, 1, 1], block: [256, 1, 1], dynamic_shared: 0 }, &short, &mut mem).unwrap_err();
    assert!(e.to_string().contains("`trap` (a panic in the kernel) by thread (10, 0, 0)"), "{e}");

    // nvcc VecAdd_kernel(const float *A, const float *B, float *C, int n)
    let Some(src) = corpus_file("vosen-ZLUDA-vectorAdd_kernel64.ptx") else { return };
    let m = ptx::parse(&src).unwrap();
    let mut mem = Global::default();
    let (pa, pb, pc) = (mem.alloc(&bytes_f32(&a)), mem.alloc(&bytes_f32(&b)), mem.alloc(&vec![0u8; n * 4]));
    let args = [Arg::Bits(pa), Arg::Bits(pb), Arg::Bits(pc), Arg::Bits(n as u64)];
    interp::run(&m, "VecAdd_kernel", &Launch { grid: [4, 1, 1], block: [256, 1, 1], dynamic_shared: 0 }, &args, &mut mem).unwrap();
    assert_eq!(f32s(&mem.read(pc, n * 4).unwrap()), want);

    // CUDA.jl sumReduce_grid(int *in, int *out, int n): out[block] = sum of a grid-stride slice
    let Some(src) = corpus_file("JuliaGPU-CUDA.jl-reduce.cu.ptx") else { return };
    let m = ptx::parse(&src).unwrap();
    let input: Vec<u32> = rand_u32(4096, 9).iter().map(|v| v % 100).collect();
    let mut mem = Global::default();
    let (pi, po) = (mem.alloc(&bytes_u32(&input)), mem.alloc(&[0u8; 4 * 4]));
    let args = [Arg::Bits(pi), Arg::Bits(po), Arg::Bits(4096)];
    interp::run(&m, "_Z14sumReduce_gridPiS_i", &Launch { grid: [4, 1, 1], block: [256, 1, 1], dynamic_shared: 0 }, &args, &mut mem)
        .unwrap();
    let got = u32s(&mem.read(po, 16).unwrap());
    let want: Vec<u32> = (0..4).map(|blk| (0..4096).filter(|i| (i / 256) % 4 == blk).map(|i| input[i]).sum()).collect();
    assert_eq!(got, want);
}

/// Device-function calls: NVVM's call sequences (`.param` arguments and
/// results), a libdevice-style function; calls to functions the PTX only
/// declares are a clear error.
#[test]
fn device_function_calls() {
    let src = std::fs::read_to_string(repo().join("analysis/tests/nvvm/idioms.ptx")).unwrap();
    let m = ptx::parse(&src).unwrap();
    let n = 600usize;
    let a: Vec<f32> = (0..n).map(|i| (i as f32 - 300.0) / 50.0).collect();
    let mut mem = Global::default();
    let (pa, po) = (mem.alloc(&bytes_f32(&a)), mem.alloc(&vec![0u8; n * 4]));
    let args = [Arg::Bits(pa), Arg::Bits(n as u64), Arg::Bits(po), Arg::Bits(n as u64)];
    let obs = interp::run(&m, "exp_slice", &Launch { grid: [3, 1, 1], block: [256, 1, 1], dynamic_shared: 0 }, &args, &mut mem).unwrap();
    let got = f32s(&mem.read(po, n * 4).unwrap());
    for i in 0..n {
        let want = a[i].exp();
        assert!((got[i] - want).abs() <= want * 1e-5, "exp({}) = {} (want {want})", a[i], got[i]);
    }
    // the store after the call is counted like any other access
    assert!(obs.sites.values().all(|s| s.hist.mode() == 4), "{:?}", obs.sites);

    // rustc (2018, rust-ptx-linker): three levels of calls through `core::ptr::offset` and friends;
    // every thread writes the same element, which the shadow memory sees
    let Some(src) = corpus_file("denzp-rust-ptx-linker-dependencies-debug.ptx") else { return };
    let m = ptx::parse(&src).unwrap();
    let mut mem = Global::default();
    let (pi, po) = (mem.alloc(&3.0f64.to_le_bytes()), mem.alloc(&[0u8; 64]));
    let obs = interp::run(
        &m,
        "top_level_kernel",
        &Launch { grid: [1, 1, 1], block: [32, 1, 1], dynamic_shared: 0 },
        &[Arg::Bits(pi), Arg::Bits(po), Arg::Bits(2.0f64.to_bits())],
        &mut mem,
    )
    .unwrap();
    assert!(obs.races.iter().any(|r| r.kind == gpucheck_analysis::races::RaceKind::WriteAfterWrite && !r.shared), "{:?}", obs.races);
    let out = f64::from_le_bytes(mem.read(po, 8).unwrap().try_into().unwrap());
    assert!(out != 0.0, "the kernel wrote its result");

    // a function the PTX only declares
    let src = ".version 7.0\n.target sm_70\n.address_size 64\n.extern .func (.param .b32 func_retval0) ext(.param .b32 ext_param_0);\n.visible .entry k()\n{\n\t.reg .b32 %r<2>;\n\t{\n\t.param .b32 param0;\n\tst.param.b32 [param0+0], 1;\n\t.param .b32 retval0;\n\tcall.uni (retval0), ext, (param0);\n\tld.param.b32 %r1, [retval0+0];\n\t}\n\tret;\n}\n";
    let m = ptx::parse(src).unwrap();
    let e =
        interp::run(&m, "k", &Launch { grid: [1, 1, 1], block: [32, 1, 1], dynamic_shared: 0 }, &[], &mut Global::default()).unwrap_err();
    assert!(e.to_string().contains("PTX line 12: `call.uni`: `ext` has no body in this PTX"), "{e}");
}

/// A cooperative launch runs in phases: every block writes its element,
/// arrives at the grid barrier (cooperative groups' protocol: the master
/// thread adds to the grid workspace, polls until the count flips, then
/// the block's barrier), and reads its neighbour's element. Every block
/// sees its neighbour's write, and no race between blocks is recorded;
/// when one block ends without arriving, the run says the others would
/// wait forever.
#[test]
fn grid_sync_runs_the_blocks_in_phases() {
    let src = r#".version 7.0
.target sm_70
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 out, .param .u32 skip)
{
	.reg .pred %p<4>;
	.reg .b32 %r<20>;
	.reg .b64 %rd<12>;
	ld.param.u64 %rd1, [a];
	ld.param.u64 %rd2, [out];
	ld.param.u32 %r10, [skip];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %tid.x;
	mov.u32 %r3, %nctaid.x;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd4, %rd1, %rd3;
	setp.ne.u32 %p1, %r2, 0;
	@%p1 bra $L_stored;
	st.global.u32 [%rd4], 1;
$L_stored:
	add.u32 %r11, %r1, 1;
	setp.eq.u32 %p3, %r11, %r10;
	@%p3 bra $L_end;
	mov.u32 %r4, %envreg1;
	mov.u32 %r5, %envreg2;
	cvt.u64.u32 %rd5, %r4;
	shl.b64 %rd5, %rd5, 32;
	cvt.u64.u32 %rd6, %r5;
	or.b64 %rd7, %rd5, %rd6;
	barrier.sync 0;
	@%p1 bra $L_waited;
	setp.eq.u32 %p2, %r1, 0;
	sub.u32 %r6, %r3, 1;
	mov.u32 %r17, -2147483648;
	sub.u32 %r7, %r17, %r6;
	selp.u32 %r8, %r7, 1, %p2;
	atom.add.release.gpu.u32 %r9, [%rd7], %r8;
$L_spin:
	ld.acquire.gpu.u32 %r12, [%rd7];
	xor.b32 %r13, %r12, %r9;
	setp.gt.s32 %p2, %r13, -1;
	@%p2 bra $L_spin;
$L_waited:
	barrier.sync 0;
	@%p1 bra $L_end;
	add.u32 %r14, %r1, 1;
	rem.u32 %r15, %r14, %r3;
	mul.wide.u32 %rd8, %r15, 4;
	add.s64 %rd9, %rd1, %rd8;
	ld.global.u32 %r16, [%rd9];
	add.s64 %rd10, %rd2, %rd3;
	st.global.u32 [%rd10], %r16;
$L_end:
	ret;
}
"#;
    let m = ptx::parse(src).unwrap();
    let launch = Launch { grid: [8, 1, 1], block: [64, 1, 1], dynamic_shared: 0 };
    let mut mem = Global::default();
    let (pa, po) = (mem.alloc(&[0u8; 32]), mem.alloc(&[0u8; 32]));
    let obs = interp::run(&m, "k", &launch, &[Arg::Bits(pa), Arg::Bits(po), Arg::Bits(0)], &mut mem).unwrap();
    assert_eq!(u32s(&mem.read(po, 32).unwrap()), [1; 8], "every block reads its neighbour's write, made in the phase before");
    assert!(obs.races.is_empty(), "the grid barrier orders the blocks: {:?}", obs.races);
    // block 1 (skip = 2) ends before the grid barrier
    let mut mem = Global::default();
    let (pa, po) = (mem.alloc(&[0u8; 32]), mem.alloc(&[0u8; 32]));
    let e = interp::run(&m, "k", &launch, &[Arg::Bits(pa), Arg::Bits(po), Arg::Bits(2)], &mut mem).unwrap_err();
    assert!(e.to_string().contains("blocks wait at `grid.sync()` that other blocks of the grid ended without reaching"), "{e}");
    // more blocks than run at once: said, not attempted
    let huge = Launch { grid: [5000, 1, 1], block: [64, 1, 1], dynamic_shared: 0 };
    let e = interp::run(&m, "k", &huge, &[Arg::Bits(pa), Arg::Bits(po), Arg::Bits(0)], &mut Global::default()).unwrap_err();
    assert!(e.to_string().contains("a cooperative launch of 5000 blocks; at most 4096 run here"), "{e}");
}

/// An instruction the interpreter does not execute stops a run only where
/// a warp reaches it: a call to a function with no body in the module (a
/// Rust panic path for `% 0`, an extended-precision add in a branch the
/// launch does not take) is fine until then, and an error naming it after.
#[test]
fn unsupported_instructions_stop_a_run_only_when_reached() {
    let src = r#"
.version 7.0
.target sm_80
.address_size 64
.extern .func panic_rem_by_zero();
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1) {
    .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u32 %r1, [k_param_1];
    cvta.to.global.u64 %rd2, %rd1;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra $L_panic;
    mov.u32 %r2, %tid.x;
    rem.u32 %r3, %r2, %r1;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r3;
    ret;
$L_panic:
    call.uni panic_rem_by_zero, ();
    ret;
}"#;
    let m = ptx::parse(src).unwrap();
    let launch = Launch { grid: [1, 1, 1], block: [32, 1, 1], dynamic_shared: 0 };
    let mut mem = Global::default();
    let out = mem.alloc(&[0u8; 128]);
    interp::run(&m, "k", &launch, &[Arg::Bits(out), Arg::Bits(5)], &mut mem).unwrap();
    assert_eq!(u32s(&mem.read(out, 128).unwrap())[..7], [0, 1, 2, 3, 4, 0, 1]);
    let e = interp::run(&m, "k", &launch, &[Arg::Bits(out), Arg::Bits(0)], &mut mem).unwrap_err().to_string();
    assert!(e.contains("`panic_rem_by_zero` has no body in this PTX"), "{e}");
}

/// Lanes that load the same bytes see the same values, whether every lane
/// of the warp reads one word (a broadcast), pairs of lanes share one, or
/// the load is a vector; from global, shared and parameter memory. A
/// broadcast read with no write beside it is no race; a write by one
/// thread beside the others' reads is one.
#[test]
fn lanes_at_one_address_load_alike() {
    let src = r#".version 7.0
.target sm_70
.address_size 64
.shared .align 8 .b8 tile[64];
.visible .entry k(.param .u64 k_in, .param .u64 k_out, .param .u32 k_seven)
{
	.reg .pred %p<2>;
	.reg .b32 %r<20>;
	.reg .b64 %rd<12>;
	ld.param.u64 %rd1, [k_in];
	ld.param.u64 %rd2, [k_out];
	ld.param.u32 %r10, [k_seven];
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 st.shared.u32 [tile+8], 41;
	bar.sync 0;
	ld.global.u32 %r2, [%rd1];
	shr.u32 %r3, %r1, 1;
	mul.wide.u32 %rd3, %r3, 4;
	add.s64 %rd4, %rd1, %rd3;
	ld.global.u32 %r4, [%rd4+4];
	ld.global.v2.u32 {%r5, %r6}, [%rd1+8];
	ld.shared.u32 %r7, [tile+8];
	add.u32 %r8, %r2, %r4;
	add.u32 %r8, %r8, %r5;
	add.u32 %r8, %r8, %r6;
	add.u32 %r8, %r8, %r7;
	add.u32 %r8, %r8, %r10;
	mul.wide.u32 %rd5, %r1, 4;
	add.s64 %rd6, %rd2, %rd5;
	st.global.u32 [%rd6], %r8;
	ret;
}
"#;
    let m = ptx::parse(src).unwrap();
    let input: Vec<u32> = (0..64).map(|i| 1000 * i + 3).collect();
    let mut mem = Global::default();
    let (pi, po) = (mem.alloc(&bytes_u32(&input)), mem.alloc(&[0u8; 64 * 4]));
    let launch = Launch { grid: [1, 1, 1], block: [64, 1, 1], dynamic_shared: 0 };
    let obs = interp::run(&m, "k", &launch, &[Arg::Bits(pi), Arg::Bits(po), Arg::Bits(7)], &mut mem).unwrap();
    let want: Vec<u32> = (0..64).map(|t| input[0] + input[1 + t / 2] + input[2] + input[3] + 41 + 7).collect();
    assert_eq!(u32s(&mem.read(po, 64 * 4).unwrap()), want);
    assert!(obs.races.is_empty(), "{:?}", obs.races);
    // thread 5 writes the word every thread reads, in the same interval
    let racy = src.replace(
        "\tld.global.u32 %r2, [%rd1];",
        "\tsetp.eq.u32 %p1, %r1, 5;\n\t@%p1 st.global.u32 [%rd1], 9;\n\tld.global.u32 %r2, [%rd1];",
    );
    let m = ptx::parse(&racy).unwrap();
    let obs = interp::run(&m, "k", &launch, &[Arg::Bits(pi), Arg::Bits(po), Arg::Bits(7)], &mut mem).unwrap();
    assert!(obs.races.iter().any(|r| !r.shared), "{:?}", obs.races);
}

/// A register every lane holds alike is computed once (the interpreter's
/// uniform registers); one that some lanes write on their own (a guarded
/// write, a partial warp, a thread index) is computed per lane again, and a
/// call's frame keeps the caller's registers apart from its own.
#[test]
fn uniform_registers_split_where_lanes_write_their_own() {
    let src = r#".version 7.0
.target sm_70
.address_size 64
.func (.param .b32 f_ret) f(.param .b32 f_a)
{
	.reg .b32 %r<4>;
	ld.param.u32 %r1, [f_a];
	mov.u32 %r2, 100;
	add.u32 %r3, %r1, %r2;
	st.param.b32 [f_ret], %r3;
	ret;
}
.visible .entry k(.param .u64 k_out, .param .u64 k_in)
{
	.reg .pred %p<3>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [k_out];
	ld.param.u64 %rd7, [k_in];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, 5;
	setp.lt.u32 %p1, %r1, 3;
	@%p1 mov.u32 %r2, 7;
	add.u32 %r3, %r2, 1;
	setp.eq.u32 %p2, %r2, 5;
	selp.u32 %r4, 10, 20, %p2;
	mov.u32 %r5, 3;
	setp.gt.u32 %p2, %r5, 1;
	@%p2 add.u32 %r5, %r5, %r1;
	{
	.param .b32 param0;
	st.param.b32 [param0], %r1;
	.param .b32 retval0;
	call.uni (retval0), f, (param0);
	ld.param.b32 %r6, [retval0];
	}
	add.u32 %r6, %r6, %r2;
	ld.global.u32 %r8, [%rd7];
	add.u32 %r8, %r8, %r1;
	mul.lo.u32 %r9, %r1, 5;
	mul.wide.u32 %rd2, %r9, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r3;
	st.global.u32 [%rd3+4], %r4;
	st.global.u32 [%rd3+8], %r5;
	st.global.u32 [%rd3+12], %r6;
	st.global.u32 [%rd3+16], %r8;
	ret;
}
"#;
    let m = ptx::parse(src).unwrap();
    let n = 48usize;
    let mut mem = Global::default();
    let (po, pi) = (mem.alloc(&vec![0u8; n * 5 * 4]), mem.alloc(&bytes_u32(&[1000])));
    let launch = Launch { grid: [1, 1, 1], block: [n as u32, 1, 1], dynamic_shared: 0 };
    interp::run(&m, "k", &launch, &[Arg::Bits(po), Arg::Bits(pi)], &mut mem).unwrap();
    let want: Vec<u32> = (0..n as u32)
        .flat_map(|t| {
            let r2 = if t < 3 { 7 } else { 5 };
            [r2 + 1, if r2 == 5 { 10 } else { 20 }, 3 + t, t + 100 + r2, 1000 + t]
        })
        .collect();
    assert_eq!(u32s(&mem.read(po, n * 5 * 4).unwrap()), want);
}

/// A launch of several blocks run on the calling thread
/// (`par::alone`, a small module's replay) observes what the thread pool's
/// run observes: the blocks' tallies and races merged alike.
#[test]
fn blocks_run_alone_as_in_the_pool() {
    let Some(src) = corpus_file("JuliaGPU-CUDA.jl-reduce.cu.ptx") else { return };
    let m = ptx::parse(&src).unwrap();
    let input: Vec<u32> = rand_u32(4096, 9).iter().map(|v| v % 100).collect();
    let run = || {
        let mut mem = Global::default();
        let (pi, po) = (mem.alloc(&bytes_u32(&input)), mem.alloc(&[0u8; 4 * 4]));
        let args = [Arg::Bits(pi), Arg::Bits(po), Arg::Bits(4096)];
        let launch = Launch { grid: [4, 1, 1], block: [256, 1, 1], dynamic_shared: 0 };
        let obs = interp::run(&m, "_Z14sumReduce_gridPiS_i", &launch, &args, &mut mem).unwrap();
        let mut races: Vec<String> = obs.races.iter().map(|r| format!("{r:?}")).collect();
        races.sort();
        (format!("{:?} {:?} {:?} {}", obs.sites, obs.branches, obs.barriers, obs.warp_insts), races, mem.read(po, 16).unwrap())
    };
    let pooled = run();
    let alone = gpucheck_analysis::par::alone(run);
    assert_eq!(alone, pooled);
}
