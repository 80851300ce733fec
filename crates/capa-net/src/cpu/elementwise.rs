//! Element-wise and row kernels on f32 slices for the CPU backend: Mish and
//! its derivative, softmax, compiled for the widest vector unit the CPU has.
//!
//! libm's `expf` is a call per element, which keeps a loop scalar; Mish and
//! softmax spent most of their time there. [`exp`] is a polynomial that the
//! compiler unrolls into vector instructions, and [`vectorized`] compiles a
//! loop once per instruction set (AVX-512, AVX2) and picks one at run time,
//! since release builds target baseline x86-64.

use rayon::prelude::*;

use crate::adamw::AdamWStep;

/// Elements per parallel task: large enough to amortise the scheduling.
pub(crate) const CHUNK: usize = 1 << 14;

/// `e^x` within about 2 ulp for `x` in [-87, 88]; below -87 it gives
/// `e^-87`, which is zero to anything it is added to.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two so that x - n ln 2 is exact to f32 precision.
    const LN2_HIGH: f32 = 0.693_359_4;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    // Adding 1.5 * 2^23 rounds to an integer held in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    let x = if x < -87.0 { -87.0 } else { x };
    let shifted = x * LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = (x - n * LN2_HIGH) - n * LN2_LOW;
    // e^r on |r| <= ln 2 / 2: Taylor to degree 7, Horner form.
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    let exponent = shifted.to_bits().wrapping_sub(ROUND.to_bits()) as i32;
    f32::from_bits(p.to_bits().wrapping_add((exponent << 23) as u32))
}

/// Mish, `x tanh(softplus(x))`, with one exponential: `tanh(ln(1 + e)) = n /
/// (n + 2)` with `n = e (e + 2)`, `e = exp(x)`; beyond 20 the ratio is 1.
#[inline(always)]
pub fn mish(x: f32) -> f32 {
    let e = exp(if x < 20.0 { x } else { 20.0 });
    let n = e * (e + 2.0);
    x * n / (n + 2.0)
}

/// Mish's derivative: `t + x (1 - t^2) sigmoid(x)` with `t = tanh(softplus(x))`.
#[inline(always)]
pub fn mish_slope(x: f32) -> f32 {
    let e = exp(if x < 20.0 { x } else { 20.0 });
    let n = e * (e + 2.0);
    let t = n / (n + 2.0);
    t + x * (1.0 - t * t) * (e / (e + 1.0))
}

/// `out[i] = f(a[i], b[i])` over the whole slices, in parallel, each chunk
/// run by the widest vector code the CPU supports.
pub fn map(out: &mut [f32], a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32 + Copy + Send + Sync) {
    assert!(out.len() == a.len() && out.len() == b.len(), "map: lengths differ");
    out.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK)).zip(b.par_chunks(CHUNK)).for_each(|((out, a), b)| {
        vectorized(|| out.iter_mut().zip(a).zip(b).for_each(|((o, &a), &b)| *o = f(a, b)));
    });
}

/// Each `[rows, columns]` matrix of `x` transposed into `out`, in tiles that
/// stay in cache; matrices in parallel.
pub fn transpose_matrices(x: &[f32], [rows, columns]: [usize; 2], out: &mut [f32]) {
    const TILE: usize = 16;
    let size = rows * columns;
    assert!(x.len() == out.len() && size > 0 && x.len().is_multiple_of(size), "transpose: lengths");
    out.par_chunks_mut(size).zip(x.par_chunks(size)).for_each(|(out, x)| {
        for row_start in (0..rows).step_by(TILE) {
            for column_start in (0..columns).step_by(TILE) {
                for row in row_start..(row_start + TILE).min(rows) {
                    for column in column_start..(column_start + TILE).min(columns) {
                        out[column * rows + row] = x[row * columns + column];
                    }
                }
            }
        }
    });
}

