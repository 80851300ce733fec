//! Finding and opening a wgpu adapter with errors instead of panics.
//!
//! burn's `WgpuDevice::DiscreteGpu(i)` panics when the machine has no such
//! adapter, and opening one panics when the driver fails. capa lists the
//! adapters itself, in its own order of preference, and opens the one the
//! user asked for once per process with panics caught and kept quiet.

use std::future::Future;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use burn::backend::wgpu::graphics::{AutoGraphicsApi, GraphicsApi};
use burn::backend::wgpu::{RuntimeOptions, WgpuDevice, init_setup};

use crate::error::NetError;
use crate::panics::quietly;

/// One adapter that wgpu lists.
#[derive(Clone, Debug)]
pub struct Adapter {
    /// How burn names it.
    pub device: WgpuDevice,
    /// The adapter's and its driver's names, its type and the graphics API.
    pub description: String,
}

/// The adapters capa can run on, best first: discrete GPUs, integrated
/// GPUs, virtual GPUs, then a CPU-type adapter (such as Mesa's lavapipe),
/// each group in the order wgpu lists them. `wgpu:i` is the `i`-th.
pub fn adapters() -> Vec<Adapter> {
    let backend = AutoGraphicsApi::backend();
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: backend.into(),
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let infos: Vec<wgpu::AdapterInfo> =
        block_on(instance.enumerate_adapters(backend.into())).iter().map(wgpu::Adapter::get_info).collect();
    let mut found = Vec::new();
    for (rank, kind, name) in [
        (0, wgpu::DeviceType::DiscreteGpu, "discrete GPU"),
        (1, wgpu::DeviceType::IntegratedGpu, "integrated GPU"),
        (2, wgpu::DeviceType::VirtualGpu, "virtual GPU"),
        (3, wgpu::DeviceType::Cpu, "CPU-type"),
    ] {
        let of_kind = infos.iter().filter(|info| info.device_type == kind);
        // burn opens only the first CPU-type adapter.
        let limit = if kind == wgpu::DeviceType::Cpu { 1 } else { usize::MAX };
        for (i, info) in of_kind.take(limit).enumerate() {
            let device = match rank {
                0 => WgpuDevice::DiscreteGpu(i),
                1 => WgpuDevice::IntegratedGpu(i),
                2 => WgpuDevice::VirtualGpu(i),
                _ => WgpuDevice::Cpu,
            };
            let driver = if info.driver.is_empty() { String::new() } else { format!(", driver {}", info.driver) };
            let description = format!("{} ({name}, {:?}{driver})", info.name, info.backend);
            found.push(Adapter { device, description });
        }
    }
    found
}

/// The adapters already opened in this process, by index.
static OPENED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Opens adapter `index` of [`adapters`] (once per process) and returns it.
///
/// # Errors
/// [`NetError::Backend`] when there is no adapter at all (naming what to
/// install), when `index` is past the last one (listing those there are),
/// or when the driver fails to open it.
pub fn open(index: usize) -> Result<Adapter, NetError> {
    let found = adapters();
    if found.is_empty() {
        return Err(NetError::Backend(format!(
            "backend `wgpu` found no {:?} adapter on this machine: install the GPU's Vulkan driver, or Mesa's \
             software one to run on the CPU (Debian and Ubuntu: `apt-get install mesa-vulkan-drivers`); \
             or use backend \"cpu\"",
            AutoGraphicsApi::backend()
        )));
    }
    let Some(adapter) = found.get(index).cloned() else {
        let listed: Vec<String> =
            found.iter().enumerate().map(|(i, a)| format!("wgpu:{i} {}", a.description)).collect();
        return Err(NetError::Backend(format!(
            "backend `wgpu` has no device {index}; this machine has {}",
            listed.join("; ")
        )));
    };
    let mut opened = OPENED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !opened.contains(&index) {
        quietly(|| init_setup::<AutoGraphicsApi>(&adapter.device, RuntimeOptions::default())).map_err(|reason| {
            NetError::Backend(format!(
                "backend `wgpu` could not open device {index}, {}: {reason}; check its driver",
                adapter.description
            ))
        })?;
        opened.push(index);
    }
    Ok(adapter)
}

/// Runs a future that native wgpu resolves at once (adapter enumeration).
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::yield_now();
    }
}
