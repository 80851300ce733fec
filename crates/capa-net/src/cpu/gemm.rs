//! Matrix products on f32 slices through the `gemm` crate (the one burn's
//! flex uses), with the bounds checked before the unsafe call.

use gemm::Parallelism;
use rayon::prelude::*;

use crate::cpu::elementwise::{CHUNK, add_partial_sums};

/// One operand of a matrix product: its elements and the distance between
/// consecutive rows and columns.
pub struct Operand<'a> {
    /// The elements, the first at index 0.
    pub data: &'a [f32],
    /// From one row to the next.
    pub row_stride: usize,
    /// From one column to the next.
    pub column_stride: usize,
}

/// `dst (m x n, rows dst_row_stride apart) = [dst +] lhs (m x k) . rhs (k x n)`.
#[allow(clippy::too_many_arguments)]
pub fn matmul(
    [m, n, k]: [usize; 3],
    dst: &mut [f32],
    dst_row_stride: usize,
    accumulate: bool,
    lhs: Operand,
    rhs: Operand,
    parallelism: Parallelism,
) {
    let extent = |rows: usize, columns: usize, row_stride: usize, column_stride: usize| {
        if rows == 0 || columns == 0 { 0 } else { (rows - 1) * row_stride + (columns - 1) * column_stride + 1 }
    };
    assert!(extent(m, n, dst_row_stride, 1) <= dst.len(), "matmul: destination too short");
    assert!(extent(m, k, lhs.row_stride, lhs.column_stride) <= lhs.data.len(), "matmul: lhs too short");
    assert!(extent(k, n, rhs.row_stride, rhs.column_stride) <= rhs.data.len(), "matmul: rhs too short");
    let stride = |s: usize| isize::try_from(s).expect("matmul: stride overflows isize");
    // SAFETY: the assertions above keep every element the product reads or
    // writes inside its slice; `dst` is borrowed mutably, so it aliases
    // neither operand.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            stride(dst_row_stride),
            accumulate,
            lhs.data.as_ptr(),
            stride(lhs.column_stride),
            stride(lhs.row_stride),
            rhs.data.as_ptr(),
            stride(rhs.column_stride),
            stride(rhs.row_stride),
            1.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Products smaller than this many multiply-adds run on the calling thread:
/// sharing them out costs more than it saves.
const PARALLEL_WORK: usize = 1 << 21;

/// How a product of `m x n x k` multiply-adds is run.
fn parallelism(m: usize, n: usize, k: usize) -> Parallelism {
    if m.saturating_mul(n).saturating_mul(k) < PARALLEL_WORK {
        Parallelism::None
    } else {
        Parallelism::Rayon(rayon::current_num_threads())
    }
}

/// The dimensions of a fully connected layer: `rows` inputs of `inputs`
/// values to `rows` outputs of `outputs` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DenseShape {
    /// Rows of the input and the output (samples, or samples x squares).
    pub rows: usize,
    /// Values per input row.
    pub inputs: usize,
    /// Values per output row.
    pub outputs: usize,
}

impl DenseShape {
    /// Elements of the input, weight and output.
    pub fn lens(&self) -> (usize, usize, usize) {
        (self.rows * self.inputs, self.inputs * self.outputs, self.rows * self.outputs)
    }

    fn check(&self, x: usize, weight: usize, out: usize) {
        assert_eq!((x, weight, out), self.lens(), "dense: {self:?}");
    }
}

/// `out = x weight + bias`: `x` `[rows, inputs]`, `weight` `[inputs,
/// outputs]` (burn's `Linear` layout), `bias` `[outputs]`.
pub fn dense(shape: DenseShape, x: &[f32], weight: &[f32], bias: Option<&[f32]>, out: &mut [f32]) {
    let DenseShape { rows, inputs, outputs } = shape;
    shape.check(x.len(), weight.len(), out.len());
    if out.is_empty() {
        return;
    }
    if let Some(bias) = bias {
        assert_eq!(bias.len(), outputs, "dense: bias length");
        out.par_chunks_mut(outputs * CHUNK.div_ceil(outputs)).for_each(|rows| {
            rows.chunks_exact_mut(outputs).for_each(|row| row.copy_from_slice(bias));
        });
    }
    matmul(
        [rows, outputs, inputs],
        out,
        outputs,
        bias.is_some(),
        Operand { data: x, row_stride: inputs, column_stride: 1 },
        Operand { data: weight, row_stride: outputs, column_stride: 1 },
        parallelism(rows, outputs, inputs),
    );
}

