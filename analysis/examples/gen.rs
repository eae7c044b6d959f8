//! Write a synthetic module: `gen KERNELS SEGMENTS [shared] > out.ptx`
//! (development aid; `shared`: the shared-memory-heavy shape).
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let (k, s): (usize, usize) = (a[0].parse().unwrap(), a[1].parse().unwrap());
    if a.get(2).is_some_and(|x| x == "shared") {
        print!("{}", gpucheck_analysis::synth::shared_module(k, s));
    } else {
        print!("{}", gpucheck_analysis::synth::module(k, s));
    }
}