/// Per row of `plane` values, the sum and the sum of squares: `out` holds
/// them side by side, two per row.
pub fn row_moments(x: &[f32], plane: usize, out: &mut [f32]) {
    assert!(plane > 0 && x.len() == out.len() / 2 * plane && out.len().is_multiple_of(2), "row moments: lengths");
    let rows_per_task = CHUNK.div_ceil(plane);
    out.par_chunks_mut(2 * rows_per_task).zip(x.par_chunks(rows_per_task * plane)).for_each(|(out, x)| {
        vectorized(|| {
            for (moments, row) in out.chunks_exact_mut(2).zip(x.chunks_exact(plane)) {
                moments[0] = fold_lanes(row, 0.0, |s, v| s + v);
                moments[1] = dot(row, row);
            }
        })
    });
}

/// The gradient of [`row_moments`]: `dx = d_sum + 2 x d_sum_of_squares`.
pub fn row_moments_backward(x: &[f32], plane: usize, grad: &[f32], dx: &mut [f32]) {
    assert!(plane > 0 && x.len() == dx.len() && x.len() == grad.len() / 2 * plane, "row moments: lengths");
    let rows_per_task = CHUNK.div_ceil(plane);
    dx.par_chunks_mut(rows_per_task * plane)
        .zip(x.par_chunks(rows_per_task * plane))
        .zip(grad.par_chunks(2 * rows_per_task))
        .for_each(|((dx, x), grad)| {
            vectorized(|| {
                for ((dx, x), g) in dx.chunks_exact_mut(plane).zip(x.chunks_exact(plane)).zip(grad.chunks_exact(2)) {
                    dx.iter_mut().zip(x).for_each(|(d, &v)| *d = g[0] + 2.0 * v * g[1]);
                }
            })
        });
}

/// The inputs of [`scale_shift_mish`]: rows of `plane` values, one scale and
/// one shift per row, and optionally a residual shaped like `x`.
#[derive(Clone, Copy)]
pub struct ScaleShift<'a> {
    /// The activations.
    pub x: &'a [f32],
    /// Values per row.
    pub plane: usize,
    /// One per row.
    pub scale: &'a [f32],
    /// One per row.
    pub shift: &'a [f32],
    /// Added before Mish.
    pub residual: Option<&'a [f32]>,
}

impl ScaleShift<'_> {
    fn check(&self, len: usize) {
        let rows = self.scale.len();
        assert!(
            self.plane > 0
                && self.x.len() == rows * self.plane
                && self.shift.len() == rows
                && len == self.x.len()
                && self.residual.is_none_or(|r| r.len() == len),
            "scale-shift-mish: lengths"
        );
    }

    /// The row chunks one task takes, with their row offset.
    fn rows_per_task(&self) -> usize {
        CHUNK.div_ceil(self.plane)
    }
}

/// `out = mish(x * scale + shift + residual)`, scale and shift per row.
pub fn scale_shift_mish(input: ScaleShift, out: &mut [f32]) {
    input.check(out.len());
    let (plane, rows_per_task) = (input.plane, input.rows_per_task());
    out.par_chunks_mut(rows_per_task * plane).enumerate().for_each(|(task, out)| {
        let first_row = task * rows_per_task;
        vectorized(|| {
            for (row, out) in out.chunks_exact_mut(plane).enumerate() {
                let (start, row) = ((first_row + row) * plane, first_row + row);
                let (scale, shift, x) = (input.scale[row], input.shift[row], &input.x[start..start + plane]);
                match input.residual {
                    Some(residual) => out
                        .iter_mut()
                        .zip(x)
                        .zip(&residual[start..start + plane])
                        .for_each(|((o, &x), &r)| *o = mish(x * scale + shift + r)),
                    None => out.iter_mut().zip(x).for_each(|(o, &x)| *o = mish(x * scale + shift)),
                }
            }
        })
    });
}

