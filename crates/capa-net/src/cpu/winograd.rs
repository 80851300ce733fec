//! 3x3 convolutions by Winograd's minimal filtering F(2x2, 3x3): each 2x2
//! block of the output comes from a 4x4 block of the input through 16
//! multiplications per (input, output) channel pair instead of 36, so the
//! matrix products, which are most of a convolution's time, do 2.25 times
//! less work than the patch-matrix products of `conv`.
//!
//! With `d` a 4x4 input tile, `g` a 3x3 filter and `Y` the 2x2 output tile:
//! `U = G g G^T`, `V = B^T d B`, `M = sum over input channels of U . V`
//! (element-wise, so one product per position of the 4x4 tile), `Y = A^T M
//! A`. The weight gradient runs the same factors backward: `dM = A dY
//! A^T`, `dU = sum over tiles of dM . V`, `dg = G^T dU G`.
//!
//! The transforms are vectorised across samples: [`LANES`] samples are
//! gathered into a layout where each board square holds one value per
//! sample side by side, so every addition of a transform is one vector
//! operation. The products then see `tiles x LANES` columns.

use std::cell::RefCell;

use gemm::Parallelism;
use rayon::prelude::*;

use crate::cpu::conv_shape::ConvShape;
use crate::cpu::elementwise::{add_partial_sums, vectorized};
use crate::cpu::gemm::{Operand, matmul};

/// Samples transformed together, one per vector lane.
const LANES: usize = 8;

/// Positions in a transformed 4x4 tile: one matrix product each.
const POSITIONS: usize = 16;

type Lanes = [f32; LANES];

/// Whether the Winograd kernels run `shape`: 3x3 kernels over a batch
/// large enough to fill the lanes (a small batch would transform mostly
/// empty lanes).
pub fn suits(shape: ConvShape) -> bool {
    shape.kernel == 3 && shape.batch >= LANES && shape.height > 0 && shape.width > 0
}

/// How a board splits into 2x2 output tiles (the last row or column of
/// tiles hangs over an odd board's edge).
#[derive(Clone, Copy)]
struct Tiling {
    rows: usize,
    columns: usize,
    height: usize,
    width: usize,
}

impl Tiling {
    fn new(shape: ConvShape) -> Tiling {
        Tiling {
            rows: shape.height.div_ceil(2),
            columns: shape.width.div_ceil(2),
            height: shape.height,
            width: shape.width,
        }
    }

    fn tiles(&self) -> usize {
        self.rows * self.columns
    }

    /// Rows and columns of a gathered input: the board, a zero border, and
    /// one more zero row or column under a hanging tile.
    fn padded(&self) -> (usize, usize) {
        (2 * self.rows + 2, 2 * self.columns + 2)
    }
}

/// One thread's buffers, kept between calls.
#[derive(Default)]
struct Buffers {
    /// Gathered input: `[channel][padded row][padded column]` lanes.
    gathered: Vec<Lanes>,
    /// Transformed input `V`: `[position][channel][tile]` lanes.
    transformed: Vec<Lanes>,
    /// Products `M`, or the transformed output gradient `dM`:
    /// `[position][output][tile]` lanes.
    products: Vec<Lanes>,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
}

/// Runs `work` with this thread's buffers. `work` must not run rayon tasks
/// (one stolen while the buffers are borrowed would borrow them again).
fn with_buffers<R>(work: impl FnOnce(&mut Buffers) -> R) -> R {
    BUFFERS.with(|buffers| work(&mut buffers.borrow_mut()))
}

/// The lanes as a flat slice of floats (a `[tile][lane]` row is one
/// matrix row of `tiles x LANES` columns).
fn flat(lanes: &[Lanes]) -> &[f32] {
    lanes.as_flattened()
}

fn flat_mut(lanes: &mut [Lanes]) -> &mut [f32] {
    lanes.as_flattened_mut()
}

/// `U = G g G^T` for every (output, input) pair: `[position][output][input]`.
fn transform_weights(shape: ConvShape, weight: &[f32]) -> Vec<f32> {
    let (inputs, outputs) = (shape.inputs, shape.outputs);
    let mut transformed = vec![0.0; POSITIONS * outputs * inputs];
    // G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]].
    let g = |v: [f32; 3]| [v[0], 0.5 * (v[0] + v[1] + v[2]), 0.5 * (v[0] - v[1] + v[2]), v[2]];
    for (pair, filter) in weight.chunks_exact(9).enumerate() {
        let rows = [0, 1, 2].map(|r| g([filter[3 * r], filter[3 * r + 1], filter[3 * r + 2]]));
        for column in 0..4 {
            let u = g([rows[0][column], rows[1][column], rows[2][column]]);
            for (row, &value) in u.iter().enumerate() {
                transformed[(row * 4 + column) * outputs * inputs + pair] = value;
            }
        }
    }
    transformed
}

