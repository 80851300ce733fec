//! Network files and training checkpoints.
//!
//! Both are one safetensors file with the architecture in its metadata:
//! - a **network file** holds `net.*`: the weights to play with (a *slim*
//!   one, made from a checkpoint by [`slim_net`], may store them in f16 or
//!   bf16 and names the step it was taken at);
//! - a **checkpoint** also holds `ema.*` (when the EMA is on) and the
//!   optimizer's state, `optimizer.first.*` and `optimizer.second.*`, keyed
//!   by parameter path, with the step count and optimizer in the metadata.
//!
//! Writes are atomic. Loads check every name and shape and list what does
//! not fit.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use burn::prelude::*;

use crate::NetError;
use crate::config::NetConfig;
use crate::model::Net;
use crate::ops::{CapaAutodiffBackend, CapaBackend};
use crate::precision::Precision;
use crate::store::{Parsed, Stored, Tensors, apply, collect, from_bytes, to_bytes, write_atomically};
use crate::train::{Moments, OptimizerKind, TrainConfig, Trainer};

/// The format this code writes; readers refuse others.
const FORMAT: &str = "capa-net/1";
const KEY_FORMAT: &str = "capa.format";
const KEY_CONFIG: &str = "capa.config";
const KEY_STEP: &str = "capa.step";
const KEY_OPTIMIZER: &str = "capa.optimizer";
const KEY_UPDATES: &str = "capa.optimizer_updates";
/// In a slim network file: the training steps of the checkpoint it was made from.
const KEY_SOURCE_STEP: &str = "capa.source_step";
/// The name groups a file may hold.
const GROUPS: [&str; 3] = ["net.", "ema.", "optimizer."];

fn metadata(config: &NetConfig) -> HashMap<String, String> {
    HashMap::from([
        (KEY_FORMAT.to_string(), FORMAT.to_string()),
        (KEY_CONFIG.to_string(), serde_json::to_string(config).expect("a config serialises")),
    ])
}

/// A file written by [`save_net`], [`save_checkpoint`] or [`slim_net`], read and checked.
struct NetFile {
    tensors: Tensors,
    metadata: HashMap<String, String>,
    config: NetConfig,
    precision: Precision,
}

/// Reads a file written by [`save_net`], [`save_checkpoint`] or [`slim_net`].
fn read(path: &Path) -> Result<NetFile, NetError> {
    let bytes = std::fs::read(path).map_err(|error| NetError::Io { path: path.to_path_buf(), error })?;
    let in_file = |e: NetError| NetError::File { path: path.to_path_buf(), problem: Box::new(e) };
    let Parsed { tensors, metadata, precision } = from_bytes(&bytes).map_err(in_file)?;
    match metadata.get(KEY_FORMAT) {
        Some(format) if format == FORMAT => {}
        Some(other) => return Err(in_file(NetError::Format(format!("format `{other}`; this build reads `{FORMAT}`")))),
        None => return Err(in_file(NetError::Format(format!("no `{KEY_FORMAT}` metadata: not a capa network")))),
    }
    let config: NetConfig = metadata
        .get(KEY_CONFIG)
        .ok_or_else(|| NetError::Format(format!("no `{KEY_CONFIG}` metadata")))
        .and_then(|json| serde_json::from_str(json).map_err(|e| NetError::Format(format!("bad `{KEY_CONFIG}`: {e}"))))
        .map_err(in_file)?;
    config.validate().map_err(in_file)?;
    let strangers: Vec<&str> =
        tensors.keys().filter(|name| !GROUPS.iter().any(|g| name.starts_with(g))).map(String::as_str).collect();
    if !strangers.is_empty() {
        return Err(in_file(NetError::Format(format!(
            "tensors outside net./ema./optimizer.: {}",
            strangers.join(", ")
        ))));
    }
    // Build nothing the file cannot fill: a damaged config could ask for a
    // network far larger than memory.
    let stored: usize = tensors.iter().filter(|(name, _)| name.starts_with("net.")).map(|(_, t)| t.values.len()).sum();
    if stored != config.parameter_count() {
        return Err(in_file(NetError::Format(format!(
            "its architecture has {} parameters but the file holds {stored} under `net.`",
            config.parameter_count()
        ))));
    }
    Ok(NetFile { tensors, metadata, config, precision })
}

