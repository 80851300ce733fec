//! The CPU backend's kernels behind [`CapaBackend`]'s ops: shapes and
//! dtypes checked, tensors made contiguous, the work done by `crate::cpu`
//! on plain slices. Anything the kernels do not take (another dtype, an odd
//! shape) goes to the tensor-op formulation.

use burn::backend::Flex;
use burn::backend::flex::{FlexDevice, FlexTensor, Layout};
use burn::tensor::ops::{FloatTensorOps, ModuleOps};
use burn::tensor::{BoolStore, Bytes, DType, Shape};
use rayon::prelude::*;

use super::capa_backend::*;
use crate::adamw::AdamWStep;
use crate::cpu::conv_shape::ConvShape;
use crate::cpu::{attention, conv, elementwise, gemm};
use crate::device::BackendKind;
use crate::error::NetError;

/// The f32 values of `x`, contiguous from offset 0 (a copy only when not).
fn contiguous(x: FlexTensor) -> FlexTensor {
    if x.layout().contiguous_offsets().is_some_and(|(start, _)| start == 0) { x } else { x.to_contiguous() }
}

/// A zeroed f32 tensor for a kernel's output, cleared on every core.
/// `FlexTensor::empty` and `filled_typed` clear on the calling thread
/// (`empty` then copies to an aligned buffer): with the kernels themselves
/// shared among the cores, that single-core pass per output was a tenth of
/// a training step's wall clock.
fn zeroed(shape: Shape) -> FlexTensor {
    let mut data = Vec::new();
    (0..shape.num_elements())
        .into_par_iter()
        .with_min_len(elementwise::CHUNK)
        .map(|_| 0.0f32)
        .collect_into_vec(&mut data);
    FlexTensor::new(Bytes::from_elems(data), Layout::contiguous(shape), DType::F32)
}

impl CapaBackend for Flex {
    const KIND: BackendKind = BackendKind::Cpu;

    fn device(index: usize) -> Result<FlexDevice, NetError> {
        if index != 0 {
            return Err(NetError::Backend(format!("the CPU backend has one device, 0; got {index}")));
        }
        Ok(FlexDevice)
    }

    fn mish(x: FlexTensor) -> FlexTensor {
        if x.dtype() != DType::F32 {
            return mish_with_tensor_ops::<Flex>(x);
        }
        let x = contiguous(x);
        let elements = x.layout().num_elements();
        let mut out = zeroed(x.layout().shape().clone());
        let x = &x.storage::<f32>()[..elements];
        // `map` takes two inputs; Mish reads one.
        elementwise::map(&mut out.storage_mut::<f32>()[..elements], x, x, |x, _| elementwise::mish(x));
        out
    }

