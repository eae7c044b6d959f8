//! The CUDA engine: the kernel on a real NVIDIA GPU through the CUDA driver
//! (`cudarc`, loaded at run time: the tool builds and runs without CUDA and
//! says "no CUDA driver found" there). Runs the instrumented copy of the
//! PTX (see `instrument`) for the per-site histograms, then the
//! uninstrumented copy (DWARF sections dropped) timed with CUDA events.
//! Each kernel runs in a process of its own, this program started again
//! on a job file: a kernel's fault leaves the driver unusable for the
//! process that ran it.
//!
//! Owns: the kernel's process (the job, its result, its time limit),
//! device setup, buffers, launches, reading the counters back. Does not
//! own: the instrumentation or the comparison.

use super::instrument::{self, COUNTERS, SLOTS};
use super::launch::Prepared;
use super::{Seen, SiteSeen};
use anyhow::{anyhow, Context, Result};
use gpucheck_analysis::interp::Launch;
use gpucheck_analysis::interp::{Histogram, SiteKey};
use gpucheck_analysis::ptx;
use std::collections::BTreeMap;
use std::time::Duration;

#[cfg(feature = "cuda")]
pub use device::{job_main, run, JOB_ARG};

/// Without the `cuda` feature there is no driver binding: say so.
#[cfg(not(feature = "cuda"))]
pub fn run(_src: &str, _m: &ptx::Module<'_>, _kernel: &str, _l: &Launch, _p: &Prepared, _limit: Option<Duration>) -> Result<Seen> {
    anyhow::bail!("this cargo-gpucheck was built without the `cuda` feature (the CUDA driver binding): reinstall it with default features, or use `--engine cpu`")
}

/// The driver binding (`cudarc`), present with the default `cuda` feature.
#[cfg(feature = "cuda")]
mod device {
    use super::super::DeviceFault;
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
    /// A process still running after `limit` is stopped, and that is an
    /// error naming the kernel.
    pub fn run(src: &str, m: &ptx::Module<'_>, kernel: &str, l: &Launch, p: &Prepared, limit: Option<Duration>) -> Result<Seen> {
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
        let job = Job {
            src,
            kernel,
            launch: *l,
            args: &p.args,
            buffers: &p.buffers,
            pointer_fields: &p.pointer_fields,
            instrumented: &ins.ptx,
            plain: &plain,
        };
        let me = std::env::current_exe().context("finding this program, to run the kernel in a process of its own")?;
        let mut cmd = std::process::Command::new(me);
        cmd.arg(JOB_ARG);
        let raw = isolated(kernel, cmd, &job.encode(), limit)?;
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

    /// The argument that makes this program run one [`Job`] (see
    /// [`job_main`]) instead of a command: kept out of `--help`, it is
    /// only ever given by [`run`].
    pub const JOB_ARG: &str = "__gpucheck-cuda-job";

    /// What a kernel's process needs: the PTX as given (parsed again there
    /// for the kernel's parameters), the two texts to load, the launch and
    /// the arguments with their buffers' bytes.
    struct Job<'a> {
        src: &'a str,
        kernel: &'a str,
        launch: Launch,
        args: &'a [Arg],
        buffers: &'a [super::super::launch::Buffer],
        pointer_fields: &'a [(usize, usize, usize)],
        instrumented: &'a str,
        plain: &'a str,
    }

    /// The first bytes of a job file, with the layout's version.
    const JOB_MAGIC: &[u8] = b"gpucheck-cuda-job 1\n";