/// The architecture a network file or checkpoint holds, read and checked
/// without building the network: what game it plays, how large it is.
///
/// # Errors
/// As [`load_net`].
pub fn read_net_config(path: &Path) -> Result<NetConfig, NetError> {
    read(path).map(|file| file.config)
}

/// What a network file or checkpoint holds, read and checked without
/// building the network (`capa net info`).
#[derive(Clone, Debug, PartialEq)]
pub struct NetFileInfo {
    /// The architecture.
    pub config: NetConfig,
    /// Parameters of the network (`net.*`).
    pub parameters: usize,
    /// A training checkpoint (with the optimizer's state and step), not a
    /// network file.
    pub checkpoint: bool,
    /// Whether it holds EMA weights too.
    pub ema: bool,
    /// The training steps a checkpoint was saved after.
    pub step: Option<u64>,
    /// For a slim network file, the training steps of the checkpoint it
    /// was made from.
    pub source_step: Option<u64>,
    /// The float type the weights are stored in.
    pub precision: Precision,
}

/// Reads what `path` holds, checking it as [`load_net`] does.
///
/// # Errors
/// As [`load_net`].
pub fn read_net_info(path: &Path) -> Result<NetFileInfo, NetError> {
    let NetFile { tensors, metadata, config, precision } = read(path)?;
    let holds = |group: &str| tensors.keys().any(|name| name.starts_with(group));
    let step = metadata.get(KEY_STEP).and_then(|s| s.parse().ok());
    Ok(NetFileInfo {
        parameters: config.parameter_count(),
        config,
        checkpoint: step.is_some(),
        ema: holds("ema."),
        step,
        source_step: metadata.get(KEY_SOURCE_STEP).and_then(|s| s.parse().ok()),
        precision,
    })
}

/// Writes what play needs of the checkpoint or network file `input` to
/// `output`: the weights a run plays with (the EMA weights where the file
/// holds them), the architecture, and a checkpoint's step, with every
/// weight stored in `precision`. Both loaders read the result, for play and
/// as a run's starting point. Returns what `output` holds.
///
/// # Errors
/// As [`load_net`] for `input`; [`NetError::Format`] when a weight does not
/// fit `precision` (beyond f16's range); [`NetError::Io`] when `output`
/// cannot be written.
pub fn slim_net(input: &Path, output: &Path, precision: Precision) -> Result<NetFileInfo, NetError> {
    let NetFile { tensors, metadata: source, config, .. } = read(input)?;
    let weights: Tensors =
        played_weights(tensors).into_iter().map(|(name, stored)| (format!("net.{name}"), stored)).collect();
    let mut metadata = metadata(&config);
    let source_step = source.get(KEY_STEP).or(source.get(KEY_SOURCE_STEP));
    if let Some(step) = source_step {
        metadata.insert(KEY_SOURCE_STEP.to_string(), step.clone());
    }
    let in_file = |e: NetError| NetError::File { path: input.to_path_buf(), problem: Box::new(e) };
    write_atomically(output, &to_bytes(&weights, metadata, precision).map_err(in_file)?)?;
    read_net_info(output)
}

/// The weights a network file or checkpoint plays with (a checkpoint's EMA
/// weights where it holds them) by parameter name (`blocks.0.conv1.weight`),
/// in f32, with the architecture: what a converter to another format reads.
///
/// # Errors
/// As [`load_net`].
pub fn read_net_weights(path: &Path) -> Result<(NetConfig, Tensors), NetError> {
    let NetFile { tensors, config, .. } = read(path)?;
    Ok((config, played_weights(tensors)))
}

/// The weights a file's network plays with, by parameter name without the
/// group: a checkpoint's EMA weights where it holds them, else `net.*`.
fn played_weights(tensors: Tensors) -> Tensors {
    let group = if tensors.keys().any(|name| name.starts_with("ema.")) { "ema." } else { "net." };
    tensors.into_iter().filter_map(|(name, stored)| Some((name.strip_prefix(group)?.to_string(), stored))).collect()
}

/// Writes a network file of architecture `config` from its weights by
/// parameter name (what [`read_net_weights`] returns), after checking them
/// against the architecture: every parameter present with its shape, and
/// no other.
///
/// # Errors
/// [`NetError::Config`] for an architecture that does not validate,
/// [`NetError::Mismatch`] listing the weights that do not fit it,
/// [`NetError::Io`] when the file cannot be written.
#[cfg(feature = "flex")]
pub fn write_net_weights(config: &NetConfig, weights: &Tensors, path: &Path) -> Result<(), NetError> {
    config.validate()?;
    let net = Net::<burn::backend::Flex>::new(config, &Default::default());
    save_net(&apply(net, "", weights, &path.display().to_string())?, path)
}