/// The weight gradient from `dU`: `dg = G^T dU G` for every pair.
fn untransform_weight_grad(shape: ConvShape, transformed: &[f32], weight_grad: &mut [f32]) {
    let pairs = shape.outputs * shape.inputs;
    // G^T = [[1, 1/2, 1/2, 0], [0, 1/2, -1/2, 0], [0, 1/2, 1/2, 1]].
    let gt = |u: [f32; 4]| [u[0] + 0.5 * (u[1] + u[2]), 0.5 * (u[1] - u[2]), 0.5 * (u[1] + u[2]) + u[3]];
    for (pair, filter) in weight_grad.chunks_exact_mut(9).enumerate() {
        let at = |row: usize, column: usize| transformed[(row * 4 + column) * pairs + pair];
        let rows = [0, 1, 2, 3].map(|r| gt([at(r, 0), at(r, 1), at(r, 2), at(r, 3)]));
        for column in 0..3 {
            let dg = gt([rows[0][column], rows[1][column], rows[2][column], rows[3][column]]);
            for (row, &value) in dg.iter().enumerate() {
                filter[3 * row + column] = value;
            }
        }
    }
}

/// `x` `[samples, channels, height, width]` (up to [`LANES`] samples) into
/// `gathered` `[channel][row + 1][column + 1]` lanes, zero around the board
/// and in the lanes past the last sample.
fn gather(tiling: Tiling, channels: usize, x: &[f32], gathered: &mut Vec<Lanes>) {
    let (padded_rows, padded_columns) = tiling.padded();
    let (height, width) = (tiling.height, tiling.width);
    let (plane, sample_len) = (height * width, channels * height * width);
    let samples = x.len() / sample_len;
    gathered.clear();
    gathered.resize(channels * padded_rows * padded_columns, [0.0; LANES]);
    // Lanes innermost: each square's lanes are written once, whole.
    for channel in 0..channels {
        for row in 0..height {
            let start = (channel * padded_rows + row + 1) * padded_columns + 1;
            for (column, square) in gathered[start..start + width].iter_mut().enumerate() {
                let source = channel * plane + row * width + column;
                for (lane, value) in square.iter_mut().take(samples).enumerate() {
                    *value = x[lane * sample_len + source];
                }
            }
        }
    }
}

/// `B^T v` for the columns of a 4x4 tile of lanes, or its rows.
#[inline(always)]
fn input_transform(d: [Lanes; 4]) -> [Lanes; 4] {
    let mut out = [[0.0; LANES]; 4];
    for lane in 0..LANES {
        let [d0, d1, d2, d3] = [d[0][lane], d[1][lane], d[2][lane], d[3][lane]];
        out[0][lane] = d0 - d2;
        out[1][lane] = d1 + d2;
        out[2][lane] = d2 - d1;
        out[3][lane] = d1 - d3;
    }
    out
}

/// `V = B^T d B` of every tile of every channel: `transformed`
/// `[position][channel][tile]` lanes.
fn transform_input(tiling: Tiling, channels: usize, gathered: &[Lanes], transformed: &mut Vec<Lanes>) {
    let (_, padded_columns) = tiling.padded();
    let plane = gathered.len() / channels;
    let tiles = tiling.tiles();
    transformed.resize(POSITIONS * channels * tiles, [0.0; LANES]);
    let position_stride = channels * tiles;
    for channel in 0..channels {
        let board = &gathered[channel * plane..(channel + 1) * plane];
        for tile_row in 0..tiling.rows {
            for tile_column in 0..tiling.columns {
                let corner = 2 * tile_row * padded_columns + 2 * tile_column;
                let at = |r: usize, c: usize| board[corner + r * padded_columns + c];
                // Columns first (B^T on each column), then rows.
                let columns = [0, 1, 2, 3].map(|c| input_transform([at(0, c), at(1, c), at(2, c), at(3, c)]));
                let tile = channel * tiles + tile_row * tiling.columns + tile_column;
                for row in 0..4 {
                    let v = input_transform([columns[0][row], columns[1][row], columns[2][row], columns[3][row]]);
                    for (column, lanes) in v.into_iter().enumerate() {
                        transformed[(row * 4 + column) * position_stride + tile] = lanes;
                    }
                }
            }
        }
    }
}

