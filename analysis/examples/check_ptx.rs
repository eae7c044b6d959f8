//! Print the findings for PTX files (development aid; the CLI is `cargo gpucheck ptx`).
fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let local = if args.first().map(|s| s.as_str()) == Some("--local") {
        args.remove(0);
        args.remove(0)
    } else {
        String::new()
    };
    let opts = gpucheck_analysis::Options::default();
    for p in args {
        let src = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        let r = gpucheck_analysis::check(&src, &opts, &|f: &str| f.contains(&local)).unwrap();
        println!("== {p}: {} functions, {} insts, dwarf={}", r.functions, r.instructions, r.has_dwarf);
        for f in r.findings {
            println!(
                "{} [{}] {}  @ {:?} (ptx {})  label={}",
                f.lint.name,
                f.kernel,
                f.message,
                f.span.as_ref().map(|s| format!("{}:{}:{}", s.file.rsplit('/').next().unwrap(), s.line, s.col)),
                f.ptx_line,
                f.label
            );
            for n in &f.notes {
                println!("    {:?}: {}", n.kind, n.text);
            }
        }
    }
}
