//! The CUDA engine: the kernel on a real NVIDIA GPU through the CUDA driver
//! (`cudarc`, loaded at run time: the tool builds and runs without CUDA and
//! says "no CUDA driver found" there). Runs the instrumented copy of the
//! PTX (see `instrument`) for the per-site histograms, then the
//! uninstrumented copy (DWARF sections dropped) timed with CUDA events.
//!
//! Owns: device setup, buffers, launches, reading the counters back. Does
//! not own: the instrumentation or the comparison.

use super::instrument::{self, COUNTERS, SLOTS};
use super::launch::Prepared;
use super::{Seen, SiteSeen};
use anyhow::{anyhow, Context, Result};
use gpucheck_analysis::interp::Launch;
use gpucheck_analysis::interp::{Histogram, SiteKey};
use gpucheck_analysis::ptx;
use std::collections::BTreeMap;

#[cfg(feature = "cuda")]
pub use device::run;

/// Without the `cuda` feature there is no driver binding: say so.
#[cfg(not(feature = "cuda"))]
pub fn run(_src: &str, _m: &ptx::Module<'_>, _kernel: &str, _l: &Launch, _p: &Prepared) -> Result<Seen> {
    anyhow::bail!("this cargo-gpucheck was built without the `cuda` feature (the CUDA driver binding): reinstall it with default features, or use `--engine cpu`")
}