    impl Job<'_> {
        /// The job as bytes: [`JOB_MAGIC`], then numbers as 8 bytes little
        /// endian and byte strings as their length and bytes.
        fn encode(&self) -> Vec<u8> {
            let mut out = JOB_MAGIC.to_vec();
            let num = |out: &mut Vec<u8>, n: u64| out.extend(n.to_le_bytes());
            let bytes = |out: &mut Vec<u8>, b: &[u8]| {
                num(out, b.len() as u64);
                out.extend(b);
            };
            for text in [self.kernel, self.src, self.instrumented, self.plain] {
                bytes(&mut out, text.as_bytes());
            }
            for n in self.launch.grid.iter().chain(&self.launch.block).chain([&self.launch.dynamic_shared]) {
                num(&mut out, u64::from(*n));
            }
            num(&mut out, self.args.len() as u64);
            for a in self.args {
                match a {
                    Arg::Bits(b) => {
                        num(&mut out, 0);
                        num(&mut out, *b);
                    }
                    Arg::Bytes(b) => {
                        num(&mut out, 1);
                        bytes(&mut out, b);
                    }
                }
            }
            num(&mut out, self.buffers.len() as u64);
            for b in self.buffers {
                num(&mut out, b.addr);
                bytes(&mut out, &b.bytes);
            }
            num(&mut out, self.pointer_fields.len() as u64);
            for &(arg, offset, buffer) in self.pointer_fields {
                for n in [arg, offset, buffer] {
                    num(&mut out, n as u64);
                }
            }
            out
        }
    }

    /// A job's bytes read back: the texts, launch and [`Prepared`] that
    /// [`on_device`] takes.
    struct Decoded {
        kernel: String,
        src: String,
        instrumented: String,
        plain: String,
        launch: Launch,
        prepared: Prepared,
    }

    impl Decoded {
        fn from(b: &[u8]) -> Result<Decoded> {
            let mut r = Fields(b.strip_prefix(JOB_MAGIC).context("not a job of this version of cargo-gpucheck")?);
            let (kernel, src, instrumented, plain) = (r.text()?, r.text()?, r.text()?, r.text()?);
            let mut shape = [0u32; 7];
            for n in &mut shape {
                *n = u32::try_from(r.num()?)?;
            }
            let launch = Launch { grid: [shape[0], shape[1], shape[2]], block: [shape[3], shape[4], shape[5]], dynamic_shared: shape[6] };
            let mut args = Vec::new();
            for _ in 0..r.num()? {
                args.push(match r.num()? {
                    0 => Arg::Bits(r.num()?),
                    1 => Arg::Bytes(r.bytes()?.to_vec()),
                    t => return Err(anyhow!("the job has an argument of an unknown kind ({t})")),
                });
            }
            let mut buffers = Vec::new();
            for _ in 0..r.num()? {
                let addr = r.num()?;
                buffers.push(super::super::launch::Buffer { addr, bytes: r.bytes()?.to_vec(), name: String::new(), elem_bytes: 1 });
            }
            let mut pointer_fields = Vec::new();
            for _ in 0..r.num()? {
                pointer_fields.push((r.index()?, r.index()?, r.index()?));
            }
            Ok(Decoded {
                kernel,
                src,
                instrumented,
                plain,
                launch,
                prepared: Prepared { args, buffers, pointer_fields, shown: Vec::new() },
            })
        }
    }

    /// [`Job::encode`]'s fields read in order.
    struct Fields<'a>(&'a [u8]);

    impl<'a> Fields<'a> {
        fn num(&mut self) -> Result<u64> {
            let (n, rest) = self.0.split_first_chunk::<8>().context("the job is cut short")?;
            self.0 = rest;
            Ok(u64::from_le_bytes(*n))
        }

        fn index(&mut self) -> Result<usize> {
            Ok(usize::try_from(self.num()?)?)
        }

        fn bytes(&mut self) -> Result<&'a [u8]> {
            let n = self.index()?;
            let (taken, rest) = self.0.split_at_checked(n).context("the job is cut short")?;
            self.0 = rest;
            Ok(taken)
        }

        fn text(&mut self) -> Result<String> {
            Ok(std::str::from_utf8(self.bytes()?).context("a text of the job is not UTF-8")?.to_string())
        }
    }

    /// This program started as a kernel's process ([`JOB_ARG`] and the job
    /// file's path): runs the job and prints [`Raw::encode`]'s bytes on
    /// stdout. Returns the exit status.
    pub fn job_main(path: &std::ffi::OsStr) -> i32 {
        let work = || -> Result<Raw> {
            let bytes = std::fs::read(path).with_context(|| format!("reading the job file {}", path.to_string_lossy()))?;
            let job = Decoded::from(&bytes)?;
            let m = ptx::parse(&job.src).map_err(|e| anyhow!("the PTX does not parse: {e}"))?;
            let func = m
                .functions
                .iter()
                .position(|f| f.name == job.kernel && f.is_entry)
                .with_context(|| format!("no kernel `{}`", job.kernel))?;
            if !driver_present() {
                bail!("no CUDA driver found (libcuda could not be loaded)");
            }
            on_device(&m, func, &job.launch, &job.prepared, &job.instrumented, &job.plain)
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|_| Err(anyhow!("the CUDA run panicked")));
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        i32::from(out.write_all(&Raw::encode(&r)).and_then(|()| out.flush()).is_err())
    }

    /// A job file no other run of this program shares, removed when dropped.
    struct JobFile(std::path::PathBuf);

    impl JobFile {
        fn new(bytes: &[u8]) -> Result<JobFile> {
            use std::sync::atomic::{AtomicU64, Ordering};
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let name = format!("gpucheck-cuda-job-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
            let path = std::env::temp_dir().join(name);
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .with_context(|| format!("creating the CUDA run's job file {}", path.display()))?;
            let file = JobFile(path);
            std::io::Write::write_all(&mut f, bytes).with_context(|| format!("writing {}", file.0.display()))?;
            Ok(file)
        }
    }

    impl Drop for JobFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// Runs `cmd` with the path of a file holding `job` as its last
    /// argument and reads [`Raw::encode`]'s bytes from its stdout. A fault
    /// of the kernel's own makes the driver refuse every later call of the
    /// process that ran it, a new context included: this process never
    /// initialises the driver (it only sees that its library is there), so
    /// each kernel's process starts with an unharmed one. It is a new
    /// program, not a fork: a fork of this process, whose other threads
    /// may hold locks, could wait on them forever. A process still running
    /// after `limit` is killed.
    fn isolated(kernel: &str, mut cmd: std::process::Command, job: &[u8], limit: Option<Duration>) -> Result<Raw> {
        use std::io::Read;
        use std::process::Stdio;
        let file = JobFile::new(job)?;
        let mut child = cmd
            .arg(&file.0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting the process that runs `{kernel}` on the GPU"))?;
        let mut stdout = child.stdout.take().context("the CUDA run's output")?;
        let reader = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            stdout.read_to_end(&mut bytes).map(|_| bytes)
        });
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().context("waiting for the CUDA run's process")? {
                break status;
            }
            if let Some(limit) = limit.filter(|&l| started.elapsed() >= l) {
                let _ = child.kill();
                let _ = child.wait();
                bail!("`{kernel}` did not finish on the GPU within {} s (`--time-limit`); its process was stopped", limit.as_secs_f64());
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let bytes = reader.join().map_err(|_| anyhow!("reading the CUDA run's result"))?.context("reading the CUDA run's result")?;
        if bytes.is_empty() {
            bail!("the process that ran `{kernel}` on the GPU ended without a result ({status})");
        }
        Raw::decode(&bytes)
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

        /// A job crosses to the kernel's process whole.
        #[test]
        fn jobs_cross_to_the_kernels_process() {
            let buffers = [super::super::super::launch::Buffer { addr: 1 << 32, bytes: vec![1, 2, 3], name: "x".into(), elem_bytes: 4 }];
            let args = [Arg::Bits(1 << 32), Arg::Bytes(vec![9; 24]), Arg::Bits(7)];
            let job = Job {
                src: "// ptx é",
                kernel: "k",
                launch: Launch { grid: [2, 3, 4], block: [32, 2, 1], dynamic_shared: 96 },
                args: &args,
                buffers: &buffers,
                pointer_fields: &[(1, 8, 0)],
                instrumented: "ins",
                plain: "",
            };
            let bytes = job.encode();
            let d = Decoded::from(&bytes).unwrap();
            assert_eq!((d.kernel.as_str(), d.src.as_str(), d.instrumented.as_str(), d.plain.as_str()), ("k", "// ptx é", "ins", ""));
            assert_eq!(d.launch, job.launch);
            assert_eq!(d.prepared.args, args);
            assert_eq!(d.prepared.buffers.iter().map(|b| (b.addr, b.bytes.clone())).collect::<Vec<_>>(), vec![(1 << 32, vec![1, 2, 3])]);
            assert_eq!(d.prepared.pointer_fields, vec![(1, 8, 0)]);
            for cut in [0, JOB_MAGIC.len(), bytes.len() / 2, bytes.len() - 1] {
                assert!(Decoded::from(&bytes[..cut]).is_err(), "cut at {cut}");
            }
            // an argument of a kind no version writes is refused, not read as bytes
            // (one argument, then no buffer and no pointer field: its kind is the fourth number from the end)
            let one_arg = Job { args: &args[..1], buffers: &[], pointer_fields: &[], ..job };
            let mut bad = one_arg.encode();
            let kind_at = bad.len() - 8 * 4;
            assert_eq!(bad[kind_at..kind_at + 8], 0u64.to_le_bytes(), "the argument's kind");
            bad[kind_at] = 2;
            let e = Decoded::from(&bad).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("unknown kind (2)"), "{e}");
        }

        /// The kernel's process: what it prints arrives, one that dies or
        /// prints nothing says so, and one past its time is stopped.
        #[cfg(unix)]
        #[test]
        fn kernels_processes_hand_back_their_result() {
            let sh = |script: &str| {
                let mut c = std::process::Command::new("sh");
                c.args(["-c", script, "sh"]);
                c
            };
            let ok = Raw::encode(&Ok(Raw { ms: Some(1.0), ..Raw::default() }));
            // the job file is there while the process runs, and is its last argument
            let script = format!("test \"$(cat \"$1\")\" = job && printf '{}'", String::from_utf8(ok).unwrap().replace('\n', "\\n"));
            let raw = isolated("k", sh(&script), b"job", None).unwrap();
            assert_eq!(raw.ms, Some(1.0));
            let e = isolated("k", sh("printf 'error\\nno context'"), b"", None).unwrap_err().to_string();
            assert!(e.contains("no context"), "{e}");
            let e = isolated("k", sh("kill -ABRT $$"), b"", None).unwrap_err().to_string();
            assert!(e.contains("`k`") && e.contains("ended without a result"), "{e}");
            let started = std::time::Instant::now();
            let e = isolated("k", sh("sleep 30"), b"", Some(Duration::from_millis(200))).unwrap_err().to_string();
            assert!(e.contains("did not finish") && started.elapsed() < Duration::from_secs(20), "{e}");
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
