// SPDX-License-Identifier: MIT OR Apache-2.0
//! CUDA C kernels compiled at run time with NVRTC, once per process and GPU architecture, then
//! loaded into each context that launches them.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_void};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;
use cudarc::nvrtc::result as nvrtc;

use super::context::Context;
use super::error::{CudaError, Result, check};
use super::stream::Stream;

/// CUDA C source of a set of kernels, embedded in the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelSource {
    /// A name for logs and errors, e.g. "preprocess.cu".
    pub name: &'static str,
    pub code: &'static str,
}

/// Options every kernel is compiled with. `--fmad=false` keeps float arithmetic identical to the
/// CPU reference implementations (no fused multiply-add contraction).
const OPTIONS: &[&str] = &["--fmad=false", "--std=c++17", "-default-device"];

/// Compiles `source` to PTX for compute capability `cc`, once per process: later calls return
/// the cached text (or the cached error).
pub fn compile_ptx(source: &KernelSource, cc: (u32, u32)) -> Result<Arc<CString>> {
    type Cache = Mutex<HashMap<(KernelSource, (u32, u32)), Result<Arc<CString>>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap();
    cache
        .entry((*source, cc))
        .or_insert_with(|| compile_uncached(source, cc))
        .clone()
}

fn compile_uncached(source: &KernelSource, (major, minor): (u32, u32)) -> Result<Arc<CString>> {
    if !super::nvrtc_present() {
        return Err(CudaError::NoNvrtc);
    }
    let compile_error = |log: String| CudaError::Compile {
        source_name: source.name.to_string(),
        log,
    };
    let code = CString::new(source.code).map_err(|e| compile_error(e.to_string()))?;
    let name = CString::new(source.name).map_err(|e| compile_error(e.to_string()))?;
    let prog = nvrtc::create_program(&code, Some(&name))
        .map_err(|e| compile_error(format!("nvrtcCreateProgram: {e:?}")))?;
    let mut options: Vec<String> = OPTIONS.iter().map(|s| s.to_string()).collect();
    options.push(format!("--gpu-architecture=compute_{major}{minor}"));
    // SAFETY: `prog` was created above and is destroyed once, below.
    unsafe {
        let compiled = nvrtc::compile_program(prog, &options);
        let out = match compiled {
            Ok(()) => nvrtc::get_ptx(prog)
                .map(|ptx| {
                    let bytes: Vec<u8> = ptx
                        .into_iter()
                        .map(|c| c as u8)
                        .take_while(|&b| b != 0)
                        .collect();
                    Arc::new(CString::new(bytes).expect("stopped at the first NUL"))
                })
                .map_err(|e| compile_error(format!("nvrtcGetPTX: {e:?}"))),
            Err(e) => {
                let log = nvrtc::get_program_log(prog)
                    .map(|l| {
                        CStr::from_ptr(l.as_ptr())
                            .to_string_lossy()
                            .trim()
                            .to_string()
                    })
                    .unwrap_or_else(|_| format!("{e:?}"));
                Err(compile_error(log))
            }
        };
        let _ = nvrtc::destroy_program(prog);
        out
    }
}

/// Kernels loaded into one context.
#[derive(Debug)]
pub struct Module {
    raw: sys::CUmodule,
    ctx: Arc<Context>,
    source: &'static str,
}

// SAFETY: module handles may be used from any thread (bound to the context first).
unsafe impl Send for Module {}
// SAFETY: as above.
unsafe impl Sync for Module {}

impl Module {
    /// Compiles `source` (once per process) and loads it into `ctx`.
    pub fn load(ctx: &Arc<Context>, source: &KernelSource) -> Result<Arc<Self>> {
        let ptx = compile_ptx(source, ctx.compute_capability()?)?;
        let _bound = ctx.bind()?;
        // SAFETY: `ptx` is NUL-terminated PTX text; a context is current.
        let raw = unsafe { cudarc::driver::result::module::load_data(ptx.as_ptr().cast()) }
            .map_err(|e| CudaError::driver("cuModuleLoadData", e))?;
        Ok(Arc::new(Self {
            raw,
            ctx: ctx.clone(),
            source: source.name,
        }))
    }

    /// The kernel `name` (an `extern "C" __global__` function of the source).
    pub fn function(self: &Arc<Self>, name: &str) -> Result<Function> {
        let cname = CString::new(name).map_err(|e| CudaError::Invalid(e.to_string()))?;
        let _bound = self.ctx.bind()?;
        // SAFETY: the module is loaded; `cname` is a NUL-terminated name.
        let raw = unsafe { cudarc::driver::result::module::get_function(self.raw, cname) }
            .map_err(|_| CudaError::Invalid(format!("kernel {name} is not in {}", self.source)))?;
        Ok(Function {
            raw,
            module: self.clone(),
        })
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // A lost context took it along already.
        if !self.ctx.lost()
            && let Ok(_bound) = self.ctx.bind()
        {
            // SAFETY: loaded in `load`, unloaded once; functions hold an Arc to the module.
            let _ = unsafe { cudarc::driver::result::module::unload(self.raw) };
        }
    }
}

/// The parameter block of a kernel: every kernel here takes one `#[repr(C)]` struct by value.
///
/// # Safety
/// The type must be `#[repr(C)]`, contain no references or padding-dependent data the kernel
/// reads, and match the kernel's parameter struct field by field.
pub unsafe trait KernelParams: Copy + Send + 'static {}

/// One kernel of a loaded module.
#[derive(Debug, Clone)]
pub struct Function {
    raw: sys::CUfunction,
    module: Arc<Module>,
}

// SAFETY: function handles may be used from any thread.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

impl Function {
    /// Queues the kernel on `stream` with `params` as its single argument.
    ///
    /// # Safety
    /// Every device address in `params` must be valid for what the kernel reads and writes with
    /// this grid, in the stream's context, until the stream has passed the kernel.
    pub unsafe fn launch<P: KernelParams>(
        &self,
        stream: &Stream,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        params: &P,
    ) -> Result<()> {
        let _bound = self.module.ctx.bind()?;
        let mut args = [params as *const P as *mut c_void];
        // SAFETY: `args` points at one value of the kernel's parameter type (KernelParams);
        // the caller guarantees the addresses in it. The driver copies the parameters at launch.
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                self.raw,
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                0,
                stream.raw(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }
}
