//! Each op against burn's own or against the plain formulation, values and
//! gradients, on the CPU backend (tests/wgpu.rs runs them on a GPU).

use burn::backend::Flex;
use burn::backend::flex::FlexDevice;
use burn::module::Param;
use burn::nn::{LayerNormConfig, LinearConfig};
use burn::prelude::*;
use burn::tensor::Distribution;

use super::capa_backend::*;

pub(crate) fn assert_close<const D: usize>(a: Tensor<Flex, D>, b: Tensor<Flex, D>, tolerance: f32) {
    let (a, b) = (a.into_data().into_vec::<f32>().unwrap(), b.into_data().into_vec::<f32>().unwrap());
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!((x - y).abs() <= tolerance * (1.0 + y.abs()), "element {i}: {x} vs {y}");
    }
}

pub(crate) fn random(shape: [usize; 4]) -> Tensor<Flex, 4> {
    Tensor::random(shape, Distribution::Normal(0.5, 2.0), &FlexDevice)
}

/// The autodiff backend the gradient tests run on.
pub(crate) type Ad = burn::backend::Autodiff<Flex>;

/// Checks that every parameter it visits has a finite gradient that is
/// not all zero.
pub(crate) struct Gradients<'a> {
    pub(crate) grads: &'a <Ad as burn::tensor::backend::AutodiffBackend>::Gradients,
    pub(crate) checked: usize,
}

impl burn::module::ModuleVisitor<Ad> for Gradients<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<Ad, D>>) {
        let grad = param.val().grad(self.grads).expect("every parameter has a gradient");
        let values = grad.into_data().into_vec::<f32>().unwrap();
        assert!(values.iter().all(|v| v.is_finite()), "a finite gradient");
        assert!(values.iter().any(|v| *v != 0.0), "a gradient that is not all zero");
        self.checked += 1;
    }
}

#[test]
fn one_exponential_mish_is_mish() {
    let x = Tensor::<Flex, 1>::from_floats([-100.0, -20.0, -3.0, -0.5, 0.0, 0.3, 2.0, 19.0, 25.0, 1e4], &FlexDevice);
    assert_close(mish(x.clone()), burn::tensor::activation::mish(x.clone()), 1e-6);
    // The gradient against burn's differentiated composite, where that
    // is finite (it is NaN at 1e4), and its limits beyond.
    let ad = |x: Tensor<Flex, 1>| Tensor::<burn::backend::Autodiff<Flex>, 1>::from_inner(x).require_grad();
    let moderate = Tensor::<Flex, 1>::from_floats([-20.0, -3.0, -0.5, 0.0, 0.3, 2.0, 19.0], &FlexDevice);
    let (ours, reference) = (ad(moderate.clone()), ad(moderate));
    let g1 = mish(ours.clone()).sum().backward();
    let g2 = burn::tensor::activation::mish(reference.clone()).sum().backward();
    assert_close(ours.grad(&g1).unwrap(), reference.grad(&g2).unwrap(), 1e-5);
    let extremes = ad(Tensor::<Flex, 1>::from_floats([-100.0, 1e4], &FlexDevice));
    let g = mish(extremes.clone()).sum().backward();
    assert_close(extremes.grad(&g).unwrap(), Tensor::from_floats([0.0, 1.0], &FlexDevice), 1e-6);
}

#[test]
fn softmax_op_matches_burns_with_its_gradient() {
    type Ad = burn::backend::Autodiff<Flex>;
    let x = Tensor::<Flex, 3>::random([3, 5, 7], Distribution::Normal(0.0, 3.0), &FlexDevice);
    let weights = Tensor::<Flex, 3>::random([3, 5, 7], Distribution::Normal(0.0, 1.0), &FlexDevice);
    assert_close(softmax_last(x.clone()), burn::tensor::activation::softmax(x.clone(), 2), 1e-6);
    let (ours, reference) =
        (Tensor::<Ad, 3>::from_inner(x.clone()).require_grad(), Tensor::<Ad, 3>::from_inner(x).require_grad());
    let w = Tensor::<Ad, 3>::from_inner(weights);
    let g1 = (softmax_last(ours.clone()) * w.clone()).sum().backward();
    let g2 = (burn::tensor::activation::softmax(reference.clone(), 2) * w).sum().backward();
    assert_close(ours.grad(&g1).unwrap(), reference.grad(&g2).unwrap(), 1e-5);
}

