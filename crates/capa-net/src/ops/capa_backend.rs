//! The [`CapaBackend`] trait, its tensor-op defaults, the tensor-level
//! functions the model calls, and the GPU backends' (default) impls.

use burn::nn::Linear;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::{BoolTensor, ConvOptions, FloatTensor};
use burn::tensor::{DType, Shape, TensorMetadata, TensorPrimitive};

use crate::NetError;
use crate::adamw::AdamWStep;
use crate::device::BackendKind;
use crate::precision::in_dtype;

/// A backend the network runs on: burn's, plus the ops of this module.
pub trait CapaBackend: Backend {
    /// Which of capa's backends this is.
    const KIND: BackendKind;

    /// This backend's device `index`, opened.
    ///
    /// # Errors
    /// [`NetError::Backend`] when there is no such device or it cannot be
    /// opened.
    fn device(index: usize) -> Result<Self::Device, NetError>;

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

    /// A fully connected layer, `x weight + bias`: `x` `[rows, inputs]`,
    /// `weight` `[inputs, outputs]` (burn's `Linear` layout), `bias`
    /// `[outputs]`. burn's own `linear` on the CPU allocates and clears its
    /// output on one core, and adds the bias in a pass of its own.
    fn dense(x: FloatTensor<Self>, weight: FloatTensor<Self>, bias: Option<FloatTensor<Self>>) -> FloatTensor<Self> {
        Self::linear(x, weight, bias)
    }

    /// The gradient of [`dense`](Self::dense)'s input, given its output's gradient.
    fn dense_x_backward(weight: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::linear_x_backward(weight, grad)
    }

    /// The gradient of [`dense`](Self::dense)'s weight.
    fn dense_weight_backward(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::linear_weight_backward(x, grad)
    }

    /// The gradient of [`dense`](Self::dense)'s bias: the output's gradient
    /// summed over the rows.
    fn dense_bias_backward(grad: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::linear_bias_backward(grad)
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

    /// Layer normalisation over the last dimension, `(x - mean) / sqrt(var +
    /// epsilon) gamma + beta`: `x` `[rows, width]`, `gamma` and `beta`
    /// `[width]`. burn differentiates its `layer_norm` as the nine tensor ops
    /// it is made of, one core each on the CPU; this op is one graph node.
    fn layer_norm_last(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f64,
    ) -> FloatTensor<Self> {
        Self::layer_norm(x, gamma, Some(beta), epsilon)
    }

    /// The gradients of [`layer_norm_last`](Self::layer_norm_last)'s `x`,
    /// `gamma` and `beta`, given its output's gradient.
    fn layer_norm_last_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        epsilon: f64,
        grad: FloatTensor<Self>,
    ) -> [FloatTensor<Self>; 3] {
        layer_norm_backward_with_tensor_ops::<Self>(x, gamma, epsilon, grad)
    }

    /// Per row of `logits` `[rows, classes]`, the cross-entropy `-sum_j t_j
    /// log softmax(l)_j` against the soft `targets` `t`, where `l` is the
    /// logits with each entry that `legal` marks false replaced by
    /// `illegal_logit`; `[rows]`.
    fn soft_cross_entropy_rows(
        logits: FloatTensor<Self>,
        targets: FloatTensor<Self>,
        legal: Option<BoolTensor<Self>>,
        illegal_logit: f32,
    ) -> FloatTensor<Self> {
        soft_cross_entropy_rows_with_tensor_ops::<Self>(logits, targets, legal, illegal_logit)
    }

    /// The gradient of [`soft_cross_entropy_rows`](Self::soft_cross_entropy_rows)'s
    /// logits given the rows' gradient `grad` `[rows]`: `grad (sum(t)
    /// softmax(l) - t)`, zero where `legal` is false.
    fn soft_cross_entropy_rows_backward(
        logits: FloatTensor<Self>,
        targets: FloatTensor<Self>,
        legal: Option<BoolTensor<Self>>,
        illegal_logit: f32,
        grad: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        soft_cross_entropy_rows_backward_with_tensor_ops::<Self>(logits, targets, legal, illegal_logit, grad)
    }

