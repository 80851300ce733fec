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
use burn::tensor::ops::{ConvOptions, FloatTensor};
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

    /// A convolution with stride 1 and zero padding of half the kernel, so
    /// the board keeps its size: `x` is `[batch, inputs, ranks, files]`,
    /// `weight` `[outputs, inputs, k, k]` with `k` odd, `bias` `[outputs]`.
    fn conv_same(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
    ) -> FloatTensor<Self> {
        let options = same_padding::<Self>(&weight);
        Self::conv2d(x, weight, bias, options)
    }

    /// The gradient of [`conv_same`](Self::conv_same)'s input, given its
    /// output's gradient.
    fn conv_same_x_backward(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        grad: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let options = same_padding::<Self>(&weight);
        Self::conv2d_x_backward(x, weight, grad, options)
    }

    /// The gradient of [`conv_same`](Self::conv_same)'s weight.
    fn conv_same_weight_backward(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        grad: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let options = same_padding::<Self>(&weight);
        Self::conv2d_weight_backward(x, weight, grad, options)
    }

    /// The gradient of [`conv_same`](Self::conv_same)'s bias: the output's
    /// gradient summed over samples and squares.
    fn conv_same_bias_backward(grad: FloatTensor<Self>) -> FloatTensor<Self> {
        bias_grad_with_tensor_ops::<Self>(grad)
    }

    /// Multi-head attention with an additive bias: `q`, `k`, `v` are
    /// `[batch, tokens, width]` with the heads side by side along `width`,
    /// `bias` is `[heads, tokens, tokens]`; per head `softmax(q k^T /
    /// sqrt(head width) + bias) v`, the heads side by side again.
    fn biased_attention(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        bias: FloatTensor<Self>,
        heads: usize,
    ) -> FloatTensor<Self> {
        attention_with_tensor_ops::<Self>(q, k, v, bias, heads)
    }

    /// The gradients of [`biased_attention`](Self::biased_attention)'s `q`, `k`, `v` and
    /// `bias` (summed over the batch), given its output's gradient `grad`.
    fn biased_attention_backward(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        bias: FloatTensor<Self>,
        heads: usize,
        grad: FloatTensor<Self>,
    ) -> [FloatTensor<Self>; 4] {
        attention_backward_with_tensor_ops::<Self>(q, k, v, bias, heads, grad)
    }

    /// `[batch, rows, columns]` -> `[batch, columns, rows]`: the board's
    /// channels-by-squares to one token per square and back.
    fn swap_last_dims(x: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::float_swap_dims(x, 1, 2)
    }

    /// Each channel's sum and sum of squares over the board: `x` is
    /// `[batch, channels, ranks, files]`, the result `[batch, channels, 2]`.
    fn channel_moments(x: FloatTensor<Self>) -> FloatTensor<Self> {
        channel_moments_with_tensor_ops::<Self>(x)
    }

    /// The gradient of [`channel_moments`](Self::channel_moments)'s input:
    /// `d_sum + 2 x d_sum_of_squares`.
    fn channel_moments_backward(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        channel_moments_backward_with_tensor_ops::<Self>(x, grad)
    }

    /// `mish(x * scale + shift [+ residual])` with `x` and `residual`
    /// `[batch, channels, ranks, files]` and per-(sample, channel) `scale`
    /// and `shift` `[batch, channels]`: normalisation's affine step, the
    /// squeeze-excitation and the activation in one.
    fn scale_shift_mish(
        x: FloatTensor<Self>,
        scale: FloatTensor<Self>,
        shift: FloatTensor<Self>,
        residual: Option<FloatTensor<Self>>,
    ) -> FloatTensor<Self> {
        scale_shift_mish_with_tensor_ops::<Self>(x, scale, shift, residual)
    }

    /// The gradients of [`scale_shift_mish`](Self::scale_shift_mish)'s `x`,
    /// `scale` and `shift`, and its residual's when there is one.
    fn scale_shift_mish_backward(
        x: FloatTensor<Self>,
        scale: FloatTensor<Self>,
        shift: FloatTensor<Self>,
        residual: Option<FloatTensor<Self>>,
        grad: FloatTensor<Self>,
    ) -> ([FloatTensor<Self>; 3], Option<FloatTensor<Self>>) {
        scale_shift_mish_backward_with_tensor_ops::<Self>(x, scale, shift, residual, grad)
    }

    /// One AdamW update of a flat parameter: returns the new weight, first
    /// and second moments. Moments absent (the first update) count as zero.
    fn adamw_step(
        weight: FloatTensor<Self>,
        gradient: FloatTensor<Self>,
        moments: Option<[FloatTensor<Self>; 2]>,
        step: AdamWStep,
    ) -> [FloatTensor<Self>; 3] {
        adamw_step_with_tensor_ops::<Self>(weight, gradient, moments, step)
    }
}

