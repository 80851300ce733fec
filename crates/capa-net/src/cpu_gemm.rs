//! Matrix products on f32 slices through the `gemm` crate (the one burn's
//! flex uses), with the bounds checked before the unsafe call.

use gemm::Parallelism;

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
