//! Write a synthetic module (development aid): `gen KERNELS SEGMENTS
//! [shared] > out.ptx` (`shared`: the shared-memory-heavy shape), or
//! `gen cliffs DIR`: every cliff shape of issue 28 at its size, one file
//! each (`DIR/NAME.ptx`).
use gpucheck_analysis::synth;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a[0] == "cliffs" {
        for (c, n) in synth::Cliff::ALL {
            let path = std::path::Path::new(&a[1]).join(format!("{}.ptx", c.name()));
            std::fs::write(&path, synth::cliff(c, n)).unwrap();
        }
        return;
    }
    let (k, s): (usize, usize) = (a[0].parse().unwrap(), a[1].parse().unwrap());
    if a.get(2).is_some_and(|x| x == "shared") {
        print!("{}", synth::shared_module(k, s));
    } else {
        print!("{}", synth::module(k, s));
    }
}