/// `products[p] = U[p] V[p]` for every position: `[outputs, tiles x
/// LANES]` each.
fn multiply(shape: ConvShape, tiles: usize, weights: &[f32], transformed: &[Lanes], products: &mut Vec<Lanes>) {
    let (inputs, outputs) = (shape.inputs, shape.outputs);
    let columns = tiles * LANES;
    products.resize(POSITIONS * outputs * tiles, [0.0; LANES]);
    let (products, transformed) = (flat_mut(products), flat(transformed));
    for position in 0..POSITIONS {
        matmul(
            [outputs, columns, inputs],
            &mut products[position * outputs * columns..(position + 1) * outputs * columns],
            columns,
            false,
            Operand { data: &weights[position * outputs * inputs..], row_stride: inputs, column_stride: 1 },
            Operand { data: &transformed[position * inputs * columns..], row_stride: columns, column_stride: 1 },
            Parallelism::None,
        );
    }
}

/// `A^T v` of four lanes: `[v0 + v1 + v2, v1 - v2 - v3]`.
#[inline(always)]
fn output_transform(m: [Lanes; 4]) -> [Lanes; 2] {
    let mut out = [[0.0; LANES]; 2];
    for lane in 0..LANES {
        out[0][lane] = m[0][lane] + m[1][lane] + m[2][lane];
        out[1][lane] = m[1][lane] - m[2][lane] - m[3][lane];
    }
    out
}

/// `Y = A^T M A` (plus the bias) of every tile into `output` `[samples,
/// outputs, height, width]` for the samples present.
fn transform_output(tiling: Tiling, outputs: usize, products: &[Lanes], bias: Option<&[f32]>, output: &mut [f32]) {
    let tiles = tiling.tiles();
    let (height, width) = (tiling.height, tiling.width);
    let plane = height * width;
    let samples = output.len() / (outputs * plane);
    let position_stride = outputs * tiles;
    for channel in 0..outputs {
        let offset = bias.map_or(0.0, |bias| bias[channel]);
        for tile_row in 0..tiling.rows {
            for tile_column in 0..tiling.columns {
                let index = channel * tiles + tile_row * tiling.columns + tile_column;
                let at = |p: usize| products[p * position_stride + index];
                let rows =
                    [0, 1, 2, 3].map(|r| output_transform([at(4 * r), at(4 * r + 1), at(4 * r + 2), at(4 * r + 3)]));
                for (column, x) in [2 * tile_column, 2 * tile_column + 1].into_iter().enumerate() {
                    let y = output_transform([rows[0][column], rows[1][column], rows[2][column], rows[3][column]]);
                    for (row, lanes) in y.iter().enumerate() {
                        let y = 2 * tile_row + row;
                        if y >= height || x >= width {
                            continue;
                        }
                        for (lane, &value) in lanes.iter().take(samples).enumerate() {
                            output[(lane * outputs + channel) * plane + y * width + x] = value + offset;
                        }
                    }
                }
            }
        }
    }
}

/// `output = conv(input, weight) + bias` for a 3x3 kernel; shapes as
/// `conv::forward`'s, and [`suits`] must hold.
pub fn forward(shape: ConvShape, input: &[f32], weight: &[f32], bias: Option<&[f32]>, output: &mut [f32]) {
    let (input_len, weight_len, output_len) = shape.lens();
    assert_eq!((input.len(), weight.len(), output.len()), (input_len, weight_len, output_len), "conv: {shape:?}");
    assert!(suits(shape) && bias.is_none_or(|bias| bias.len() == shape.outputs), "winograd: {shape:?}");
    let tiling = Tiling::new(shape);
    let weights = transform_weights(shape, weight);
    let plane = shape.height * shape.width;
    output.par_chunks_mut(LANES * shape.outputs * plane).zip(input.par_chunks(LANES * shape.inputs * plane)).for_each(
        |(output, input)| {
            with_buffers(|buffers| {
                vectorized(|| {
                    gather(tiling, shape.inputs, input, &mut buffers.gathered);
                    transform_input(tiling, shape.inputs, &buffers.gathered, &mut buffers.transformed);
                });
                multiply(shape, tiling.tiles(), &weights, &buffers.transformed, &mut buffers.products);
                vectorized(|| transform_output(tiling, shape.outputs, &buffers.products, bias, output));
            })
        },
    );
}

