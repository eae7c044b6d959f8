//! Write a synthetic module: `gen KERNELS SEGMENTS > out.ptx` (development aid).
fn main() {
    let a: Vec<usize> = std::env::args().skip(1).map(|x| x.parse().unwrap()).collect();
    print!("{}", gpucheck_analysis::synth::module(a[0], a[1]));
}
