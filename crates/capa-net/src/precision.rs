//! The float type the network computes in: f32, or half precision on the
//! GPU backends with the weights and the optimizer kept in f32.
//!
//! burn 0.21 makes the float type a backend parameter and offers no mixed
//! precision of its own, but its tensors carry a dtype and `cast` is
//! differentiable. So a half-precision forward pass runs on a copy of the
//! network cast to f16 or bf16: the cast is one graph node per weight,
//! backward turns each gradient back into f32 for the f32 master weight, and
//! the optimizer never sees a half. The input takes the weights' type and
//! the outputs come back in f32, so the losses are f32 too.

use std::fmt;
use std::str::FromStr;

use burn::module::{Module, ModuleMapper, Param};
use burn::prelude::*;
use burn::tensor::{DType, FloatDType};
use serde::{Deserialize, Serialize};

use crate::NetError;
use crate::backend::BackendKind;
use crate::model::Net;
use crate::ops::CapaBackend;

/// The float type of the network's arithmetic.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single precision throughout.
    #[default]
    F32,
    /// IEEE half precision (GPU backends; training scales the loss so that
    /// small gradients do not vanish).
    F16,
    /// bfloat16: f32's range with 8 bits of mantissa (CUDA on GPUs that
    /// have it; wgpu's shaders have no bf16).
    Bf16,
}

impl Precision {
    /// burn's name for the type.
    pub fn dtype(self) -> FloatDType {
        match self {
            Precision::F32 => FloatDType::F32,
            Precision::F16 => FloatDType::F16,
            Precision::Bf16 => FloatDType::BF16,
        }
    }

    /// Whether gradients need the loss scaled up: f16's smallest normal
    /// number is 6e-5, and many gradients are smaller.
    pub(crate) fn scales_loss(self) -> bool {
        self == Precision::F16
    }

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

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::F32 => "f32",
            Precision::F16 => "f16",
            Precision::Bf16 => "bf16",
        })
    }
}

impl FromStr for Precision {
    type Err = NetError;

    fn from_str(s: &str) -> Result<Precision, NetError> {
        match s {
            "f32" => Ok(Precision::F32),
            "f16" => Ok(Precision::F16),
            "bf16" => Ok(Precision::Bf16),
            other => Err(NetError::Config(format!("unknown precision `{other}`: use f32, f16 or bf16"))),
        }
    }
}

impl<B: CapaBackend> Net<B> {
    /// The network with every weight cast to `precision` (the same
    /// network for f32). Differentiable: on an autodiff backend the
    /// gradients reach the original weights, in their type.
    pub fn cast(self, precision: Precision) -> Net<B> {
        if precision == Precision::F32 {
            return self;
        }
        self.map(&mut Cast(precision.dtype()))
    }
}

struct Cast(FloatDType);

impl<B: Backend> ModuleMapper<B> for Cast {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        Param::from_mapped_value(id, tensor.cast(self.0), mapper)
    }
}

/// `tensor` in `dtype`, untouched when it is already.
pub(crate) fn in_dtype<B: Backend, const D: usize>(tensor: Tensor<B, D>, dtype: DType) -> Tensor<B, D> {
    if tensor.dtype() == dtype { tensor } else { tensor.cast(FloatDType::from(dtype)) }
}