/// The gradients of [`scale_shift_mish`] given the output's `grad`: `dx`
/// (which is also the residual's gradient divided by `scale`), and per row
/// `dscale`, `dshift`; the residual's gradient into `dresidual` when given.
pub struct ScaleShiftGrads<'a> {
    /// The gradient of `x`.
    pub x: &'a mut [f32],
    /// The gradient of the scales.
    pub scale: &'a mut [f32],
    /// The gradient of the shifts.
    pub shift: &'a mut [f32],
    /// The gradient of the residual, when there is one.
    pub residual: Option<&'a mut [f32]>,
}

/// Backward through [`scale_shift_mish`]: with `g = grad mish'(z)`, `dx = g
/// scale`, `dresidual = g`, `dscale = sum(g x)`, `dshift = sum(g)` per row.
pub fn scale_shift_mish_backward(input: ScaleShift, grad: &[f32], grads: ScaleShiftGrads) {
    input.check(grad.len());
    let ScaleShiftGrads { x: dx, scale: dscale, shift: dshift, residual: dresidual } = grads;
    assert!(dx.len() == grad.len() && dscale.len() == input.scale.len() && dshift.len() == input.shift.len());
    assert_eq!(dresidual.is_some(), input.residual.is_some(), "scale-shift-mish: residual gradient");
    let (plane, rows_per_task) = (input.plane, input.rows_per_task());
    let residual_chunks: Vec<Option<&mut [f32]>> = match dresidual {
        Some(d) => d.chunks_mut(rows_per_task * plane).map(Some).collect(),
        None => (0..dx.len().div_ceil(rows_per_task * plane)).map(|_| None).collect(),
    };
    dx.par_chunks_mut(rows_per_task * plane)
        .zip(dscale.par_chunks_mut(rows_per_task).zip(dshift.par_chunks_mut(rows_per_task)))
        .zip(residual_chunks)
        .enumerate()
        .for_each(|(task, ((dx, (dscale, dshift)), mut dresidual))| {
            let first_row = task * rows_per_task;
            vectorized(|| {
                for (row, dx) in dx.chunks_exact_mut(plane).enumerate() {
                    let (start, index) = ((first_row + row) * plane, first_row + row);
                    let (scale, shift) = (input.scale[index], input.shift[index]);
                    let (x, g) = (&input.x[start..start + plane], &grad[start..start + plane]);
                    // dx holds g = grad mish'(z) for now.
                    match input.residual {
                        Some(residual) => dx
                            .iter_mut()
                            .zip(x)
                            .zip(&residual[start..start + plane])
                            .zip(g)
                            .for_each(|(((d, &x), &r), &g)| *d = g * mish_slope(x * scale + shift + r)),
                        None => {
                            dx.iter_mut().zip(x).zip(g).for_each(|((d, &x), &g)| *d = g * mish_slope(x * scale + shift))
                        }
                    }
                    dshift[row] = fold_lanes(dx, 0.0, |s, v| s + v);
                    dscale[row] = dot(dx, x);
                    if let Some(dresidual) = dresidual.as_deref_mut() {
                        dresidual[row * plane..(row + 1) * plane].copy_from_slice(dx);
                    }
                    dx.iter_mut().for_each(|d| *d *= scale);
                }
            })
        });
}

/// A parameter's AdamW state, updated in place by [`adamw`].
pub struct AdamWState<'a> {
    /// The weights.
    pub weight: &'a mut [f32],
    /// The first moment.
    pub first: &'a mut [f32],
    /// The second moment.
    pub second: &'a mut [f32],
}

