//! Operations with a backward pass of our own, and CPU kernels for them.
//!
//! burn differentiates a composite op step by step: Mish written with tensor
//! ops records seven nodes and runs about fourteen passes over the
//! activations backward; softmax records five. As one autodiff op with its
//! analytic derivative each runs a fraction of that. [`CapaBackend`] carries
//! such ops: its default methods build them from tensor ops (the GPU
//! backends use those), `Autodiff` overrides them with a single graph node,
//! and the CPU backend with one parallel pass over memory (burn's flex runs
//! each element-wise op on one core).
//!
//! `capa_backend` holds the trait, its tensor-op defaults and the
//! tensor-level functions the model calls; `autodiff` the graph nodes;
//! `flex` the CPU glue to the kernels in `crate::cpu`.

mod autodiff;
mod capa_backend;
#[cfg(feature = "flex")]
mod flex;
#[cfg(test)]
pub(crate) mod tests;

pub use capa_backend::*;
