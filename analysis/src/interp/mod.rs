//! A warp-level PTX interpreter for confirmation runs (`cargo gpucheck
//! confirm --engine cpu`).
//!
//! Executes one kernel over a grid: warps of 32 lanes in lock-step with
//! active masks and a reconvergence stack (a divergent branch reconverges at
//! its block's immediate post-dominator), warps of a block interleaved
//! between barriers, blocks in parallel (rayon). Memories: device memory
//! (allocations made by the caller, plus the module's `.global`/`.const`
//! variables, zero-initialised), shared memory per block, local memory per
//! thread, the kernel's parameter buffer. Records per access site the
//! sectors per request (global) or conflict degree (shared) with the same
//! counting as the static prediction, per branch the warp executions and
//! how many split, barriers reached by part of a warp, and races between
//! threads of a block within a barrier interval (shadow memory).
//!
//! Owns: running PTX. Does not own: choosing inputs, comparing with
//! predictions or printing (that is `cargo gpucheck confirm`). Device
//! functions run in frames of their own; indirect calls and `.reg`
//! parameters stop the run with an error naming the instruction.

pub mod decode;
mod exec;
pub mod memory;

pub use memory::{Global, RaceSeen};

use crate::ptx::Module;
use std::collections::BTreeMap;
use std::fmt;

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum InterpError {
    /// An instruction the interpreter does not execute.
    Unsupported { line: u32, opcode: String, why: String },
    /// A load or store outside every allocation (instruction index `inst`).
    Fault { inst: usize, line: u32, addr: u64, len: u32, space: &'static str, thread: [u32; 3], block: [u32; 3] },
    /// `trap` (a Rust panic in the kernel).
    Trap { inst: usize, line: u32, thread: [u32; 3], block: [u32; 3] },
    /// The block ran past the instruction budget.
    Timeout { warp_insts: u64 },
    /// Warps wait at a barrier that the others never reach.
    Deadlock { line: u32 },
    /// The launch does not fit the kernel.
    Launch(String),
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InterpError::Unsupported { line, opcode, why } => write!(f, "PTX line {line}: `{opcode}`: {why}"),
            InterpError::Fault { line, addr, len, space, thread, block, .. } => write!(
                f,
                "PTX line {line}: out-of-bounds {space} access of {len} bytes at {addr:#x} by thread ({}, {}, {}) of block ({}, {}, {})",
                thread[0], thread[1], thread[2], block[0], block[1], block[2]
            ),
            InterpError::Trap { line, thread, block, .. } => write!(
                f,
                "PTX line {line}: `trap` (a panic in the kernel) by thread ({}, {}, {}) of block ({}, {}, {})",
                thread[0], thread[1], thread[2], block[0], block[1], block[2]
            ),
            InterpError::Timeout { warp_insts } => {
                write!(f, "a block did not finish within {warp_insts} warp instructions (an endless loop?)")
            }
            InterpError::Deadlock { line } => write!(f, "PTX line {line}: warps wait at a barrier the rest of the block never reaches"),
            InterpError::Launch(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for InterpError {}

/// A kernel argument: the bits of a scalar or pointer, or the bytes of a
/// `.param .b8 x[n]` aggregate.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Bits(u64),
    Bytes(Vec<u8>),
}

/// Grid and block shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory (`.extern .shared` arrays).
    pub dynamic_shared: u32,
}

/// What one memory access site did over the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SiteObs {
    /// `global` or `shared` (as resolved at run time).
    pub space: &'static str,
    /// Warp executions with at least one active lane.
    pub requests: u64,
    /// `hist[k]`: requests that touched `k` sectors (global) or had conflict degree `k` (shared).
    pub hist: Vec<u64>,
}

impl SiteObs {
    /// The most frequent value (ties: the larger), as the prediction's "typical".
    pub fn mode(&self) -> u32 {
        let mut best = (0u64, 0u32);
        for (k, &c) in self.hist.iter().enumerate() {
            if c > 0 && (c, k as u32) >= best {
                best = (c, k as u32);
            }
        }
        best.1
    }
    pub fn max(&self) -> u32 {
        self.hist.iter().rposition(|&c| c > 0).unwrap_or(0) as u32
    }
    pub fn mean(&self) -> f64 {
        let total: u64 = self.hist.iter().enumerate().map(|(k, &c)| k as u64 * c).sum();
        total as f64 / self.requests.max(1) as f64
    }
    fn add(&mut self, v: u32) {
        let k = v as usize;
        if self.hist.len() <= k {
            self.hist.resize(k + 1, 0);
        }
        self.hist[k] += 1;
        self.requests += 1;
    }
    fn merge(&mut self, o: &SiteObs) {
        if self.hist.len() < o.hist.len() {
            self.hist.resize(o.hist.len(), 0);
        }
        for (k, &c) in o.hist.iter().enumerate() {
            self.hist[k] += c;
        }
        self.requests += o.requests;
        if self.space.is_empty() {
            self.space = o.space;
        }
    }
}

/// What one conditional branch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BranchObs {
    /// Warp executions (at least one active lane).
    pub executions: u64,
    /// Executions where the active lanes went both ways.
    pub splits: u64,
}

/// Everything a run observed, keyed by instruction index in the kernel.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub sites: BTreeMap<usize, SiteObs>,
    pub branches: BTreeMap<usize, BranchObs>,
    /// Barriers reached while part of the warp was elsewhere: executions.
    pub divergent_barriers: BTreeMap<usize, u64>,
    pub races: Vec<RaceSeen>,
    pub warp_insts: u64,
    pub lane_insts: u64,
    /// PTX line of each instruction index of the kernel.
    pub inst_lines: Vec<u32>,
    /// Device address of each module `.global`/`.const` variable (to read results such as counters).
    pub globals: BTreeMap<String, u64>,
}

impl Observed {
    fn merge(&mut self, o: Observed) {
        for (k, v) in o.sites {
            self.sites.entry(k).or_default().merge(&v);
        }
        for (k, v) in o.branches {
            let e = self.branches.entry(k).or_default();
            e.executions += v.executions;
            e.splits += v.splits;
        }
        for (k, v) in o.divergent_barriers {
            *self.divergent_barriers.entry(k).or_default() += v;
        }
        for r in o.races {
            if !self.races.iter().any(|x| (x.kind, x.shared, x.first, x.second) == (r.kind, r.shared, r.first, r.second)) {
                self.races.push(r);
            }
        }
        self.warp_insts += o.warp_insts;
        self.lane_insts += o.lane_insts;
    }
}

/// Run kernel `name` of `module` with `args` (one per PTX parameter) over
/// `launch`, with device memory `mem` (allocate the buffers the pointer
/// arguments point to before). Returns what it observed; results are in `mem`.
pub fn run(module: &Module<'_>, name: &str, launch: &Launch, args: &[Arg], mem: &mut Global) -> Result<Observed, InterpError> {
    exec::run(module, name, launch, args, mem)
}