/// One AdamW update in a single pass over memory (burn's tensor ops make
/// about fifteen).
pub fn adamw(state: AdamWState, gradient: &[f32], step: AdamWStep) {
    let AdamWState { weight, first, second } = state;
    assert!(
        [first.len(), second.len(), gradient.len()].iter().all(|&len| len == weight.len()),
        "adamw: lengths differ"
    );
    let decay = 1.0 - step.learning_rate * step.weight_decay;
    weight
        .par_chunks_mut(CHUNK)
        .zip(first.par_chunks_mut(CHUNK).zip(second.par_chunks_mut(CHUNK)))
        .zip(gradient.par_chunks(CHUNK))
        .for_each(|((weight, (first, second)), gradient)| {
            vectorized(|| {
                for (((w, m), v), &g) in weight.iter_mut().zip(first).zip(second).zip(gradient) {
                    let g = g * step.gradient_scale;
                    *m = step.beta1 * *m + (1.0 - step.beta1) * g;
                    *v = step.beta2 * *v + (1.0 - step.beta2) * g * g;
                    let direction = (*m / step.bias_correction1) / ((*v / step.bias_correction2).sqrt() + step.epsilon);
                    *w = *w * decay - step.learning_rate * direction;
                }
            })
        });
}

/// The gradients of a layer normalisation of each `gamma.len()`-wide row
/// of `x`: `dx` in place, and the returned `[dgamma, dbeta]` (summed over
/// the rows). With `xhat` the normalised row and `gy = grad gamma`: `dx =
/// (gy - mean(gy) - xhat mean(gy xhat)) / sqrt(var + epsilon)`.
pub fn layer_norm_backward(x: &[f32], gamma: &[f32], grad: &[f32], epsilon: f32, dx: &mut [f32]) -> [Vec<f32>; 2] {
    let width = gamma.len();
    assert!(
        width > 0 && x.len().is_multiple_of(width) && grad.len() == x.len() && dx.len() == x.len(),
        "layer norm: lengths"
    );
    let rows_per_task = CHUNK.div_ceil(width);
    let per_task = dx
        .par_chunks_mut(rows_per_task * width)
        .zip(x.par_chunks(rows_per_task * width).zip(grad.par_chunks(rows_per_task * width)))
        .map(|(dx, (x, grad))| {
            let (mut dgamma, mut dbeta) = (vec![0.0f32; width], vec![0.0f32; width]);
            vectorized(|| {
                for ((dx, x), grad) in
                    dx.chunks_exact_mut(width).zip(x.chunks_exact(width)).zip(grad.chunks_exact(width))
                {
                    let n = width as f32;
                    let mean = fold_lanes(x, 0.0, |s, v| s + v) / n;
                    // dx holds the centred row for now.
                    dx.iter_mut().zip(x).for_each(|(d, &v)| *d = v - mean);
                    let rstd = 1.0 / (dot(dx, dx) / n + epsilon).sqrt();
                    dx.iter_mut().for_each(|d| *d *= rstd);
                    let (mut gy_sum, mut gy_xhat_sum) = (0.0f32, 0.0f32);
                    for (((&xhat, &g), &gamma), (dgamma, dbeta)) in
                        dx.iter().zip(grad).zip(gamma).zip(dgamma.iter_mut().zip(dbeta.iter_mut()))
                    {
                        *dgamma += g * xhat;
                        *dbeta += g;
                        gy_sum += g * gamma;
                        gy_xhat_sum += g * gamma * xhat;
                    }
                    let (gy_mean, gy_xhat_mean) = (gy_sum / n, gy_xhat_sum / n);
                    dx.iter_mut()
                        .zip(grad)
                        .zip(gamma)
                        .for_each(|((d, &g), &gamma)| *d = rstd * (g * gamma - gy_mean - *d * gy_xhat_mean));
                }
            });
            [dgamma, dbeta]
        });
    per_task
        .reduce_with(|[dgamma, dbeta], [part_gamma, part_beta]| {
            [add_partial_sums(dgamma, part_gamma), add_partial_sums(dbeta, part_beta)]
        })
        .unwrap_or_else(|| [vec![0.0; width], vec![0.0; width]])
}

