//! Multi-head attention with an additive bias on the CPU, forward and
//! backward, one (sample, head) at a time.
//!
//! Written with tensor ops, attention splits the heads out of the
//! projections (a copy), materialises the logits of the whole batch,
//! softmaxes them with libm's scalar `expf`, and copies the heads back
//! together. Here each head reads its columns of the projections in place
//! (a strided matrix), its 80 x 80 logits stay in cache, and the exponential
//! vectorizes. The backward pass recomputes the probabilities rather than
//! keeping them: one small product per head instead of `heads x 80 x 80`
//! floats per sample held until the backward pass.

use gemm::Parallelism;
use rayon::prelude::*;

use crate::cpu::elementwise::{self, add_partial_sums};
use crate::cpu::gemm::{Operand, matmul};

/// The dimensions of one attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttentionShape {
    /// Samples.
    pub batch: usize,
    /// Tokens (squares) per sample.
    pub tokens: usize,
    /// Heads.
    pub heads: usize,
    /// Channels per head; a token's width is `heads x head_width`.
    pub head_width: usize,
}

impl AttentionShape {
    fn width(&self) -> usize {
        self.heads * self.head_width
    }

    /// Elements of `q` (and `k`, `v`, the output) and of the bias.
    pub fn lens(&self) -> (usize, usize) {
        (self.batch * self.tokens * self.width(), self.heads * self.tokens * self.tokens)
    }

    fn scale(&self) -> f32 {
        1.0 / (self.head_width as f32).sqrt()
    }

    /// Head `head`'s columns of a sample's `[tokens, width]` matrix.
    fn head<'a>(&self, sample: &'a [f32], head: usize) -> Operand<'a> {
        Operand { data: &sample[head * self.head_width..], row_stride: self.width(), column_stride: 1 }
    }

    /// The same, transposed.
    fn head_transposed<'a>(&self, sample: &'a [f32], head: usize) -> Operand<'a> {
        Operand { data: &sample[head * self.head_width..], row_stride: 1, column_stride: self.width() }
    }
}

/// `probabilities = softmax(q_h k_h^T scale + bias_h)` row by row, for one
/// sample's head.
fn probabilities(shape: AttentionShape, q: &[f32], k: &[f32], bias: &[f32], head: usize, out: &mut [f32]) {
    let tokens = shape.tokens;
    matmul(
        [tokens, tokens, shape.head_width],
        out,
        tokens,
        false,
        shape.head(q, head),
        shape.head_transposed(k, head),
        Parallelism::None,
    );
    let (scale, bias) = (shape.scale(), &bias[head * tokens * tokens..][..tokens * tokens]);
    elementwise::softmax_rows(out, tokens, |logit, index| logit * scale + bias[index]);
}

fn check(shape: AttentionShape, tensors: &[&[f32]], bias: &[f32]) {
    let (len, bias_len) = shape.lens();
    assert!(tensors.iter().all(|t| t.len() == len) && bias.len() == bias_len, "attention: {shape:?}");
}

/// `out_h = softmax(q_h k_h^T / sqrt(head_width) + bias_h) v_h` for every
/// head `h` (a head is `head_width` adjacent channels), all `[batch, tokens,
/// width]`; `bias` is `[heads, tokens, tokens]`.
pub fn forward(shape: AttentionShape, q: &[f32], k: &[f32], v: &[f32], bias: &[f32], out: &mut [f32]) {
    check(shape, &[q, k, v, out], bias);
    let (tokens, stride) = (shape.tokens, shape.tokens * shape.width());
    if stride == 0 {
        return;
    }
    out.par_chunks_exact_mut(stride)
        .zip(q.par_chunks_exact(stride))
        .zip(k.par_chunks_exact(stride).zip(v.par_chunks_exact(stride)))
        .for_each_init(
            || vec![0.0; tokens * tokens],
            |p, ((out, q), (k, v))| {
                for head in 0..shape.heads {
                    probabilities(shape, q, k, bias, head, p);
                    matmul(
                        [tokens, shape.head_width, tokens],
                        &mut out[head * shape.head_width..],
                        shape.width(),
                        false,
                        Operand { data: p, row_stride: tokens, column_stride: 1 },
                        shape.head(v, head),
                        Parallelism::None,
                    );
                }
            },
        );
}