/// The attention op (capa's CPU kernel and its backward) against the
/// plain formulation differentiated by burn; and the tensor-op backward
/// the GPU backends run against the same gradients.
#[test]
fn attention_op_matches_the_plain_formulation_with_its_gradients() {
    type Ad = burn::backend::Autodiff<Flex>;
    let (batch, tokens, heads, width) = (3, 10, 2, 8);
    let normal = |shape: [usize; 3]| Tensor::<Flex, 3>::random(shape, Distribution::Normal(0.0, 1.0), &FlexDevice);
    let inputs =
        [[batch, tokens, width], [batch, tokens, width], [batch, tokens, width], [heads, tokens, tokens]].map(normal);
    let output_weights = Tensor::<Ad, 3>::from_inner(normal([batch, tokens, width]));
    let leaves = |inputs: &[Tensor<Flex, 3>; 4]| inputs.clone().map(|t| Tensor::<Ad, 3>::from_inner(t).require_grad());
    let [q, k, v, bias] = leaves(&inputs);
    let ours = biased_attention(q.clone(), k.clone(), v.clone(), bias.clone(), heads);
    let g1 = (ours.clone() * output_weights.clone()).sum().backward();

    let [q2, k2, v2, bias2] = leaves(&inputs);
    let split = |y: Tensor<Ad, 3>| y.reshape([batch, tokens, heads, width / heads]).swap_dims(1, 2);
    let logits = split(q2.clone()).matmul(split(k2.clone()).swap_dims(2, 3)).mul_scalar(0.5)
        + bias2.clone().reshape([1, heads, tokens, tokens]);
    let plain = burn::tensor::activation::softmax(logits, 3)
        .matmul(split(v2.clone()))
        .swap_dims(1, 2)
        .reshape([batch, tokens, width]);
    let g2 = (plain.clone() * output_weights.clone()).sum().backward();
    assert_close(ours.inner(), plain.inner(), 1e-5);
    for (a, b) in [(&q, &q2), (&k, &k2), (&v, &v2), (&bias, &bias2)] {
        assert_close(a.grad(&g1).unwrap(), b.grad(&g2).unwrap(), 1e-4);
    }
    let [q, k, v, bias] = inputs.map(|t| t.into_primitive().tensor());
    let grad = output_weights.inner().into_primitive().tensor();
    let tensor_ops = attention_backward_with_tensor_ops::<Flex>(q, k, v, bias, heads, grad);
    for (ours, reference) in tensor_ops.into_iter().zip([&q2, &k2, &v2, &bias2]) {
        let ours = Tensor::<Flex, 3>::from_primitive(burn::tensor::TensorPrimitive::Float(ours));
        assert_close(ours, reference.grad(&g2).unwrap(), 1e-4);
    }
}

#[test]
fn swap_last_dims_is_burns_swap_with_its_gradient() {
    type Ad = burn::backend::Autodiff<Flex>;
    let x = Tensor::<Flex, 3>::random([3, 16, 80], Distribution::Normal(0.0, 1.0), &FlexDevice);
    let weights = Tensor::<Ad, 3>::from_inner(Tensor::random([3, 80, 16], Distribution::Normal(0.0, 1.0), &FlexDevice));
    let (x1, x2) =
        (Tensor::<Ad, 3>::from_inner(x.clone()).require_grad(), Tensor::<Ad, 3>::from_inner(x).require_grad());
    let (y1, y2) = (swap_last_dims(x1.clone()), x2.clone().swap_dims(1, 2));
    assert_close(y1.clone().inner(), y2.clone().inner(), 0.0);
    let (g1, g2) = ((y1 * weights.clone()).sum().backward(), (y2 * weights).sum().backward());
    assert_close(x1.grad(&g1).unwrap(), x2.grad(&g2).unwrap(), 0.0);
}

