//! Where a network runs: the backend and device vocabulary that
//! configs, flags and checkpoints name. Choosing among the compiled-in
//! backends is `backend.rs`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::NetError;
use crate::precision::Precision;

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

/// Where and how a network runs: a backend, the index of the device on
/// it, and the float type of the arithmetic.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSpec {
    /// The backend.
    pub backend: BackendKind,
    /// The device's index among the backend's devices (0 for the CPU).
    pub index: usize,
    /// The forward (and backward) passes' float type.
    pub precision: Precision,
}

impl DeviceSpec {
    /// The CPU.
    pub const CPU: DeviceSpec = DeviceSpec { backend: BackendKind::Cpu, index: 0, precision: Precision::F32 };

    /// The flags that give a child `capa uci` or `capa gtp` this device.
    pub fn child_args(&self) -> Vec<String> {
        let flags = [("--backend", self.backend.to_string()), ("--device", self.index.to_string())];
        let flags = flags.into_iter().chain([("--precision", self.precision.to_string())]);
        flags.flat_map(|(flag, value)| [flag.to_string(), value]).collect()
    }

    /// Device `index` of `backend`, in f32.
    pub fn new(backend: BackendKind, index: usize) -> DeviceSpec {
        DeviceSpec { backend, index, precision: Precision::F32 }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.backend, self.index)
    }
}
