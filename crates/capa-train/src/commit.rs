//! Networks and checkpoints in the run directory: publishing a network
//! under its hash, the commit point of an iteration
//! (`checkpoints/latest.json`), pruning old checkpoints, and the resume
//! that reads them back.

use anyhow::{Context, Result, bail};
use capa_net::{Inference, NetConfig, Start, Training, read_net_config};

use capa_rundir::keys::{self, COMMIT};
use capa_rundir::{Carried, CommitPoint, RunDir, truncate_metrics};

use crate::config::RunConfig;

/// Where a run starts: its trainer, first iteration and newest network.
pub(crate) struct Resumed {
    pub trainer: Training,
    pub first_iteration: u64,
    pub network: String,
    pub carried: Carried,
}

/// The trainer of the last committed iteration, or a fresh one (published
/// as the run's first network), on the run's devices.
pub(crate) fn start_trainer(config: &RunConfig, dir: &RunDir) -> Result<Resumed> {
    let (spec, further) = (config.device(), &config.devices()[1..]);
    let optimizer = config.optimizer.clone();
    let mut resumed = match CommitPoint::read(dir)? {
        Some(latest) => {
            let key = keys::checkpoint(&latest.checkpoint);
            let path = dir
                .local_copy(&key)?
                .with_context(|| format!("{COMMIT} in {} names {key}, which is missing", dir.location()))?;
            let trainer = Training::start(spec, further, Start::Checkpoint(&path), optimizer)
                .with_context(|| format!("cannot resume from {key} in {}", dir.location()))?;
            tracing::info!("resuming {} after iteration {}", dir.location(), latest.iteration);
            truncate_metrics(dir, latest.iteration)?;
            Resumed { trainer, first_iteration: latest.iteration + 1, network: latest.network, carried: latest.carried }
        }
        None => {
            let net_config = config.net_config()?;
            let init = config.run.init.as_deref();
            let start = Start::Fresh { config: &net_config, seed: config.run.seed, init };
            let trainer = Training::start(spec, further, start, optimizer).with_context(|| match init {
                Some(init) => format!("run.init: the run cannot start from {}", init.display()),
                None => "cannot start training".to_string(),
            })?;
            if let Some(init) = init {
                tracing::info!("the run's first network starts from {}", init.display());
            }
            let network = publish_net(&trainer.inference()?, dir)?;
            Resumed { trainer, first_iteration: 1, network, carried: Carried::default() }
        }
    };
    if config.optimizer.init_decay > 0.0
        && let Some(init) = config.run.init.as_deref()
    {
        resumed
            .trainer
            .decay_toward(init)
            .with_context(|| format!("optimizer.init_decay: cannot decay towards run.init {}", init.display()))?;
        tracing::info!("each step decays the weights towards {} (optimizer.init_decay)", init.display());
    }
    if !further.is_empty() {
        tracing::info!("training data-parallel over {} devices", further.len() + 1);
    }
    Ok(resumed)
}

/// Saves the iteration's checkpoint, runs `record` (which writes what the
/// iteration leaves besides: its metrics line), makes sure the run's lock
/// is still this process's, commits the iteration (`latest.json`), then
/// prunes old checkpoints. A run killed before the
/// commit redoes the iteration, and the resume drops what `record` wrote
/// for it; one killed after has it all.
pub(crate) fn commit(
    config: &RunConfig,
    dir: &RunDir,
    trainer: &Training,
    iteration: u64,
    network: &str,
    carried: Carried,
    record: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let checkpoint = keys::checkpoint_name(iteration);
    dir.save_with(&keys::checkpoint(&checkpoint), |path| Ok(trainer.save_checkpoint(path)?))?;
    record()?;
    // Committed only under a lock that is still this trainer's.
    dir.confirm_lock()?;
    CommitPoint { iteration, checkpoint, network: network.to_string(), carried }.write(dir)?;
    prune_checkpoints(dir, iteration, config.checkpoint.every, config.checkpoint.keep)
}

/// Saves the network under its hash and points `LATEST` at it.
pub(crate) fn publish_net(net: &Inference, dir: &RunDir) -> Result<String> {
    let hash = save_net(net, dir)?;
    dir.publish_latest(&hash)?;
    Ok(hash)
}

/// Saves the network under its hash, `LATEST` left as it is (a gated
/// run's new network, not yet its player).
pub(crate) fn save_net(net: &Inference, dir: &RunDir) -> Result<String> {
    let bytes = net.to_bytes()?;
    let hash = network_hash(net.config(), &bytes);
    dir.write(&keys::network(&hash), &bytes)?;
    Ok(hash)
}