/// A batch of rows for [`soft_cross_entropy_rows`]: logits, soft targets and
/// which entries are legal (1) or replaced by `illegal_logit` (0), `classes` per row.
#[derive(Clone, Copy)]
pub struct CrossEntropy<'a> {
    /// The logits.
    pub logits: &'a [f32],
    /// The target distributions (or rows of zeros).
    pub targets: &'a [f32],
    /// One byte per logit, 0 for an illegal entry; `None`: every entry legal.
    pub legal: Option<&'a [u8]>,
    /// What an illegal entry's logit becomes.
    pub illegal_logit: f32,
    /// Entries per row.
    pub classes: usize,
}

impl CrossEntropy<'_> {
    fn rows(&self) -> usize {
        assert!(
            self.classes > 0
                && self.logits.len().is_multiple_of(self.classes)
                && self.targets.len() == self.logits.len()
                && self.legal.is_none_or(|legal| legal.len() == self.logits.len()),
            "cross-entropy: lengths"
        );
        self.logits.len() / self.classes
    }

    /// Runs `row(index, logits, targets)` on every row in parallel, with
    /// each row's logits copied to a buffer and its illegal entries replaced.
    fn for_each_row<R: Send>(&self, out: &mut [R], row: impl Fn(usize, &mut [f32], &[f32], &mut R) + Sync) {
        let classes = self.classes;
        let rows_per_task = CHUNK.div_ceil(classes);
        out.par_chunks_mut(rows_per_task).enumerate().for_each(|(task, out)| {
            let mut logits = vec![0.0f32; classes];
            vectorized(|| {
                for (i, out) in out.iter_mut().enumerate() {
                    let index = task * rows_per_task + i;
                    let span = index * classes..(index + 1) * classes;
                    logits.copy_from_slice(&self.logits[span.clone()]);
                    if let Some(legal) = self.legal {
                        logits.iter_mut().zip(&legal[span.clone()]).for_each(|(l, &ok)| {
                            if ok == 0 {
                                *l = self.illegal_logit;
                            }
                        });
                    }
                    row(index, &mut logits, &self.targets[span], out);
                }
            });
        });
    }
}

/// `log sum exp` of a row.
#[inline(always)]
fn log_sum_exp(logits: &[f32]) -> f32 {
    let max = fold_lanes(logits, f32::NEG_INFINITY, |m, x| if x > m { x } else { m });
    max + sum_lanes(logits, |x| exp(x - max)).ln()
}

/// `out[row] = -sum_j t_j log softmax(l)_j = sum_j t_j (lse(l) - l_j)`.
pub fn soft_cross_entropy_rows(input: CrossEntropy, out: &mut [f32]) {
    assert_eq!(out.len(), input.rows(), "cross-entropy: one loss per row");
    input.for_each_row(out, |_, logits, targets, loss| {
        let lse = log_sum_exp(logits);
        *loss = logits.iter().zip(targets).map(|(&l, &t)| t * (lse - l)).sum();
    });
}

/// The logits' gradient of [`soft_cross_entropy_rows`] given each row's
/// gradient: `grad (sum(t) softmax(l) - t)`, zero at illegal entries.
pub fn soft_cross_entropy_rows_backward(input: CrossEntropy, grad: &[f32], dlogits: &mut [f32]) {
    let (rows, classes) = (input.rows(), input.classes);
    assert!(grad.len() == rows && dlogits.len() == rows * classes, "cross-entropy: gradient lengths");
    let mut rows_out: Vec<&mut [f32]> = dlogits.chunks_exact_mut(classes).collect();
    input.for_each_row(&mut rows_out, |index, logits, targets, dlogits| {
        let lse = log_sum_exp(logits);
        let mass = fold_lanes(targets, 0.0, |s, t| s + t);
        let g = grad[index];
        dlogits.iter_mut().zip(logits.iter()).zip(targets).for_each(|((d, &l), &t)| *d = g * (mass * exp(l - lse) - t));
        if let Some(legal) = input.legal {
            dlogits.iter_mut().zip(&legal[index * classes..(index + 1) * classes]).for_each(|(d, &ok)| {
                if ok == 0 {
                    *d = 0.0;
                }
            });
        }
    });
}