/// The fused AdamW update (one pass on the CPU) against the same update
/// in tensor ops, from zero moments and from given ones.
#[test]
fn adamw_kernel_matches_the_tensor_op_update() {
    use crate::adamw::AdamWStep;
    let step = AdamWStep {
        learning_rate: 3e-3,
        beta1: 0.9,
        beta2: 0.999,
        epsilon: 1e-8,
        weight_decay: 1e-2,
        gradient_scale: 0.5,
        bias_correction1: 1.0 - 0.9f32.powi(3),
        bias_correction2: 1.0 - 0.999f32.powi(3),
    };
    let normal = |len: usize| {
        Tensor::<Flex, 1>::random([len], Distribution::Normal(0.0, 1.0), &FlexDevice).into_primitive().tensor()
    };
    let len = 40_000;
    let (weight, gradient) = (normal(len), normal(len));
    let second =
        Tensor::<Flex, 1>::random([len], Distribution::Uniform(0.0, 2.0), &FlexDevice).into_primitive().tensor();
    for moments in [None, Some([normal(len), second])] {
        let ours = <Flex as CapaBackend>::adamw_step(weight.clone(), gradient.clone(), moments.clone(), step);
        let reference = adamw_step_with_tensor_ops::<Flex>(weight.clone(), gradient.clone(), moments, step);
        for (a, b) in ours.into_iter().zip(reference) {
            let wrap = |t| Tensor::<Flex, 1>::from_primitive(burn::tensor::TensorPrimitive::Float(t));
            assert_close(wrap(a), wrap(b), 1e-5);
        }
    }
}

/// The conv op (capa's CPU kernels, through its own autodiff node) gives
/// burn's `conv2d` and all three of burn's gradients, with and without a
/// bias, for 3x3 and 1x1 kernels.
#[test]
fn conv_op_matches_burns_with_its_gradients() {
    use burn::tensor::ops::ConvOptions;
    type Ad = burn::backend::Autodiff<Flex>;
    for (kernel, with_bias) in [(3, false), (3, true), (1, true)] {
        let x = random([3, 6, 8, 10]);
        let weight = Tensor::<Flex, 4>::random([5, 6, kernel, kernel], Distribution::Normal(0.0, 0.3), &FlexDevice);
        let bias = Tensor::<Flex, 1>::random([5], Distribution::Normal(0.0, 0.3), &FlexDevice);
        let output_weights = random([3, 5, 8, 10]);
        let leaf = |t: Tensor<Flex, 4>| Tensor::<Ad, 4>::from_inner(t).require_grad();
        let (x1, w1, x2, w2) = (leaf(x.clone()), leaf(weight.clone()), leaf(x), leaf(weight));
        let (b1, b2) = (
            Tensor::<Ad, 1>::from_inner(bias.clone()).require_grad(),
            Tensor::<Ad, 1>::from_inner(bias).require_grad(),
        );
        let ours = conv_same(x1.clone(), w1.clone(), with_bias.then(|| b1.clone()));
        let options = ConvOptions::new([1, 1], [kernel / 2, kernel / 2], [1, 1], 1);
        let reference = burn::tensor::module::conv2d(x2.clone(), w2.clone(), with_bias.then(|| b2.clone()), options);
        assert_close(ours.clone().inner(), reference.clone().inner(), 1e-4);
        let w = Tensor::<Ad, 4>::from_inner(output_weights);
        let g1 = (ours * w.clone()).sum().backward();
        let g2 = (reference * w).sum().backward();
        assert_close(x1.grad(&g1).unwrap(), x2.grad(&g2).unwrap(), 1e-4);
        assert_close(w1.grad(&g1).unwrap(), w2.grad(&g2).unwrap(), 1e-4);
        if with_bias {
            assert_close(b1.grad(&g1).unwrap(), b2.grad(&g2).unwrap(), 1e-4);
        }
    }
}

