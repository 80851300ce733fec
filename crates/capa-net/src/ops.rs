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
        mish_with_tensor_ops::<Self>(x)
    }

    /// The gradient through Mish at `x` of `grad`:
    /// `grad (t + x (1 - t^2) sigmoid(x))` with `t = tanh(softplus(x))`.
    fn mish_backward(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        mish_backward_with_tensor_ops::<Self>(x, grad)
    }

    /// Softmax over the last dimension.
    fn softmax_last(x: FloatTensor<Self>) -> FloatTensor<Self> {
        let shape = x.shape();
        let last = shape.num_dims() - 1;
        let rows = shape.num_elements() / shape[last];
        let x = Tensor::<Self, 2>::from_primitive(TensorPrimitive::Float(Self::float_reshape(
            x,
            Shape::new([rows, shape[last]]),
        )));
        Self::float_reshape(burn::tensor::activation::softmax(x, 1).into_primitive().tensor(), shape)
    }
}

fn mish_with_tensor_ops<B: Backend>(x: FloatTensor<B>) -> FloatTensor<B> {
    elementwise::<B>(x, |x| {
        // tanh(ln(1 + e)) = n / (n + 2) with n = e (e + 2), e = exp(x):
        // one exponential; beyond 20 the ratio is 1 in f32.
        let e = x.clone().clamp_max(20.0).exp();
        let n = e.clone() * e.add_scalar(2.0);
        x * n.clone() / n.add_scalar(2.0)
    })
}

fn mish_backward_with_tensor_ops<B: Backend>(x: FloatTensor<B>, grad: FloatTensor<B>) -> FloatTensor<B> {
    let shape = x.shape();
    let x = flat::<B>(x);
    let grad = flat::<B>(grad);
    let e = x.clone().clamp_max(20.0).exp();
    let n = e.clone() * e.clone().add_scalar(2.0);
    let t = n.clone() / n.add_scalar(2.0);
    let sigmoid = e.clone() / e.add_scalar(1.0);
    let slope = t.clone() + x * (t.powi_scalar(2).neg().add_scalar(1.0)) * sigmoid;
    B::float_reshape((grad * slope).into_primitive().tensor(), shape)
}

/// Mish of one value (the same formula as [`mish_with_tensor_ops`]).
#[inline]
fn mish_scalar(x: f32) -> f32 {
    let e = x.min(20.0).exp();
    let n = e * (e + 2.0);
    x * n / (n + 2.0)
}

/// Mish's derivative at one value.
#[inline]
fn mish_slope(x: f32) -> f32 {
    let e = x.min(20.0).exp();
    let n = e * (e + 2.0);
    let t = n / (n + 2.0);
    t + x * (1.0 - t * t) * (e / (e + 1.0))
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
mod flex {
    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;
    use burn::tensor::DType;
    use rayon::prelude::*;

    use super::*;

    /// Elements per parallel task: large enough to amortise the scheduling.
    const CHUNK: usize = 1 << 14;

    /// The f32 values of `x`, contiguous from offset 0 (a copy only when not).
    fn contiguous(x: FlexTensor) -> FlexTensor {
        if x.layout().contiguous_offsets().is_some_and(|(start, _)| start == 0) { x } else { x.to_contiguous() }
    }

    impl CapaBackend for Flex {
        fn mish(x: FlexTensor) -> FlexTensor {
            if x.dtype() != DType::F32 {
                return mish_with_tensor_ops::<Flex>(x);
            }
            let x = contiguous(x);
            let elements = x.layout().num_elements();
            let mut out = FlexTensor::empty(x.layout().shape().clone(), DType::F32);
            out.storage_mut::<f32>()[..elements]
                .par_chunks_mut(CHUNK)
                .zip(x.storage::<f32>()[..elements].par_chunks(CHUNK))
                .for_each(|(out, x)| out.iter_mut().zip(x).for_each(|(o, &v)| *o = mish_scalar(v)));
            out
        }

        fn mish_backward(x: FlexTensor, grad: FlexTensor) -> FlexTensor {
            if x.dtype() != DType::F32 || grad.dtype() != DType::F32 {
                return mish_backward_with_tensor_ops::<Flex>(x, grad);
            }
            let (x, grad) = (contiguous(x), contiguous(grad));
            let elements = x.layout().num_elements();
            let mut out = FlexTensor::empty(x.layout().shape().clone(), DType::F32);
            out.storage_mut::<f32>()[..elements]
                .par_chunks_mut(CHUNK)
                .zip(x.storage::<f32>()[..elements].par_chunks(CHUNK))
                .zip(grad.storage::<f32>()[..elements].par_chunks(CHUNK))
                .for_each(|((out, x), g)| {
                    out.iter_mut().zip(x).zip(g).for_each(|((o, &v), &g)| *o = g * mish_slope(v));
                });
            out
        }

        fn softmax_last(x: FlexTensor) -> FlexTensor {
            // flex's fused softmax: one pass per row, rows in parallel.
            let last = x.layout().shape().num_dims() - 1;
            burn::backend::flex::ops::activation::softmax(x, last)
        }
    }
}

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

    fn softmax_last(x: FloatTensor<Self>) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct SoftmaxBackward;

        impl<B: CapaBackend> Backward<B, 1> for SoftmaxBackward {
            type State = B::FloatTensorPrimitive;

            fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
                let y = ops.state;
                unary::<B, _>(ops.parents, ops.node, grads, |grad| {
                    // dx = y (g - sum(g y)) along the row.
                    let last = y.shape().num_dims() - 1;
                    let dot = B::float_sum_dim(B::float_mul(grad.clone(), y.clone()), last);
                    B::float_mul(y, B::float_sub(grad, dot))
                });
            }
        }

        let output = B::softmax_last(x.primitive);
        match SoftmaxBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish(output.clone(), output),
            OpsKind::UnTracked(prep) => prep.finish(output),
        }
    }
}

/// Softmax over the last dimension, through the backend's op.
pub fn softmax_last<B: CapaBackend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(B::softmax_last(x.into_primitive().tensor())))
}

/// Mish on a tensor of any rank, through the backend's op.
pub fn mish<B: CapaBackend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(B::mish(x.into_primitive().tensor())))
}

/// A training backend whose inference backend is a [`CapaBackend`] too.
pub trait CapaAutodiffBackend: AutodiffBackend<InnerBackend: CapaBackend> + CapaBackend {}

impl<B: AutodiffBackend<InnerBackend: CapaBackend> + CapaBackend> CapaAutodiffBackend for B {}