/// `average = average decay + current (1 - decay)`, in place.
pub fn moving_average(average: &mut [f32], current: &[f32], decay: f32) {
    assert_eq!(average.len(), current.len(), "moving average: lengths differ");
    average.par_chunks_mut(CHUNK).zip(current.par_chunks(CHUNK)).for_each(|(average, current)| {
        vectorized(|| average.iter_mut().zip(current).for_each(|(a, &c)| *a = *a * decay + c * (1.0 - decay)))
    });
}

/// `sum(x[i]^2)`: f32 within a chunk, the chunks' sums added in f64.
pub fn sum_of_squares(x: &[f32]) -> f32 {
    x.par_chunks(CHUNK).map(|x| f64::from(vectorized(|| dot(x, x)))).sum::<f64>() as f32
}

/// Softmax of each `row_len` run of `values` in place, after replacing each
/// value `x` at index `i` by `logit(x, i)`; rows in parallel.
pub fn softmax_rows(values: &mut [f32], row_len: usize, logit: impl Fn(f32, usize) -> f32 + Sync) {
    assert!(
        row_len > 0 && values.len().is_multiple_of(row_len),
        "softmax: {} values in rows of {row_len}",
        values.len()
    );
    let rows_per_task = CHUNK.div_ceil(row_len);
    values.par_chunks_mut(rows_per_task * row_len).enumerate().for_each(|(task, values)| {
        vectorized(|| {
            for (row, values) in values.chunks_exact_mut(row_len).enumerate() {
                let start = (task * rows_per_task + row) * row_len;
                values.iter_mut().enumerate().for_each(|(i, x)| *x = logit(*x, start + i));
                let max = fold_lanes(values, f32::NEG_INFINITY, |m, x| if x > m { x } else { m });
                values.iter_mut().for_each(|x| *x = exp(*x - max));
                let total = fold_lanes(values, 0.0, |s, x| s + x);
                let scale = 1.0 / total;
                values.iter_mut().for_each(|x| *x *= scale);
            }
        });
    });
}

/// `total + part`, element by element: the sum of two cores' shares of a
/// reduction (a weight gradient summed over each one's part of the batch).
pub fn add_partial_sums(mut total: Vec<f32>, part: Vec<f32>) -> Vec<f32> {
    total.iter_mut().zip(&part).for_each(|(t, p)| *t += p);
    total
}