/// The gradient of [`dense`]'s input: `grad weight^T`.
pub fn dense_input_grad(shape: DenseShape, weight: &[f32], grad: &[f32], input_grad: &mut [f32]) {
    let DenseShape { rows, inputs, outputs } = shape;
    shape.check(input_grad.len(), weight.len(), grad.len());
    if input_grad.is_empty() {
        return;
    }
    matmul(
        [rows, inputs, outputs],
        input_grad,
        inputs,
        false,
        Operand { data: grad, row_stride: outputs, column_stride: 1 },
        Operand { data: weight, row_stride: 1, column_stride: outputs },
        parallelism(rows, inputs, outputs),
    );
}

/// The gradient of [`dense`]'s weight: `x^T grad`, a sum over the rows.
///
/// A small weight over many rows (the transformer's projections: 64 x 64
/// over every square of the batch) leaves a product too few output tiles to
/// share out, so each core sums its share of the rows and the shares are
/// added; a large one (the policy head's) is one product on every core.
pub fn dense_weight_grad(shape: DenseShape, x: &[f32], grad: &[f32], weight_grad: &mut [f32]) {
    let DenseShape { rows, inputs, outputs } = shape;
    shape.check(x.len(), weight_grad.len(), grad.len());
    let product = |rows: usize, x: &[f32], grad: &[f32], weight_grad: &mut [f32], parallelism| {
        matmul(
            [inputs, outputs, rows],
            weight_grad,
            outputs,
            false,
            Operand { data: x, row_stride: 1, column_stride: inputs },
            Operand { data: grad, row_stride: outputs, column_stride: 1 },
            parallelism,
        );
    };
    if rows == 0 || weight_grad.is_empty() {
        weight_grad.fill(0.0);
        return;
    }
    let shares = rayon::current_num_threads().min(rows / SPLIT_ROWS);
    if shares < 2 || inputs * outputs > SPLIT_WEIGHT {
        product(rows, x, grad, weight_grad, parallelism(inputs, outputs, rows));
        return;
    }
    let per_share = rows.div_ceil(shares);
    let partial = x
        .par_chunks(per_share * inputs)
        .zip(grad.par_chunks(per_share * outputs))
        .map(|(x, grad)| {
            let mut sum = vec![0.0; inputs * outputs];
            product(x.len() / inputs, x, grad, &mut sum, Parallelism::None);
            sum
        })
        .reduce_with(add_partial_sums)
        .expect("at least two shares");
    weight_grad.copy_from_slice(&partial);
}

/// The gradient of [`dense`]'s bias: `grad` `[rows, outputs]` summed over
/// its rows.
pub fn dense_bias_grad(grad: &[f32], outputs: usize, bias_grad: &mut [f32]) {
    assert!(outputs > 0 && bias_grad.len() == outputs && grad.len().is_multiple_of(outputs), "dense: bias gradient");
    let rows_per_task = CHUNK.div_ceil(outputs);
    let sum = grad
        .par_chunks(rows_per_task * outputs)
        .map(|rows| {
            let mut sum = vec![0.0f32; outputs];
            for row in rows.chunks_exact(outputs) {
                sum.iter_mut().zip(row).for_each(|(s, g)| *s += g);
            }
            sum
        })
        .reduce_with(add_partial_sums);
    match sum {
        Some(sum) => bias_grad.copy_from_slice(&sum),
        None => bias_grad.fill(0.0),
    }
}

/// Rows each share of a split weight gradient takes at least.
const SPLIT_ROWS: usize = 512;

/// Weights larger than this are one product on every core, not one per core.
const SPLIT_WEIGHT: usize = 1 << 16;
