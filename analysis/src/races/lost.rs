//! Lost updates: a read-modify-write that is not atomic, at an address
//! computed from loaded data (`bins[keys[i]] += 1`). Two threads that load
//! the same key both read the old count and both write theirs: one update
//! is lost. Whether two threads do depends on the data, so the race's
//! witness is the data (`Race::keyed`), not two thread indices.
//!
//! Owns: recognising the pattern. Does not own: which threads run the
//! store (`crate::facts`), or the message (`lints::lost_update`).

use super::{race_at, Race, RaceKind};
use crate::ir::inst::{AccessKind, Space};
use crate::ir::{FunctionIr, InstId, ValueDef, ValueId};
use crate::memory::Access;

/// The lost updates among `accesses`: a plain store to shared or global
/// memory whose address depends on loaded data, into an array every
/// thread shares (its root is the same in every thread) at an element the
/// thread index picks only through the loaded key (`h[key]`, not
/// `h[key * 512 + t]`, whose threads each own a column), and a plain load
/// of the same address (by value numbering) whose value the stored one is
/// computed from; not a record written back field by field (stores at
/// other offsets from the same address: a permutation's update), nor an
/// update every colliding thread makes alike (`flags |= 2`). Each comes as two races marked `keyed` with the load of
/// the key: the store against the load (`read-after-write`: one thread
/// reads what another overwrites) and the store against itself.
pub fn lost_updates(f: &FunctionIr<'_>, d: &crate::divergence::Divergence, accesses: &[Access]) -> Vec<Race> {
    let mut out = Vec::new();
    for (ks, s) in accesses.iter().enumerate() {
        if s.kind != AccessKind::Store || !matches!(s.space, Space::Shared | Space::Global) || !s.addr.data() {
            continue;
        }
        let (Some(addr), Some(stored)) = (s.addr_value, f.operand_value(s.inst, 1)) else { continue };
        if !d.vals[crate::ir::values::array_root(f, addr)].is_uniform() || thread_picks_directly(f, addr) {
            continue;
        }
        // a record written back field by field at one key (`particles[id[i]] = p`) is a
        // permutation's update, each thread its own record: not taken for a counter
        let record = accesses.iter().any(|o| {
            o.kind == AccessKind::Store && o.offset != s.offset && o.addr_value.is_some_and(|x| crate::ir::values::same_value(f, x, addr))
        });
        if record {
            continue;
        }
        let Some(key) = key_load(f, addr) else { continue };
        let read = accesses.iter().enumerate().find(|(_, l)| read_modify_write(f, l, s));
        let Some((kl, l)) = read else { continue };
        if idempotent(f, d, *f.ssa.defs(l.inst).first().expect("a load's value"), stored) {
            continue;
        }
        for (a, b, kind) in [(ks, kl, RaceKind::ReadAfterWrite), (ks, ks, RaceKind::WriteAfterWrite)] {
            let mut r = race_at(accesses, a, b, (0, 1), 0);
            (r.kind, r.keyed) = (kind, Some(key));
            out.push(r);
        }
    }
    out
}

/// The load whose value address `v` is computed from (the key), found
/// back along the definitions.
fn key_load(f: &FunctionIr<'_>, v: ValueId) -> Option<InstId> {
    let mut walk = crate::ir::values::Walk::new([v]);
    while let Some(x) = walk.next_value() {
        let ValueDef::Inst { inst, .. } = f.ssa.values[x] else { continue };
        let i = &f.insts[inst];
        if i.access() == Some(AccessKind::Load) && i.param_read().is_none() {
            return Some(inst);
        }
        if i.access().is_none() && i.call_target().is_none() {
            walk.extend(f.ssa.uses(inst).iter().copied());
        }
    }
    None
}

/// Does the thread index reach address `v` other than through a load
/// (`h[key * 512 + t]`: each thread its own column)?
fn thread_picks_directly(f: &FunctionIr<'_>, v: ValueId) -> bool {
    use crate::ir::inst::Special;
    let mut walk = crate::ir::values::Walk::new([v]);
    while let Some(x) = walk.next_value() {
        match f.ssa.values[x] {
            ValueDef::Entry(_) if matches!(f.ssa.special(x), Some(Special::Tid(_) | Special::LaneId | Special::TidVector)) => return true,
            ValueDef::Entry(_) => {}
            ValueDef::Phi(p) => walk.extend(f.ssa.phis[p].incoming.iter().map(|&(_, y)| y)),
            ValueDef::Inst { inst, .. } => {
                if f.insts[inst].access().is_none() {
                    walk.extend(f.ssa.uses(inst).iter().copied());
                }
            }
        }
    }
    // (a walk cut short by its budget: taken as direct, the conservative side)
    walk.cut()
}

/// Is `stored` the loaded value `old` combined once with one value for
/// every thread by an operation that gives the same result applied twice
/// (`flags | 2`, `max(old, limit)`): threads that collide store the same
/// value, and none is lost.
fn idempotent(f: &FunctionIr<'_>, d: &crate::divergence::Divergence, old: ValueId, stored: ValueId) -> bool {
    use crate::ir::scalar::{Bin, Prepared};
    let stored = crate::ir::values::through_copies(f, stored);
    let Some(i) = f.def_inst(stored) else { return false };
    let inst = &f.insts[i];
    let Some(Prepared::Bin { op: Bin::Or | Bin::And | Bin::Min | Bin::Max, .. }) = crate::ir::scalar::prepare(inst, 0) else {
        return false;
    };
    let ops: Vec<Option<ValueId>> = (1..inst.operands().len()).map(|k| f.operand_value(i, k)).collect();
    let is_old = |x: &Option<ValueId>| x.is_some_and(|x| crate::ir::values::through_copies(f, x) == old);
    let uniform = |x: &Option<ValueId>| x.is_none_or(|x| d.vals[x].is_uniform());
    matches!(&ops[..], [a, b] if (is_old(a) && uniform(b)) || (is_old(b) && uniform(a)))
}

/// Are `load` and `store` one read-modify-write: a plain load and a plain
/// store of the same bytes (by value numbering), the stored value computed
/// from the loaded one (`*out += x`, `h[k] += 1`)?
pub fn read_modify_write(f: &FunctionIr<'_>, load: &Access, store: &Access) -> bool {
    let (Some(la), Some(sa), Some(stored)) = (load.addr_value, store.addr_value, f.operand_value(store.inst, 1)) else { return false };
    load.kind == AccessKind::Load
        && store.kind == AccessKind::Store
        && load.space == store.space
        && load.offset == store.offset
        && load.width == store.width
        && crate::ir::values::same_value(f, la, sa)
        && f.ssa.defs(load.inst).first().is_some_and(|&v| crate::ir::values::derived_from(f, vec![v]).contains(stored.index()))
}
