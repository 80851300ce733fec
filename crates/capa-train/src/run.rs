//! A run from its config: the checks before it starts, the run directory
//! and its lock, then the loop of its mode (self-play, distillation or
//! supervised), or distillation then self-play in turn (`distill.epochs`).
//!
//! The run directory (a local path or an object store, see [`RunDir`]):
//!
//! ```text
//! config.toml                       the config (resume checks the game and the architecture)
//! nets/<hash>.safetensors           every network that played, named by its content's hash
//! LATEST                            hash of the newest network
//! games/local/local-i<iteration>-g<game>.capa     one game record per file (workers: games/<worker>/)
//! pgn/iter-<iteration>.pgn          the same games for people (workers: pgn/<worker>-<n>.pgn)
//! checkpoints/iter-<iteration>.safetensors        trainer state (weights, EMA, optimizer)
//! checkpoints/latest.json           the last completed iteration: the commit point
//! ledger/iter-<iteration>.txt       the games each iteration trained on
//! metrics.jsonl                     one line per completed iteration
//! LOCK                              held by the one trainer of a local run
//! ```
//!
//! An iteration counts once `checkpoints/latest.json` names it; everything
//! it wrote before is either read again (games) or overwritten (a
//! checkpoint file) when a killed run resumes. Random choices derive from
//! the seed and the iteration, so a resumed run continues as it would have.

use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};
use capa_net::{BackendKind, DeviceSpec, NetGame};
use capa_rules::for_game;
use capa_rundir::RunDir;
use capa_rundir::keys::CONFIG;

use crate::config::{RunConfig, RunMode};
use crate::distill::distill;
use crate::evaluate::check_engine;
use crate::finish::Finish;
use crate::selfplay_loop::iterate;
use crate::supervised::supervised;

/// Runs `config` until its iterations are done or `stop` is raised.
///
/// # Errors
/// Anything that stops the run: a config that does not match the run
/// directory's, an unreadable checkpoint, a failing device or disk.
pub fn run(config: &RunConfig, stop: &AtomicBool) -> Result<Finish> {
    let data = &config.distill.data;
    if config.distills() && !data.is_dir() {
        bail!("distill.data: {} is not a folder (run `capa distill gen` to make one)", data.display());
    }
    for_game!(config.game.name, G => check_engine::<G>(&config.eval))?;
    let dir = RunDir::open(&config.run.dir)?;
    let _only_trainer = dir.lock()?;
    prepare(config, &dir)?;
    if config.run.backend != BackendKind::Cpu {
        for index in config.devices() {
            eprintln!("device {}", DeviceSpec { index, ..config.device() }.describe());
        }
    }
    for_game!(config.game.name, G => run_game::<G>(config, &dir, stop))
}

/// Checks that the config fits the run already in `dir` (if any), clears
/// what killed writers left, and saves the config.
fn prepare(config: &RunConfig, dir: &RunDir) -> Result<()> {
    if let Some(saved) = dir.read(CONFIG)? {
        let saved = String::from_utf8(saved)
            .map_err(anyhow::Error::from)
            .and_then(|text| RunConfig::parse(&text, &[]))
            .with_context(|| format!("the run's {CONFIG} in {} is unreadable", dir.location()))?;
        if saved.game.name != config.game.name {
            bail!(
                "{} plays {}, this config {}: use another run.dir for another game",
                dir.location(),
                saved.game.name.name(),
                config.game.name.name()
            );
        }
        let (was, now) = (saved.net_config()?, config.net_config()?);
        if was != now {
            bail!(
                "the network in {} is {was:?}; this config asks for {now:?}. The architecture cannot change \
                 during a run: restore the [net] section or use another run.dir",
                dir.location()
            );
        }
    }
    let removed = dir.remove_stale_temporaries()?;
    if removed > 0 {
        tracing::info!("removed {removed} temporary file(s) a killed run left");
    }
    dir.write(CONFIG, config.to_toml().as_bytes())
}

/// The run's loop for game `G`, by its mode.
fn run_game<G: NetGame>(config: &RunConfig, dir: &RunDir, stop: &AtomicBool) -> Result<Finish> {
    let all = config.last_iteration();
    match config.run.mode {
        RunMode::Distill => distill::<G>(config, dir, stop, all),
        RunMode::Supervised => supervised::<G>(config, dir, stop, all),
        RunMode::SelfPlay => {
            // Teacher first: the first distill.epochs iterations.
            let epochs = config.distill.epochs.min(all);
            if epochs > 0 && distill::<G>(config, dir, stop, epochs)? == Finish::Interrupted {
                return Ok(Finish::Interrupted);
            }
            iterate::<G>(config, dir, stop)
        }
    }
}
