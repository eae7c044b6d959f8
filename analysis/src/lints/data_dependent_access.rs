//! `data_dependent_access` (pedantic): global or shared accesses whose
//! address depends on loaded data, so no prediction is possible.

use super::warps::sources;
use super::{registry::DATA_DEPENDENT_ACCESS, Ctx, Finding};

pub fn check(ctx: &Ctx<'_, '_>, out: &mut Vec<Finding>) {
    for (a, p) in ctx.memory() {
        if p.is_some() || !a.addr.data() {
            continue;
        }
        let srcs = a.addr_value.map(|v| sources(ctx.f, ctx.d, v)).unwrap_or_default();
        let on = if srcs.is_empty() { "loaded data".to_string() } else { srcs.join(" and ") };
        let message = format!("{} address depends on {on}: its cost cannot be predicted", a.space.name());
        let mut fd = ctx.finding(&DATA_DEPENDENT_ACCESS, a.inst, message, "gather/scatter".to_string());
        fd.help("if the indices allow, sort them so that neighbouring lanes access neighbouring elements");
        out.push(fd);
    }
}
