//! Calls between a function and the device functions it calls, as facts:
//! what each direct call passes (the context the callee is analysed in),
//! what a device function analysed in a call context exports to its
//! caller's race check, and the callees' accesses placed at the calls.
//!
//! Owns: call facts, exports and their placement. Does not own: analysing
//! the callees (`crate::driver`) or pairing the accesses (`crate::races`).

use super::lanes::Lanes;
use crate::divergence::{AbsVal, ArgValue, CallArgs, Divergence, Summaries};
use crate::ir::inst::Space;
use crate::ir::{FunctionIr, InstId, ValueId};
use crate::memory::{Access, AccessFact, Evals, Query};
use rustc_hash::FxHashMap;

/// An access of a device function, in one call context, for its caller's
/// race check ([`crate::races::Imported`]): through parameter `param`, at
/// each calling thread's offset from that parameter's value. Exported only
/// where the function executes no barrier and calls nothing, and the
/// address depends on no scalar parameter the call passes a uniform
/// variable for (the callee's own symbol: its sampled value is not the
/// caller's).
#[derive(Clone, Debug)]
pub struct Export {
    pub access: Access,
    pub param: usize,
    pub offsets: crate::races::Offsets,
}

/// A callee's access as its caller sees it: the export, and where it is.
#[derive(Clone, Debug)]
pub struct CalleeAccess {
    /// The callee (index in the module) and its name as written.
    pub function: usize,
    pub callee: String,
    pub ptx_line: u32,
    pub ptx_col: u32,
    pub span: Option<crate::srcmap::SrcPos>,
    pub export: Export,
}

/// The accesses of the device functions a function calls, by call
/// instruction (from the callees' call contexts).
pub type Imports = FxHashMap<InstId, Vec<CalleeAccess>>;

/// A direct call of a device function defined in the module, with what
/// it passes: the context the callee is analysed in for this call.
#[derive(Clone, Debug)]
pub struct CallFact<'a> {
    pub inst: InstId,
    pub callee: &'a str,
    pub args: CallArgs,
}

/// The calls `f` makes (reachable ones): each argument's abstract value
/// and, when it is thread-dependent, its value in every thread (block 0,
/// first iteration; parameters the caller cannot evaluate stay unknown),
/// and the threads that reach the call.
pub(super) fn call_facts<'a>(
    f: &FunctionIr<'a>,
    d: &Divergence,
    sums: &Summaries<'a>,
    evals: &Evals<'_, 'a>,
    lanes: &mut Lanes<'_, 'a, '_>,
) -> Vec<CallFact<'a>> {
    let mut out = Vec::new();
    for (i, inst) in f.insts.iter_enumerated() {
        let Some(callee) = inst.call_target().filter(|t| sums.defined.contains(t)) else { continue };
        let b = f.cfg.block_of(i);
        if !f.cfg.reachable(b) {
            continue;
        }
        let konst = |k: i64| Some(ArgValue { abs: AbsVal::konst(k), lanes: None, space: crate::ir::space::Fact::UNKNOWN });
        let params = inst
            .call_args()
            .iter()
            .map(|a| match a {
                crate::ptx::Operand::Sym(name) => {
                    let store = f.call_argument_store(i, name)?;
                    match f.insts[store].operand(1) {
                        // a constant stored for the call
                        Some(crate::ptx::Operand::Imm(k)) => konst(*k),
                        _ => {
                            let v = argument_value(f, i, name)?;
                            let abs = d.at(f, v, b);
                            let q = Query { leading: None, ctaid: [0; 3], scalar: None, iteration: 0, pin: None };
                            let lanes = if abs.is_uniform() || abs.data() { None } else { evals.eval(v, q) };
                            Some(ArgValue {
                                abs: abs.without_symbols(),
                                lanes: lanes.map(|x| std::sync::Arc::new(x.as_ref().clone())),
                                space: f.spaces.fact(v),
                            })
                        }
                    }
                }
                crate::ptx::Operand::Imm(k) => konst(*k),
                _ => None,
            })
            .collect();
        out.push(CallFact { inst: i, callee, args: CallArgs { params, active: lanes.active(b, 0).as_ref().clone() } });
    }
    out
}