pub(crate) fn adamw_step_with_tensor_ops<B: Backend>(
    weight: FloatTensor<B>,
    gradient: FloatTensor<B>,
    moments: Option<[FloatTensor<B>; 2]>,
    step: AdamWStep,
) -> [FloatTensor<B>; 3] {
    let tensor = |t| Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(t));
    let (weight, gradient) = (tensor(weight), tensor(gradient).mul_scalar(step.gradient_scale));
    let squared = gradient.clone().powi_scalar(2).mul_scalar(1.0 - step.beta2);
    let gradient = gradient.mul_scalar(1.0 - step.beta1);
    let (first, second) = match moments {
        Some([first, second]) => {
            (tensor(first).mul_scalar(step.beta1) + gradient, tensor(second).mul_scalar(step.beta2) + squared)
        }
        None => (gradient, squared),
    };
    let direction = first.clone().div_scalar(step.bias_correction1)
        / second.clone().div_scalar(step.bias_correction2).sqrt().add_scalar(step.epsilon);
    let weight =
        weight.mul_scalar(1.0 - step.learning_rate * step.weight_decay) - direction.mul_scalar(step.learning_rate);
    [weight, first, second].map(|t| t.into_primitive().tensor())
}

/// The constants of one AdamW update of one parameter.
#[derive(Clone, Copy, Debug)]
pub struct AdamWStep {
    /// The step size.
    pub learning_rate: f32,
    /// The first moment's decay per update.
    pub beta1: f32,
    /// The second moment's decay per update.
    pub beta2: f32,
    /// Added to the root of the second moment.
    pub epsilon: f32,
    /// Decoupled weight decay (0 for none).
    pub weight_decay: f32,
    /// The gradient is multiplied by this first (clipping).
    pub gradient_scale: f32,
    /// `1 - beta1^t` after `t` updates.
    pub bias_correction1: f32,
    /// `1 - beta2^t` after `t` updates.
    pub bias_correction2: f32,
}

fn attention_with_tensor_ops<B: CapaBackend>(
    q: FloatTensor<B>,
    k: FloatTensor<B>,
    v: FloatTensor<B>,
    bias: FloatTensor<B>,
    heads: usize,
) -> FloatTensor<B> {
    let [q, k, v] = [q, k, v].map(|t| split_heads::<B>(t, heads));
    let (_, probabilities) = attention_probabilities::<B>(q, k, bias);
    merge_heads(probabilities.matmul(v)).into_primitive().tensor()
}

/// `P` the probabilities, `G` the output's gradient, per head: `dV = P^T G`,
/// `dP = G V^T`, `dS = P (dP - rowsum(dP P))`, `dbias = sum over the batch
/// of dS`, `dQ = scale dS K`, `dK = scale dS^T Q`.
pub(crate) fn attention_backward_with_tensor_ops<B: CapaBackend>(
    q: FloatTensor<B>,
    k: FloatTensor<B>,
    v: FloatTensor<B>,
    bias: FloatTensor<B>,
    heads: usize,
    grad: FloatTensor<B>,
) -> [FloatTensor<B>; 4] {
    let bias_shape = bias.shape();
    let [q, k, v, grad] = [q, k, v, grad].map(|t| split_heads::<B>(t, heads));
    let (scale, p) = attention_probabilities::<B>(q.clone(), k.clone(), bias);
    let dv = p.clone().swap_dims(2, 3).matmul(grad.clone());
    let dp = grad.matmul(v.swap_dims(2, 3));
    let ds = p.clone() * (dp.clone() - (dp * p).sum_dim(3));
    let dbias = ds.clone().sum_dim(0).reshape(bias_shape);
    let ds = ds.mul_scalar(scale);
    let dq = ds.clone().matmul(k);
    let dk = ds.swap_dims(2, 3).matmul(q);
    [merge_heads(dq), merge_heads(dk), merge_heads(dv), dbias].map(|t| t.into_primitive().tensor())
}

/// `[batch, tokens, heads x head_width]` -> `[batch, heads, tokens, head_width]`.
fn split_heads<B: Backend>(x: FloatTensor<B>, heads: usize) -> Tensor<B, 4> {
    let x = Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(x));
    let [batch, tokens, width] = x.dims();
    x.reshape([batch, tokens, heads, width / heads]).swap_dims(1, 2)
}

/// The inverse of [`split_heads`].
fn merge_heads<B: Backend>(x: Tensor<B, 4>) -> Tensor<B, 3> {
    let [batch, heads, tokens, head_width] = x.dims();
    x.swap_dims(1, 2).reshape([batch, tokens, heads * head_width])
}

/// The logits' scale and the attention probabilities `[batch, heads, tokens,
/// tokens]` of split `q` and `k`.
fn attention_probabilities<B: CapaBackend>(
    q: Tensor<B, 4>,
    k: Tensor<B, 4>,
    bias: FloatTensor<B>,
) -> (f64, Tensor<B, 4>) {
    let [_, heads, tokens, head_width] = q.dims();
    let scale = 1.0 / (head_width as f64).sqrt();
    let bias = Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(bias)).reshape([1, heads, tokens, tokens]);
    let logits = q.matmul(k.swap_dims(2, 3)).mul_scalar(scale) + bias;
    (scale, softmax_last(logits))
}