/// The run's network `hash`, read from its file onto the run's device,
/// checked: the file must be whole (its content hashes to its name) and load.
pub(crate) fn load_net(config: &RunConfig, dir: &RunDir, hash: &str) -> Result<Inference> {
    let key = keys::network(hash);
    let path = dir.local_copy(&key)?.with_context(|| format!("the network {key} is missing in {}", dir.location()))?;
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let net_config =
        read_net_config(&path).with_context(|| format!("{key} in {} is not a network file", dir.location()))?;
    let actual = network_hash(&net_config, &bytes);
    if actual != hash {
        bail!("{key} in {} is damaged or half written (its content hashes to {actual})", dir.location());
    }
    Inference::load(&path, config.device()).with_context(|| format!("cannot load {key} in {}", dir.location()))
}

/// The name of a network file: a hash of its architecture and its weights
/// (what follows the safetensors header, whose metadata comes in no fixed
/// order).
pub(crate) fn network_hash(config: &NetConfig, file: &[u8]) -> String {
    let header = file.get(..8).map_or(0, |len| u64::from_le_bytes(len.try_into().expect("8 bytes")));
    let weights = file.get(8usize.saturating_add(header as usize)..).unwrap_or_default();
    format!("{:016x}", capa_rules::fnv1a(format!("{config:?}").as_bytes().iter().chain(weights)))
}

/// Keeps the latest checkpoint and the newest `keep` whose iteration is a multiple of `every`.
fn prune_checkpoints(dir: &RunDir, latest: u64, every: u64, keep: usize) -> Result<()> {
    let mut numbered: Vec<(u64, String)> = Vec::new();
    for entry in dir.list(keys::CHECKPOINTS)? {
        if let Some(iteration) = keys::checkpoint_iteration(&entry.key) {
            numbered.push((iteration, entry.key));
        }
    }
    numbered.sort();
    let kept: Vec<u64> = numbered.iter().map(|(i, _)| *i).filter(|i| i % every == 0).rev().take(keep).collect();
    for (iteration, key) in numbered {
        if iteration != latest && !kept.contains(&iteration) {
            dir.remove(&key)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use capa_net::DeviceSpec;

    use super::*;

    const NET: &str =
        "[net]\npreset = \"small\"\nchannels = 16\nblocks = 1\ntransformer_blocks = 1\nheads = 2\ngroups = 2\n";

    fn config(dir: &Path, net: &str, init: &Path) -> RunConfig {
        let text = format!(
            "[run]\ndir = {:?}\ninit = {:?}\n[game]\nname = \"chess\"\n{net}",
            dir.display().to_string(),
            init.display().to_string()
        );
        RunConfig::parse(&text, &[]).unwrap()
    }

    /// A network file's tensors: what follows the safetensors header.
    fn weights(bytes: &[u8]) -> Vec<u8> {
        let header = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        bytes[8 + header..].to_vec()
    }

    #[test]
    fn a_run_starts_from_its_init_network_and_refuses_another_architecture() {
        let base: PathBuf = std::env::temp_dir().join(format!("capa-init-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let init = base.join("init.safetensors");
        let run = config(&base.join("run"), NET, &init);
        // Weights the run's own seed would not give.
        let net_config = run.net_config().unwrap();
        let other = Start::Fresh { config: &net_config, seed: run.run.seed + 98, init: None };
        let other = Training::start(DeviceSpec::CPU, &[], other, run.optimizer.clone()).unwrap();
        std::fs::write(&init, other.inference().unwrap().to_bytes().unwrap()).unwrap();

        let started = start_trainer(&run, &RunDir::open(&run.run.dir).unwrap()).unwrap();
        let first = started.trainer.inference().unwrap().to_bytes().unwrap();
        assert_eq!(weights(&first), weights(&std::fs::read(&init).unwrap()), "the first network is the file's");

        let wider = config(&base.join("wider"), &NET.replace("channels = 16", "channels = 24"), &init);
        let refused = start_trainer(&wider, &RunDir::open(&wider.run.dir).unwrap());
        let error = format!("{:#}", refused.err().expect("another architecture is refused"));
        assert!(error.contains("run.init") && error.contains("init.safetensors"), "{error}");
        let _ = std::fs::remove_dir_all(&base);
    }
}