/// The driver binding (`cudarc`), present with the default `cuda` feature.
#[cfg(feature = "cuda")]
mod device {
    use super::*;
    use anyhow::bail;
    use cudarc::driver::{CudaContext, CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
    use cudarc::nvrtc::Ptx;
    use gpucheck_analysis::interp::Arg;
    use gpucheck_analysis::ir::inst::Ty;

    /// A 64-bit integer parameter: a pointer, or a scalar of that size.
    fn pointer_sized(ty: &str) -> bool {
        Ty::of_decl(ty).is_some_and(|t| t.bits() == 64 && !t.is_float())
    }

    /// Whether the CUDA driver library can be loaded here.
    pub fn driver_present() -> bool {
        // SAFETY: only tries to open the shared library
        unsafe { cudarc::driver::sys::is_culib_present() }
    }

    /// A scalar kernel argument at its PTX size.
    enum Scalar {
        B8(u8),
        B16(u16),
        B32(u32),
        B64(u64),
        /// The index of an aggregate's bytes.
        Aggregate(usize),
    }

    /// The most bytes an aggregate argument may have (the kernel parameter
    /// space of sm_70 and later is 4 KiB).
    const PARAM_BYTES: usize = 4096;

    /// An aggregate argument's bytes: the driver copies as many as the
    /// kernel's parameter declares from the start.
    #[repr(C, align(16))]
    struct ParamBytes([u8; PARAM_BYTES]);

    // SAFETY: plain bytes, passed by pointer; the driver reads the parameter's declared size
    unsafe impl cudarc::driver::DeviceRepr for ParamBytes {}

    fn d<E: std::fmt::Debug>(what: &'static str) -> impl Fn(E) -> anyhow::Error {
        move |e| anyhow!("CUDA: {what}: {e:?}")
    }

    pub fn run(src: &str, m: &ptx::Module<'_>, kernel: &str, l: &Launch, p: &Prepared) -> Result<Seen> {
        if !driver_present() {
            bail!(
            "no CUDA driver found (libcuda could not be loaded): run on a machine with an NVIDIA GPU and its driver, or use `--engine cpu`"
        );
        }
        let started = std::time::Instant::now();
        let ctx = CudaContext::new(0).map_err(d("creating a context on device 0"))?;
        let (major, minor) = ctx.compute_capability().map_err(d("reading the compute capability"))?;
        let arch = format!("sm_{major}{minor}");
        let stream = ctx.default_stream();
        let f = m.functions.iter().find(|f| f.name == kernel && f.is_entry).with_context(|| format!("no kernel `{kernel}`"))?;
        let cfg = LaunchConfig {
            grid_dim: (l.grid[0], l.grid[1], l.grid[2]),
            block_dim: (l.block[0], l.block[1], l.block[2]),
            shared_mem_bytes: l.dynamic_shared,
        };

        let cooperative = gpucheck_analysis::interp::synchronises_grid(m, kernel);
        // one launch: fresh copies of the inputs, the kernel's arguments in PTX order
        let launch = |ptx_text: String, timed: bool| -> Result<(Option<f32>, Option<Vec<u8>>)> {
            let module = ctx.load_module(Ptx::from_src(ptx_text)).map_err(d("loading the PTX"))?;
            let func = module.load_function(kernel).map_err(d("finding the kernel"))?;
            let slices: Vec<CudaSlice<u8>> = p
                .buffers
                .iter()
                .map(|b| if b.bytes.is_empty() { stream.alloc_zeros::<u8>(1) } else { stream.clone_htod(&b.bytes) })
                .collect::<Result<_, _>>()
                .map_err(d("copying the inputs"))?;
            let mut scalars: Vec<Option<Scalar>> = Vec::new();
            let mut which: Vec<Option<usize>> = Vec::new();
            // aggregates (structs by value), their pointer fields set to the device buffers
            let mut aggregates: Vec<Box<ParamBytes>> = Vec::new();
            for (k, arg) in p.args.iter().enumerate() {
                let Arg::Bytes(image) = arg else { continue };
                if image.len() > PARAM_BYTES {
                    bail!("an aggregate parameter of {} bytes is larger than the {PARAM_BYTES} the CUDA engine passes", image.len());
                }
                let mut bytes = Box::new(ParamBytes([0; PARAM_BYTES]));
                bytes.0[..image.len()].copy_from_slice(image);
                for &(_, offset, b) in p.pointer_fields.iter().filter(|x| x.0 == k) {
                    let (ptr, _sync) = slices[b].device_ptr(&stream);
                    bytes.0[offset..offset + 8].copy_from_slice(&ptr.to_le_bytes());
                }
                aggregates.push(bytes);
            }
            let mut next_aggregate = 0;
            for (param, arg) in f.params.iter().zip(&p.args) {
                let buffer = match arg {
                    Arg::Bits(bits) => p.buffers.iter().position(|b| b.addr == *bits && pointer_sized(param.ty)),
                    Arg::Bytes(_) => {
                        scalars.push(Some(Scalar::Aggregate(next_aggregate)));
                        which.push(None);
                        next_aggregate += 1;
                        continue;
                    }
                };
                which.push(buffer);
                let bits = match arg {
                    Arg::Bits(b) => *b,
                    Arg::Bytes(_) => 0,
                };
                scalars.push(match (buffer, Ty::of_decl(param.ty).map(Ty::bytes)) {
                    (Some(_), _) => None,
                    (None, Some(1)) => Some(Scalar::B8(bits as u8)),
                    (None, Some(2)) => Some(Scalar::B16(bits as u16)),
                    (None, Some(4)) => Some(Scalar::B32(bits as u32)),
                    (None, _) => Some(Scalar::B64(bits)),
                });
            }
            let mut lb = stream.launch_builder(&func);
            for (k, s) in which.iter().zip(&scalars) {
                match (k, s) {
                    (Some(k), _) => {
                        lb.arg(&slices[*k]);
                    }
                    (None, Some(Scalar::B8(v))) => {
                        lb.arg(v);
                    }
                    (None, Some(Scalar::B16(v))) => {
                        lb.arg(v);
                    }
                    (None, Some(Scalar::B32(v))) => {
                        lb.arg(v);
                    }
                    (None, Some(Scalar::B64(v))) => {
                        lb.arg(v);
                    }
                    (None, Some(Scalar::Aggregate(a))) => {
                        lb.arg(&*aggregates[*a]);
                    }
                    (None, None) => {}
                }
            }
            if timed {
                lb.record_kernel_launch(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
            }
            // SAFETY: the arguments match the kernel's PTX parameters in number and size,
            // and pointers point into buffers of the sizes the user gave
            let events = if cooperative {
                // `grid.sync()` waits for every block: they must all be resident at once
                unsafe { lb.launch_cooperative(cfg) }.map_err(d("launching (cooperatively: the kernel synchronises its grid)"))?
            } else {
                unsafe { lb.launch(cfg) }.map_err(d("launching"))?
            };
            stream.synchronize().map_err(d("running the kernel"))?;
            let ms = match events {
                Some((a, b)) => Some(a.elapsed_ms(&b).map_err(d("timing"))?),
                None => None,
            };
            let counters = if timed {
                None
            } else {
                let g = module.get_global(COUNTERS, &stream).map_err(d("finding the counters"))?;
                Some(stream.clone_dtoh(&g).map_err(d("reading the counters"))?)
            };
            Ok((ms, counters))
        };

        let ins = instrument::instrument(src, Some(&arch)).map_err(|e| anyhow!("instrumenting the PTX: {e}"))?;
        let (_, counters) = launch(ins.ptx.clone(), false)?;
        let mut seen = Seen { sites: sites_from_counters(&ins, &counters.unwrap_or_default()), ..Seen::default() };
        // the uninstrumented kernel, timed
        let plain = instrument::retarget(&instrument::strip_dwarf(src), &arch);
        let (ms, _) = launch(plain, true)?;
        seen.kernel_ms = ms.map(|x| x as f64);
        seen.seconds = started.elapsed().as_secs_f64();
        Ok(seen)
    }
}

/// Per-site numbers of `kernel` from the counters an instrumented run
/// left, by the original PTX's instruction.
/// The module is loaded afresh for each run, so every site with a request
/// belongs to this kernel's run: its own, or a device function's it called.
pub fn sites_from_counters(ins: &instrument::Instrumented, counters: &[u8]) -> BTreeMap<SiteKey, (&'static str, SiteSeen)> {
    let word = |i: usize| counters.get(i * 8..i * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))).unwrap_or(0);
    let mut out = BTreeMap::new();
    for (k, site) in ins.sites.iter().enumerate() {
        let base = k * SLOTS;
        let requests = word(base);
        if requests == 0 {
            continue;
        }
        // the same summary (typical, max, mean) as the interpreter's own histograms
        let hist = Histogram { counts: (0..=32).map(|v| word(base + 1 + v)).collect() };
        out.insert(site.key, (site.space, SiteSeen::from(&hist)));
    }
    out
}

