//! Operations with a backward pass of our own.
//!
//! burn differentiates a composite op step by step: Mish written with tensor
//! ops records seven nodes and runs about fourteen passes over the
//! activations backward. As one autodiff op with its analytic derivative it
//! runs a third of that. [`CapaBackend`] carries such ops: its default
//! methods build them from tensor ops (every inference backend uses those),
//! and `Autodiff` overrides them with a single graph node.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind, unary};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, TensorMetadata, TensorPrimitive};

/// A backend the network runs on: burn's, plus the ops of this module.
pub trait CapaBackend: Backend {
    /// Mish, `x tanh(softplus(x))`, element-wise.
    fn mish(x: FloatTensor<Self>) -> FloatTensor<Self> {
        elementwise::<Self>(x, |x| {
            // tanh(ln(1 + e)) = n / (n + 2) with n = e (e + 2), e = exp(x):
            // one exponential; beyond 20 the ratio is 1 in f32.
            let e = x.clone().clamp_max(20.0).exp();
            let n = e.clone() * e.add_scalar(2.0);
            x * n.clone() / n.add_scalar(2.0)
        })
    }

    /// The gradient through Mish at `x` of `grad`:
    /// `grad (t + x (1 - t^2) sigmoid(x))` with `t = tanh(softplus(x))`.
    fn mish_backward(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        let shape = x.shape();
        let x = flat::<Self>(x);
        let grad = flat::<Self>(grad);
        let e = x.clone().clamp_max(20.0).exp();
        let n = e.clone() * e.clone().add_scalar(2.0);
        let t = n.clone() / n.add_scalar(2.0);
        let sigmoid = e.clone() / e.add_scalar(1.0);
        let slope = t.clone() + x * (t.powi_scalar(2).neg().add_scalar(1.0)) * sigmoid;
        Self::float_reshape((grad * slope).into_primitive().tensor(), shape)
    }
}

/// `f` on `x` seen as one flat vector, reshaped back.
fn elementwise<B: Backend>(x: FloatTensor<B>, f: impl FnOnce(Tensor<B, 1>) -> Tensor<B, 1>) -> FloatTensor<B> {
    let shape = x.shape();
    B::float_reshape(f(flat::<B>(x)).into_primitive().tensor(), shape)
}

fn flat<B: Backend>(x: FloatTensor<B>) -> Tensor<B, 1> {
    let elements = x.shape().num_elements();
    Tensor::from_primitive(TensorPrimitive::Float(B::float_reshape(x, Shape::new([elements]))))
}

#[cfg(feature = "flex")]
impl CapaBackend for burn::backend::Flex {}

#[cfg(feature = "wgpu")]
impl CapaBackend for burn::backend::Wgpu {}

#[cfg(feature = "cuda")]
impl CapaBackend for burn::backend::Cuda {}

impl<B: CapaBackend, C: CheckpointStrategy> CapaBackend for Autodiff<B, C> {
    fn mish(x: FloatTensor<Self>) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct MishBackward;

        impl<B: CapaBackend> Backward<B, 1> for MishBackward {
            type State = NodeId;

            fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
                let x = checkpointer.retrieve_node_output(ops.state);
                unary::<B, _>(ops.parents, ops.node, grads, |grad| B::mish_backward(x, grad));
            }
        }

        match MishBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let state = prep.checkpoint(&x);
                prep.finish(state, B::mish(x.primitive))
            }
            OpsKind::UnTracked(prep) => prep.finish(B::mish(x.primitive)),
        }
    }
}

/// Mish on a tensor of any rank, through the backend's op.
pub fn mish<B: CapaBackend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(B::mish(x.into_primitive().tensor())))
}

/// A training backend whose inference backend is a [`CapaBackend`] too.
pub trait CapaAutodiffBackend: AutodiffBackend<InnerBackend: CapaBackend> + CapaBackend {}

impl<B: AutodiffBackend<InnerBackend: CapaBackend> + CapaBackend> CapaAutodiffBackend for B {}