/// The dense op (capa's CPU kernels, through the shared layer node) gives
/// burn's `Linear` and its three gradients: a product small enough for
/// one thread, one whose weight gradient each core sums over its share of
/// the rows, and one shared out tile by tile.
#[test]
fn dense_op_matches_burns_linear_with_its_gradients() {
    type Ad = burn::backend::Autodiff<Flex>;
    for ([rows, inputs, outputs], with_bias) in
        [([3, 7, 5], true), ([2048, 24, 16], true), ([300, 700, 40], false), ([1, 9, 4], true)]
    {
        let normal = |shape: [usize; 2]| Tensor::<Flex, 2>::random(shape, Distribution::Normal(0.0, 1.0), &FlexDevice);
        let layer = LinearConfig::new(inputs, outputs).with_bias(with_bias).init::<Ad>(&FlexDevice);
        let (x, output_weights) = (normal([rows, inputs]), Tensor::<Ad, 2>::from_inner(normal([rows, outputs])));
        let (x1, x2) =
            (Tensor::<Ad, 2>::from_inner(x.clone()).require_grad(), Tensor::<Ad, 2>::from_inner(x).require_grad());
        let (ours, reference) = (dense(&layer, x1.clone()), layer.forward(x2.clone()));
        assert_close(ours.clone().inner(), reference.clone().inner(), 1e-5);
        let g1 = (ours * output_weights.clone()).sum().backward();
        let g2 = (reference * output_weights).sum().backward();
        let what = format!("{rows} x {inputs} -> {outputs}");
        assert_close(x1.grad(&g1).expect(&what), x2.grad(&g2).unwrap(), 1e-4);
        let weight = layer.weight.val();
        assert_close(weight.grad(&g1).expect(&what), weight.grad(&g2).unwrap(), 1e-4);
        if let Some(bias) = &layer.bias {
            assert_close(bias.val().grad(&g1).expect(&what), bias.val().grad(&g2).unwrap(), 1e-4);
        }
    }
}

/// The layer norm op (burn's fused forward, capa's backward kernel, one
/// graph node) against burn's `LayerNorm` differentiated op by op; and
/// the tensor-op backward the GPU backends run against the same.
#[test]
fn layer_norm_op_matches_burns_with_its_gradients() {
    type Ad = burn::backend::Autodiff<Flex>;
    let (rows, width) = (700, 24);
    let normal =
        |shape: [usize; 2], mean| Tensor::<Flex, 2>::random(shape, Distribution::Normal(mean, 2.0), &FlexDevice);
    let mut norm = LayerNormConfig::new(width).with_epsilon(LAYER_NORM_EPSILON).init::<Ad>(&FlexDevice);
    norm.gamma = Param::from_tensor(Tensor::from_inner(normal([1, width], 1.0).reshape([width])));
    norm.beta = Some(Param::from_tensor(Tensor::from_inner(normal([1, width], 0.0).reshape([width]))));
    let (x, output_weights) = (normal([rows, width], 3.0), Tensor::<Ad, 2>::from_inner(normal([rows, width], 0.0)));
    let (x1, x2) =
        (Tensor::<Ad, 2>::from_inner(x.clone()).require_grad(), Tensor::<Ad, 2>::from_inner(x.clone()).require_grad());
    let beta = norm.beta.as_ref().unwrap().val();
    let (ours, reference) = (layer_norm(x1.clone(), norm.gamma.val(), beta), norm.forward(x2.clone()));
    assert_close(ours.clone().inner(), reference.clone().inner(), 1e-5);
    let g1 = (ours * output_weights.clone()).sum().backward();
    let g2 = (reference * output_weights.clone()).sum().backward();
    let (gamma, beta) = (norm.gamma.val(), norm.beta.as_ref().unwrap().val());
    let expected = [x2.grad(&g2).unwrap(), gamma.grad(&g2).unwrap().unsqueeze(), beta.grad(&g2).unwrap().unsqueeze()];
    let ours = [x1.grad(&g1).unwrap(), gamma.grad(&g1).unwrap().unsqueeze(), beta.grad(&g1).unwrap().unsqueeze()];
    for (ours, expected) in ours.into_iter().zip(expected.clone()) {
        assert_close(ours, expected, 1e-4);
    }
    let tensor_ops = layer_norm_backward_with_tensor_ops::<Flex>(
        x.into_primitive().tensor(),
        gamma.inner().into_primitive().tensor(),
        LAYER_NORM_EPSILON,
        output_weights.inner().into_primitive().tensor(),
    );
    for (ours, expected) in tensor_ops.into_iter().zip(expected) {
        let ours = Tensor::<Flex, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(ours));
        assert_close(ours.clone().reshape(expected.dims()), expected, 1e-4);
    }
}

