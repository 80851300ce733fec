//! The dimensions of a convolution, shared by the patch-matrix and the
//! Winograd kernels.

/// The dimensions of one convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvShape {
    /// Samples.
    pub batch: usize,
    /// Input channels.
    pub inputs: usize,
    /// Output channels.
    pub outputs: usize,
    /// Board rows.
    pub height: usize,
    /// Board columns.
    pub width: usize,
    /// Kernel side, odd.
    pub kernel: usize,
}

impl ConvShape {
    pub fn plane(&self) -> usize {
        self.height * self.width
    }

    /// Rows of a sample's patch matrix: one per (input channel, kernel row,
    /// kernel column).
    pub fn patch(&self) -> usize {
        self.inputs * self.kernel * self.kernel
    }

    /// Elements of the input, weight and output tensors.
    pub fn lens(&self) -> (usize, usize, usize) {
        let plane = self.plane();
        (self.batch * self.inputs * plane, self.outputs * self.patch(), self.batch * self.outputs * plane)
    }

    /// The convolution whose forward pass is this one's input gradient.
    pub fn transposed(self) -> Self {
        Self { inputs: self.outputs, outputs: self.inputs, ..self }
    }
}