/// Writes `net` as a network file.
///
/// # Errors
/// [`NetError::Io`] when the file cannot be written, [`NetError::Format`]
/// when the tensors cannot be serialised.
pub fn save_net<B: Backend>(net: &Net<B>, path: &Path) -> Result<(), NetError> {
    write_atomically(path, &net_bytes(net)?)
}

/// `net` as the bytes of a network file (what [`save_net`] writes).
///
/// # Errors
/// [`NetError::Format`] when the tensors cannot be serialised.
pub fn net_bytes<B: Backend>(net: &Net<B>) -> Result<Vec<u8>, NetError> {
    let mut tensors = Tensors::new();
    collect(net, "net.", &mut tensors);
    to_bytes(&tensors, metadata(net.config()), Precision::F32)
}

/// Loads a network file (or a checkpoint's `net.*` weights), building the
/// architecture its metadata names.
///
/// # Errors
/// [`NetError`] naming the file: unreadable, not a capa network, or weights
/// that do not fit the architecture.
pub fn load_net<B: CapaBackend>(path: &Path, device: &B::Device) -> Result<Net<B>, NetError> {
    let NetFile { tensors, config, .. } = read(path)?;
    apply(Net::new(&config, device), "net.", &tensors, &path.display().to_string())
}

/// Loads a network file into `net`'s architecture, failing with the list of
/// tensors that differ when the file holds another architecture.
///
/// # Errors
/// As [`load_net`], and [`NetError::Mismatch`] when the architectures differ
/// (also when only settings without tensors of their own differ, such as
/// the GroupNorm groups).
pub fn load_net_into<B: CapaBackend>(net: Net<B>, path: &Path) -> Result<Net<B>, NetError> {
    let NetFile { tensors, config, .. } = read(path)?;
    let what = path.display().to_string();
    let wanted = net.config().clone();
    match apply(net, "net.", &tensors, &what) {
        Ok(net) if config == wanted => Ok(net),
        Ok(_) => Err(NetError::Mismatch {
            what,
            problems: vec![format!("the file's architecture is {config:?}, the network's {wanted:?}")],
        }),
        Err(err) => Err(err),
    }
}

/// Writes the whole training state of `trainer`.
///
/// # Errors
/// [`NetError::Io`] when the file cannot be written, [`NetError::Format`]
/// when the tensors cannot be serialised.
pub fn save_checkpoint<B: CapaAutodiffBackend>(trainer: &Trainer<B>, path: &Path) -> Result<(), NetError> {
    let mut tensors = Tensors::new();
    collect(trainer.model(), "net.", &mut tensors);
    if let Some(ema) = &trainer.ema {
        collect(ema, "ema.", &mut tensors);
    }
    let shapes: HashMap<String, Vec<usize>> = tensors
        .iter()
        .filter_map(|(name, stored)| Some((name.strip_prefix("net.")?.to_string(), stored.shape.clone())))
        .collect();
    for (name, moments) in &trainer.moments {
        let shape = shapes.get(name).cloned().unwrap_or_else(|| vec![moments.first.dims()[0]]);
        let mut store = |group: &str, tensor: &Tensor<B::InnerBackend, 1>| {
            let values = tensor.to_data().convert::<f32>().into_vec::<f32>().expect("f32");
            tensors.insert(format!("optimizer.{group}.{name}"), Stored { shape: shape.clone(), values });
        };
        store("first", &moments.first);
        if let Some(second) = &moments.second {
            store("second", second);
        }
    }
    let mut metadata = metadata(trainer.model().config());
    metadata.insert(KEY_STEP.to_string(), trainer.step.to_string());
    let optimizer = serde_json::to_string(&trainer.config.optimizer).expect("serialises");
    metadata.insert(KEY_OPTIMIZER.to_string(), optimizer);
    let updates: BTreeMap<&String, u64> = trainer.moments.iter().map(|(name, m)| (name, m.updates)).collect();
    metadata.insert(KEY_UPDATES.to_string(), serde_json::to_string(&updates).expect("serialises"));
    write_atomically(path, &to_bytes(&tensors, metadata, Precision::F32)?)
}