    /// One step of an exponential moving average, `average decay + current
    /// (1 - decay)`, element-wise (the EMA of the weights).
    fn moving_average(average: FloatTensor<Self>, current: FloatTensor<Self>, decay: f32) -> FloatTensor<Self> {
        moving_average_with_tensor_ops::<Self>(average, current, decay)
    }

    /// The sum of the squares of a flat tensor's elements, as a tensor of
    /// one element (a gradient's contribution to the global norm).
    fn sum_of_squares(x: FloatTensor<Self>) -> FloatTensor<Self> {
        sum_of_squares_with_tensor_ops::<Self>(x)
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

/// With `xhat` the normalised input and `gy = grad gamma`: `dx = (gy -
/// mean(gy) - xhat mean(gy xhat)) / sqrt(var + epsilon)`, `dgamma = sum
/// over rows of grad xhat`, `dbeta = sum of grad`.
pub(crate) fn layer_norm_backward_with_tensor_ops<B: Backend>(
    x: FloatTensor<B>,
    gamma: FloatTensor<B>,
    epsilon: f64,
    grad: FloatTensor<B>,
) -> [FloatTensor<B>; 3] {
    let x = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(x));
    let grad = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(grad));
    let gamma = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(gamma)).unsqueeze_dim(0);
    let centered = x.clone() - x.mean_dim(1);
    let rstd = centered.clone().powi_scalar(2).mean_dim(1).add_scalar(epsilon).sqrt().recip();
    let normalised = centered * rstd.clone();
    let gy = grad.clone() * gamma;
    let dx = (gy.clone() - gy.clone().mean_dim(1) - normalised.clone() * (gy * normalised.clone()).mean_dim(1)) * rstd;
    let dgamma = (grad.clone() * normalised).sum_dim(0).squeeze_dim::<1>(0);
    let dbeta = grad.sum_dim(0).squeeze_dim::<1>(0);
    [dx.into_primitive().tensor(), dgamma.into_primitive().tensor(), dbeta.into_primitive().tensor()]
}

/// `logits` with the entries `legal` marks false replaced by `illegal_logit`.
fn legal_logits<B: Backend>(logits: FloatTensor<B>, legal: Option<BoolTensor<B>>, illegal_logit: f32) -> Tensor<B, 2> {
    let logits = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(logits));
    match legal {
        Some(legal) => logits.mask_fill(Tensor::<B, 2, Bool>::from_primitive(legal).bool_not(), illegal_logit),
        None => logits,
    }
}

pub(crate) fn soft_cross_entropy_rows_with_tensor_ops<B: Backend>(
    logits: FloatTensor<B>,
    targets: FloatTensor<B>,
    legal: Option<BoolTensor<B>>,
    illegal_logit: f32,
) -> FloatTensor<B> {
    let targets = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(targets));
    let log_probabilities = burn::tensor::activation::log_softmax(legal_logits::<B>(logits, legal, illegal_logit), 1);
    (log_probabilities * targets).sum_dim(1).squeeze_dim::<1>(1).neg().into_primitive().tensor()
}

pub(crate) fn soft_cross_entropy_rows_backward_with_tensor_ops<B: Backend>(
    logits: FloatTensor<B>,
    targets: FloatTensor<B>,
    legal: Option<BoolTensor<B>>,
    illegal_logit: f32,
    grad: FloatTensor<B>,
) -> FloatTensor<B> {
    let targets = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(targets));
    let grad = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(grad)).unsqueeze_dim::<2>(1);
    let probabilities = burn::tensor::activation::softmax(legal_logits::<B>(logits, legal.clone(), illegal_logit), 1);
    let dlogits = (probabilities * targets.clone().sum_dim(1) - targets) * grad;
    match legal {
        Some(legal) => dlogits.mask_fill(Tensor::<B, 2, Bool>::from_primitive(legal).bool_not(), 0.0),
        None => dlogits,
    }
    .into_primitive()
    .tensor()
}

pub(crate) fn moving_average_with_tensor_ops<B: Backend>(
    average: FloatTensor<B>,
    current: FloatTensor<B>,
    decay: f32,
) -> FloatTensor<B> {
    let decay = f64::from(decay);
    let [average, current] = [average, current].map(flat::<B>);
    (average.mul_scalar(decay) + current.mul_scalar(1.0 - decay)).into_primitive().tensor()
}

