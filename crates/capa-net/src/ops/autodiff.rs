//! [`CapaBackend`] for burn's `Autodiff`: each op is one graph node whose
//! backward pass calls the inner backend's analytic backward op.

use std::marker::PhantomData;

use burn::backend::Autodiff;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind, unary};
use burn::tensor::TensorMetadata;
use burn::tensor::ops::{BoolTensor, FloatTensor};

use super::capa_backend::CapaBackend;
use crate::NetError;
use crate::device::BackendKind;

impl<B: CapaBackend, C: CheckpointStrategy> CapaBackend for Autodiff<B, C> {
    const KIND: BackendKind = B::KIND;

    fn device(index: usize) -> Result<Self::Device, NetError> {
        B::device(index)
    }

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
        weighted_layer::<Convolution, B, C>(x, weight, bias)
    }

    fn dense(x: FloatTensor<Self>, weight: FloatTensor<Self>, bias: Option<FloatTensor<Self>>) -> FloatTensor<Self> {
        weighted_layer::<Dense, B, C>(x, weight, bias)
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

    fn layer_norm_last(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f64,
    ) -> FloatTensor<Self> {
        /// Parents: x, gamma and beta.
        #[derive(Debug)]
        struct LayerNormBackward;

        impl<B: CapaBackend> Backward<B, 3> for LayerNormBackward {
            type State = (NodeId, NodeId, f64);

            fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
                let grad = grads.consume::<B>(&ops.node);
                let (x, gamma, epsilon) = ops.state;
                let [x, gamma] = [x, gamma].map(|id| checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(id));
                let inputs = B::layer_norm_last_backward(x, gamma, epsilon, grad);
                for (parent, grad) in ops.parents.into_iter().zip(inputs) {
                    if let Some(node) = parent {
                        grads.register::<B>(node.id, grad);
                    }
                }
            }
        }

        let parents = [x.node.clone(), gamma.node.clone(), beta.node.clone()];
        match LayerNormBackward.prepare::<C>(parents).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let state = (prep.checkpoint(&x), prep.checkpoint(&gamma), epsilon);
                prep.finish(state, B::layer_norm_last(x.primitive, gamma.primitive, beta.primitive, epsilon))
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::layer_norm_last(x.primitive, gamma.primitive, beta.primitive, epsilon))
            }
        }
    }

    fn soft_cross_entropy_rows(
        logits: FloatTensor<Self>,
        targets: FloatTensor<Self>,
        legal: Option<BoolTensor<Self>>,
        illegal_logit: f32,
    ) -> FloatTensor<Self> {
        /// Parent: the logits; the targets and the mask are constants.
        #[derive(Debug)]
        struct CrossEntropyBackward;

        impl<B: CapaBackend> Backward<B, 1> for CrossEntropyBackward {
            type State = (NodeId, B::FloatTensorPrimitive, Option<B::BoolTensorPrimitive>, f32);

            fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
                let (logits, targets, legal, illegal_logit) = ops.state;
                let logits = checkpointer.retrieve_node_output(logits);
                unary::<B, _>(ops.parents, ops.node, grads, |grad| {
                    B::soft_cross_entropy_rows_backward(logits, targets, legal, illegal_logit, grad)
                });
            }
        }

        let targets = targets.primitive;
        match CrossEntropyBackward.prepare::<C>([logits.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let state = (prep.checkpoint(&logits), targets.clone(), legal.clone(), illegal_logit);
                prep.finish(state, B::soft_cross_entropy_rows(logits.primitive, targets, legal, illegal_logit))
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::soft_cross_entropy_rows(logits.primitive, targets, legal, illegal_logit))
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

/// A layer `f(x, weight) + bias` whose three gradients the inner backend
/// computes: a convolution or a dense layer.
trait WeightedLayer: core::fmt::Debug + Send + Sync + 'static {
    fn forward<B: CapaBackend>(
        x: FloatTensor<B>,
        weight: FloatTensor<B>,
        bias: Option<FloatTensor<B>>,
    ) -> FloatTensor<B>;
    fn x_backward<B: CapaBackend>(x: FloatTensor<B>, weight: FloatTensor<B>, grad: FloatTensor<B>) -> FloatTensor<B>;
    fn weight_backward<B: CapaBackend>(
        x: FloatTensor<B>,
        weight: FloatTensor<B>,
        grad: FloatTensor<B>,
    ) -> FloatTensor<B>;
    fn bias_backward<B: CapaBackend>(grad: FloatTensor<B>) -> FloatTensor<B>;
}

/// [`CapaBackend::conv_same`].
#[derive(Debug)]
struct Convolution;