    fn mish_backward(x: FlexTensor, grad: FlexTensor) -> FlexTensor {
        if x.dtype() != DType::F32 || grad.dtype() != DType::F32 {
            return mish_backward_with_tensor_ops::<Flex>(x, grad);
        }
        let (x, grad) = (contiguous(x), contiguous(grad));
        let elements = x.layout().num_elements();
        let mut out = zeroed(x.layout().shape().clone());
        elementwise::map(
            &mut out.storage_mut::<f32>()[..elements],
            &x.storage::<f32>()[..elements],
            &grad.storage::<f32>()[..elements],
            |x, grad| grad * elementwise::mish_slope(x),
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
        elementwise::softmax_rows(&mut x.storage_mut::<f32>()[..dims.num_elements()], row_len, |x, _| x);
        x
    }

    fn dense(x: FlexTensor, weight: FlexTensor, bias: Option<FlexTensor>) -> FlexTensor {
        let Some(shape) =
            dense_shape(&x, &weight).filter(|shape| bias.as_ref().is_none_or(|b| fits(b, &[shape.outputs])))
        else {
            return Flex::linear(x, weight, bias);
        };
        let (x, weight, bias) = (contiguous(x), contiguous(weight), bias.map(contiguous));
        let (input_len, weight_len, output_len) = shape.lens();
        let mut out = zeroed(Shape::new([shape.rows, shape.outputs]));
        gemm::dense(
            shape,
            &x.storage::<f32>()[..input_len],
            &weight.storage::<f32>()[..weight_len],
            bias.as_ref().map(|bias| &bias.storage::<f32>()[..shape.outputs]),
            &mut out.storage_mut::<f32>()[..output_len],
        );
        out
    }

    fn dense_x_backward(weight: FlexTensor, grad: FlexTensor) -> FlexTensor {
        let Some(shape) = dense_grad_shape(&weight, &grad) else {
            return Flex::linear_x_backward(weight, grad);
        };
        let (weight, grad) = (contiguous(weight), contiguous(grad));
        let (input_len, weight_len, output_len) = shape.lens();
        let mut out = zeroed(Shape::new([shape.rows, shape.inputs]));
        gemm::dense_input_grad(
            shape,
            &weight.storage::<f32>()[..weight_len],
            &grad.storage::<f32>()[..output_len],
            &mut out.storage_mut::<f32>()[..input_len],
        );
        out
    }

    fn dense_weight_backward(x: FlexTensor, grad: FlexTensor) -> FlexTensor {
        let shape = match (matrix_dims(&x), matrix_dims(&grad)) {
            (Some([rows, inputs]), Some([grad_rows, outputs])) if rows == grad_rows => {
                gemm::DenseShape { rows, inputs, outputs }
            }
            _ => return Flex::linear_weight_backward(x, grad),
        };
        let (x, grad) = (contiguous(x), contiguous(grad));
        let (input_len, weight_len, output_len) = shape.lens();
        let mut out = zeroed(Shape::new([shape.inputs, shape.outputs]));
        gemm::dense_weight_grad(
            shape,
            &x.storage::<f32>()[..input_len],
            &grad.storage::<f32>()[..output_len],
            &mut out.storage_mut::<f32>()[..weight_len],
        );
        out
    }

    fn dense_bias_backward(grad: FlexTensor) -> FlexTensor {
        let Some([rows, outputs]) = matrix_dims(&grad).filter(|&[_, outputs]| outputs > 0) else {
            return Flex::linear_bias_backward(grad);
        };
        let grad = contiguous(grad);
        let mut out = zeroed(Shape::new([outputs]));
        gemm::dense_bias_grad(
            &grad.storage::<f32>()[..rows * outputs],
            outputs,
            &mut out.storage_mut::<f32>()[..outputs],
        );
        out
    }

    fn biased_attention(q: FlexTensor, k: FlexTensor, v: FlexTensor, bias: FlexTensor, heads: usize) -> FlexTensor {
        let Some(shape) = attention_shape([&q, &k, &v], &bias, heads) else {
            return attention_with_tensor_ops::<Flex>(q, k, v, bias, heads);
        };
        let [q, k, v, bias] = [q, k, v, bias].map(contiguous);
        let (len, bias_len) = shape.lens();
        let mut out = zeroed(q.layout().shape().clone());
        attention::forward(
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
        let [mut dq, mut dk, mut dv] = [(); 3].map(|()| zeroed(q.layout().shape().clone()));
        let mut dbias = zeroed(bias.layout().shape().clone());
        attention::backward(
            shape,
            &q.storage::<f32>()[..len],
            &k.storage::<f32>()[..len],
            &v.storage::<f32>()[..len],
            &bias.storage::<f32>()[..bias_len],
            &grad.storage::<f32>()[..len],
            attention::AttentionGrads {
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
        let mut out = zeroed(Shape::new([batch, columns, rows]));
        elementwise::transpose_matrices(
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
        let mut out = zeroed(Shape::new([batch, channels, 2]));
        let rows = batch * channels;
        elementwise::row_moments(&x.storage::<f32>()[..rows * plane], plane, &mut out.storage_mut::<f32>()[..2 * rows]);
        out
    }

    fn channel_moments_backward(x: FlexTensor, grad: FlexTensor) -> FlexTensor {
        let Some([batch, channels, plane]) = board_rows(&x).filter(|_| grad.dtype() == DType::F32) else {
            return channel_moments_backward_with_tensor_ops::<Flex>(x, grad);
        };
        let (x, grad) = (contiguous(x), contiguous(grad));
        let rows = batch * channels;
        let mut dx = zeroed(x.layout().shape().clone());
        elementwise::row_moments_backward(
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
        let mut out = zeroed(x.layout().shape().clone());
        let input = scale_shift_input([&x, &scale, &shift], residual.as_ref(), rows, plane);
        elementwise::scale_shift_mish(input, &mut out.storage_mut::<f32>()[..len]);
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
        let mut dx = zeroed(x.layout().shape().clone());
        let [mut dscale, mut dshift] = [(); 2].map(|()| zeroed(Shape::new([batch, channels])));
        let mut dresidual = residual.as_ref().map(|_| zeroed(x.layout().shape().clone()));
        let input = scale_shift_input([&x, &scale, &shift], residual.as_ref(), rows, plane);
        elementwise::scale_shift_mish_backward(
            input,
            &grad.storage::<f32>()[..len],
            elementwise::ScaleShiftGrads {
                x: &mut dx.storage_mut::<f32>()[..len],
                scale: &mut dscale.storage_mut::<f32>()[..rows],
                shift: &mut dshift.storage_mut::<f32>()[..rows],
                residual: dresidual.as_mut().map(|d| &mut d.storage_mut::<f32>()[..len]),
            },
        );
        ([dx, dscale, dshift], dresidual)
    }

    fn layer_norm_last_backward(x: FlexTensor, gamma: FlexTensor, epsilon: f64, grad: FlexTensor) -> [FlexTensor; 3] {
        let fits = matrix_dims(&x).is_some_and(|[_, width]| {
            width > 0
                && fits(&gamma, &[width])
                && grad.dtype() == DType::F32
                && grad.layout().shape() == x.layout().shape()
        });
        if !fits {
            return layer_norm_backward_with_tensor_ops::<Flex>(x, gamma, epsilon, grad);
        }
        let [x, gamma, grad] = [x, gamma, grad].map(contiguous);
        let (elements, width) = (x.layout().num_elements(), gamma.layout().num_elements());
        let mut dx = zeroed(x.layout().shape().clone());
        let [dgamma, dbeta] = elementwise::layer_norm_backward(
            &x.storage::<f32>()[..elements],
            &gamma.storage::<f32>()[..width],
            &grad.storage::<f32>()[..elements],
            epsilon as f32,
            &mut dx.storage_mut::<f32>()[..elements],
        );
        let vector = |values: Vec<f32>| {
            FlexTensor::new(Bytes::from_elems(values), Layout::contiguous(Shape::new([width])), DType::F32)
        };
        [dx, vector(dgamma), vector(dbeta)]
    }

    fn soft_cross_entropy_rows(
        logits: FlexTensor,
        targets: FlexTensor,
        legal: Option<FlexTensor>,
        illegal_logit: f32,
    ) -> FlexTensor {
        let Some([rows, classes]) = cross_entropy_dims(&logits, &targets, legal.as_ref()) else {
            return soft_cross_entropy_rows_with_tensor_ops::<Flex>(logits, targets, legal, illegal_logit);
        };
        let [logits, targets] = [logits, targets].map(contiguous);
        let legal = legal.map(contiguous);
        let mut out = zeroed(Shape::new([rows]));
        elementwise::soft_cross_entropy_rows(
            cross_entropy_input(&logits, &targets, legal.as_ref(), illegal_logit, [rows, classes]),
            &mut out.storage_mut::<f32>()[..rows],
        );
        out
    }

    fn soft_cross_entropy_rows_backward(
        logits: FlexTensor,
        targets: FlexTensor,
        legal: Option<FlexTensor>,
        illegal_logit: f32,
        grad: FlexTensor,
    ) -> FlexTensor {
        let Some([rows, classes]) =
            cross_entropy_dims(&logits, &targets, legal.as_ref()).filter(|&[rows, _]| fits(&grad, &[rows]))
        else {
            return soft_cross_entropy_rows_backward_with_tensor_ops::<Flex>(
                logits,
                targets,
                legal,
                illegal_logit,
                grad,
            );
        };
        let [logits, targets, grad] = [logits, targets, grad].map(contiguous);
        let legal = legal.map(contiguous);
        let mut dlogits = zeroed(logits.layout().shape().clone());
        elementwise::soft_cross_entropy_rows_backward(
            cross_entropy_input(&logits, &targets, legal.as_ref(), illegal_logit, [rows, classes]),
            &grad.storage::<f32>()[..rows],
            &mut dlogits.storage_mut::<f32>()[..rows * classes],
        );
        dlogits
    }

    fn moving_average(average: FlexTensor, current: FlexTensor, decay: f32) -> FlexTensor {
        let elements = average.layout().num_elements();
        let fits =
            [&average, &current].iter().all(|t| t.dtype() == DType::F32 && t.layout().num_elements() == elements);
        if !fits {
            return moving_average_with_tensor_ops::<Flex>(average, current, decay);
        }
        // Updated in place where this is the only reference to the buffer.
        let [mut average, current] = [average, current].map(contiguous);
        elementwise::moving_average(
            &mut average.storage_mut::<f32>()[..elements],
            &current.storage::<f32>()[..elements],
            decay,
        );
        average
    }

    fn sum_of_squares(x: FlexTensor) -> FlexTensor {
        if x.dtype() != DType::F32 {
            return sum_of_squares_with_tensor_ops::<Flex>(x);
        }
        let x = contiguous(x);
        let elements = x.layout().num_elements();
        let sum = elementwise::sum_of_squares(&x.storage::<f32>()[..elements]);
        FlexTensor::new(Bytes::from_elems(vec![sum]), Layout::contiguous(Shape::new([1])), DType::F32)
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
            None => [(); 2].map(|()| zeroed(shape.clone())),
        };
        let [mut weight, gradient, mut first, mut second] = [weight, gradient, first, second].map(contiguous);
        elementwise::adamw(
            elementwise::AdamWState {
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
        let mut out = zeroed(Shape::new([shape.batch, shape.outputs, shape.height, shape.width]));
        conv::forward(
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
        let mut out = zeroed(x.layout().shape().clone());
        conv::input_grad(
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
        let mut out = zeroed(weight.layout().shape().clone());
        conv::weight_grad(
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
        let mut out = zeroed(Shape::new([dims[1]]));
        conv::bias_grad(
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
    let residual_fits = residual.is_none_or(|r| r.dtype() == DType::F32 && r.layout().shape() == x.layout().shape());
    (coefficients && residual_fits).then_some([batch, channels, plane])
}

/// The kernels' view of contiguous f32 `[x, scale, shift]` and residual
/// with `rows` (sample, channel) rows of `plane` squares.
fn scale_shift_input<'a>(
    [x, scale, shift]: [&'a FlexTensor; 3],
    residual: Option<&'a FlexTensor>,
    rows: usize,
    plane: usize,
) -> elementwise::ScaleShift<'a> {
    let len = rows * plane;
    elementwise::ScaleShift {
        x: &x.storage::<f32>()[..len],
        plane,
        scale: &scale.storage::<f32>()[..rows],
        shift: &shift.storage::<f32>()[..rows],
        residual: residual.map(|r| &r.storage::<f32>()[..len]),
    }
}

/// The dimensions of an attention our kernel runs: f32, `q`, `k`, `v`
/// alike, heads dividing the width, a bias per head and token pair.
fn attention_shape(qkv: [&FlexTensor; 3], bias: &FlexTensor, heads: usize) -> Option<attention::AttentionShape> {
    let dims = qkv[0].layout().shape();
    let alike = qkv.iter().all(|t| t.dtype() == DType::F32 && t.layout().shape() == dims);
    if !alike || bias.dtype() != DType::F32 || dims.num_dims() != 3 || heads == 0 || !dims[2].is_multiple_of(heads) {
        return None;
    }
    let (batch, tokens, width) = (dims[0], dims[1], dims[2]);
    let bias_dims = bias.layout().shape();
    (bias_dims.num_dims() == 3 && [bias_dims[0], bias_dims[1], bias_dims[2]] == [heads, tokens, tokens])
        .then_some(attention::AttentionShape { batch, tokens, heads, head_width: width / heads })
}

/// The dimensions of a convolution our kernels run: f32, NCHW, a square
/// odd kernel over the same input channels. `None` sends anything else to
/// flex's own convolution.
fn conv_shape(x: &FlexTensor, weight: &FlexTensor) -> Option<ConvShape> {
    let (dims, kernel) = (x.layout().shape(), weight.layout().shape());
    let f32s = x.dtype() == DType::F32 && weight.dtype() == DType::F32;
    let fits = dims.num_dims() == 4 && kernel.num_dims() == 4 && kernel[1] == dims[1];
    (f32s && fits && kernel[2] == kernel[3] && kernel[2] % 2 == 1).then(|| ConvShape {
        batch: dims[0],
        inputs: dims[1],
        outputs: kernel[0],
        height: dims[2],
        width: dims[3],
        kernel: kernel[2],
    })
}

/// `[rows, columns]` of an f32 matrix.
fn matrix_dims(x: &FlexTensor) -> Option<[usize; 2]> {
    let dims = x.layout().shape();
    (x.dtype() == DType::F32 && dims.num_dims() == 2).then(|| [dims[0], dims[1]])
}

/// Whether `x` is an f32 tensor of exactly these dimensions.
fn fits(x: &FlexTensor, dims: &[usize]) -> bool {
    x.dtype() == DType::F32 && x.layout().shape().as_slice() == dims
}

/// The dimensions of a dense layer our kernels run: f32 `x` `[rows,
/// inputs]` and `weight` `[inputs, outputs]`.
fn dense_shape(x: &FlexTensor, weight: &FlexTensor) -> Option<gemm::DenseShape> {
    let ([rows, inputs], [weight_inputs, outputs]) = (matrix_dims(x)?, matrix_dims(weight)?);
    (inputs == weight_inputs).then_some(gemm::DenseShape { rows, inputs, outputs })
}

/// The dimensions of a dense layer from its weight and its output's gradient.
fn dense_grad_shape(weight: &FlexTensor, grad: &FlexTensor) -> Option<gemm::DenseShape> {
    let ([inputs, outputs], [rows, grad_outputs]) = (matrix_dims(weight)?, matrix_dims(grad)?);
    (outputs == grad_outputs).then_some(gemm::DenseShape { rows, inputs, outputs })
}

/// `[rows, classes]` of f32 logits, f32 targets of the same shape and a
/// one-byte boolean mask of the same shape.
fn cross_entropy_dims(logits: &FlexTensor, targets: &FlexTensor, legal: Option<&FlexTensor>) -> Option<[usize; 2]> {
    let dims @ [_, classes] = matrix_dims(logits)?;
    let mask_fits = legal.is_none_or(|legal| {
        matches!(legal.dtype(), DType::Bool(BoolStore::Native | BoolStore::U8))
            && legal.layout().shape().as_slice() == dims
    });
    (classes > 0 && fits(targets, &dims) && mask_fits).then_some(dims)
}

/// The kernels' view of contiguous logits, targets and mask.
fn cross_entropy_input<'a>(
    logits: &'a FlexTensor,
    targets: &'a FlexTensor,
    legal: Option<&'a FlexTensor>,
    illegal_logit: f32,
    [rows, classes]: [usize; 2],
) -> elementwise::CrossEntropy<'a> {
    let len = rows * classes;
    elementwise::CrossEntropy {
        logits: &logits.storage::<f32>()[..len],
        targets: &targets.storage::<f32>()[..len],
        legal: legal.map(|legal| &legal.bytes()[..len]),
        illegal_logit,
        classes,
    }
}
