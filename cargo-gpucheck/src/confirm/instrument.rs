//! PTX instrumentation for the CUDA engine: a copy of the module in which
//! every global access site counts the distinct 32-byte sectors of each
//! warp request, and every shared access site (up to 4 bytes per lane)
//! its bank-conflict degree, into a per-site histogram in a module global
//! `__gpucheck_counters` (`activemask` + `vote.sync.ballot` for the lanes
//! that take part, `match.any.sync` to group lanes by sector / word / bank,
//! `popc`, and `red.global.add.u64` by the first such lane). The DWARF
//! sections are dropped (ptxas rejects rustc's label differences in
//! `.debug_aranges`); `.file`/`.loc` stay. Counting is the static model's:
//! sectors per request, and for shared memory the largest number of
//! distinct 4-byte words any bank is asked for.
//!
//! Owns: the text rewriting and the site table. Does not own: loading or
//! running (see `cuda`).

use gpucheck_analysis::interp::SiteKey;
use gpucheck_analysis::ir::{self, space::Space};
use gpucheck_analysis::ptx::{self, Operand};
use std::fmt::Write;

/// Counters per site: requests, then a histogram of values 0..=32.
pub const SLOTS: usize = 34;
pub const COUNTERS: &str = "__gpucheck_counters";

/// One instrumented access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub kernel: String,
    /// The access instrumented (function and instruction index).
    pub key: SiteKey,
    pub ptx_line: u32,
    pub space: &'static str,
}

/// The instrumented PTX, its sites (site `k` owns counters `k·SLOTS ..`),
/// and the accesses left alone with why.
pub struct Instrumented {
    pub ptx: String,
    pub sites: Vec<Site>,
    pub skipped: Vec<(u32, String)>,
}