/// `A v` of two lanes: `[v0, v0 + v1, v0 - v1, -v1]`.
#[inline(always)]
fn gradient_transform(g: [Lanes; 2]) -> [Lanes; 4] {
    let mut out = [[0.0; LANES]; 4];
    for lane in 0..LANES {
        out[0][lane] = g[0][lane];
        out[1][lane] = g[0][lane] + g[1][lane];
        out[2][lane] = g[0][lane] - g[1][lane];
        out[3][lane] = -g[1][lane];
    }
    out
}

/// `dM = A dY A^T` of every tile of the output's gradient: `[position]
/// [output][tile]` lanes. `gathered` holds the gradient laid out as
/// [`gather`] lays out an input (its border unused).
fn transform_output_grad(tiling: Tiling, outputs: usize, gathered: &[Lanes], transformed: &mut Vec<Lanes>) {
    let (_, padded_columns) = tiling.padded();
    let plane = gathered.len() / outputs;
    let tiles = tiling.tiles();
    transformed.resize(POSITIONS * outputs * tiles, [0.0; LANES]);
    let position_stride = outputs * tiles;
    for channel in 0..outputs {
        let board = &gathered[channel * plane..(channel + 1) * plane];
        for tile_row in 0..tiling.rows {
            for tile_column in 0..tiling.columns {
                // The tile's gradient sits one square in from the border.
                let corner = (2 * tile_row + 1) * padded_columns + 2 * tile_column + 1;
                let at = |r: usize, c: usize| board[corner + r * padded_columns + c];
                let columns = [0, 1].map(|c| gradient_transform([at(0, c), at(1, c)]));
                let tile = channel * tiles + tile_row * tiling.columns + tile_column;
                for row in 0..4 {
                    let m = gradient_transform([columns[0][row], columns[1][row]]);
                    for (column, lanes) in m.into_iter().enumerate() {
                        transformed[(row * 4 + column) * position_stride + tile] = lanes;
                    }
                }
            }
        }
    }
}

/// The weight gradient of [`forward`]: the sum over samples and tiles of
/// `dM V` per position, then `G^T dU G`. Each core sums its share of the
/// batch; the shares are added at the end.
pub fn weight_grad(shape: ConvShape, input: &[f32], output_grad: &[f32], weight_grad: &mut [f32]) {
    let (input_len, weight_len, output_len) = shape.lens();
    assert_eq!(
        (input.len(), weight_grad.len(), output_grad.len()),
        (input_len, weight_len, output_len),
        "conv: {shape:?}"
    );
    assert!(suits(shape), "winograd: {shape:?}");
    let (inputs, outputs) = (shape.inputs, shape.outputs);
    let tiling = Tiling::new(shape);
    let (tiles, plane) = (tiling.tiles(), shape.height * shape.width);
    let columns = tiles * LANES;
    let chunks = shape.batch.div_ceil(LANES);
    let per_task = chunks.div_ceil(rayon::current_num_threads()) * LANES;
    let transformed_grad = input
        .par_chunks(per_task * inputs * plane)
        .zip(output_grad.par_chunks(per_task * outputs * plane))
        .map(|(inputs_share, grads_share)| {
            let mut sum = vec![0.0f32; POSITIONS * outputs * inputs];
            with_buffers(|buffers| {
                for (index, (input, grad)) in inputs_share
                    .chunks(LANES * inputs * plane)
                    .zip(grads_share.chunks(LANES * outputs * plane))
                    .enumerate()
                {
                    vectorized(|| {
                        gather(tiling, inputs, input, &mut buffers.gathered);
                        transform_input(tiling, inputs, &buffers.gathered, &mut buffers.transformed);
                        gather(tiling, outputs, grad, &mut buffers.gathered);
                        transform_output_grad(tiling, outputs, &buffers.gathered, &mut buffers.products);
                    });
                    let (grads, transformed) = (flat(&buffers.products), flat(&buffers.transformed));
                    for position in 0..POSITIONS {
                        matmul(
                            [outputs, inputs, columns],
                            &mut sum[position * outputs * inputs..(position + 1) * outputs * inputs],
                            inputs,
                            index > 0,
                            Operand {
                                data: &grads[position * outputs * columns..],
                                row_stride: columns,
                                column_stride: 1,
                            },
                            Operand {
                                data: &transformed[position * inputs * columns..],
                                row_stride: 1,
                                column_stride: columns,
                            },
                            Parallelism::None,
                        );
                    }
                }
            });
            sum
        })
        .reduce_with(add_partial_sums)
        .expect("a non-empty batch has a share");
    untransform_weight_grad(shape, &transformed_grad, weight_grad);
}