/// In two stages, rows of [`PARTIAL_SUM`] then the rows' sums (and the
/// remainder apart): burn 0.21's wgpu backend sums a whole tensor of a
/// million elements wrongly (on Mesa's lavapipe it was off by 90% at
/// 1,000,000 and right at 100,000), and the largest weights of a network (the
/// dense policy head's) pass that.
pub(crate) fn sum_of_squares_with_tensor_ops<B: Backend>(x: FloatTensor<B>) -> FloatTensor<B> {
    let squares = flat::<B>(x).powi_scalar(2);
    let elements = squares.dims()[0];
    let rows = elements / PARTIAL_SUM;
    if rows < 2 {
        return squares.sum().into_primitive().tensor();
    }
    let whole = rows * PARTIAL_SUM;
    let sum = squares.clone().narrow(0, 0, whole).reshape([rows, PARTIAL_SUM]).sum_dim(1).sum();
    let sum = if whole < elements { sum + squares.narrow(0, whole, elements - whole).sum() } else { sum };
    sum.into_primitive().tensor()
}

/// The longest run of elements one reduction sums in
/// [`sum_of_squares_with_tensor_ops`].
const PARTIAL_SUM: usize = 4096;

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

pub(crate) fn attention_with_tensor_ops<B: CapaBackend>(
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

pub(crate) fn channel_moments_with_tensor_ops<B: CapaBackend>(x: FloatTensor<B>) -> FloatTensor<B> {
    let x = Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(x));
    let [batch, channels, ranks, files] = x.dims();
    let rows = x.reshape([batch, channels, ranks * files]);
    Tensor::cat(vec![rows.clone().sum_dim(2), rows.powi_scalar(2).sum_dim(2)], 2).into_primitive().tensor()
}

pub(crate) fn channel_moments_backward_with_tensor_ops<B: CapaBackend>(
    x: FloatTensor<B>,
    grad: FloatTensor<B>,
) -> FloatTensor<B> {
    let x = Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(x));
    let grad = Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(grad));
    let [batch, channels, _, _] = x.dims();
    let column = |i| grad.clone().narrow(2, i, 1).reshape([batch, channels, 1, 1]);
    (x.mul_scalar(2.0) * column(1) + column(0)).into_primitive().tensor()
}

pub(crate) fn scale_shift_mish_with_tensor_ops<B: CapaBackend>(
    x: FloatTensor<B>,
    scale: FloatTensor<B>,
    shift: FloatTensor<B>,
    residual: Option<FloatTensor<B>>,
) -> FloatTensor<B> {
    let z = scale_shift_with_tensor_ops::<B>(x, scale, shift, residual);
    B::mish(z.into_primitive().tensor())
}