/// The instrumented PTX the CUDA engine would load, run on the CPU
/// interpreter instead: the counters it leaves must equal what the
/// interpreter observes directly, which checks the instrumentation without
/// a GPU.
pub fn run_instrumented_on_cpu(
    src: &str,
    kernel: &str,
    l: &Launch,
    p: &Prepared,
    mem: &mut gpucheck_analysis::interp::Global,
) -> Result<Seen> {
    let started = std::time::Instant::now();
    let ins = instrument::instrument(src, None).map_err(|e| anyhow!("instrumenting the PTX: {e}"))?;
    let m = ptx::parse(&ins.ptx).map_err(|e| anyhow!("the instrumented PTX does not parse: {e}"))?;
    let obs = match gpucheck_analysis::interp::run(&m, kernel, l, &p.args, mem) {
        Ok(obs) => obs,
        // an access past the block's shared memory (its thread's local memory) stops the run, as
        // it stops the uninstrumented one (whose row says so): no counters
        Err(e @ gpucheck_analysis::interp::InterpError::Fault { space: "shared" | "local", array_offset: Some(_), .. }) => {
            eprintln!("note: the run of `{kernel}` stopped: {e}: its counters are not read");
            return Ok(Seen { seconds: started.elapsed().as_secs_f64(), ..Seen::default() });
        }
        Err(e) => return Err(anyhow!("the CPU engine stopped on the instrumented PTX: {e}")),
    };
    let at = *obs.globals.get(COUNTERS).context("the instrumented module has no counters")?;
    let counters = mem.read(at, ins.sites.len().max(1) * SLOTS * 8).context("reading the counters")?;
    Ok(Seen {
        sites: sites_from_counters(&ins, &counters),
        lane_insts: obs.lane_insts,
        seconds: started.elapsed().as_secs_f64(),
        ..Seen::default()
    })
}