/// The gradients of [`forward`]'s inputs given its output's gradient `grad`:
/// `(dq, dk, dv)` written in place, `dbias` summed over the batch.
pub struct AttentionGrads<'a> {
    /// The gradient of `q`.
    pub q: &'a mut [f32],
    /// The gradient of `k`.
    pub k: &'a mut [f32],
    /// The gradient of `v`.
    pub v: &'a mut [f32],
    /// The gradient of the bias.
    pub bias: &'a mut [f32],
}

/// Backward through [`forward`]. With `P` the probabilities and `G` the
/// output's gradient for one head: `dV = P^T G`, `dP = G V^T`, `dS = P (dP -
/// rowsum(dP P))`, `dbias += dS`, `dQ = scale dS K`, `dK = scale dS^T Q`.
#[allow(clippy::too_many_arguments)]
pub fn backward(
    shape: AttentionShape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    bias: &[f32],
    grad: &[f32],
    grads: AttentionGrads,
) {
    check(shape, &[q, k, v, grad, grads.q, grads.k, grads.v], bias);
    assert_eq!(grads.bias.len(), bias.len(), "attention: bias gradient");
    let (tokens, head_width, stride) = (shape.tokens, shape.head_width, shape.tokens * shape.width());
    let cells = tokens * tokens;
    grads.bias.fill(0.0);
    if stride == 0 {
        return;
    }
    let bias_grad = grads
        .q
        .par_chunks_exact_mut(stride)
        .zip(grads.k.par_chunks_exact_mut(stride).zip(grads.v.par_chunks_exact_mut(stride)))
        .zip(q.par_chunks_exact(stride).zip(k.par_chunks_exact(stride)))
        .zip(v.par_chunks_exact(stride).zip(grad.par_chunks_exact(stride)))
        .fold(
            || (vec![0.0; bias.len()], vec![0.0; cells], vec![0.0; cells]),
            |(mut bias_grad, mut p, mut dp), (((dq, (dk, dv)), (q, k)), (v, g))| {
                for head in 0..shape.heads {
                    probabilities(shape, q, k, bias, head, &mut p);
                    let columns = head * head_width;
                    matmul(
                        [tokens, head_width, tokens],
                        &mut dv[columns..],
                        shape.width(),
                        false,
                        Operand { data: &p, row_stride: 1, column_stride: tokens },
                        shape.head(g, head),
                        Parallelism::None,
                    );
                    matmul(
                        [tokens, tokens, head_width],
                        &mut dp,
                        tokens,
                        false,
                        shape.head(g, head),
                        shape.head_transposed(v, head),
                        Parallelism::None,
                    );
                    let head_bias = &mut bias_grad[head * cells..][..cells];
                    for ((dp, p), db) in
                        dp.chunks_exact_mut(tokens).zip(p.chunks_exact(tokens)).zip(head_bias.chunks_exact_mut(tokens))
                    {
                        let dot = elementwise::dot(dp, p);
                        for ((d, &p), b) in dp.iter_mut().zip(p).zip(db) {
                            *d = p * (*d - dot);
                            *b += *d;
                        }
                    }
                    let scale = shape.scale();
                    dp.iter_mut().for_each(|d| *d *= scale);
                    matmul(
                        [tokens, head_width, tokens],
                        &mut dq[columns..],
                        shape.width(),
                        false,
                        Operand { data: &dp, row_stride: tokens, column_stride: 1 },
                        shape.head(k, head),
                        Parallelism::None,
                    );
                    matmul(
                        [tokens, head_width, tokens],
                        &mut dk[columns..],
                        shape.width(),
                        false,
                        Operand { data: &dp, row_stride: 1, column_stride: tokens },
                        shape.head(q, head),
                        Parallelism::None,
                    );
                }
                (bias_grad, p, dp)
            },
        )
        .map(|(bias_grad, _, _)| bias_grad)
        .reduce_with(add_partial_sums)
        .expect("a non-empty batch has a share");
    grads.bias.copy_from_slice(&bias_grad);
}
