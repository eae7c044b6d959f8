//! Criterion benchmark of the PTX interpreter: lane-instructions per second
//! on a generated kernel (thread-id arithmetic, divergent and uniform
//! branches, loops, barriers, global loads and stores; see `synth`), 64
//! blocks of 256 threads, with every observation (sectors, branches, race
//! shadow) on.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use gpucheck_analysis::interp::{self, Arg, Global, Launch};
use gpucheck_analysis::{ptx, synth};
use std::time::Duration;

fn interp(c: &mut Criterion) {
    let src = synth::module(1, 60);
    let m = ptx::parse(&src).unwrap();
    let launch = Launch { grid: [64, 1, 1], block: [256, 1, 1], dynamic_shared: 0 };
    // the loops run until a counter reaches n: about 10⁸ lane-instructions per run
    let n = 1024u64;
    let run = || {
        let mut mem = Global::default();
        let buf = mem.alloc(&vec![0u8; (64 * 256 + 64) * 4]);
        interp::run(&m, "k0", &launch, &[Arg::Bits(buf), Arg::Bits(n)], &mut mem).unwrap()
    };
    let lane_insts = run().lane_insts;
    eprintln!("generated kernel: {lane_insts} lane-instructions per run");
    let mut g = c.benchmark_group("interp");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Elements(lane_insts));
    g.bench_function("generated-64x256", |b| b.iter(run));
    g.finish();
}

criterion_group!(benches, interp);
criterion_main!(benches);