/// The value call `i` passes for its argument `name` (stored into the
/// `.param` variable just before the call), if a register.
fn argument_value(f: &FunctionIr<'_>, i: InstId, name: &str) -> Option<ValueId> {
    f.operand_value(f.call_argument_store(i, name)?, 1)
}

/// What a device function analysed in a call context gives its caller's
/// race check: its global and shared accesses through a pointer
/// parameter, at each calling thread's offset from the pointer (see
/// [`Export`] for when there are none).
pub(super) fn exports(
    f: &FunctionIr<'_>,
    d: &Divergence,
    sums: &Summaries<'_>,
    evals: &Evals<'_, '_>,
    lanes: &mut Lanes<'_, '_, '_>,
    accesses: &[AccessFact],
) -> Vec<Export> {
    let calls = f.insts.iter().any(|i| i.call_target().is_some());
    if d.call.active.is_none() || calls || sums.has_barrier.contains(f.func.name) || f.cfg.is_irreducible() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for x in accesses.iter().filter(|x| x.reached && matches!(x.access.space, Space::Global | Space::Shared)) {
        let a = &x.access;
        let Some(v) = a.addr_value else { continue };
        let root = crate::ir::values::root(f, v);
        let crate::ir::ValueDef::Inst { inst, .. } = f.ssa.values[root] else { continue };
        let Some((p, 0)) = f.insts[inst].param_read() else { continue };
        let Some(param) = f.func.params.iter().position(|x| x.name == p) else { continue };
        // a uniform argument is the callee's own symbol, sampled apart from the caller's value
        let known = |p: &ValueId| d.call.values.get(p).is_some_and(|a| a.lanes.is_some() || a.abs.const_value().is_some());
        if !crate::ir::values::scalar_parameters(f, v).iter().all(known) {
            continue;
        }
        let block = f.cfg.block_of(a.inst);
        let offsets = [0, 1].map(|it| {
            let q = Query::block(it);
            let (addr, base) = (evals.eval(v, q)?, evals.eval(root, q)?);
            let on = lanes.active(block, it);
            Some(std::sync::Arc::new(
                addr.iter().zip(base.iter()).zip(on.iter()).map(|((x, r), &on)| on.then_some(x - r + a.offset)).collect(),
            ))
        });
        if offsets.iter().any(Option::is_some) {
            out.push(Export { access: a.clone(), param, offsets });
        }
    }
    out
}

/// The callees' exported accesses at the calls that make them (`imports`),
/// through the arguments the calls pass: each as the caller sees it
/// (`races::Imported`), with the callee access it is.
pub(super) fn place(f: &FunctionIr<'_>, d: &Divergence, imports: &Imports) -> (Vec<crate::races::Imported>, Vec<CalleeAccess>) {
    let mut imported: Vec<CalleeAccess> = Vec::new();
    let mut placed: Vec<crate::races::Imported> = Vec::new();
    let mut calls_sorted: Vec<(&InstId, &Vec<CalleeAccess>)> = imports.iter().collect();
    calls_sorted.sort_by_key(|(i, _)| **i);
    for (&call, xs) in calls_sorted {
        let args = f.insts[call].call_args();
        for x in xs {
            let Some(crate::ptx::Operand::Sym(name)) = args.get(x.export.param) else { continue };
            let Some(v) = argument_value(f, call, name) else { continue };
            let access =
                Access { inst: call, addr: d.at(f, v, f.cfg.block_of(call)), addr_value: Some(v), offset: 0, ..x.export.access.clone() };
            placed.push(crate::races::Imported { access, offsets: x.export.offsets.clone() });
            imported.push(x.clone());
        }
    }
    (placed, imported)
}