/// The cross-entropy op (capa's kernels, one graph node) against
/// `mask_fill`, `log_softmax` and a product differentiated by burn, with
/// and without a mask, soft and one-hot targets, empty rows and a target
/// on a masked entry; and the tensor-op versions the GPU backends run.
#[test]
fn cross_entropy_op_matches_the_plain_formulation_with_its_gradient() {
    type Ad = burn::backend::Autodiff<Flex>;
    let (rows, classes, illegal) = (37, 2644, -1.0e4);
    let logits = Tensor::<Flex, 2>::random([rows, classes], Distribution::Normal(0.0, 3.0), &FlexDevice);
    let legal =
        Tensor::<Flex, 2>::random([rows, classes], Distribution::Uniform(0.0, 1.0), &FlexDevice).lower_elem(0.3);
    let mut targets = Tensor::<Flex, 2>::random([rows, classes], Distribution::Uniform(0.0, 1.0), &FlexDevice)
        * legal.clone().float();
    targets = targets.clone() / targets.sum_dim(1).clamp_min(1e-6);
    // An empty row, and a row with its whole target on one masked entry.
    targets = targets.slice_assign([0..1, 0..classes], Tensor::zeros([1, classes], &FlexDevice));
    let masked_entry = legal.clone().bool_not().slice([1..2, 0..classes]).float().argmax(1).into_scalar() as usize;
    let mut one_hot = vec![0.0f32; classes];
    one_hot[masked_entry] = 1.0;
    let one_hot = Tensor::<Flex, 2>::from_data(TensorData::new(one_hot, [1, classes]), &FlexDevice);
    targets = targets.slice_assign([1..2, 0..classes], one_hot);
    let row_weights = Tensor::<Flex, 1>::random([rows], Distribution::Normal(1.0, 1.0), &FlexDevice);
    for mask in [Some(legal), None] {
        let (l1, l2) = (
            Tensor::<Ad, 2>::from_inner(logits.clone()).require_grad(),
            Tensor::<Ad, 2>::from_inner(logits.clone()).require_grad(),
        );
        let t = Tensor::<Ad, 2>::from_inner(targets.clone());
        let ours = soft_cross_entropy_rows(l1.clone(), t.clone(), mask.clone().map(Tensor::from_inner), illegal);
        let masked = match &mask {
            Some(legal) => l2.clone().mask_fill(Tensor::from_inner(legal.clone().bool_not()), illegal),
            None => l2.clone(),
        };
        let plain = (burn::tensor::activation::log_softmax(masked, 1) * t).sum_dim(1).neg().reshape([rows]);
        assert_close(ours.clone().inner(), plain.clone().inner(), 1e-5);
        let w = Tensor::<Ad, 1>::from_inner(row_weights.clone());
        let g1 = (ours * w.clone()).sum().backward();
        let g2 = (plain.clone() * w).sum().backward();
        let expected = l2.grad(&g2).unwrap();
        assert_close(l1.grad(&g1).unwrap(), expected.clone(), 1e-5);

        let primitive = |t: Tensor<Flex, 2>| t.into_primitive().tensor();
        let bool_mask = || mask.clone().map(Tensor::into_primitive);
        let rows_by_ops = soft_cross_entropy_rows_with_tensor_ops::<Flex>(
            primitive(logits.clone()),
            primitive(targets.clone()),
            bool_mask(),
            illegal,
        );
        let rows_by_ops = Tensor::<Flex, 1>::from_primitive(burn::tensor::TensorPrimitive::Float(rows_by_ops));
        assert_close(rows_by_ops, plain.inner(), 1e-5);
        let grad_by_ops = soft_cross_entropy_rows_backward_with_tensor_ops::<Flex>(
            primitive(logits.clone()),
            primitive(targets.clone()),
            bool_mask(),
            illegal,
            row_weights.clone().into_primitive().tensor(),
        );
        assert_close(Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(grad_by_ops)), expected, 1e-5);
    }
}

