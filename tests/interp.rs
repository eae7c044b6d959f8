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
