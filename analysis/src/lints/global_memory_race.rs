//! `global_memory_race`: races on global memory within one block (races
//! between blocks are out of scope). Shares its reporting with
//! `shared_memory_race`.

use super::{registry::GLOBAL_MEMORY_RACE, Ctx, Finding};
use crate::ir::space::Space;

pub fn check(ctx: &Ctx<'_, '_>, out: &mut Vec<Finding>) {
    super::shared_memory_race::report(ctx, Space::Global, &GLOBAL_MEMORY_RACE, out);
}