/// The fused EMA step and sum of squares against their tensor ops.
#[test]
fn moving_average_and_sum_of_squares_match_the_tensor_ops() {
    let normal = |len: usize| Tensor::<Flex, 1>::random([len], Distribution::Normal(0.0, 1.0), &FlexDevice);
    let wrap = |t| Tensor::<Flex, 1>::from_primitive(burn::tensor::TensorPrimitive::Float(t));
    for len in [1, 1000, 8192, 70_001] {
        let (average, current) = (normal(len), normal(len));
        let [a, c] = [&average, &current].map(|t| t.clone().into_primitive().tensor());
        let ours = <Flex as CapaBackend>::moving_average(a.clone(), c.clone(), 0.999);
        assert_close(wrap(ours), wrap(moving_average_with_tensor_ops::<Flex>(a.clone(), c, 0.999)), 1e-6);
        let ours = <Flex as CapaBackend>::sum_of_squares(a.clone());
        assert_close(wrap(ours), wrap(sum_of_squares_with_tensor_ops::<Flex>(a)), 1e-5);
    }
}

/// RMSNorm (tensor ops) against burn's `RmsNorm`, values and gradients
/// of the input and the scale.
#[test]
fn rms_norm_matches_burns_with_its_gradients() {
    type Ad = burn::backend::Autodiff<Flex>;
    let (rows, width) = (50, 12);
    let mut reference = burn::nn::RmsNormConfig::new(width).with_epsilon(LAYER_NORM_EPSILON).init::<Ad>(&FlexDevice);
    reference.gamma = Param::from_tensor(Tensor::random([width], Distribution::Normal(1.0, 0.3), &FlexDevice));
    let x = Tensor::<Flex, 2>::random([rows, width], Distribution::Normal(0.5, 2.0), &FlexDevice);
    let weights = Tensor::<Ad, 2>::random([rows, width], Distribution::Normal(0.0, 1.0), &FlexDevice);
    let (x1, x2) =
        (Tensor::<Ad, 2>::from_inner(x.clone()).require_grad(), Tensor::<Ad, 2>::from_inner(x).require_grad());
    let (ours, plain) = (rms_norm(x1.clone(), reference.gamma.val()), reference.forward(x2.clone()));
    assert_close(ours.clone().inner(), plain.clone().inner(), 1e-5);
    let (g1, g2) = ((ours * weights.clone()).sum().backward(), (plain * weights).sum().backward());
    assert_close(x1.grad(&g1).unwrap(), x2.grad(&g2).unwrap(), 1e-4);
    let gamma = reference.gamma.val();
    assert_close(gamma.grad(&g1).unwrap(), gamma.grad(&g2).unwrap(), 1e-4);
}
