//! `shared_memory_race`: races on shared memory within a block.
//!
//! Owns: the message (kind, witness threads, both Rust lines). The
//! detection is `crate::races` through `Ctx::races`.

use super::{registry::SHARED_MEMORY_RACE, Ctx, Finding};
use crate::ir::space::Space;

pub fn check(ctx: &Ctx<'_, '_>, out: &mut Vec<Finding>) {
    report(ctx, Space::Shared, &SHARED_MEMORY_RACE, out);
}

/// One finding per racing pair in `space` (shared with `global_memory_race`).
pub(super) fn report(ctx: &Ctx<'_, '_>, space: Space, lint: &'static super::Lint, out: &mut Vec<Finding>) {
    let mem = ctx.memory();
    for r in ctx.races() {
        let (a, b) = (&mem[r.first].0, &mem[r.second].0);
        if a.space != space {
            continue;
        }
        let (t1, t2) = r.threads;
        let elem = r.offset / a.width.max(1) as i64;
        let what = |k: crate::memory::AccessKind| if k == crate::memory::AccessKind::Load { "reads" } else { "writes" };
        let name = format!("{} memory", space.name());
        let message = format!(
            "{} data race on {name}: thread {t2} {} element {elem} while thread {t1} {} it",
            r.kind.describe(),
            what(b.kind),
            what(a.kind)
        );
        // primary span on the second access, secondary on the first (the write)
        let mut fd = ctx.finding(lint, b.inst, message, format!("thread {t2} {} here", what(b.kind)));
        if let Some(p) = ctx.resolve(a.inst).primary {
            if a.inst != b.inst {
                fd.secondary.push((p, format!("thread {t1} {} here", what(a.kind))));
            }
        }
        if a.inst == b.inst {
            fd.note(format!("both threads execute this same {}", if a.kind == crate::memory::AccessKind::Load { "load" } else { "store" }));
        }
        let base = match crate::memory::base_symbol(ctx.f, a) {
            Some(s) => format!("`{}`", crate::demangle(s)),
            None => "the base pointer".to_string(),
        };
        fd.note(format!("no barrier separates the two accesses on some path (element {elem} of {base}, in {}-byte elements)", a.width));
        ctx.shape_note(&mut fd);
        fd.help("put a barrier (`_syncthreads()`) between the two accesses, or make each thread touch its own elements");
        out.push(fd);
    }
}