/// Remove `.section …{ … }` blocks (DWARF), keeping every other line.
pub fn strip_dwarf(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut depth: Option<i32> = None;
    // a `.section NAME` line whose `{` comes on a later line
    let mut pending = false;
    for line in src.lines() {
        let t = line.trim_start();
        if depth.is_none() && t.starts_with(".section") {
            let opens = t.matches('{').count() as i32 - t.matches('}').count() as i32;
            pending = !t.contains('{');
            if opens > 0 {
                depth = Some(opens);
            }
            continue;
        }
        if pending && depth.is_none() {
            if t.is_empty() {
                continue;
            }
            if t.starts_with('{') {
                pending = false;
                let opens = t.matches('{').count() as i32 - t.matches('}').count() as i32;
                if opens > 0 {
                    depth = Some(opens);
                }
                continue;
            }
            pending = false;
        }
        if let Some(d) = depth.as_mut() {
            *d += line.matches('{').count() as i32 - line.matches('}').count() as i32;
            if *d <= 0 {
                depth = None;
            }
            continue;
        }
        // the label rustc puts after the text section for `.debug_aranges`
        if t.starts_with("$L__sec_end") && t.ends_with(':') {
            continue;
        }
        // without the sections, `.target …, debug` is an error for ptxas
        if t.starts_with(".target") && t.contains("debug") {
            let kept: Vec<&str> = t.trim_start_matches(".target").split(',').map(str::trim).filter(|x| *x != "debug").collect();
            out.push_str(&format!(".target {}\n", kept.join(", ")));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Registers declared 32 bits wide in `f` (by name prefix of `%r<N>` declarations, or exact names).
fn is_32bit(f: &ptx::Function<'_>, reg: &str) -> bool {
    for s in f.body.iter().flatten() {
        if let ptx::Stmt::Reg(d) = s {
            let narrow = matches!(d.ty, ".b32" | ".u32" | ".s32");
            for (name, count) in &d.names {
                let hit = match count {
                    Some(_) => reg.strip_prefix(name).is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())),
                    None => reg == *name,
                };
                if hit {
                    return narrow;
                }
            }
        }
    }
    false
}

/// Instrument `src` for `target` (e.g. `sm_90`; `None` keeps the module's).
pub fn instrument(src: &str, target: Option<&str>) -> Result<Instrumented, String> {
    let module = ptx::parse(src).map_err(|e| format!("{e}"))?;
    let mcx = ir::ModuleCx::new(&module);
    // line (1-based) → code to insert before it
    let mut inserts: Vec<(u32, String)> = Vec::new();
    let mut sites = Vec::new();
    let mut skipped = Vec::new();
    let lines: Vec<&str> = src.lines().collect();
    for (index, f) in module.functions.iter().enumerate() {
        if f.body.is_none() {
            continue;
        }
        let fir = ir::lower_one(&module, index, &mcx);
        for (i, inst) in fir.insts.iter_enumerated() {
            if inst.access().is_none() || matches!(inst.space, Some(Space::Param | Space::Local | Space::Const)) {
                continue;
            }
            // a generic address of unknown space is counted as global, as the analysis assumes
            let space = fir.spaces.analysed(&fir, i).0;
            let line = inst.ast.pos.line;
            let opcode = inst.text();
            let space = match space {
                Space::Global => "global",
                Space::Shared => "shared",
                _ => {
                    skipped.push((line, format!("`{opcode}`: address space not known statically")));
                    continue;
                }
            };
            let width = inst.access_width();
            if space == "shared" && width > 4 {
                skipped.push((line, format!("`{opcode}`: shared accesses wider than 4 bytes are not instrumented")));
                continue;
            }
            let text = lines.get(line as usize - 1).map(|l| l.trim_start()).unwrap_or("");
            if !(text.starts_with(opcode) || text.starts_with('@')) || inserts.iter().any(|(l, _)| *l == line) {
                skipped.push((line, format!("`{opcode}` does not start its line")));
                continue;
            }
            let addr = inst.operands().iter().find_map(|o| match o {
                Operand::Addr(a) => Some(a),
                _ => None,
            });
            let Some(addr) = addr else { continue };
            let mut code = String::new();
            let site = sites.len();
            let _ = writeln!(code, "\t{{ // gpucheck site {site}: {space} {opcode}");
            code.push_str("\t.reg .pred %gck_p<4>;\n\t.reg .b32 %gck_r<10>;\n\t.reg .b64 %gck_d<6>;\n");
            code.push_str("\tactivemask.b32 %gck_r0;\n");
            match &inst.ast.guard {
                None => code.push_str("\tsetp.eq.b32 %gck_p0, %gck_r0, %gck_r0;\n"),
                Some(g) if g.negated => {
                    let _ = writeln!(code, "\tnot.pred %gck_p0, {};", g.reg);
                }
                Some(g) => {
                    let _ = writeln!(code, "\tmov.pred %gck_p0, {};", g.reg);
                }
            }
            code.push_str("\tvote.sync.ballot.b32 %gck_r1, %gck_p0, %gck_r0;\n");
            match &addr.base {
                Some(Operand::Reg(r)) if is_32bit(f, r) => {
                    let _ = writeln!(code, "\tcvt.u64.u32 %gck_d0, {r};");
                }
                Some(Operand::Reg(r)) => {
                    let _ = writeln!(code, "\tmov.b64 %gck_d0, {r};");
                }
                Some(Operand::Sym(s)) => {
                    let _ = writeln!(code, "\tmov.u64 %gck_d0, {s};");
                }
                Some(Operand::Imm(v)) => {
                    let _ = writeln!(code, "\tmov.u64 %gck_d0, {v};");
                }
                _ => {
                    skipped.push((line, format!("`{opcode}`: address form not instrumented")));
                    continue;
                }
            }
            if addr.offset != 0 {
                let _ = writeln!(code, "\tadd.s64 %gck_d0, %gck_d0, {};", addr.offset);
            }
            // lanes grouped by sector (global) or by word, then distinct words per bank (shared)
            let shift = if space == "global" { 5 } else { 2 };
            let _ = writeln!(code, "\tshr.u64 %gck_d1, %gck_d0, {shift};");
            code.push_str(
                "\tmatch.any.sync.b64 %gck_r2, %gck_d1, %gck_r0;\n\tand.b32 %gck_r2, %gck_r2, %gck_r1;\n\tmov.u32 %gck_r3, %lanemask_lt;\n\tand.b32 %gck_r4, %gck_r2, %gck_r3;\n\tsetp.eq.b32 %gck_p1, %gck_r4, 0;\n\tand.pred %gck_p1, %gck_p1, %gck_p0;\n\tvote.sync.ballot.b32 %gck_r5, %gck_p1, %gck_r0;\n",
            );
            if space == "global" {
                code.push_str("\tpopc.b32 %gck_r6, %gck_r5;\n");
            } else {
                code.push_str(
                    "\tcvt.u32.u64 %gck_r7, %gck_d1;\n\tand.b32 %gck_r7, %gck_r7, 31;\n\tmatch.any.sync.b32 %gck_r8, %gck_r7, %gck_r0;\n\tand.b32 %gck_r8, %gck_r8, %gck_r5;\n\tpopc.b32 %gck_r9, %gck_r8;\n\tmov.u32 %gck_r6, 0;\n",
                );
                // the largest per-lane count, bit by bit with warp votes (sm_70 has no redux)
                for bit in (0..6).rev() {
                    let _ = write!(
                        code,
                        "\tor.b32 %gck_r4, %gck_r6, {};\n\tsetp.ge.u32 %gck_p2, %gck_r9, %gck_r4;\n\tand.pred %gck_p2, %gck_p2, %gck_p0;\n\tvote.sync.any.pred %gck_p3, %gck_p2, %gck_r0;\n\tselp.b32 %gck_r6, %gck_r4, %gck_r6, %gck_p3;\n",
                        1 << bit
                    );
                }
            }
            let _ = write!(
                code,
                "\tand.b32 %gck_r4, %gck_r3, %gck_r1;\n\tsetp.eq.b32 %gck_p2, %gck_r4, 0;\n\tand.pred %gck_p2, %gck_p2, %gck_p0;\n\tmov.u64 %gck_d2, {COUNTERS};\n\tadd.s64 %gck_d2, %gck_d2, {};\n\tmov.u64 %gck_d3, 1;\n\t@%gck_p2 red.global.add.u64 [%gck_d2], %gck_d3;\n\tmul.wide.u32 %gck_d4, %gck_r6, 8;\n\tadd.s64 %gck_d4, %gck_d4, %gck_d2;\n\t@%gck_p2 red.global.add.u64 [%gck_d4+8], %gck_d3;\n\t}}\n",
                site * SLOTS * 8
            );
            inserts.push((line, code));
            sites.push(Site {
                kernel: gpucheck_analysis::demangle(f.name),
                key: SiteKey { func: index, inst: i.index() },
                ptx_line: line,
                space,
            });
        }
    }
    // rebuild the text: counters after `.address_size`, code before each site, DWARF dropped
    inserts.sort_by_key(|x| x.0);
    let mut out = String::with_capacity(src.len() * 2);
    let mut next = inserts.iter().peekable();
    let mut declared = false;
    for (k, line) in lines.iter().enumerate() {
        let n = k as u32 + 1;
        while let Some((l, code)) = next.peek() {
            if *l == n {
                out.push_str(code);
                next.next();
            } else {
                break;
            }
        }
        let t = line.trim_start();
        out.push_str(line);
        out.push('\n');
        if !declared && t.starts_with(".address_size") {
            let _ = writeln!(out, "\n.global .align 8 .u64 {COUNTERS}[{}];", (sites.len() * SLOTS).max(1));
            declared = true;
        }
    }
    if !declared {
        return Err("the PTX has no `.address_size` line to put the counters after".into());
    }
    let out = match target {
        Some(t) => retarget(&out, t),
        None => out,
    };
    Ok(Instrumented { ptx: strip_dwarf(&out), sites, skipped })
}

/// Set `.target` to `arch` (keeping its other options) and raise
/// `.version` to what the instrumentation needs there (6.3 for the warp
/// instructions, 7.8 for sm_90).
pub fn retarget(src: &str, arch: &str) -> String {
    let mut out = String::with_capacity(src.len() + 16);
    for line in src.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix(".target") {
            let extra: Vec<&str> = rest.split(',').skip(1).map(str::trim).filter(|x| !x.is_empty()).collect();
            let _ = writeln!(out, ".target {arch}{}", extra.iter().map(|x| format!(", {x}")).collect::<String>());
            continue;
        }
        if let Some(v) = t.strip_prefix(".version") {
            let v = v.trim();
            let (maj, min) =
                v.split_once('.').map(|(a, b)| (a.parse::<u32>().unwrap_or(0), b.parse::<u32>().unwrap_or(0))).unwrap_or((0, 0));
            let sm: u32 = arch.trim_start_matches("sm_").trim_end_matches(|c: char| !c.is_ascii_digit()).parse().unwrap_or(70);
            let need = if sm >= 90 {
                (7, 8)
            } else if sm >= 80 {
                (7, 0)
            } else {
                (6, 3)
            };
            let _ = writeln!(out, ".version {}", if (maj, min) < need { format!("{}.{}", need.0, need.1) } else { v.to_string() });
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: &str = ".version 7.0\n.target sm_70, debug\n.address_size 64\n\n.visible .entry k(.param .u64 k_param_0)\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;\n\n\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd3, %r1, 4;\n\tadd.s64 %rd3, %rd2, %rd3;\n\tsetp.lt.u32 %p1, %r1, 16;\n\t@%p1 ld.global.u32 %r2, [%rd3+4];\n\tret;\n}\n\t.section\t.debug_info\n\t{\n.b32 1\n\t}\n";

    #[test]
    fn sites_and_text() {
        let ins = instrument(K, Some("sm_90")).unwrap();
        assert_eq!(ins.sites, [Site { kernel: "k".into(), key: SiteKey { func: 0, inst: 6 }, ptx_line: 17, space: "global" }]);
        assert!(ins.ptx.contains(".target sm_90\n"), "no `debug` without DWARF sections");
        assert!(ins.ptx.contains(".version 7.8\n"));
        assert!(ins.ptx.contains(".global .align 8 .u64 __gpucheck_counters[34];"));
        assert!(ins.ptx.contains("mov.pred %gck_p0, %p1;"), "the guard decides who takes part");
        assert!(ins.ptx.contains("add.s64 %gck_d0, %gck_d0, 4;"));
        assert!(!ins.ptx.contains(".debug_info"), "DWARF dropped");
        // the instrumented module still parses, with the original instruction after the counting code
        let m = ptx::parse(&ins.ptx).unwrap();
        assert!(m.instruction_count() > 30);
        let at = ins.ptx.find("@%p1 ld.global.u32").unwrap();
        assert!(ins.ptx[..at].contains("red.global.add.u64 [%gck_d4+8]"));
    }

    #[test]
    fn dwarf_sections_are_dropped_whole() {
        let s = strip_dwarf(
            ".version 7.0\n.target sm_70, debug\n.section .debug_abbrev\n{\n.b8 1\n}\n.section .debug_str { .b8 0 }\nret;\n$L__sec_end0:\n",
        );
        assert_eq!(s, ".version 7.0\n.target sm_70\nret;\n");
    }
}
