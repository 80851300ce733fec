//! Choosing the backend and device at run time among those compiled in.
//!
//! burn 0.21 makes a backend a type, so code that runs the network is
//! generic over it; [`with_backend`] picks the type from a [`DeviceSpec`]
//! and runs a [`BackendTask`] monomorphised for it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::NetError;
use crate::ops::CapaAutodiffBackend;

/// Which of burn's backends runs the network.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// burn's `flex` CPU backend (cargo feature `flex`, on by default).
    Cpu,
    /// WebGPU through Vulkan, Metal or DX12 (cargo feature `wgpu`).
    Wgpu,
    /// NVIDIA CUDA (cargo feature `cuda`).
    Cuda,
}

impl BackendKind {
    /// The cargo feature of capa-net that compiles this backend in.
    pub fn feature(self) -> &'static str {
        match self {
            BackendKind::Cpu => "flex",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Cuda => "cuda",
        }
    }

    /// Whether this build has the backend.
    pub fn compiled(self) -> bool {
        match self {
            BackendKind::Cpu => cfg!(feature = "flex"),
            BackendKind::Wgpu => cfg!(feature = "wgpu"),
            BackendKind::Cuda => cfg!(feature = "cuda"),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Cuda => "cuda",
        })
    }
}

impl FromStr for BackendKind {
    type Err = NetError;

    fn from_str(s: &str) -> Result<BackendKind, NetError> {
        match s {
            "cpu" => Ok(BackendKind::Cpu),
            "wgpu" => Ok(BackendKind::Wgpu),
            "cuda" => Ok(BackendKind::Cuda),
            other => Err(NetError::Backend(format!("unknown backend `{other}`: use cpu, wgpu or cuda"))),
        }
    }
}

/// A backend and the index of the device on it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSpec {
    /// The backend.
    pub backend: BackendKind,
    /// The device's index among the backend's devices (0 for the CPU).
    pub index: usize,
}

impl DeviceSpec {
    /// The CPU.
    pub const CPU: DeviceSpec = DeviceSpec { backend: BackendKind::Cpu, index: 0 };

    /// The device for a log line, e.g. `wgpu:0, llvmpipe (CPU-type, Vulkan)`:
    /// for wgpu the adapter (a user with a GPU should not find the software
    /// one there), otherwise the spec itself.
    pub fn describe(&self) -> String {
        #[cfg(feature = "wgpu")]
        if self.backend == BackendKind::Wgpu {
            return match crate::wgpu_adapter::adapters().get(self.index) {
                Some(adapter) => format!("{self}, {}", adapter.description),
                None => format!("{self}, no such adapter"),
            };
        }
        self.to_string()
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.backend, self.index)
    }
}

/// Work that runs on whichever backend [`with_backend`] picks. Training
/// uses `B`; inference uses `B::InnerBackend`.
pub trait BackendTask {
    /// What the task returns.
    type Output;
    /// Runs the task on `device` of backend `B`.
    fn run<B: CapaAutodiffBackend>(self, device: B::Device) -> Self::Output;
}

/// Runs `task` on the backend and device that `spec` names.
///
/// # Errors
/// [`NetError::Backend`] when the backend is not compiled in (naming the
/// cargo feature to enable), the index is out of range for the CPU, the
/// CUDA driver cannot be loaded, or the GPU runtime fails (a device index
/// that does not exist).
pub fn with_backend<T: BackendTask>(spec: DeviceSpec, task: T) -> Result<T::Output, NetError> {
    if !spec.backend.compiled() {
        return Err(NetError::Backend(format!(
            "backend `{}` is not compiled into this build: rebuild with `--features {}`",
            spec.backend,
            spec.backend.feature()
        )));
    }
    match spec.backend {
        BackendKind::Cpu => run_cpu(spec, task),
        BackendKind::Wgpu => run_wgpu(spec, task),
        BackendKind::Cuda => run_cuda(spec, task),
    }
}

