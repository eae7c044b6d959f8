//! The CUDA engine (placeholder until the instrumented run lands).
use super::{launch::Prepared, Seen};
use anyhow::{bail, Result};
use gpucheck_analysis::interp::Launch;
use gpucheck_analysis::ptx;

pub fn run(_src: &str, _m: &ptx::Module<'_>, _kernel: &str, _l: &Launch, _p: &Prepared) -> Result<Seen> {
    bail!("the CUDA engine is not built yet")
}
