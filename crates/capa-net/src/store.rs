//! Named tensors in and out of modules, and the safetensors files that hold
//! them.
//!
//! A file is one safetensors archive (f32 tensors, openable from Python with
//! the `safetensors` package) whose names are grouped by prefix: `net.` for
//! the weights, and for a training checkpoint `ema.` and `optimizer.` too.
//! The header's metadata holds the architecture as JSON, so a file says
//! what network it is.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::prelude::*;
use safetensors::tensor::{Dtype, TensorView};

use crate::NetError;

/// A tensor as stored: its shape and its values, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    /// Dimensions.
    pub shape: Vec<usize>,
    /// Values.
    pub values: Vec<f32>,
}

/// Tensors by name, in name order.
pub type Tensors = BTreeMap<String, Stored>;

/// Where a module visitor or mapper stands: the field names from the root.
/// Its [`ParamPath::name`] (`blocks.0.conv1.weight`) names a parameter in
/// files and keys the optimizer's state, so every walk over parameters
/// goes through this one type.
#[derive(Debug, Default)]
pub(crate) struct ParamPath(Vec<String>);

impl ParamPath {
    /// Steps into the field `name` (a module visitor's `enter_module`).
    pub fn enter(&mut self, name: &str) {
        self.0.push(name.to_string());
    }

    /// Steps back out (`exit_module`).
    pub fn exit(&mut self) {
        self.0.pop();
    }

    /// The current parameter's name.
    pub fn name(&self) -> String {
        self.0.join(".")
    }
}

/// Copies every float parameter of `module` into `out`, named `prefix` + its
/// path (`blocks.0.conv1.weight`).
pub fn collect<B: Backend, M: Module<B>>(module: &M, prefix: &str, out: &mut Tensors) {
    struct Collector<'a> {
        path: ParamPath,
        prefix: &'a str,
        out: &'a mut Tensors,
    }
    impl<B: Backend> ModuleVisitor<B> for Collector<'_> {
        fn enter_module(&mut self, name: &str, _: &str) {
            self.path.enter(name);
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.path.exit();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let tensor = param.val();
            let shape = tensor.dims().to_vec();
            let values = tensor.into_data().convert::<f32>().into_vec::<f32>().expect("converted to f32");
            self.out.insert(format!("{}{}", self.prefix, self.path.name()), Stored { shape, values });
        }
    }
    module.visit(&mut Collector { path: ParamPath::default(), prefix, out });
}

/// Replaces every float parameter of `module` by the tensor named `prefix` +
/// its path in `source`.
///
/// # Errors
/// [`NetError::Mismatch`] listing every parameter missing from `source`,
/// every shape that differs, and every tensor under `prefix` that the
/// module has no parameter for: nothing is dropped or left at its initial
/// value silently.
pub fn apply<B: Backend, M: Module<B>>(module: M, prefix: &str, source: &Tensors, what: &str) -> Result<M, NetError> {
    struct Applier<'a> {
        path: ParamPath,
        prefix: &'a str,
        source: &'a Tensors,
        used: BTreeSet<String>,
        problems: Vec<String>,
    }
    impl<B: Backend> ModuleMapper<B> for Applier<'_> {
        fn enter_module(&mut self, name: &str, _: &str) {
            self.path.enter(name);
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.path.exit();
        }
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
            let (id, tensor, mapper) = param.consume();
            let name = format!("{}{}", self.prefix, self.path.name());
            let wanted = tensor.dims().to_vec();
            let tensor = match self.source.get(&name) {
                None => {
                    self.problems.push(format!("missing {name} {wanted:?}"));
                    tensor
                }
                Some(stored) if stored.shape != wanted => {
                    self.problems
                        .push(format!("{name}: the file has {:?}, the network wants {wanted:?}", stored.shape));
                    tensor
                }
                Some(stored) => {
                    let data = TensorData::new(stored.values.clone(), stored.shape.clone());
                    let loaded = Tensor::from_data(data, &tensor.device());
                    if tensor.is_require_grad() { loaded.require_grad() } else { loaded }
                }
            };
            self.used.insert(name);
            Param::from_mapped_value(id, tensor, mapper)
        }
    }
    let mut applier =
        Applier { path: ParamPath::default(), prefix, source, used: BTreeSet::new(), problems: Vec::new() };
    let module = module.map(&mut applier);
    let mut problems = applier.problems;
    for (name, stored) in source.range(prefix.to_string()..).take_while(|(name, _)| name.starts_with(prefix)) {
        if !applier.used.contains(name) {
            problems.push(format!("unexpected {name} {:?}", stored.shape));
        }
    }
    if problems.is_empty() { Ok(module) } else { Err(NetError::Mismatch { what: what.to_string(), problems }) }
}

/// Serialises `tensors` and `metadata` as safetensors.
pub fn to_bytes(tensors: &Tensors, metadata: HashMap<String, String>) -> Result<Vec<u8>, NetError> {
    let bytes: Vec<(&String, Vec<u8>)> = tensors
        .iter()
        .map(|(name, stored)| (name, stored.values.iter().flat_map(|v| v.to_le_bytes()).collect()))
        .collect();
    let views = bytes
        .iter()
        .zip(tensors.values())
        .map(|((name, data), stored)| {
            TensorView::new(Dtype::F32, stored.shape.clone(), data).map(|view| (name.as_str(), view))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| NetError::Format(format!("cannot serialise the tensors: {e}")))?;
    safetensors::serialize(views, Some(metadata)).map_err(|e| NetError::Format(format!("cannot serialise: {e}")))
}

/// Parses safetensors bytes: every tensor (f32 only) and the metadata.
///
/// # Errors
/// [`NetError::Format`] when the bytes are not safetensors or hold a tensor
/// of another type.
pub fn from_bytes(bytes: &[u8]) -> Result<(Tensors, HashMap<String, String>), NetError> {
    let bad = |e: safetensors::SafeTensorError| NetError::Format(format!("not a safetensors file: {e}"));
    let (_, header) = safetensors::SafeTensors::read_metadata(bytes).map_err(bad)?;
    let metadata = header.metadata().clone().unwrap_or_default();
    let archive = safetensors::SafeTensors::deserialize(bytes).map_err(bad)?;
    let mut tensors = Tensors::new();
    for (name, view) in archive.iter() {
        if view.dtype() != Dtype::F32 {
            return Err(NetError::Format(format!("tensor {name} is {:?}; capa stores F32 only", view.dtype())));
        }
        let values: Vec<f32> =
            view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        if let Some(bad) = values.iter().find(|v| !v.is_finite()) {
            return Err(NetError::Format(format!("tensor {name} holds {bad}: the weights are damaged")));
        }
        tensors.insert(name.to_string(), Stored { shape: view.shape().to_vec(), values });
    }
    Ok((tensors, metadata))
}

/// Writes `bytes` to `path` atomically ([`capa_data::write_atomically`]).
///
/// # Errors
/// [`NetError::Io`] naming the path.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), NetError> {
    capa_data::write_atomically(path, bytes).map_err(|source| NetError::Io { path: path.to_path_buf(), source })
}
