//! What checking a module returns: the findings, and every prediction the
//! analysis made (access costs, branch splits, barriers, races, access
//! groups) with the coverage of each function's memory instructions, so
//! that `confirm` can judge each prediction against a run.
//!
//! Owns: these types, typed (spaces, access kinds, race kinds and the
//! reasons an instruction was not analysed are enums, never strings).
//! Does not own: computing them (`crate::driver` from `crate::facts`).

use crate::facts::Skip;
use crate::interp::SiteKey;
use crate::ir::inst::{AccessKind, Space};
use crate::lints::Finding;
use crate::model::ShapeSource;
use crate::races::RaceKind;
use crate::srcmap::SrcPos;

/// Where a reported instruction is: its function, its place in the PTX,
/// and its source position.
#[derive(Clone, Debug)]
pub struct Site {
    pub kernel: String,
    /// The function (index in `ptx::Module::functions`) and instruction
    /// (index in its body), as the interpreter's `SiteKey` numbers them.
    pub function: usize,
    pub inst: usize,
    pub ptx_line: u32,
    pub span: Option<SrcPos>,
    /// The call site the code at `span` was inlined at, when it is in the
    /// package too (tells apart two calls of one helper).
    pub via: Option<SrcPos>,
}

impl Site {
    /// The site as the interpreter and `confirm` number it.
    pub fn key(&self) -> SiteKey {
        SiteKey { func: self.function, inst: self.inst }
    }
}

/// The predicted cost of one memory access site (reported or not).
#[derive(Clone, Debug)]
pub struct AccessReport {
    pub site: Site,
    pub space: Space,
    pub kind: AccessKind,
    pub width: u32,
    /// Global: (typical, worst) sectors per request and the ideal.
    pub sectors: Option<(u32, u32, u32)>,
    /// Global: the typical sectors per request when a runtime row pitch or
    /// offset misaligns the warps' rows (only when that costs more).
    pub misaligned: Option<u32>,
    /// Global: the lane stride is a value read from memory; `sectors` is
    /// for a large one, this for 1.
    pub sectors_at_stride_one: Option<u32>,
    /// Global: `sectors` were computed with a lane stride in an unknown
    /// value taken as large (`facts::Assumed::Stride`): a run with a
    /// smaller one moves fewer, down to the ideal.
    pub assumed_stride: bool,
    /// Shared: (typical, worst) conflict degree.
    pub conflict: Option<(u32, u32)>,
    pub requests: usize,
    /// Why there is no prediction (data-dependent address), if so.
    pub unpredictable: bool,
    /// Its cost beyond the ideal (sectors past the ideal, a conflict's
    /// replays) as a share of its space's predicted cost in one block of
    /// the kernel, each access weighted by how often it issues (lowest,
    /// highest over unknown trip counts: `KernelFacts::impact`; single
    /// precision, as there is one per access site).
    pub impact: Option<(f32, f32)>,
}

/// What the analysis predicts for one conditional branch: how many warps
/// of a block take both of its sides.
#[derive(Clone, Debug, PartialEq)]
pub enum BranchPrediction {
    /// The condition is the same in every lane of each warp: no warp splits.
    Uniform,
    /// Exactly this many warps of every block split (the condition was
    /// evaluated for every thread; nothing was sampled).
    Splits(usize),
    /// This many split for the sampled values (loop counters, block
    /// indices, parameters) named; other values may split other warps.
    Sampled { warps: usize, values: Vec<(String, i64)> },
    /// At most this many (a bound of the condition is not known statically).
    AtMost(usize),
    /// A loop exit whose trip count differs between the lanes of a warp.
    TripCount,
    /// Depends on loaded data or on something that cannot be evaluated.
    Unknown,
}

/// A conditional branch with its prediction (reported or not).
#[derive(Clone, Debug)]
pub struct BranchReport {
    pub site: Site,
    /// Warps per block of the shape the prediction is for.
    pub warps: usize,
    pub prediction: BranchPrediction,
    /// The share of the kernel's lane-slots its splits leave idle (lowest,
    /// highest over the trip counts not known), where every thread's
    /// direction is known (`crate::facts::slots`).
    pub idle_share: Option<(f64, f64)>,
}

/// A barrier (or a call that executes one) with the prediction whether
/// every thread of the block reaches it.
#[derive(Clone, Debug)]
pub struct BarrierReport {
    pub site: Site,
    /// Part of the block skips it (`barrier_divergence`).
    pub divergent: bool,
    /// The parameter values it needs to (`None`: every launch).
    pub condition: Option<Box<Condition>>,
}

/// What a race or a barrier divergence needs of a scalar parameter (the
/// condition its finding states), for `confirm` to tell a launch outside
/// it ("condition not met") from one where it did not show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// The parameter: its index, and its name as messages give it.
    pub param: usize,
    pub name: String,
    pub needs: Needs,
    /// How an argument's bits read: the parameter's width and signedness.
    pub bits: u32,
    pub signed: bool,
}