/// Resumes training from a checkpoint written by [`save_checkpoint`], with
/// `config` for what comes next.
///
/// # Errors
/// [`NetError`] naming the file when it cannot be read, does not fit its
/// architecture, or holds another optimizer's state than `config` asks for.
pub fn load_checkpoint<B: CapaAutodiffBackend>(
    path: &Path,
    config: TrainConfig,
    device: &B::Device,
) -> Result<Trainer<B>, NetError> {
    let NetFile { tensors, metadata, config: net_config, .. } = read(path)?;
    let what = path.display().to_string();
    let in_file = |e: NetError| NetError::File { path: path.to_path_buf(), problem: Box::new(e) };
    let model: Net<B> = apply(Net::new(&net_config, device), "net.", &tensors, &what)?;
    let mut trainer = Trainer::new(model, config)?;
    trainer.step = metadata.get(KEY_STEP).and_then(|s| s.parse().ok()).ok_or_else(|| {
        in_file(NetError::Format(format!("no `{KEY_STEP}` metadata: a network file, not a checkpoint")))
    })?;
    let has_ema = tensors.keys().any(|name| name.starts_with("ema."));
    match trainer.ema.take() {
        // A run that turns the EMA on starts it from the current weights.
        Some(ema) => trainer.ema = Some(if has_ema { apply(ema, "ema.", &tensors, &what)? } else { ema }),
        None if has_ema => {
            return Err(in_file(NetError::Config(
                "the checkpoint holds EMA weights but ema_decay = 0 would drop them: keep the EMA on, \
                 or start a new run from its network file"
                    .to_string(),
            )));
        }
        None => {}
    }
    let saved: Option<OptimizerKind> = metadata.get(KEY_OPTIMIZER).and_then(|s| serde_json::from_str(s).ok());
    let has_state = tensors.keys().any(|name| name.starts_with("optimizer."));
    if has_state && saved != Some(trainer.config.optimizer) {
        return Err(in_file(NetError::Config(format!(
            "the checkpoint holds {saved:?} state but the config asks for {:?}: keep the optimizer, \
             or start a new run from its network file",
            trainer.config.optimizer
        ))));
    }
    let mut problems = Vec::new();
    let (mut firsts, mut seconds) = (HashMap::new(), HashMap::new());
    let params: Tensors = tensors
        .iter()
        .filter_map(|(name, stored)| Some((name.strip_prefix("net.")?.to_string(), stored.clone())))
        .collect();
    for (name, stored) in tensors.range("optimizer.".to_string()..).take_while(|(n, _)| n.starts_with("optimizer.")) {
        let Some((group, param)) = name["optimizer.".len()..].split_once('.') else {
            problems.push(format!("unexpected {name}"));
            continue;
        };
        match params.get(param) {
            Some(weights) if weights.shape == stored.shape => {}
            Some(weights) => {
                problems.push(format!("{name}: the file has {:?}, the parameter is {:?}", stored.shape, weights.shape));
                continue;
            }
            None => {
                problems.push(format!("unexpected {name}: no such parameter"));
                continue;
            }
        }
        let tensor = Tensor::<B::InnerBackend, 1>::from_data(
            TensorData::new(stored.values.clone(), [stored.values.len()]),
            device,
        );
        match group {
            "first" => {
                firsts.insert(param.to_string(), tensor);
            }
            "second" => {
                seconds.insert(param.to_string(), tensor);
            }
            _ => problems.push(format!("unexpected {name}")),
        }
    }
    let wants_second = trainer.config.optimizer == OptimizerKind::AdamW;
    let updates: BTreeMap<String, u64> = match metadata.get(KEY_UPDATES) {
        Some(json) => {
            serde_json::from_str(json).map_err(|e| in_file(NetError::Format(format!("bad `{KEY_UPDATES}`: {e}"))))?
        }
        None => BTreeMap::new(),
    };
    for (name, first) in firsts {
        let second = seconds.remove(&name);
        if second.is_some() != wants_second {
            problems.push(format!("optimizer state of {name} is incomplete"));
        }
        match updates.get(&name) {
            Some(&updates) if updates > 0 => {
                trainer.moments.insert(name, Moments { first, second, updates });
            }
            _ => problems.push(format!("optimizer state of {name} has no update count")),
        }
    }
    problems.extend(seconds.keys().map(|name| format!("optimizer state of {name} is incomplete")));
    if !problems.is_empty() {
        return Err(NetError::Mismatch { what, problems });
    }
    Ok(trainer)
}
