//! A deterministic dump of everything the analysis reports for PTX files
//! (findings with notes and metrics, every access prediction), for
//! comparing two versions of the analysis:
//! `cargo run --release -p gpucheck-analysis --example snapshot -- FILE… > a.txt`.
fn main() {
    let opts = gpucheck_analysis::Options::default();
    for p in std::env::args().skip(1) {
        let src = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        let name = p.rsplit('/').next().unwrap_or(&p);
        let r = match gpucheck_analysis::check(&src, &opts, &|_| true) {
            Ok(r) => r,
            Err(e) => {
                println!("== {name}: parse error {e}");
                continue;
            }
        };
        println!("== {name}: {} functions, {} kernels, {} insts", r.functions, r.kernels, r.instructions);
        let mut fs: Vec<String> = r
            .findings
            .iter()
            .map(|f| {
                let mut s = format!(
                    "{} [{}] ptx {}:{} {:?} | {} | {}",
                    f.lint.name,
                    f.kernel,
                    f.ptx_line,
                    f.ptx_col,
                    f.span.as_ref().map(|s| s.to_string()),
                    f.message,
                    f.label
                );
                for (p, l) in &f.secondary {
                    s += &format!("\n    secondary {p}: {l}");
                }
                for n in &f.notes {
                    s += &format!("\n    {:?}: {}", n.kind, render(&n.text));
                }
                for (k, v) in &f.metrics {
                    s += &format!("\n    {k} = {v:?}");
                }
                s
            })
            .collect();
        fs.sort();
        for f in fs {
            println!("{f}");
        }
        let mut acc: Vec<String> = r
            .accesses
            .iter()
            .map(|a| {
                format!(
                    "  access [{}] ptx {} {} {} w{} sectors {:?} conflict {:?} req {} unpredictable {}",
                    a.site.kernel, a.site.ptx_line, a.space, a.kind, a.width, a.sectors, a.conflict, a.requests, a.unpredictable
                )
            })
            .collect();
        acc.sort();
        for a in acc {
            println!("{a}");
        }
    }
}

/// Notes rendered the way the binary renders them for a Cargo package
/// (absolute paths kept).
fn render(t: &gpucheck_analysis::Text) -> String {
    use gpucheck_analysis::{Place, ShapeSource, Text};
    match t {
        Text::Plain(t) => t.clone(),
        Text::At { before, at: Place::Source(p), after } => format!("{before}{p}{after}"),
        Text::At { before, at: Place::PtxLine(l), after } => format!("{before}PTX line {l}{after}"),
        Text::Shape { kernel, block: [x, y, z], source } => match source {
            ShapeSource::Assumed => format!("no block shape given for `{kernel}`: assumed {x}×{y}×{z} (blockDim.x a multiple of 32); set `block = [x, y, z]` under `[package.metadata.gpucheck]` or pass `--block`"),
            ShapeSource::Cli => format!("block shape {x}×{y}×{z} from --block"),
            ShapeSource::Kernel(n) => format!("block shape {x}×{y}×{z} from [package.metadata.gpucheck.kernels.{n}]"),
            ShapeSource::Reqntid => format!("block shape {x}×{y}×{z} from .reqntid in the PTX"),
            ShapeSource::Package => format!("block shape {x}×{y}×{z} from [package.metadata.gpucheck]"),
        },
        Text::InlinedInto(p) => format!("inlined into {p}"),
        Text::InlinedFrom(p) => format!("the instruction comes from {p}, inlined here"),
        Text::NearestLine => "no inline information in the PTX: this is the nearest line of the package before the instruction".into(),
    }
}