/// The values a [`Condition`] needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// `lo ≤ p ≤ hi` (a side `None`: open). `exact`: every such value
    /// does (else some only, and a value inside decides nothing).
    Range { lo: Option<i64>, hi: Option<i64>, exact: bool },
    /// `p` not a multiple of `period` (and below `below`).
    NotMultiple { period: i64, below: Option<i64> },
}

impl Condition {
    /// The launch's value of the parameter, from its arguments.
    pub fn value(&self, args: &[crate::interp::Arg]) -> Option<i64> {
        let crate::interp::Arg::Bits(b) = args.get(self.param)? else { return None };
        let bits = self.bits.clamp(1, 64);
        let shift = 64 - bits;
        Some(if self.signed { ((*b << shift) as i64) >> shift } else { ((*b << shift) >> shift) as i64 })
    }

    /// Does the launch's value meet it? `None`: not known (no value, or
    /// inside a range only some of whose values do).
    pub fn met(&self, args: &[crate::interp::Arg]) -> Option<bool> {
        let v = self.value(args)?;
        match self.needs {
            Needs::Range { lo, hi, exact } => {
                let inside = lo.is_none_or(|l| l <= v) && hi.is_none_or(|h| v <= h);
                if inside && !exact {
                    None
                } else {
                    Some(inside)
                }
            }
            Needs::NotMultiple { period, below } => Some(v.rem_euclid(period.max(1)) != 0 && below.is_none_or(|b| v < b)),
        }
    }

    /// What it needs, as the finding states it (`` `C` ≥ 129 ``).
    pub fn describe(&self) -> String {
        let p = format!("`{}`", self.name);
        match self.needs {
            Needs::Range { lo: Some(l), hi: Some(h), .. } if l == h => format!("{p} = {l}"),
            Needs::Range { lo: Some(l), hi: Some(h), exact: true } => format!("{l} ≤ {p} ≤ {h}"),
            Needs::Range { lo: Some(l), hi: Some(h), exact: false } => format!("{p} one of some values from {l} to {h}"),
            Needs::Range { lo: Some(l), hi: None, .. } => format!("{p} ≥ {l}"),
            Needs::Range { lo: None, hi: Some(h), .. } => format!("{p} ≤ {h}"),
            Needs::Range { lo: None, hi: None, .. } => format!("some value of {p}"),
            Needs::NotMultiple { period, below: None } => format!("{p} not a multiple of {period}"),
            Needs::NotMultiple { period, below: Some(b) } => format!("{p} < {b} not a multiple of {period}"),
        }
    }
}

/// A warp's footprint over a group of accesses to one array in one loop
/// iteration (`memory::footprint`): the union of their sectors per warp.
#[derive(Clone, Debug)]
pub struct GroupReport {
    pub kernel: String,
    pub function: usize,
    /// The members (instruction indices), in order.
    pub members: Vec<usize>,
    /// Loads (judged together, through L1) or stores.
    pub loads: bool,
    /// Sectors of the union per warp: (typical, worst); the ideal; bytes used.
    pub sectors: (u32, u32),
    /// In a loop that steps the members off their alignment: the typical
    /// sectors from the second iteration on, when they differ.
    pub later: Option<u32>,
    pub ideal: u32,
    pub bytes_used: u32,
}

/// A predicted race between two accesses of one function.
#[derive(Clone, Debug)]
pub struct RaceReport {
    pub kernel: String,
    pub function: usize,
    /// The first (writing) and second access (instruction indices), each
    /// in its function: `function`'s own, or a device function it calls.
    pub first: usize,
    pub second: usize,
    pub first_function: usize,
    pub second_function: usize,
    pub kind: RaceKind,
    pub space: Space,
    /// The witness threads (linear ids in the block) of `first` and `second`,
    /// as the finding names them.
    pub threads: (usize, usize),
    /// Safe in practice (`benign_race`), and why.
    pub benign: Option<crate::races::Benign>,
    /// Between threads of two blocks (`grid_memory_race`): `threads` are
    /// in block 0 and in the block next to it.
    pub between_blocks: bool,
    /// The parameter values it needs (`None`: every launch, or a relation
    /// between two parameters); boxed, as most races have none.
    pub condition: Option<Box<Condition>>,
}

/// A pair a last-block election orders without a fence: the counter
/// atomic, the access before it (in every block) and the elected block's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnfencedReport {
    pub ticket: SiteKey,
    pub published: SiteKey,
    pub elected: SiteKey,
}

