//! Choosing the backend and device at run time among those compiled in.
//!
//! burn 0.21 makes a backend a type, so code that runs the network is
//! generic over it; [`with_backend`] picks the type from a [`DeviceSpec`]
//! and runs a [`BackendTask`] monomorphised for it.

use burn::tensor::DType;

use crate::device::{BackendKind, DeviceSpec};
use crate::error::NetError;
use crate::ops::{CapaAutodiffBackend, CapaBackend};
use crate::panics::quietly;
use crate::precision::Precision;

impl DeviceSpec {
    /// The device for a log line, e.g. `wgpu:0, llvmpipe (CPU-type, Vulkan)`:
    /// for wgpu the adapter (a user with a GPU should not find the software
    /// one there), otherwise the spec itself.
    pub fn describe(&self) -> String {
        let spec = match self.precision {
            Precision::F32 => self.to_string(),
            half => format!("{self} in {half}"),
        };
        #[cfg(feature = "wgpu")]
        if self.backend == BackendKind::Wgpu {
            return match crate::wgpu_adapter::adapters().get(self.index) {
                Some(adapter) => format!("{spec}, {}", adapter.description),
                None => format!("{spec}, no such adapter"),
            };
        }
        spec
    }
}

impl Precision {
    /// Checks that `device` of backend `B` computes in this type.
    ///
    /// # Errors
    /// [`NetError::Backend`] for half precision on the CPU backend (its
    /// kernels are f32; half would only be slower) or on a device whose
    /// runtime lacks the type, naming it and what to use instead.
    pub fn check<B: CapaBackend>(self, device: &B::Device) -> Result<(), NetError> {
        if self == Precision::F32 {
            return Ok(());
        }
        if B::KIND == BackendKind::Cpu {
            return Err(NetError::Backend(format!(
                "precision `{self}` needs a GPU backend (wgpu or cuda): the CPU backend computes in f32"
            )));
        }
        if !B::supports_dtype(device, DType::from(self.dtype())) {
            return Err(NetError::Backend(format!(
                "this device cannot compute in `{self}` (wgpu has no bf16; f16 needs the adapter's shader-f16 \
                 feature): use precision f32{}",
                if self == Precision::Bf16 { " or f16" } else { "" }
            )));
        }
        Ok(())
    }
}

/// Work that runs on whichever backend [`with_backend`] picks. Training
/// uses `B`; inference uses `B::InnerBackend`. Further devices of the same
/// backend open with [`CapaBackend::device`](crate::CapaBackend::device).
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
/// cargo feature to enable), the device does not exist or cannot be opened
/// (see [`CapaBackend::device`](crate::CapaBackend::device)), the CUDA
/// driver cannot be loaded, or the GPU runtime fails.
pub fn with_backend<T: BackendTask>(spec: DeviceSpec, task: T) -> Result<T::Output, NetError> {
    if !spec.backend.compiled() {
        return Err(NetError::Backend(format!(
            "backend `{}` is not compiled into this build: rebuild with `--features {}`",
            spec.backend,
            spec.backend.feature()
        )));
    }
    match spec.backend {
        #[cfg(feature = "flex")]
        BackendKind::Cpu => {
            keep_freed_buffers();
            run_on::<burn::backend::Autodiff<burn::backend::Flex>, T>(spec, task)
        }
        #[cfg(feature = "wgpu")]
        BackendKind::Wgpu => run_on::<burn::backend::Autodiff<burn::backend::Wgpu>, T>(spec, task),
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => {
            // cudarc panics on a device thread when a library is missing; look first.
            if !loadable(&["libcuda.so.1", "libcuda.so"]) {
                return Err(NetError::Backend(
                    "backend `cuda` needs the NVIDIA driver (libcuda.so.1), which this machine lacks: \
                     use backend = \"cpu\" here"
                        .to_string(),
                ));
            }
            if !loadable(&NVRTC) {
                return Err(NetError::Backend(
                    "backend `cuda` compiles its kernels with CUDA's NVRTC (libnvrtc.so.12 or .13), which this \
                     machine lacks: install it (the CUDA toolkit, or `pip install nvidia-cuda-nvrtc-cu12`) and \
                     put the folder holding libnvrtc.so.* on LD_LIBRARY_PATH"
                        .to_string(),
                ));
            }
            run_on::<burn::backend::Autodiff<burn::backend::Cuda>, T>(spec, task)
        }
        #[allow(unreachable_patterns)]
        _ => unreachable!("checked above: the backend is compiled in"),
    }
}

/// Opens the device and runs the task there. The GPU runtimes panic
/// (rather than fail) on a device they cannot open or a failure inside:
/// that becomes an error naming the device.
fn run_on<B: CapaAutodiffBackend, T: BackendTask>(spec: DeviceSpec, task: T) -> Result<T::Output, NetError> {
    let device = B::device(spec.index)?;
    spec.precision.check::<B>(&device)?;
    if B::KIND == BackendKind::Cpu {
        return Ok(task.run::<B>(device));
    }
    quietly(|| task.run::<B>(device)).map_err(|reason| NetError::Backend(format!("device {spec} failed: {reason}")))
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

/// The names cudarc loads NVRTC by on Linux (its newest first).
#[cfg(feature = "cuda")]
const NVRTC: [&str; 5] = ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11", "libnvrtc.so.1"];

/// Whether one of `names` can be loaded as a shared library.
#[cfg(feature = "cuda")]
fn loadable(names: &[&str]) -> bool {
    names.iter().any(|name| {
        let Ok(name) = std::ffi::CString::new(*name) else { return false };
        // SAFETY: dlopen with a NUL-terminated name; the handle is closed
        // again and no symbol from it is used.
        unsafe {
            let handle = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
            if handle.is_null() {
                return false;
            }
            libc::dlclose(handle);
        }
        true
    })
}