#[cfg(feature = "flex")]
fn run_cpu<T: BackendTask>(spec: DeviceSpec, task: T) -> Result<T::Output, NetError> {
    use burn::backend::{Autodiff, Flex, flex::FlexDevice};
    if spec.index != 0 {
        return Err(NetError::Backend(format!("the CPU backend has one device, 0; got {}", spec.index)));
    }
    keep_freed_buffers();
    Ok(task.run::<Autodiff<Flex>>(FlexDevice))
}

/// Has glibc keep freed tensor buffers in the heap for the next tensor.
///
/// By default it maps each buffer over 128 KiB afresh and unmaps it on free,
/// so every activation and gradient the CPU backend allocates (a few MiB at
/// batch 256) paid for new zeroed pages, one fault per page: 10-20% of
/// inference time at batch 32 and 256. Process-wide and once: the CPU backend allocates for
/// the process's lifetime anyway.
#[cfg(feature = "flex")]
fn keep_freed_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: mallopt only sets allocator tunables, which glibc
            // applies under its own lock. 32 MiB is glibc's largest mapping
            // threshold; trimming waits for 1 GiB free at the heap's top.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
                libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
            }
        });
    }
}

#[cfg(not(feature = "flex"))]
fn run_cpu<T: BackendTask>(_: DeviceSpec, _: T) -> Result<T::Output, NetError> {
    unreachable!("checked by with_backend")
}

#[cfg(feature = "wgpu")]
fn run_wgpu<T: BackendTask>(spec: DeviceSpec, task: T) -> Result<T::Output, NetError> {
    use burn::backend::{Autodiff, Wgpu};
    let adapter = crate::wgpu_adapter::open(spec.index)?;
    run_guarded(spec, || task.run::<Autodiff<Wgpu>>(adapter.device))
}

#[cfg(not(feature = "wgpu"))]
fn run_wgpu<T: BackendTask>(_: DeviceSpec, _: T) -> Result<T::Output, NetError> {
    unreachable!("checked by with_backend")
}

#[cfg(feature = "cuda")]
fn run_cuda<T: BackendTask>(spec: DeviceSpec, task: T) -> Result<T::Output, NetError> {
    use burn::backend::{Autodiff, Cuda, cuda::CudaDevice};
    // cudarc panics on a device thread when the driver is missing; look first.
    if !cuda_driver_present() {
        return Err(NetError::Backend(
            "backend `cuda` needs the NVIDIA driver (libcuda.so.1), which this machine lacks: \
             use backend = \"cpu\" here"
                .to_string(),
        ));
    }
    run_guarded(spec, || task.run::<Autodiff<Cuda>>(CudaDevice::new(spec.index)))
}

#[cfg(not(feature = "cuda"))]
fn run_cuda<T: BackendTask>(_: DeviceSpec, _: T) -> Result<T::Output, NetError> {
    unreachable!("checked by with_backend")
}

/// Runs a task on a GPU backend, whose runtime panics (rather than failing)
/// on a device index that does not exist or a device it cannot open.
#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn run_guarded<R>(spec: DeviceSpec, task: impl FnOnce() -> R) -> Result<R, NetError> {
    quietly(task).map_err(|reason| NetError::Backend(format!("device {spec} failed: {reason}")))
}

/// Runs `f`, turning a panic into its message. The panic is not printed
/// (nor its backtrace) unless `RUST_BACKTRACE` is set: the caller reports it
/// as an error. Panics on other threads print as usual.
#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub(crate) fn quietly<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    use std::cell::Cell;
    thread_local! {
        static QUIET: Cell<bool> = const { Cell::new(false) };
    }
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let quiet = std::env::var_os("RUST_BACKTRACE").is_none();
    let was = QUIET.with(|q| q.replace(quiet));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    result.map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or(panic.downcast_ref::<&str>().copied())
            .unwrap_or("no reason given")
            .to_string()
    })
}

/// Whether the CUDA driver library can be loaded.
#[cfg(feature = "cuda")]
fn cuda_driver_present() -> bool {
    // SAFETY: dlopen with a constant, NUL-terminated name; the handle is
    // closed again and no symbol from it is used.
    unsafe {
        let handle = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if handle.is_null() {
            return false;
        }
        libc::dlclose(handle);
    }
    true
}