/// The result of checking one PTX module.
#[derive(Debug, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// Kernels (`.entry`) and device functions with bodies analysed.
    pub functions: usize,
    pub kernels: usize,
    pub instructions: usize,
    /// Whether DWARF inline information was found and decoded.
    pub has_dwarf: bool,
    /// Every global and shared access with its prediction.
    pub accesses: Vec<AccessReport>,
    /// Every conditional branch with its prediction.
    pub branches: Vec<BranchReport>,
    /// Every predicted race.
    pub races: Vec<RaceReport>,
    /// Every reachable barrier with its prediction.
    pub barriers: Vec<BarrierReport>,
    /// Every access group's footprint prediction.
    pub groups: Vec<GroupReport>,
    /// The kernels' names (as in the PTX), in module order.
    pub kernel_names: Vec<String>,
    /// The source files the PTX's line information names (`.file`), each once.
    pub sources: Vec<String>,
    /// How each function's memory instructions were analysed.
    pub coverage: Vec<CoverageReport>,
    /// Plain loads that only seed a compare-and-swap loop on their address
    /// (an atomic the hardware lacks, emulated), each with that CAS: the
    /// analysis pairs neither as a race; a run may see them touch the same
    /// bytes.
    pub cas_seeds: Vec<(SiteKey, SiteKey)>,
    /// Pairs of accesses of two blocks that a last-block election orders
    /// with no fence between the earlier one and its block's ticket
    /// (`missing_threadfence`): not races; a run sees them ordered by the
    /// ticket, unfenced.
    pub unfenced: Vec<UnfencedReport>,
    /// Function analyses the check ran: one per kernel and per function
    /// analysed for every caller, one per distinct call context of a
    /// device function.
    pub analyses: usize,
    /// Kernels whose `.reqntid` asks for more threads than a block can
    /// have (no launch runs them; checked with another shape), with it.
    pub unlaunchable: Vec<(String, [u32; 3])>,
    /// `.shared` arrays sized at launch (`extern __shared__`) that no
    /// dynamic shared size was given for (`Options::dynamic_shared`): not
    /// checked for out-of-bounds or uninitialised reads.
    pub unsized_shared: Vec<String>,
}

impl Report {
    /// The access report of a site, if the analysis made one.
    pub fn access_at(&self, k: SiteKey) -> Option<&AccessReport> {
        self.accesses.iter().find(|a| a.site.key() == k)
    }
}

/// How the memory instructions (`ld`/`ldu`/`st`/`atom`/`red`, vector forms
/// included) of one function were analysed; the categories add up to
/// `total`.
#[derive(Clone, Debug, Default)]
pub struct CoverageReport {
    /// The function's name (demangled).
    pub kernel: String,
    pub function: usize,
    /// A kernel (`.entry`), else a device function.
    pub entry: bool,
    /// Instructions in the function's body.
    pub instructions: usize,
    /// The block shape the function was analysed for, and where it came from.
    pub block: [u32; 3],
    pub shape_source: ShapeSource,
    /// The calls (from kernels, through direct calls) a device function
    /// was analysed for (0: once for every caller, its parameters unknown),
    /// and the analyses that took: calls with the same arguments, threads
    /// and shape share one.
    pub contexts: usize,
    pub context_analyses: usize,
    pub total: usize,
    pub predicted: usize,
    pub data_dependent: usize,
    /// Local, constant and parameter memory (no coalescing question).
    pub other_space: usize,
    /// Predicted or data-dependent accesses whose space is not known,
    /// analysed as global.
    pub assumed_global: Vec<Site>,
    /// Not analysed, each with its reason.
    pub skipped: Vec<SkippedSite>,
}

impl CoverageReport {
    /// Not analysed, per reason, in a stable order.
    pub fn not_analysed(&self) -> Vec<(Skip, usize)> {
        let mut by: std::collections::BTreeMap<&'static str, (Skip, usize)> = Default::default();
        for s in &self.skipped {
            by.entry(s.skip.key()).or_insert((s.skip, 0)).1 += 1;
        }
        by.into_values().collect()
    }
}

/// A memory instruction that was not analysed, and why.
#[derive(Clone, Debug)]
pub struct SkippedSite {
    pub site: Site,
    pub skip: Skip,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::Arg;

    #[test]
    fn a_condition_reads_the_argument_as_its_type_and_judges_it() {
        let c = |needs, bits, signed| Condition { param: 1, name: "n".into(), needs, bits, signed };
        let args = |v: u64| vec![Arg::Bits(0), Arg::Bits(v)];
        let at_least = c(Needs::Range { lo: Some(129), hi: None, exact: true }, 32, false);
        assert_eq!((at_least.met(&args(128)), at_least.met(&args(129))), (Some(false), Some(true)));
        assert_eq!(at_least.describe(), "`n` ≥ 129");
        // a signed 32-bit -1 is below any bound, not 4294967295
        let signed = c(Needs::Range { lo: Some(0), hi: Some(10), exact: false }, 32, true);
        assert_eq!(signed.value(&args(0xffff_ffff)), Some(-1));
        assert_eq!(signed.met(&args(0xffff_ffff)), Some(false));
        // inside a range only some of whose values race: not known
        assert_eq!(signed.met(&args(5)), None);
        let split = c(Needs::NotMultiple { period: 256, below: Some(1024) }, 32, false);
        assert_eq!((split.met(&args(1000)), split.met(&args(1024)), split.met(&args(512))), (Some(true), Some(false), Some(false)));
        // no value: nothing to judge
        assert_eq!(split.met(&[Arg::Bits(0)]), None);
    }
}
