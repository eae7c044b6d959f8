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
use super::{DeviceFault, Seen, SiteSeen};
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
    use cudarc::driver::{CudaContext, CudaSlice, DevicePtr, DriverError, LaunchConfig, PushKernelArg};
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

    /// A run the GPU stopped with a fault of the kernel's own (an illegal
    /// or misaligned address, a trap): the driver's words and name for it.
    #[derive(Debug)]
    struct Stopped(String);

    impl std::fmt::Display for Stopped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for Stopped {}

    /// Like [`d`], but an error the kernel itself caused is a [`Stopped`].
    fn ran(what: &'static str) -> impl Fn(DriverError) -> anyhow::Error {
        use cudarc::driver::sys::CUresult as R;
        move |e| match e.0 {
            R::CUDA_ERROR_ILLEGAL_ADDRESS
            | R::CUDA_ERROR_MISALIGNED_ADDRESS
            | R::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | R::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | R::CUDA_ERROR_INVALID_PC
            | R::CUDA_ERROR_HARDWARE_STACK_ERROR
            | R::CUDA_ERROR_ASSERT
            | R::CUDA_ERROR_LAUNCH_FAILED => {
                let name = e.error_name().map_or_else(|_| format!("{:?}", e.0), |n| n.to_string_lossy().into_owned());
                let words = e.error_string().map_or_else(|_| String::new(), |w| w.to_string_lossy().into_owned());
                anyhow::Error::new(Stopped(format!("{words} ({name})")))
            }
            _ => d(what)(e),
        }
    }

    /// Runs `kernel` on device 0, in a process of its own (see
    /// [`isolated`]): a fault of the kernel's own is said in
    /// [`Seen::fault`], and the next kernel runs on an unharmed driver.
    pub fn run(src: &str, m: &ptx::Module<'_>, kernel: &str, l: &Launch, p: &Prepared) -> Result<Seen> {
        if !driver_present() {
            bail!(
            "no CUDA driver found (libcuda could not be loaded): run on a machine with an NVIDIA GPU and its driver, or use `--engine cpu`"
        );
        }
        let started = std::time::Instant::now();
        let func = m.functions.iter().position(|f| f.name == kernel && f.is_entry).with_context(|| format!("no kernel `{kernel}`"))?;
        // the two texts are made here; the device's `.target` is set where it is known
        let ins = instrument::instrument(src, None).map_err(|e| anyhow!("instrumenting the PTX: {e}"))?;
        let plain = instrument::strip_dwarf(src);
        let raw = isolated(kernel, || on_device(m, func, l, p, &ins.ptx, &plain))?;
        Ok(Seen {
            sites: sites_from_counters(&ins, &raw.counters.unwrap_or_default()),
            kernel_ms: raw.ms.map(f64::from),
            fault: raw.stopped.map(|what| DeviceFault { func, what }),
            seconds: started.elapsed().as_secs_f64(),
            ..Seen::default()
        })
    }

    /// What one kernel's runs on the device gave: the instrumented run's
    /// counters, the timed run's milliseconds, and the fault that stopped
    /// either.
    #[derive(Debug, Default, PartialEq)]
    pub(super) struct Raw {
        pub counters: Option<Vec<u8>>,
        pub ms: Option<f32>,
        pub stopped: Option<String>,
    }

    impl Raw {
        /// The bytes a run's process hands back: `ok` or `error` on the
        /// first line; then `ms`, `stopped` and `counters N` lines, the
        /// last followed by its N bytes.
        pub(super) fn encode(r: &Result<Raw>) -> Vec<u8> {
            let r = match r {
                Ok(r) => r,
                Err(e) => return format!("error\n{e:#}").into_bytes(),
            };
            let mut out = b"ok\n".to_vec();
            if let Some(ms) = r.ms {
                out.extend(format!("ms {}\n", ms.to_bits()).bytes());
            }
            if let Some(what) = &r.stopped {
                out.extend(format!("stopped {}\n", what.replace('\n', " ")).bytes());
            }
            if let Some(c) = &r.counters {
                out.extend(format!("counters {}\n", c.len()).bytes());
                out.extend(c);
            }
            out
        }

        /// [`Raw::encode`]'s bytes read back.
        pub(super) fn decode(mut b: &[u8]) -> Result<Raw> {
            // the next line, `b` moved past it
            fn line(b: &mut &[u8]) -> String {
                let end = b.iter().position(|&c| c == b'\n').unwrap_or(b.len());
                let l = String::from_utf8_lossy(&b[..end]).into_owned();
                *b = b.get(end + 1..).unwrap_or_default();
                l
            }
            match line(&mut b).as_str() {
                "ok" => {}
                "error" => bail!("{}", String::from_utf8_lossy(b)),
                _ => bail!("the CUDA run's process handed back no result"),
            }
            let mut raw = Raw::default();
            while !b.is_empty() {
                let l = line(&mut b);
                if let Some(bits) = l.strip_prefix("ms ") {
                    raw.ms = bits.parse().ok().map(f32::from_bits);
                } else if let Some(what) = l.strip_prefix("stopped ") {
                    raw.stopped = Some(what.to_string());
                } else if let Some(n) = l.strip_prefix("counters ").and_then(|n| n.parse::<usize>().ok()) {
                    let bytes = b.get(..n).context("the CUDA run's counters are cut short")?;
                    raw.counters = Some(bytes.to_vec());
                    b = &b[n..];
                } else {
                    bail!("the CUDA run's process handed back `{l}`");
                }
            }
            Ok(raw)
        }
    }

    /// `work` in a child process: a fault of the kernel's own makes the
    /// driver refuse every later call of the process that ran it, a new
    /// context included. This process never initialises the driver (only
    /// sees that its library is there), so each child starts with an
    /// unharmed one; the child hands back [`Raw::encode`]'s bytes through
    /// a pipe and ends.
    #[cfg(unix)]
    fn isolated(kernel: &str, work: impl FnOnce() -> Result<Raw>) -> Result<Raw> {
        use std::io::{Read, Write};
        use std::os::fd::FromRawFd;
        let mut fds = [0; 2];
        // SAFETY: a pipe into two fresh descriptors
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            bail!("making a pipe for the CUDA run: {}", std::io::Error::last_os_error());
        }
        // nothing written but not yet flushed is printed twice
        let _ = std::io::stdout().flush();
        // SAFETY: the child runs `work` on this thread alone (no thread pool: the texts are made
        // here) and ends with `_exit`, running no destructor or exit handler of this process
        match unsafe { libc::fork() } {
            -1 => {
                let e = std::io::Error::last_os_error();
                // SAFETY: both ends are this process's, unused
                for fd in fds {
                    unsafe { libc::close(fd) };
                }
                bail!("starting the CUDA run's process: {e}")
            }
            0 => {
                // SAFETY: the child's own ends of the pipe
                unsafe { libc::close(fds[0]) };
                let r =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|_| Err(anyhow!("the CUDA run panicked")));
                let mut to = unsafe { std::fs::File::from_raw_fd(fds[1]) };
                let code = to.write_all(&Raw::encode(&r)).is_err() as i32;
                drop(to);
                // SAFETY: ends the child without unwinding into the parent's code
                unsafe { libc::_exit(code) }
            }
            child => {
                // SAFETY: the parent's own ends of the pipe
                unsafe { libc::close(fds[1]) };
                let mut from = unsafe { std::fs::File::from_raw_fd(fds[0]) };
                let mut bytes = Vec::new();
                let read = from.read_to_end(&mut bytes);
                let mut status = 0;
                // SAFETY: waits for the child just started
                unsafe { libc::waitpid(child, &mut status, 0) };
                read.context("reading the CUDA run's result")?;
                if bytes.is_empty() {
                    bail!("the process that ran `{kernel}` on the GPU ended without a result (wait status {status})");
                }
                Raw::decode(&bytes)
            }
        }
    }

    /// Elsewhere the run is this process's own.
    #[cfg(not(unix))]
    fn isolated(_kernel: &str, work: impl FnOnce() -> Result<Raw>) -> Result<Raw> {
        work()
    }

    /// One kernel's two runs on device 0 (the function at `func`): the
    /// instrumented text, then the plain one timed, each given the
    /// device's `.target`. A fault stops them; what was read before it is
    /// kept.
    fn on_device(m: &ptx::Module<'_>, func: usize, l: &Launch, p: &Prepared, instrumented: &str, plain: &str) -> Result<Raw> {
        let f = &m.functions[func];
        let kernel = f.name;
        let ctx = CudaContext::new(0).map_err(d("creating a context on device 0"))?;
        let (major, minor) = ctx.compute_capability().map_err(d("reading the compute capability"))?;
        let arch = format!("sm_{major}{minor}");
        let stream = ctx.default_stream();
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
                unsafe { lb.launch_cooperative(cfg) }.map_err(ran("launching (cooperatively: the kernel synchronises its grid)"))?
            } else {
                unsafe { lb.launch(cfg) }.map_err(ran("launching"))?
            };
            stream.synchronize().map_err(ran("running the kernel"))?;
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

        let mut raw = Raw::default();
        for timed in [false, true] {
            // the uninstrumented kernel second, timed
            let text = instrument::retarget(if timed { plain } else { instrumented }, &arch);
            match launch(text, timed) {
                Ok((ms, counters)) => (raw.ms, raw.counters) = (ms.or(raw.ms), counters.or(raw.counters)),
                Err(e) => {
                    raw.stopped = Some(e.downcast::<Stopped>()?.0);
                    break;
                }
            }
        }
        Ok(raw)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn raw_results_cross_the_pipe() {
            let raw = || Raw { counters: Some(vec![0, 10, 255, 7]), ms: Some(0.125), stopped: Some("an illegal memory access (X)".into()) };
            assert_eq!(Raw::decode(&Raw::encode(&Ok(raw()))).unwrap(), raw());
            assert_eq!(Raw::decode(&Raw::encode(&Ok(Raw::default()))).unwrap(), Raw::default());
            let e = Raw::decode(&Raw::encode(&Err(anyhow!("CUDA: loading the PTX: bad")))).unwrap_err();
            assert_eq!(e.to_string(), "CUDA: loading the PTX: bad");
            assert!(Raw::decode(b"ok\ncounters 9\nabc").is_err(), "counters cut short");
        }

        /// The work runs in a child process: what it hands back arrives,
        /// and a child that dies says so.
        #[cfg(unix)]
        #[test]
        fn isolated_work_hands_back_its_result() {
            let pid = std::process::id();
            let raw = isolated("k", || Ok(Raw { ms: Some((std::process::id() != pid) as u8 as f32), ..Raw::default() })).unwrap();
            assert_eq!(raw.ms, Some(1.0), "ran in another process");
            assert!(isolated("k", || bail!("no context")).unwrap_err().to_string().contains("no context"));
            let e = isolated("k", || std::process::abort()).unwrap_err().to_string();
            assert!(e.contains("`k`") && e.contains("ended without a result"), "{e}");
        }
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