fn channel_moments_with_tensor_ops<B: CapaBackend>(x: FloatTensor<B>) -> FloatTensor<B> {
    let x = Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(x));
    let [batch, channels, ranks, files] = x.dims();
    let rows = x.reshape([batch, channels, ranks * files]);
    Tensor::cat(vec![rows.clone().sum_dim(2), rows.powi_scalar(2).sum_dim(2)], 2).into_primitive().tensor()
}

fn channel_moments_backward_with_tensor_ops<B: CapaBackend>(x: FloatTensor<B>, grad: FloatTensor<B>) -> FloatTensor<B> {
    let x = Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(x));
    let grad = Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(grad));
    let [batch, channels, _, _] = x.dims();
    let column = |i| grad.clone().narrow(2, i, 1).reshape([batch, channels, 1, 1]);
    (x.mul_scalar(2.0) * column(1) + column(0)).into_primitive().tensor()
}

fn scale_shift_mish_with_tensor_ops<B: CapaBackend>(
    x: FloatTensor<B>,
    scale: FloatTensor<B>,
    shift: FloatTensor<B>,
    residual: Option<FloatTensor<B>>,
) -> FloatTensor<B> {
    let z = scale_shift_with_tensor_ops::<B>(x, scale, shift, residual);
    B::mish(z.into_primitive().tensor())
}

fn scale_shift_mish_backward_with_tensor_ops<B: CapaBackend>(
    x: FloatTensor<B>,
    scale: FloatTensor<B>,
    shift: FloatTensor<B>,
    residual: Option<FloatTensor<B>>,
    grad: FloatTensor<B>,
) -> ([FloatTensor<B>; 3], Option<FloatTensor<B>>) {
    let has_residual = residual.is_some();
    let x4 = Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(x.clone()));
    let [batch, channels, ranks, files] = x4.dims();
    let z = scale_shift_with_tensor_ops::<B>(x, scale.clone(), shift, residual);
    let g = Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(B::mish_backward(z.into_primitive().tensor(), grad)));
    let per_row = |t: Tensor<B, 4>| t.reshape([batch, channels, ranks * files]).sum_dim(2).reshape([batch, channels]);
    let scale = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(scale)).reshape([batch, channels, 1, 1]);
    let dscale = per_row(g.clone() * x4);
    let dshift = per_row(g.clone());
    let dx = g.clone() * scale;
    let residual_grad = has_residual.then(|| g.into_primitive().tensor());
    ([dx.into_primitive().tensor(), dscale.into_primitive().tensor(), dshift.into_primitive().tensor()], residual_grad)
}

/// `x * scale + shift [+ residual]`, the coefficients per (sample, channel).
fn scale_shift_with_tensor_ops<B: Backend>(
    x: FloatTensor<B>,
    scale: FloatTensor<B>,
    shift: FloatTensor<B>,
    residual: Option<FloatTensor<B>>,
) -> Tensor<B, 4> {
    let x = Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(x));
    let [batch, channels, _, _] = x.dims();
    let column = |t| Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(t)).reshape([batch, channels, 1, 1]);
    let z = x * column(scale) + column(shift);
    match residual {
        Some(residual) => z + Tensor::from_primitive(TensorPrimitive::Float(residual)),
        None => z,
    }
}

fn bias_grad_with_tensor_ops<B: Backend>(grad: FloatTensor<B>) -> FloatTensor<B> {
    let summed = B::float_sum_dim(B::float_sum_dim(B::float_sum_dim(grad, 3), 2), 0);
    let outputs = summed.shape().num_elements();
    B::float_reshape(summed, Shape::new([outputs]))
}

