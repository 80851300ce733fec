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

use burn::prelude::*;
use burn::tensor::{DType, FloatDType};
use serde::{Deserialize, Serialize};

use crate::error::NetError;

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

/// `tensor` in `dtype`, untouched when it is already.
pub(crate) fn in_dtype<B: Backend, const D: usize>(tensor: Tensor<B, D>, dtype: DType) -> Tensor<B, D> {
    if tensor.dtype() == dtype { tensor } else { tensor.cast(FloatDType::from(dtype)) }
}
