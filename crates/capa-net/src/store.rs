//! Named tensors in and out of modules, and the safetensors files that hold
//! them.
//!
//! A file is one safetensors archive (f32 tensors, or f16 or bf16 in a slim
//! network file; openable from Python with the `safetensors` package) whose
//! names are grouped by prefix: `net.` for the weights, and for a training
//! checkpoint `ema.` and `optimizer.` too.
//! The header's metadata holds the architecture as JSON, so a file says
//! what network it is.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::prelude::*;
use burn::tensor::{bf16, f16};
use safetensors::tensor::{Dtype, TensorView};

use crate::NetError;
use crate::precision::Precision;

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

/// Serialises `tensors` and `metadata` as safetensors, every tensor stored
/// in `precision`.
///
/// # Errors
/// [`NetError::Format`] when a value lies beyond f16's range (the weights
/// would turn infinite) or the tensors cannot be serialised.
pub fn to_bytes(
    tensors: &Tensors,
    metadata: HashMap<String, String>,
    precision: Precision,
) -> Result<Vec<u8>, NetError> {
    let mut bytes: Vec<(&String, Vec<u8>)> = Vec::with_capacity(tensors.len());
    for (name, stored) in tensors {
        let data = match precision {
            Precision::F32 => stored.values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Precision::F16 => {
                if let Some(v) = stored.values.iter().find(|v| v.abs() > f16::MAX.to_f32()) {
                    return Err(NetError::Format(format!(
                        "{name} holds {v}, beyond f16's range (65504): store it in bf16 or f32"
                    )));
                }
                stored.values.iter().flat_map(|v| f16::from_f32(*v).to_le_bytes()).collect()
            }
            Precision::Bf16 => stored.values.iter().flat_map(|v| bf16::from_f32(*v).to_le_bytes()).collect(),
        };
        bytes.push((name, data));
    }
    let dtype = match precision {
        Precision::F32 => Dtype::F32,
        Precision::F16 => Dtype::F16,
        Precision::Bf16 => Dtype::BF16,
    };
    let views = bytes
        .iter()
        .zip(tensors.values())
        .map(|((name, data), stored)| {
            TensorView::new(dtype, stored.shape.clone(), data).map(|view| (name.as_str(), view))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| NetError::Format(format!("cannot serialise the tensors: {e}")))?;
    safetensors::serialize(views, Some(metadata)).map_err(|e| NetError::Format(format!("cannot serialise: {e}")))
}

/// What [`from_bytes`] reads: every tensor as f32, the metadata, and the
/// float type the tensors were stored in.
pub struct Parsed {
    /// The tensors, widened to f32.
    pub tensors: Tensors,
    /// The header's metadata.
    pub metadata: HashMap<String, String>,
    /// The stored type, shared by every tensor (f32 for a file without any).
    pub precision: Precision,
}

/// Parses safetensors bytes: every tensor (f32, f16 or bf16, one type for
/// the whole file) and the metadata.
///
/// # Errors
/// [`NetError::Format`] when the bytes are not safetensors, hold a tensor of
/// another type, mix types, or hold a value that is not finite.
pub fn from_bytes(bytes: &[u8]) -> Result<Parsed, NetError> {
    let bad = |e: safetensors::SafeTensorError| NetError::Format(format!("not a safetensors file: {e}"));
    let (_, header) = safetensors::SafeTensors::read_metadata(bytes).map_err(bad)?;
    let metadata = header.metadata().clone().unwrap_or_default();
    let archive = safetensors::SafeTensors::deserialize(bytes).map_err(bad)?;
    let mut tensors = Tensors::new();
    let mut precision = None;
    for (name, view) in archive.iter() {
        let (stored_as, values): (Precision, Vec<f32>) = match view.dtype() {
            Dtype::F32 => (
                Precision::F32,
                view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
            ),
            Dtype::F16 => (
                Precision::F16,
                view.data().chunks_exact(2).map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32()).collect(),
            ),
            Dtype::BF16 => (
                Precision::Bf16,
                view.data().chunks_exact(2).map(|b| bf16::from_le_bytes([b[0], b[1]]).to_f32()).collect(),
            ),
            other => {
                return Err(NetError::Format(format!("tensor {name} is {other:?}; capa stores F32, F16 or BF16")));
            }
        };
        match precision {
            None => precision = Some(stored_as),
            Some(first) if first != stored_as => {
                return Err(NetError::Format(format!(
                    "tensor {name} is {stored_as} where the others are {first}: a capa file has one type"
                )));
            }
            Some(_) => {}
        }
        if let Some(bad) = values.iter().find(|v| !v.is_finite()) {
            return Err(NetError::Format(format!("tensor {name} holds {bad}: the weights are damaged")));
        }
        tensors.insert(name.to_string(), Stored { shape: view.shape().to_vec(), values });
    }
    Ok(Parsed { tensors, metadata, precision: precision.unwrap_or_default() })
}

/// Writes `bytes` to `path` atomically ([`capa_data::write_atomically`]).
///
/// # Errors
/// [`NetError::Io`] naming the path.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), NetError> {
    capa_data::write_atomically(path, bytes).map_err(|error| NetError::Io { path: path.to_path_buf(), error })
}