fn same_padding<B: Backend>(weight: &FloatTensor<B>) -> ConvOptions<2> {
    let kernel = weight.shape()[2];
    ConvOptions::new([1, 1], [kernel / 2, kernel / 2], [1, 1], 1)
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
    use burn::tensor::ops::{FloatTensorOps, ModuleOps};

    use super::*;
    use crate::{cpu_attention, cpu_conv, cpu_elementwise};

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
            let x = &x.storage::<f32>()[..elements];
            // `map` takes two inputs; Mish reads one.
            cpu_elementwise::map(&mut out.storage_mut::<f32>()[..elements], x, x, |x, _| cpu_elementwise::mish(x));
            out
        }

        fn mish_backward(x: FlexTensor, grad: FlexTensor) -> FlexTensor {
            if x.dtype() != DType::F32 || grad.dtype() != DType::F32 {
                return mish_backward_with_tensor_ops::<Flex>(x, grad);
            }
            let (x, grad) = (contiguous(x), contiguous(grad));
            let elements = x.layout().num_elements();
            let mut out = FlexTensor::empty(x.layout().shape().clone(), DType::F32);
            cpu_elementwise::map(
                &mut out.storage_mut::<f32>()[..elements],
                &x.storage::<f32>()[..elements],
                &grad.storage::<f32>()[..elements],
                |x, grad| grad * cpu_elementwise::mish_slope(x),
            );
            out
        }

        fn softmax_last(x: FlexTensor) -> FlexTensor {
            let dims = x.layout().shape().clone();
            let row_len = dims[dims.num_dims() - 1];
            if x.dtype() != DType::F32 || row_len == 0 {
                return burn::backend::flex::ops::activation::softmax(x, dims.num_dims() - 1);
            }
            let mut x = x.to_contiguous();
            cpu_elementwise::softmax_rows(&mut x.storage_mut::<f32>()[..dims.num_elements()], row_len, |x, _| x);
            x
        }

        fn biased_attention(q: FlexTensor, k: FlexTensor, v: FlexTensor, bias: FlexTensor, heads: usize) -> FlexTensor {
            let Some(shape) = attention_shape([&q, &k, &v], &bias, heads) else {
                return attention_with_tensor_ops::<Flex>(q, k, v, bias, heads);
            };
            let [q, k, v, bias] = [q, k, v, bias].map(contiguous);
            let (len, bias_len) = shape.lens();
            let mut out = FlexTensor::empty(q.layout().shape().clone(), DType::F32);
            cpu_attention::forward(
                shape,
                &q.storage::<f32>()[..len],
                &k.storage::<f32>()[..len],
                &v.storage::<f32>()[..len],
                &bias.storage::<f32>()[..bias_len],
                &mut out.storage_mut::<f32>()[..len],
            );
            out
        }

        fn biased_attention_backward(
            q: FlexTensor,
            k: FlexTensor,
            v: FlexTensor,
            bias: FlexTensor,
            heads: usize,
            grad: FlexTensor,
        ) -> [FlexTensor; 4] {
            let Some(shape) = attention_shape([&q, &k, &v], &bias, heads)
                .filter(|_| grad.dtype() == DType::F32 && grad.layout().shape() == q.layout().shape())
            else {
                return attention_backward_with_tensor_ops::<Flex>(q, k, v, bias, heads, grad);
            };
            let [q, k, v, bias, grad] = [q, k, v, bias, grad].map(contiguous);
            let (len, bias_len) = shape.lens();
            let [mut dq, mut dk, mut dv] = [(); 3].map(|()| FlexTensor::empty(q.layout().shape().clone(), DType::F32));
            let mut dbias = FlexTensor::empty(bias.layout().shape().clone(), DType::F32);
            cpu_attention::backward(
                shape,
                &q.storage::<f32>()[..len],
                &k.storage::<f32>()[..len],
                &v.storage::<f32>()[..len],
                &bias.storage::<f32>()[..bias_len],
                &grad.storage::<f32>()[..len],
                cpu_attention::AttentionGrads {
                    q: &mut dq.storage_mut::<f32>()[..len],
                    k: &mut dk.storage_mut::<f32>()[..len],
                    v: &mut dv.storage_mut::<f32>()[..len],
                    bias: &mut dbias.storage_mut::<f32>()[..bias_len],
                },
            );
            [dq, dk, dv, dbias]
        }

        fn swap_last_dims(x: FlexTensor) -> FlexTensor {
            let dims = x.layout().shape().clone();
            if x.dtype() != DType::F32 || dims.num_dims() != 3 {
                return Flex::float_swap_dims(x, 1, 2);
            }
            let (batch, rows, columns) = (dims[0], dims[1], dims[2]);
            let x = contiguous(x);
            let mut out = FlexTensor::empty(Shape::new([batch, columns, rows]), DType::F32);
            cpu_elementwise::transpose_matrices(
                &x.storage::<f32>()[..dims.num_elements()],
                [rows, columns],
                &mut out.storage_mut::<f32>()[..dims.num_elements()],
            );
            out
        }

        fn channel_moments(x: FlexTensor) -> FlexTensor {
            let Some([batch, channels, plane]) = board_rows(&x) else {
                return channel_moments_with_tensor_ops::<Flex>(x);
            };
            let x = contiguous(x);
            let mut out = FlexTensor::empty(Shape::new([batch, channels, 2]), DType::F32);
            let rows = batch * channels;
            cpu_elementwise::row_moments(
                &x.storage::<f32>()[..rows * plane],
                plane,
                &mut out.storage_mut::<f32>()[..2 * rows],
            );
            out
        }

        fn channel_moments_backward(x: FlexTensor, grad: FlexTensor) -> FlexTensor {
            let Some([batch, channels, plane]) = board_rows(&x).filter(|_| grad.dtype() == DType::F32) else {
                return channel_moments_backward_with_tensor_ops::<Flex>(x, grad);
            };
            let (x, grad) = (contiguous(x), contiguous(grad));
            let rows = batch * channels;
            let mut dx = FlexTensor::empty(x.layout().shape().clone(), DType::F32);
            cpu_elementwise::row_moments_backward(
                &x.storage::<f32>()[..rows * plane],
                plane,
                &grad.storage::<f32>()[..2 * rows],
                &mut dx.storage_mut::<f32>()[..rows * plane],
            );
            dx
        }

        fn scale_shift_mish(
            x: FlexTensor,
            scale: FlexTensor,
            shift: FlexTensor,
            residual: Option<FlexTensor>,
        ) -> FlexTensor {
            let Some([batch, channels, plane]) = scale_shift_rows(&x, &scale, &shift, residual.as_ref()) else {
                return scale_shift_mish_with_tensor_ops::<Flex>(x, scale, shift, residual);
            };
            let [x, scale, shift] = [x, scale, shift].map(contiguous);
            let residual = residual.map(contiguous);
            let (rows, len) = (batch * channels, batch * channels * plane);
            let mut out = FlexTensor::empty(x.layout().shape().clone(), DType::F32);
            let input = cpu_elementwise::ScaleShift {
                x: &x.storage::<f32>()[..len],
                plane,
                scale: &scale.storage::<f32>()[..rows],
                shift: &shift.storage::<f32>()[..rows],
                residual: residual.as_ref().map(|r| &r.storage::<f32>()[..len]),
            };
            cpu_elementwise::scale_shift_mish(input, &mut out.storage_mut::<f32>()[..len]);
            out
        }

        fn scale_shift_mish_backward(
            x: FlexTensor,
            scale: FlexTensor,
            shift: FlexTensor,
            residual: Option<FlexTensor>,
            grad: FlexTensor,
        ) -> ([FlexTensor; 3], Option<FlexTensor>) {
            let Some([batch, channels, plane]) = scale_shift_rows(&x, &scale, &shift, residual.as_ref())
                .filter(|_| grad.dtype() == DType::F32 && grad.layout().shape() == x.layout().shape())
            else {
                return scale_shift_mish_backward_with_tensor_ops::<Flex>(x, scale, shift, residual, grad);
            };
            let [x, scale, shift, grad] = [x, scale, shift, grad].map(contiguous);
            let residual = residual.map(contiguous);
            let (rows, len) = (batch * channels, batch * channels * plane);
            let mut dx = FlexTensor::empty(x.layout().shape().clone(), DType::F32);
            let [mut dscale, mut dshift] =
                [(); 2].map(|()| FlexTensor::empty(Shape::new([batch, channels]), DType::F32));
            let mut dresidual = residual.as_ref().map(|_| FlexTensor::empty(x.layout().shape().clone(), DType::F32));
            let input = cpu_elementwise::ScaleShift {
                x: &x.storage::<f32>()[..len],
                plane,
                scale: &scale.storage::<f32>()[..rows],
                shift: &shift.storage::<f32>()[..rows],
                residual: residual.as_ref().map(|r| &r.storage::<f32>()[..len]),
            };
            cpu_elementwise::scale_shift_mish_backward(
                input,
                &grad.storage::<f32>()[..len],
                cpu_elementwise::ScaleShiftGrads {
                    x: &mut dx.storage_mut::<f32>()[..len],
                    scale: &mut dscale.storage_mut::<f32>()[..rows],
                    shift: &mut dshift.storage_mut::<f32>()[..rows],
                    residual: dresidual.as_mut().map(|d| &mut d.storage_mut::<f32>()[..len]),
                },
            );
            ([dx, dscale, dshift], dresidual)
        }

        fn adamw_step(
            weight: FlexTensor,
            gradient: FlexTensor,
            moments: Option<[FlexTensor; 2]>,
            step: AdamWStep,
        ) -> [FlexTensor; 3] {
            let elements = weight.layout().num_elements();
            let tensors = || [&weight, &gradient].into_iter().chain(moments.iter().flatten());
            let fits = tensors().all(|t| t.dtype() == DType::F32 && t.layout().num_elements() == elements);
            if !fits {
                return adamw_step_with_tensor_ops::<Flex>(weight, gradient, moments, step);
            }
            let shape = weight.layout().shape().clone();
            // Updated in place where this is the only reference to the buffer.
            let [first, second] = match moments {
                Some(moments) => moments.map(contiguous),
                None => [(); 2].map(|()| FlexTensor::zeros(shape.clone(), DType::F32)),
            };
            let [mut weight, gradient, mut first, mut second] = [weight, gradient, first, second].map(contiguous);
            cpu_elementwise::adamw(
                cpu_elementwise::AdamWState {
                    weight: &mut weight.storage_mut::<f32>()[..elements],
                    first: &mut first.storage_mut::<f32>()[..elements],
                    second: &mut second.storage_mut::<f32>()[..elements],
                },
                &gradient.storage::<f32>()[..elements],
                step,
            );
            [weight, first, second]
        }

        fn conv_same(x: FlexTensor, weight: FlexTensor, bias: Option<FlexTensor>) -> FlexTensor {
            let Some(shape) = conv_shape(&x, &weight) else {
                let options = same_padding::<Flex>(&weight);
                return Flex::conv2d(x, weight, bias, options);
            };
            let (x, weight, bias) = (contiguous(x), contiguous(weight), bias.map(contiguous));
            let (input_len, weight_len, output_len) = shape.lens();
            let mut out =
                FlexTensor::empty(Shape::new([shape.batch, shape.outputs, shape.height, shape.width]), DType::F32);
            cpu_conv::forward(
                shape,
                &x.storage::<f32>()[..input_len],
                &weight.storage::<f32>()[..weight_len],
                bias.as_ref().map(|bias| &bias.storage::<f32>()[..shape.outputs]),
                &mut out.storage_mut::<f32>()[..output_len],
            );
            out
        }

        fn conv_same_x_backward(x: FlexTensor, weight: FlexTensor, grad: FlexTensor) -> FlexTensor {
            let Some(shape) = conv_shape(&x, &weight).filter(|_| grad.dtype() == DType::F32) else {
                let options = same_padding::<Flex>(&weight);
                return Flex::conv2d_x_backward(x, weight, grad, options);
            };
            let (weight, grad) = (contiguous(weight), contiguous(grad));
            let (input_len, weight_len, output_len) = shape.lens();
            let mut out = FlexTensor::empty(x.layout().shape().clone(), DType::F32);
            cpu_conv::input_grad(
                shape,
                &weight.storage::<f32>()[..weight_len],
                &grad.storage::<f32>()[..output_len],
                &mut out.storage_mut::<f32>()[..input_len],
            );
            out
        }

        fn conv_same_weight_backward(x: FlexTensor, weight: FlexTensor, grad: FlexTensor) -> FlexTensor {
            let Some(shape) = conv_shape(&x, &weight).filter(|_| grad.dtype() == DType::F32) else {
                let options = same_padding::<Flex>(&weight);
                return Flex::conv2d_weight_backward(x, weight, grad, options);
            };
            let (x, grad) = (contiguous(x), contiguous(grad));
            let (input_len, weight_len, output_len) = shape.lens();
            let mut out = FlexTensor::empty(weight.layout().shape().clone(), DType::F32);
            cpu_conv::weight_grad(
                shape,
                &x.storage::<f32>()[..input_len],
                &grad.storage::<f32>()[..output_len],
                &mut out.storage_mut::<f32>()[..weight_len],
            );
            out
        }

        fn conv_same_bias_backward(grad: FlexTensor) -> FlexTensor {
            let dims = grad.layout().shape().clone();
            if grad.dtype() != DType::F32 || dims.num_dims() != 4 || dims[2] * dims[3] == 0 {
                return bias_grad_with_tensor_ops::<Flex>(grad);
            }
            let grad = contiguous(grad);
            let mut out = FlexTensor::empty(Shape::new([dims[1]]), DType::F32);
            cpu_conv::bias_grad(
                &grad.storage::<f32>()[..dims.num_elements()],
                dims[2] * dims[3],
                &mut out.storage_mut::<f32>()[..dims[1]],
            );
            out
        }
    }

    /// `[batch, channels, squares]` of an f32 `[batch, channels, ranks, files]` tensor.
    fn board_rows(x: &FlexTensor) -> Option<[usize; 3]> {
        let dims = x.layout().shape();
        (x.dtype() == DType::F32 && dims.num_dims() == 4 && dims[2] * dims[3] > 0)
            .then(|| [dims[0], dims[1], dims[2] * dims[3]])
    }

    /// [`board_rows`] of `x`, when the coefficients are f32 `[batch,
    /// channels]` and the residual is shaped like `x`.
    fn scale_shift_rows(
        x: &FlexTensor,
        scale: &FlexTensor,
        shift: &FlexTensor,
        residual: Option<&FlexTensor>,
    ) -> Option<[usize; 3]> {
        let [batch, channels, plane] = board_rows(x)?;
        let coefficients = [scale, shift].iter().all(|t| {
            let dims = t.layout().shape();
            t.dtype() == DType::F32 && dims.num_dims() == 2 && [dims[0], dims[1]] == [batch, channels]
        });
        let residual_fits =
            residual.is_none_or(|r| r.dtype() == DType::F32 && r.layout().shape() == x.layout().shape());
        (coefficients && residual_fits).then_some([batch, channels, plane])
    }

    /// The dimensions of an attention our kernel runs: f32, `q`, `k`, `v`
    /// alike, heads dividing the width, a bias per head and token pair.
    fn attention_shape(
        qkv: [&FlexTensor; 3],
        bias: &FlexTensor,
        heads: usize,
    ) -> Option<cpu_attention::AttentionShape> {
        let dims = qkv[0].layout().shape();
        let alike = qkv.iter().all(|t| t.dtype() == DType::F32 && t.layout().shape() == dims);
        if !alike || bias.dtype() != DType::F32 || dims.num_dims() != 3 || heads == 0 || !dims[2].is_multiple_of(heads)
        {
            return None;
        }
        let (batch, tokens, width) = (dims[0], dims[1], dims[2]);
        let bias_dims = bias.layout().shape();
        (bias_dims.num_dims() == 3 && [bias_dims[0], bias_dims[1], bias_dims[2]] == [heads, tokens, tokens])
            .then_some(cpu_attention::AttentionShape { batch, tokens, heads, head_width: width / heads })
    }

    /// The dimensions of a convolution our kernels run: f32, NCHW, a square
    /// odd kernel over the same input channels. `None` sends anything else to
    /// flex's own convolution.
    fn conv_shape(x: &FlexTensor, weight: &FlexTensor) -> Option<cpu_conv::ConvShape> {
        let (dims, kernel) = (x.layout().shape(), weight.layout().shape());
        let f32s = x.dtype() == DType::F32 && weight.dtype() == DType::F32;
        let fits = dims.num_dims() == 4 && kernel.num_dims() == 4 && kernel[1] == dims[1];
        (f32s && fits && kernel[2] == kernel[3] && kernel[2] % 2 == 1).then(|| cpu_conv::ConvShape {
            batch: dims[0],
            inputs: dims[1],
            outputs: kernel[0],
            height: dims[2],
            width: dims[3],
            kernel: kernel[2],
        })
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

    fn conv_same(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
    ) -> FloatTensor<Self> {
        /// Parents: input, weight and (when there is one) bias.
        #[derive(Debug)]
        struct ConvBackward<const PARENTS: usize>;

        impl<B: CapaBackend, const PARENTS: usize> Backward<B, PARENTS> for ConvBackward<PARENTS> {
            type State = (NodeId, NodeId);

            fn backward(self, ops: Ops<Self::State, PARENTS>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
                let grad = grads.consume::<B>(&ops.node);
                let x = checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(ops.state.0);
                let weight = checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(ops.state.1);
                let [node_x, node_weight] = [&ops.parents[0], &ops.parents[1]];
                if let Some(node) = node_x {
                    grads.register::<B>(node.id, B::conv_same_x_backward(x.clone(), weight.clone(), grad.clone()));
                }
                if let Some(node) = node_weight {
                    grads.register::<B>(node.id, B::conv_same_weight_backward(x, weight, grad.clone()));
                }
                if let Some(Some(node)) = ops.parents.get(2) {
                    grads.register::<B>(node.id, B::conv_same_bias_backward(grad));
                }
            }
        }

        fn record<B: CapaBackend, C: CheckpointStrategy, const PARENTS: usize>(
            kind: OpsKind<ConvBackward<PARENTS>, B, (NodeId, NodeId), C, PARENTS>,
            x: FloatTensor<Autodiff<B, C>>,
            weight: FloatTensor<Autodiff<B, C>>,
            bias: Option<B::FloatTensorPrimitive>,
        ) -> FloatTensor<Autodiff<B, C>> {
            match kind {
                OpsKind::Tracked(mut prep) => {
                    let state = (prep.checkpoint(&x), prep.checkpoint(&weight));
                    prep.finish(state, B::conv_same(x.primitive, weight.primitive, bias))
                }
                OpsKind::UnTracked(prep) => prep.finish(B::conv_same(x.primitive, weight.primitive, bias)),
            }
        }

        match bias {
            Some(bias) => {
                let parents = [x.node.clone(), weight.node.clone(), bias.node.clone()];
                let kind = ConvBackward::<3>.prepare::<C>(parents).compute_bound().stateful();
                record(kind, x, weight, Some(bias.primitive))
            }
            None => {
                let kind =
                    ConvBackward::<2>.prepare::<C>([x.node.clone(), weight.node.clone()]).compute_bound().stateful();
                record(kind, x, weight, None)
            }
        }
    }

    fn biased_attention(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        bias: FloatTensor<Self>,
        heads: usize,
    ) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct AttentionBackward;

        impl<B: CapaBackend> Backward<B, 4> for AttentionBackward {
            type State = ([NodeId; 4], usize);

            fn backward(self, ops: Ops<Self::State, 4>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
                let grad = grads.consume::<B>(&ops.node);
                let ([q, k, v, bias], heads) = ops.state;
                let [q, k, v, bias] =
                    [q, k, v, bias].map(|id| checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(id));
                let inputs = B::biased_attention_backward(q, k, v, bias, heads, grad);
                for (parent, grad) in ops.parents.into_iter().zip(inputs) {
                    if let Some(node) = parent {
                        grads.register::<B>(node.id, grad);
                    }
                }
            }
        }

        let parents = [q.node.clone(), k.node.clone(), v.node.clone(), bias.node.clone()];
        match AttentionBackward.prepare::<C>(parents).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let state = ([&q, &k, &v, &bias].map(|t| prep.checkpoint(t)), heads);
                prep.finish(state, B::biased_attention(q.primitive, k.primitive, v.primitive, bias.primitive, heads))
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::biased_attention(q.primitive, k.primitive, v.primitive, bias.primitive, heads))
            }
        }
    }

    fn swap_last_dims(x: FloatTensor<Self>) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct SwapBackward;

        impl<B: CapaBackend> Backward<B, 1> for SwapBackward {
            type State = ();

            fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
                unary::<B, _>(ops.parents, ops.node, grads, B::swap_last_dims);
            }
        }

        SwapBackward.prepare::<C>([x.node.clone()]).compute_bound().stateless(B::swap_last_dims(x.primitive))
    }

    fn channel_moments(x: FloatTensor<Self>) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct MomentsBackward;

        impl<B: CapaBackend> Backward<B, 1> for MomentsBackward {
            type State = NodeId;

            fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
                let x = checkpointer.retrieve_node_output(ops.state);
                unary::<B, _>(ops.parents, ops.node, grads, |grad| B::channel_moments_backward(x, grad));
            }
        }

        match MomentsBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let state = prep.checkpoint(&x);
                prep.finish(state, B::channel_moments(x.primitive))
            }
            OpsKind::UnTracked(prep) => prep.finish(B::channel_moments(x.primitive)),
        }
    }

    fn scale_shift_mish(
        x: FloatTensor<Self>,
        scale: FloatTensor<Self>,
        shift: FloatTensor<Self>,
        residual: Option<FloatTensor<Self>>,
    ) -> FloatTensor<Self> {
        /// Parents: x, scale, shift and (when there is one) the residual.
        #[derive(Debug)]
        struct ScaleShiftMishBackward<const PARENTS: usize>;

        impl<B: CapaBackend, const PARENTS: usize> Backward<B, PARENTS> for ScaleShiftMishBackward<PARENTS> {
            type State = Vec<NodeId>;

            fn backward(self, ops: Ops<Self::State, PARENTS>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
                let grad = grads.consume::<B>(&ops.node);
                let mut inputs =
                    ops.state.into_iter().map(|id| checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(id));
                let mut next = || inputs.next().expect("x, scale and shift are checkpointed");
                let (x, scale, shift) = (next(), next(), next());
                let residual = inputs.next();
                let (gradients, residual_grad) = B::scale_shift_mish_backward(x, scale, shift, residual, grad);
                for (parent, grad) in ops.parents.iter().zip(gradients.into_iter().map(Some).chain([residual_grad])) {
                    if let (Some(node), Some(grad)) = (parent, grad) {
                        grads.register::<B>(node.id, grad);
                    }
                }
            }
        }

        fn record<B: CapaBackend, C: CheckpointStrategy, const PARENTS: usize>(
            kind: OpsKind<ScaleShiftMishBackward<PARENTS>, B, Vec<NodeId>, C, PARENTS>,
            inputs: [FloatTensor<Autodiff<B, C>>; 3],
            residual: Option<FloatTensor<Autodiff<B, C>>>,
        ) -> FloatTensor<Autodiff<B, C>> {
            let compute = |[x, scale, shift]: [FloatTensor<Autodiff<B, C>>; 3],
                           residual: Option<FloatTensor<Autodiff<B, C>>>| {
                B::scale_shift_mish(x.primitive, scale.primitive, shift.primitive, residual.map(|r| r.primitive))
            };
            match kind {
                OpsKind::Tracked(mut prep) => {
                    let state = inputs.iter().chain(residual.as_ref()).map(|t| prep.checkpoint(t)).collect();
                    prep.finish(state, compute(inputs, residual))
                }
                OpsKind::UnTracked(prep) => prep.finish(compute(inputs, residual)),
            }
        }

        let parents = [x.node.clone(), scale.node.clone(), shift.node.clone()];
        match residual {
            Some(residual) => {
                let [a, b, c] = parents;
                let kind = ScaleShiftMishBackward::<4>
                    .prepare::<C>([a, b, c, residual.node.clone()])
                    .compute_bound()
                    .stateful();
                record(kind, [x, scale, shift], Some(residual))
            }
            None => {
                let kind = ScaleShiftMishBackward::<3>.prepare::<C>(parents).compute_bound().stateful();
                record(kind, [x, scale, shift], None)
            }
        }
    }
}