/// `sum(a[i] b[i])`.
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut lanes = [0.0f32; LANES];
    let (a_chunks, b_chunks) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = a_chunks.remainder().iter().zip(b_chunks.remainder()).map(|(x, y)| x * y).sum();
    for (a, b) in a_chunks.zip(b_chunks) {
        for lane in 0..LANES {
            lanes[lane] += a[lane] * b[lane];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// `values` folded by an associative `f` in 16 independent lanes, which the
/// compiler keeps in one vector register (a single running value would be
/// a serial chain, as float operations may not be reordered).
#[inline(always)]
fn fold_lanes(values: &[f32], init: f32, f: impl Fn(f32, f32) -> f32) -> f32 {
    const LANES: usize = 16;
    let mut lanes = [init; LANES];
    let chunks = values.chunks_exact(LANES);
    let tail = chunks.remainder().iter().fold(init, |acc, &x| f(acc, x));
    for chunk in chunks {
        for lane in 0..LANES {
            lanes[lane] = f(lanes[lane], chunk[lane]);
        }
    }
    lanes.iter().fold(tail, |acc, &x| f(acc, x))
}

/// `sum(g(values[i]))` in 16 independent lanes (see [`fold_lanes`]).
#[inline(always)]
fn sum_lanes(values: &[f32], g: impl Fn(f32) -> f32) -> f32 {
    const LANES: usize = 16;
    let mut lanes = [0.0f32; LANES];
    let chunks = values.chunks_exact(LANES);
    let tail: f32 = chunks.remainder().iter().map(|&x| g(x)).sum();
    for chunk in chunks {
        for lane in 0..LANES {
            lanes[lane] += g(chunk[lane]);
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Runs `work` compiled for the widest vector unit the CPU has: `work` is
/// inlined into a function built for AVX-512 or AVX2, chosen at run time.
#[inline(always)]
pub fn vectorized<R>(work: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, checked just above.
            return unsafe { with_avx512(work) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA, checked just above.
            return unsafe { with_avx2(work) };
        }
    }
    work()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn with_avx512<R>(work: impl FnOnce() -> R) -> R {
    work()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn with_avx2<R>(work: impl FnOnce() -> R) -> R {
    work()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_libms_to_a_few_ulp() {
        let mut worst: f32 = 0.0;
        let mut x = -87.0f32;
        while x < 88.0 {
            let (ours, libm) = (exp(x), x.exp());
            worst = worst.max((ours - libm).abs() / libm);
            x += 0.000_37;
        }
        assert!(worst < 3.0 * f32::EPSILON, "worst relative error {worst}");
        assert_eq!(exp(-1e4), exp(-87.0));
        assert!(exp(-1e4) > 0.0 && exp(-1e4) < 1e-37);
    }

    #[test]
    fn map_and_dot_cover_every_element_whatever_the_length() {
        for len in [0, 1, 15, 17, CHUNK + 3] {
            let a: Vec<f32> = (0..len).map(|i| i as f32 * 0.01 - 5.0).collect();
            let mut out = vec![f32::NAN; len];
            map(&mut out, &a, &a, |x, y| mish(x) * mish_slope(y));
            for (o, &x) in out.iter().zip(&a) {
                let expected = mish(x) * mish_slope(x);
                assert!((o - expected).abs() <= 1e-6 * (1.0 + expected.abs()), "{x}: {o} vs {expected}");
            }
            let exact = a.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>();
            assert!((f64::from(dot(&a, &a)) - exact).abs() <= 1e-5 * (1.0 + exact), "dot of {len}");
        }
    }

    #[test]
    fn transposes_every_matrix() {
        for [batch, rows, columns] in [[3, 64, 80], [2, 5, 17], [1, 1, 1]] {
            let x: Vec<f32> = (0..batch * rows * columns).map(|i| i as f32).collect();
            let mut out = vec![f32::NAN; x.len()];
            transpose_matrices(&x, [rows, columns], &mut out);
            for n in 0..batch {
                for r in 0..rows {
                    for c in 0..columns {
                        assert_eq!(out[(n * columns + c) * rows + r], x[(n * rows + r) * columns + c]);
                    }
                }
            }
        }
    }

    #[test]
    fn softmax_rows_match_the_definition() {
        for row_len in [1, 7, 16, 80, 1000] {
            let rows = 37;
            let logits: Vec<f32> = (0..rows * row_len).map(|i| ((i * 7919) % 1013) as f32 * 0.05 - 25.0).collect();
            let mut values = vec![0.0; logits.len()];
            // The logit hook sees each value's index: build them from it.
            softmax_rows(&mut values, row_len, |_, i| logits[i] * 2.0);
            for (values, logits) in values.chunks(row_len).zip(logits.chunks(row_len)) {
                let max = logits.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(f64::from(x) * 2.0));
                let total: f64 = logits.iter().map(|&x| (f64::from(x) * 2.0 - max).exp()).sum();
                for (&v, &x) in values.iter().zip(logits) {
                    let expected = (f64::from(x) * 2.0 - max).exp() / total;
                    assert!((f64::from(v) - expected).abs() < 1e-6, "{v} vs {expected}");
                }
            }
        }
    }
}