pub(crate) fn scale_shift_mish_backward_with_tensor_ops<B: CapaBackend>(
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

pub(crate) fn bias_grad_with_tensor_ops<B: Backend>(grad: FloatTensor<B>) -> FloatTensor<B> {
    let summed = B::float_sum_dim(B::float_sum_dim(B::float_sum_dim(grad, 3), 2), 0);
    let outputs = summed.shape().num_elements();
    B::float_reshape(summed, Shape::new([outputs]))
}

pub(crate) fn same_padding<B: Backend>(weight: &FloatTensor<B>) -> ConvOptions<2> {
    let kernel = weight.shape()[2];
    ConvOptions::new([1, 1], [kernel / 2, kernel / 2], [1, 1], 1)
}

/// Where Mish's `n / (n + 2)` is 1 in `x`'s type: 20 in f32 (and bf16,
/// which has its range); 5 in f16, where `n` overflows from 5.5.
fn exp_limit<B: Backend>(x: &Tensor<B, 1>) -> f64 {
    if x.dtype() == DType::F16 { 5.0 } else { 20.0 }
}

pub(crate) fn mish_with_tensor_ops<B: Backend>(x: FloatTensor<B>) -> FloatTensor<B> {
    elementwise::<B>(x, |x| {
        // tanh(ln(1 + e)) = n / (n + 2) with n = e (e + 2), e = exp(x):
        // one exponential; beyond the clamp the ratio is 1.
        let e = x.clone().clamp_max(exp_limit(&x)).exp();
        let n = e.clone() * e.add_scalar(2.0);
        // The ratio first: x n overflows f16 where the ratio does not.
        x * (n.clone() / n.add_scalar(2.0))
    })
}

pub(crate) fn mish_backward_with_tensor_ops<B: Backend>(x: FloatTensor<B>, grad: FloatTensor<B>) -> FloatTensor<B> {
    let shape = x.shape();
    let x = flat::<B>(x);
    let grad = flat::<B>(grad);
    let e = x.clone().clamp_max(exp_limit(&x)).exp();
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

#[cfg(feature = "wgpu")]
impl CapaBackend for burn::backend::Wgpu {
    const KIND: BackendKind = BackendKind::Wgpu;

    fn device(index: usize) -> Result<Self::Device, NetError> {
        crate::wgpu_adapter::open(index).map(|adapter| adapter.device)
    }
}

#[cfg(feature = "cuda")]
impl CapaBackend for burn::backend::Cuda {
    const KIND: BackendKind = BackendKind::Cuda;

    /// The runtime opens it on first use (and panics if it cannot: the
    /// callers run GPU work under a guard that reports it).
    fn device(index: usize) -> Result<Self::Device, NetError> {
        Ok(burn::backend::cuda::CudaDevice::new(index))
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

/// [`CapaBackend::dense`] on tensors: `layer` applied to `x` `[rows, inputs]`.
pub fn dense<B: CapaBackend>(layer: &Linear<B>, x: Tensor<B, 2>) -> Tensor<B, 2> {
    Tensor::from_primitive(TensorPrimitive::Float(B::dense(
        x.into_primitive().tensor(),
        layer.weight.val().into_primitive().tensor(),
        layer.bias.as_ref().map(|bias| bias.val().into_primitive().tensor()),
    )))
}

/// [`CapaBackend::layer_norm_last`] on tensors: each row of `x` `[rows,
/// width]` normalised, scaled by `gamma` and shifted by `beta` (`[width]`).
///
/// In f32 whatever the activations' type, as the group norm's statistics:
/// f16 overflows on a row's sum of squares.
pub fn layer_norm<B: CapaBackend>(x: Tensor<B, 2>, gamma: Tensor<B, 1>, beta: Tensor<B, 1>) -> Tensor<B, 2> {
    let f32 = |t: Tensor<B, 1>| in_dtype(t, DType::F32).into_primitive().tensor();
    let dtype = x.dtype();
    let normalised = Tensor::from_primitive(TensorPrimitive::Float(B::layer_norm_last(
        in_dtype(x, DType::F32).into_primitive().tensor(),
        f32(gamma),
        f32(beta),
        LAYER_NORM_EPSILON,
    )));
    in_dtype(normalised, dtype)
}

/// RMSNorm over the last dimension of `x`, scaled by `gamma` (its size):
/// `x / sqrt(mean(x^2) + epsilon) * gamma`, with [`LAYER_NORM_EPSILON`].
///
/// Tensor ops, differentiated by burn, on every backend; in f32 whatever
/// the activations' type, as [`layer_norm`].
pub fn rms_norm<B: CapaBackend, const D: usize>(x: Tensor<B, D>, gamma: Tensor<B, 1>) -> Tensor<B, D> {
    let dtype = x.dtype();
    let x = in_dtype(x, DType::F32);
    let inverse_rms = x.clone().powi_scalar(2).mean_dim(D - 1).add_scalar(LAYER_NORM_EPSILON).sqrt().recip();
    in_dtype(x * inverse_rms * in_dtype(gamma, DType::F32).unsqueeze::<D>(), dtype)
}

/// The epsilon of every layer norm in the network (burn's default).
pub const LAYER_NORM_EPSILON: f64 = 1e-5;

/// [`CapaBackend::soft_cross_entropy_rows`] on tensors.
pub fn soft_cross_entropy_rows<B: CapaBackend>(
    logits: Tensor<B, 2>,
    targets: Tensor<B, 2>,
    legal: Option<Tensor<B, 2, Bool>>,
    illegal_logit: f32,
) -> Tensor<B, 1> {
    Tensor::from_primitive(TensorPrimitive::Float(B::soft_cross_entropy_rows(
        logits.into_primitive().tensor(),
        targets.into_primitive().tensor(),
        legal.map(Tensor::into_primitive),
        illegal_logit,
    )))
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