/// [`CapaBackend::swap_last_dims`] on tensors.
pub fn swap_last_dims<B: CapaBackend>(x: Tensor<B, 3>) -> Tensor<B, 3> {
    Tensor::from_primitive(TensorPrimitive::Float(B::swap_last_dims(x.into_primitive().tensor())))
}

/// [`CapaBackend::channel_moments`] on tensors.
pub fn channel_moments<B: CapaBackend>(x: Tensor<B, 4>) -> Tensor<B, 3> {
    Tensor::from_primitive(TensorPrimitive::Float(B::channel_moments(x.into_primitive().tensor())))
}

/// [`CapaBackend::scale_shift_mish`] on tensors.
pub fn scale_shift_mish<B: CapaBackend>(
    x: Tensor<B, 4>,
    scale: Tensor<B, 2>,
    shift: Tensor<B, 2>,
    residual: Option<Tensor<B, 4>>,
) -> Tensor<B, 4> {
    Tensor::from_primitive(TensorPrimitive::Float(B::scale_shift_mish(
        x.into_primitive().tensor(),
        scale.into_primitive().tensor(),
        shift.into_primitive().tensor(),
        residual.map(|r| r.into_primitive().tensor()),
    )))
}

/// [`CapaBackend::biased_attention`] on tensors.
pub fn biased_attention<B: CapaBackend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    bias: Tensor<B, 3>,
    heads: usize,
) -> Tensor<B, 3> {
    let [q, k, v, bias] = [q, k, v, bias].map(|t| t.into_primitive().tensor());
    Tensor::from_primitive(TensorPrimitive::Float(B::biased_attention(q, k, v, bias, heads)))
}

/// [`CapaBackend::conv_same`] on tensors.
pub fn conv_same<B: CapaBackend>(x: Tensor<B, 4>, weight: Tensor<B, 4>, bias: Option<Tensor<B, 1>>) -> Tensor<B, 4> {
    let bias = bias.map(|bias| bias.into_primitive().tensor());
    Tensor::from_primitive(TensorPrimitive::Float(B::conv_same(
        x.into_primitive().tensor(),
        weight.into_primitive().tensor(),
        bias,
    )))
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
