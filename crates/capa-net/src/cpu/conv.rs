//! Convolutions on the CPU as matrix products, for the shapes the network
//! uses: stride 1, zero padding of half an odd square kernel ('same'),
//! NCHW, f32.
//!
//! A board is small (80 squares), so one sample's patch matrix fits in cache
//! and a whole batch splits into one matrix product per sample, the samples
//! shared among the cores. burn's flex runs a convolution's weight gradient as
//! a convolution over the batch dimension and its input gradient one sample
//! at a time on one core; this module runs both as products too: the input
//! gradient is the convolution of the output's gradient with the flipped,
//! transposed kernel, the weight gradient a sum over samples of gradient x
//! patches.

use std::cell::RefCell;

use gemm::Parallelism;
use rayon::prelude::*;

use crate::cpu::conv_shape::ConvShape;
use crate::cpu::elementwise::add_partial_sums;
use crate::cpu::gemm::{Operand, matmul};
use crate::cpu::winograd;

thread_local! {
    /// Each thread's patch matrix, kept between calls: a fresh one per task
    /// cost more in allocation and page faults than filling it does.
    static PATCHES: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Runs `work` with this thread's patch buffer. `work` must not run rayon
/// tasks: one stolen while the buffer is borrowed would borrow it again.
fn with_patches<R>(work: impl FnOnce(&mut Vec<f32>) -> R) -> R {
    PATCHES.with(|patches| work(&mut patches.borrow_mut()))
}

/// One sample's patch matrix: row `(c, dy, dx)`, column `(y, x)` holds
/// `input[c, y + dy - pad, x + dx - pad]`, zero outside the board.
///
/// Each row is its channel's plane shifted by `(dy - pad) * width + dx -
/// pad`: one copy, then zeros where the shift left the board at the top or
/// bottom (outside the copied range) or wrapped around a side (the columns a
/// horizontal shift moves off the board).
fn im2col(shape: ConvShape, input: &[f32], patches: &mut Vec<f32>) {
    let (width, kernel, plane) = (shape.width, shape.kernel, shape.plane());
    let pad = kernel / 2;
    patches.resize(shape.patch() * plane, 0.0);
    let mut rows = patches.chunks_exact_mut(plane);
    for channel in input.chunks_exact(plane) {
        for dy in 0..kernel {
            for dx in 0..kernel {
                let row = rows.next().expect("one patch row per (channel, dy, dx)");
                // Source index = destination index + dy * width + dx - shift_back.
                let (ahead, back) = (dy * width + dx, pad * width + pad);
                let first = back.saturating_sub(ahead).min(plane);
                let end = (plane + back).saturating_sub(ahead).clamp(first, plane);
                row[..first].fill(0.0);
                row[end..].fill(0.0);
                row[first..end].copy_from_slice(&channel[first + ahead - back..end + ahead - back]);
                // Columns x with x + dx - pad off the board: x < pad - dx or x >= width + pad - dx.
                let (left, right) = (pad.saturating_sub(dx).min(width), (width + pad).saturating_sub(dx).min(width));
                if left > 0 || right < width {
                    for line in row.chunks_exact_mut(width) {
                        line[..left].fill(0.0);
                        line[right..].fill(0.0);
                    }
                }
            }
        }
    }
}

/// The operand a sample contributes to a product: its patch matrix, or for a
/// 1x1 kernel the input itself.
fn patches<'a>(shape: ConvShape, input: &'a [f32], buffer: &'a mut Vec<f32>) -> &'a [f32] {
    if shape.kernel == 1 {
        input
    } else {
        im2col(shape, input, buffer);
        buffer
    }
}

/// `output = conv(input, weight) + bias`, shapes `[batch, inputs, h, w]`,
/// `[outputs, inputs, k, k]`, `[outputs]` and `[batch, outputs, h, w]`.
pub fn forward(shape: ConvShape, input: &[f32], weight: &[f32], bias: Option<&[f32]>, output: &mut [f32]) {
    if winograd::suits(shape) {
        return winograd::forward(shape, input, weight, bias, output);
    }
    let (input_len, weight_len, output_len) = shape.lens();
    assert_eq!((input.len(), weight.len(), output.len()), (input_len, weight_len, output_len), "conv: {shape:?}");
    assert!(bias.is_none_or(|bias| bias.len() == shape.outputs), "conv: bias length");
    let (plane, patch) = (shape.plane(), shape.patch());
    let sample = |buffer: &mut Vec<f32>, input: &[f32], output: &mut [f32], parallelism| {
        if let Some(bias) = bias {
            output.chunks_exact_mut(plane).zip(bias).for_each(|(row, &b)| row.fill(b));
        }
        let rhs = patches(shape, input, buffer);
        matmul(
            [shape.outputs, plane, patch],
            output,
            plane,
            bias.is_some(),
            Operand { data: weight, row_stride: patch, column_stride: 1 },
            Operand { data: rhs, row_stride: plane, column_stride: 1 },
            parallelism,
        );
    };
    if output_len == 0 {
        return;
    }
    let threads = rayon::current_num_threads();
    let (input_stride, output_stride) = (shape.inputs * plane, shape.outputs * plane);
    if shape.batch >= threads {
        output
            .par_chunks_exact_mut(output_stride)
            .zip(input.par_chunks_exact(input_stride))
            .for_each(|(output, input)| with_patches(|buffer| sample(buffer, input, output, Parallelism::None)));
    } else {
        // Too few samples to share out: each product uses every core (so
        // not the thread's buffer, see `with_patches`).
        let mut buffer = Vec::new();
        for (output, input) in output.chunks_exact_mut(output_stride).zip(input.chunks_exact(input_stride)) {
            sample(&mut buffer, input, output, Parallelism::Rayon(threads));
        }
    }
}

/// The gradient of the input: the convolution of the output's gradient with
/// the kernel transposed (inputs <-> outputs) and rotated half a turn.
pub fn input_grad(shape: ConvShape, weight: &[f32], output_grad: &[f32], input_grad: &mut [f32]) {
    let (inputs, outputs, kernel) = (shape.inputs, shape.outputs, shape.kernel);
    let taps = kernel * kernel;
    assert_eq!(weight.len(), outputs * inputs * taps, "conv: {shape:?}");
    let mut flipped = vec![0.0; weight.len()];
    for (o, filters) in weight.chunks_exact(inputs * taps).enumerate() {
        for (i, filter) in filters.chunks_exact(taps).enumerate() {
            let target = &mut flipped[(i * outputs + o) * taps..][..taps];
            target.iter_mut().zip(filter.iter().rev()).for_each(|(t, &w)| *t = w);
        }
    }
    forward(shape.transposed(), output_grad, &flipped, None, input_grad);
}

/// The gradient of the weight: the sum over samples of output gradient
/// `[outputs, squares]` x patches transposed `[squares, patch]`.
pub fn weight_grad(shape: ConvShape, input: &[f32], output_grad: &[f32], weight_grad: &mut [f32]) {
    if winograd::suits(shape) {
        return winograd::weight_grad(shape, input, output_grad, weight_grad);
    }
    let (input_len, weight_len, output_len) = shape.lens();
    assert_eq!(
        (input.len(), weight_grad.len(), output_grad.len()),
        (input_len, weight_len, output_len),
        "conv: {shape:?}"
    );
    let (plane, patch) = (shape.plane(), shape.patch());
    let (input_stride, output_stride) = (shape.inputs * plane, shape.outputs * plane);
    if output_len == 0 || input_len == 0 {
        weight_grad.fill(0.0);
        return;
    }
    // Each core sums its share of the batch; the shares are added at the end.
    let per_task = shape.batch.div_ceil(rayon::current_num_threads());
    let sum = input
        .par_chunks(per_task * input_stride)
        .zip(output_grad.par_chunks(per_task * output_stride))
        .map(|(inputs, grads)| {
            let mut sum = vec![0.0; weight_len];
            for (index, (input, grad)) in
                inputs.chunks_exact(input_stride).zip(grads.chunks_exact(output_stride)).enumerate()
            {
                with_patches(|buffer| {
                    let rhs = patches(shape, input, buffer);
                    matmul(
                        [shape.outputs, patch, plane],
                        &mut sum,
                        patch,
                        index > 0,
                        Operand { data: grad, row_stride: plane, column_stride: 1 },
                        Operand { data: rhs, row_stride: 1, column_stride: plane },
                        Parallelism::None,
                    );
                });
            }
            sum
        })
        .reduce_with(add_partial_sums)
        .expect("a non-empty batch has a share");
    weight_grad.copy_from_slice(&sum);
}

/// The gradient of the bias: the output's gradient `[batch, outputs,
/// plane]` summed over samples and squares.
pub fn bias_grad(output_grad: &[f32], plane: usize, bias_grad: &mut [f32]) {
    let outputs = bias_grad.len();
    assert!(
        plane > 0 && output_grad.len().is_multiple_of(outputs * plane),
        "conv: bias gradient of {outputs} x {plane}"
    );
    bias_grad.fill(0.0);
    for grad in output_grad.chunks_exact(outputs * plane) {
        for (b, row) in bias_grad.iter_mut().zip(grad.chunks_exact(plane)) {
            *b += row.iter().sum::<f32>();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, one multiply-add at a time.
    fn naive(shape: ConvShape, input: &[f32], weight: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
        let ConvShape { batch, inputs, outputs, height, width, kernel } = shape;
        let pad = kernel / 2;
        let mut out = vec![0.0; batch * outputs * height * width];
        for n in 0..batch {
            for o in 0..outputs {
                for y in 0..height {
                    for x in 0..width {
                        let mut sum = bias.map_or(0.0, |b| f64::from(b[o]));
                        for i in 0..inputs {
                            for dy in 0..kernel {
                                for dx in 0..kernel {
                                    let (sy, sx) = ((y + dy).wrapping_sub(pad), (x + dx).wrapping_sub(pad));
                                    if sy < height && sx < width {
                                        let v = input[((n * inputs + i) * height + sy) * width + sx];
                                        let w = weight[((o * inputs + i) * kernel + dy) * kernel + dx];
                                        sum += f64::from(v) * f64::from(w);
                                    }
                                }
                            }
                        }
                        out[((n * outputs + o) * height + y) * width + x] = sum as f32;
                    }
                }
            }
        }
        out
    }

    fn values(count: usize, seed: u64) -> Vec<f32> {
        let mut rng = capa_rules::Rng::new(seed);
        (0..count).map(|_| (rng.next_u64() % 2001) as f32 / 1000.0 - 1.0).collect()
    }

    fn assert_close(actual: &[f32], expected: &[f32], what: &str) {
        assert_eq!(actual.len(), expected.len(), "{what}");
        for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
            assert!((a - e).abs() <= 1e-4 * (1.0 + e.abs()), "{what}[{index}]: {a} vs {e}");
        }
    }

    /// The patch-matrix kernels (a batch too small for the Winograd lanes, a
    /// 1x1 and a 5x5 kernel) and the Winograd ones (a full and a partial
    /// chunk of lanes, exact chunks, and an odd board whose last tiles hang
    /// over its edges).
    const SHAPES: [ConvShape; 7] = [
        ConvShape { batch: 3, inputs: 5, outputs: 4, height: 8, width: 10, kernel: 3 },
        ConvShape { batch: 11, inputs: 5, outputs: 4, height: 8, width: 10, kernel: 3 },
        ConvShape { batch: 16, inputs: 7, outputs: 9, height: 8, width: 8, kernel: 3 },
        ConvShape { batch: 9, inputs: 3, outputs: 6, height: 5, width: 7, kernel: 3 },
        ConvShape { batch: 1, inputs: 2, outputs: 3, height: 8, width: 8, kernel: 3 },
        ConvShape { batch: 4, inputs: 6, outputs: 2, height: 8, width: 10, kernel: 1 },
        ConvShape { batch: 2, inputs: 3, outputs: 2, height: 4, width: 3, kernel: 5 },
    ];

    #[test]
    fn forward_matches_the_definition() {
        for shape in SHAPES {
            let (input_len, weight_len, output_len) = shape.lens();
            let (input, weight, bias) = (values(input_len, 1), values(weight_len, 2), values(shape.outputs, 3));
            for bias in [None, Some(bias.as_slice())] {
                let mut output = vec![f32::NAN; output_len];
                forward(shape, &input, &weight, bias, &mut output);
                assert_close(
                    &output,
                    &naive(shape, &input, &weight, bias),
                    &format!("{shape:?} bias {}", bias.is_some()),
                );
            }
        }
    }

    /// The gradients of `sum(output * g)`: each is the linear map's
    /// adjoint, so `<grad_x, dx> = <g, conv(dx, w)>` and the same for `w`.
    #[test]
    fn gradients_are_the_adjoints_of_the_forward_pass() {
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum::<f64>();
        for shape in SHAPES {
            let (input_len, weight_len, output_len) = shape.lens();
            let (input, weight, g) = (values(input_len, 4), values(weight_len, 5), values(output_len, 6));
            let (dx, dw) = (values(input_len, 7), values(weight_len, 8));

            let mut grad_x = vec![f32::NAN; input_len];
            input_grad(shape, &weight, &g, &mut grad_x);
            let expected = dot(&g, &naive(shape, &dx, &weight, None));
            assert!((dot(&grad_x, &dx) - expected).abs() < 1e-3 * (1.0 + expected.abs()), "{shape:?} input");

            let mut grad_w = vec![f32::NAN; weight_len];
            weight_grad(shape, &input, &g, &mut grad_w);
            let expected = dot(&g, &naive(shape, &input, &dw, None));
            assert!((dot(&grad_w, &dw) - expected).abs() < 1e-3 * (1.0 + expected.abs()), "{shape:?} weight");

            let mut grad_b = vec![f32::NAN; shape.outputs];
            bias_grad(&g, shape.height * shape.width, &mut grad_b);
            let ones = vec![1.0; input_len];
            let zero_weight = vec![0.0; weight_len];
            let db = values(shape.outputs, 9);
            let expected = dot(&g, &naive(shape, &ones, &zero_weight, Some(&db)));
            assert!((dot(&grad_b, &db) - expected).abs() < 1e-3 * (1.0 + expected.abs()), "{shape:?} bias");
        }
    }
}