impl WeightedLayer for Convolution {
    fn forward<B: CapaBackend>(
        x: FloatTensor<B>,
        weight: FloatTensor<B>,
        bias: Option<FloatTensor<B>>,
    ) -> FloatTensor<B> {
        B::conv_same(x, weight, bias)
    }
    fn x_backward<B: CapaBackend>(x: FloatTensor<B>, weight: FloatTensor<B>, grad: FloatTensor<B>) -> FloatTensor<B> {
        B::conv_same_x_backward(x, weight, grad)
    }
    fn weight_backward<B: CapaBackend>(
        x: FloatTensor<B>,
        weight: FloatTensor<B>,
        grad: FloatTensor<B>,
    ) -> FloatTensor<B> {
        B::conv_same_weight_backward(x, weight, grad)
    }
    fn bias_backward<B: CapaBackend>(grad: FloatTensor<B>) -> FloatTensor<B> {
        B::conv_same_bias_backward(grad)
    }
}

/// [`CapaBackend::dense`].
#[derive(Debug)]
struct Dense;

impl WeightedLayer for Dense {
    fn forward<B: CapaBackend>(
        x: FloatTensor<B>,
        weight: FloatTensor<B>,
        bias: Option<FloatTensor<B>>,
    ) -> FloatTensor<B> {
        B::dense(x, weight, bias)
    }
    fn x_backward<B: CapaBackend>(_: FloatTensor<B>, weight: FloatTensor<B>, grad: FloatTensor<B>) -> FloatTensor<B> {
        B::dense_x_backward(weight, grad)
    }
    fn weight_backward<B: CapaBackend>(x: FloatTensor<B>, _: FloatTensor<B>, grad: FloatTensor<B>) -> FloatTensor<B> {
        B::dense_weight_backward(x, grad)
    }
    fn bias_backward<B: CapaBackend>(grad: FloatTensor<B>) -> FloatTensor<B> {
        B::dense_bias_backward(grad)
    }
}

/// One graph node for a [`WeightedLayer`]; parents: input, weight and
/// (when there is one) bias.
#[derive(Debug)]
struct WeightedLayerBackward<L, const PARENTS: usize>(PhantomData<L>);

impl<B: CapaBackend, L: WeightedLayer, const PARENTS: usize> Backward<B, PARENTS>
    for WeightedLayerBackward<L, PARENTS>
{
    type State = (NodeId, NodeId);

    fn backward(self, ops: Ops<Self::State, PARENTS>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let grad = grads.consume::<B>(&ops.node);
        let x = checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(ops.state.0);
        let weight = checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(ops.state.1);
        if let Some(node) = &ops.parents[0] {
            grads.register::<B>(node.id, L::x_backward::<B>(x.clone(), weight.clone(), grad.clone()));
        }
        if let Some(node) = &ops.parents[1] {
            grads.register::<B>(node.id, L::weight_backward::<B>(x, weight, grad.clone()));
        }
        if let Some(Some(node)) = ops.parents.get(2) {
            grads.register::<B>(node.id, L::bias_backward::<B>(grad));
        }
    }
}

fn weighted_layer<L: WeightedLayer, B: CapaBackend, C: CheckpointStrategy>(
    x: FloatTensor<Autodiff<B, C>>,
    weight: FloatTensor<Autodiff<B, C>>,
    bias: Option<FloatTensor<Autodiff<B, C>>>,
) -> FloatTensor<Autodiff<B, C>> {
    fn record<L: WeightedLayer, B: CapaBackend, C: CheckpointStrategy, const PARENTS: usize>(
        kind: OpsKind<WeightedLayerBackward<L, PARENTS>, B, (NodeId, NodeId), C, PARENTS>,
        x: FloatTensor<Autodiff<B, C>>,
        weight: FloatTensor<Autodiff<B, C>>,
        bias: Option<B::FloatTensorPrimitive>,
    ) -> FloatTensor<Autodiff<B, C>> {
        match kind {
            OpsKind::Tracked(mut prep) => {
                let state = (prep.checkpoint(&x), prep.checkpoint(&weight));
                prep.finish(state, L::forward::<B>(x.primitive, weight.primitive, bias))
            }
            OpsKind::UnTracked(prep) => prep.finish(L::forward::<B>(x.primitive, weight.primitive, bias)),
        }
    }

    match bias {
        Some(bias) => {
            let parents = [x.node.clone(), weight.node.clone(), bias.node.clone()];
            let kind = WeightedLayerBackward::<L, 3>(PhantomData).prepare::<C>(parents).compute_bound().stateful();
            record(kind, x, weight, Some(bias.primitive))
        }
        None => {
            let parents = [x.node.clone(), weight.node.clone()];
            let kind = WeightedLayerBackward::<L, 2>(PhantomData).prepare::<C>(parents).compute_bound().stateful();
            record(kind, x, weight, None)
        }
    }
}
