//! The CPU backend's kernels: plain functions over `f32` slices, parallel
//! with rayon, that know nothing of burn. `ops::flex` is their glue.

pub(crate) mod attention;
pub(crate) mod conv;
pub(crate) mod conv_shape;
pub(crate) mod elementwise;
pub(crate) mod gemm;
pub(crate) mod winograd;
