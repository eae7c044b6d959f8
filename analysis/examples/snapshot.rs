//! A deterministic dump of everything the analysis reports for PTX files
//! (findings with notes and metrics, and every prediction: accesses,
//! branches, barriers, races, access groups, coverage), for comparing two
//! versions of the analysis:
//! `cargo run --release -p gpucheck-analysis --example snapshot -- [OPTIONS] FILE… > a.txt`.
//!
//! Options apply to the files after them: `--block X,Y,Z`, `--grid X,Y,Z`,
//! `--kernel-block NAME=X,Y,Z`, `--kernel-grid NAME=X,Y,Z`, `--package-block
//! X,Y,Z`, `--package-grid X,Y,Z`, `--reset` (back to the defaults).
fn main() {
    let mut opts = gpucheck_analysis::Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(p) = args.next() {
        let dims = |s: Option<String>| -> [u32; 3] {
            let s = s.expect("a value after the option");
            let mut d = [1u32; 3];
            for (k, x) in s.split(',').enumerate() {
                d[k] = x.trim().parse().expect("a number");
            }
            d
        };
        let named = |s: Option<String>| -> (String, [u32; 3]) {
            let s = s.expect("NAME=X,Y,Z after the option");
            let (n, v) = s.split_once('=').expect("NAME=X,Y,Z");
            (n.to_string(), dims(Some(v.to_string())))
        };
        match p.as_str() {
            "--block" => opts.block = Some(dims(args.next())),
            "--grid" => opts.grid = Some(dims(args.next())),
            "--package-block" => opts.package_block = Some(dims(args.next())),
            "--package-grid" => opts.package_grid = Some(dims(args.next())),
            "--kernel-block" => {
                let (n, d) = named(args.next());
                opts.kernel_blocks.insert(n, d);
            }
            "--kernel-grid" => {
                let (n, d) = named(args.next());
                opts.kernel_grids.insert(n, d);
            }
            "--reset" => opts = Default::default(),
            _ => snapshot(&p, &opts),
        }
    }
}

fn snapshot(p: &str, opts: &gpucheck_analysis::Options) {
    let src = String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let name = p.rsplit('/').next().unwrap_or(p);
    let r = match gpucheck_analysis::check(&src, opts, &|_| true) {
        Ok(r) => r,
        Err(e) => {
            println!("== {name}: parse error {e}");
            return;
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
            for x in &f.assumes {
                let align = if x.alignment { " alignment" } else { "" };
                s +=
                    &format!("\n    assumes{align} {} {} = {} (line {:?}) known {:?}", x.kind.key(), x.name, x.sample, x.ptx_line, x.known);
            }
            s
        })
        .collect();
    fs.sort();
    for f in fs {
        println!("{f}");
    }
    let mut lines: Vec<String> = Vec::new();
    for a in &r.accesses {
        lines.push(format!(
            "  access [{}] ptx {} {} {} w{} sectors {:?} misaligned {:?} at-one {:?} conflict {:?} req {} unpredictable {}",
            a.site.kernel,
            a.site.ptx_line,
            a.space,
            a.kind,
            a.width,
            a.sectors,
            a.misaligned,
            a.sectors_at_stride_one,
            a.conflict,
            a.requests,
            a.unpredictable
        ));
    }
    for b in &r.branches {
        lines.push(format!("  branch [{}] ptx {} warps {} {:?}", b.site.kernel, b.site.ptx_line, b.warps, b.prediction));
    }
    for b in &r.barriers {
        lines.push(format!("  barrier [{}] ptx {} divergent {}", b.site.kernel, b.site.ptx_line, b.divergent));
    }
    for x in &r.races {
        lines.push(format!(
            "  race [{}] f{} {}@f{} {}@f{} {:?} {:?} threads {:?} benign {} grid {}",
            x.kernel,
            x.function,
            x.first,
            x.first_function,
            x.second,
            x.second_function,
            x.kind,
            x.space,
            x.threads,
            match x.benign {
                None => "false",
                Some(gpucheck_analysis::races::Benign::SameValue) => "true",
                Some(gpucheck_analysis::races::Benign::Discarded) => "discarded",
            },
            x.between_blocks
        ));
    }
    for g in &r.groups {
        lines.push(format!(
            "  group [{}] f{} {:?} loads {} sectors {:?} later {:?} ideal {} used {}",
            g.kernel, g.function, g.members, g.loads, g.sectors, g.later, g.ideal, g.bytes_used
        ));
    }
    for c in &r.coverage {
        let skipped: Vec<(u32, &str)> = c.skipped.iter().map(|s| (s.site.ptx_line, s.skip.key())).collect();
        let assumed: Vec<u32> = c.assumed_global.iter().map(|s| s.ptx_line).collect();
        lines.push(format!(
            "  coverage [{}] f{} entry {} block {:?} {:?} contexts {}/{} total {} predicted {} data {} other {} assumed {:?} skipped {:?}",
            c.kernel,
            c.function,
            c.entry,
            c.block,
            c.shape_source,
            c.contexts,
            c.context_analyses,
            c.total,
            c.predicted,
            c.data_dependent,
            c.other_space,
            assumed,
            skipped
        ));
    }
    lines.sort();
    for l in lines {
        println!("{l}");
    }
}

/// Notes rendered the way the binary renders them for a Cargo package
/// (absolute paths kept).
fn render(t: &gpucheck_analysis::Text) -> String {
    use gpucheck_analysis::{Place, ShapeSource, Text};
    match t {
        Text::Plain(t) => t.to_string(),
        Text::At(x) => match &x.at {
            Place::Source(p) => format!("{}{p}{}", x.before, x.after),
            Place::PtxLine(l) => format!("{}PTX line {l}{}", x.before, x.after),
        },
        Text::Shape(s) => {
            let (kernel, [x, y, z]) = (&s.kernel, s.block);
            match &s.source {
                ShapeSource::Assumed => format!("no block shape given for `{kernel}`: assumed {x}×{y}×{z} (blockDim.x a multiple of 32); set `block = [x, y, z]` under `[package.metadata.gpucheck]` or pass `--block`"),
                ShapeSource::Cli => format!("block shape {x}×{y}×{z} from --block"),
                ShapeSource::Kernel(n) => format!("block shape {x}×{y}×{z} from [package.metadata.gpucheck.kernels.{n}]"),
                ShapeSource::Reqntid => format!("block shape {x}×{y}×{z} from .reqntid in the PTX"),
                ShapeSource::Package => format!("block shape {x}×{y}×{z} from [package.metadata.gpucheck]"),
                ShapeSource::Launch { file, line } => format!("block shape {x}×{y}×{z} from the `LaunchConfig` of `{kernel}`'s launch at {file}:{line}"),
                ShapeSource::Maxntid => format!("block shape {x}×{y}×{z} from .maxntid in the PTX (`__launch_bounds__`: the largest block `{kernel}` allows); for a smaller launch, set `block = [x, y, z]` under `[package.metadata.gpucheck]` or pass `--block`"),
            }
        }
        Text::InlinedInto(p) => format!("inlined into {p}"),
        Text::InlinedFrom(p) => format!("the instruction comes from {p}, inlined here"),
        Text::NearestLine => "no inline information in the PTX: this is the nearest line of the package before the instruction".into(),
    }
}
