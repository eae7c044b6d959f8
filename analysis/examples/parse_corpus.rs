//! Parse every PTX file named on the command line and print counts (dev aid).
fn main() {
    for p in std::env::args().skip(1) {
        let src = std::fs::read_to_string(&p).unwrap();
        let t = std::time::Instant::now();
        match gpucheck_analysis::ptx::parse(&src) {
            Ok(m) => println!("ok {p}: {} fns, {} insts, {:?}", m.functions.len(), m.instruction_count(), t.elapsed()),
            Err(e) => println!("ERR {p}:{e}"),
        }
    }
}
