//! `[gate]`, AlphaGo Zero's evaluator: self-play plays with the run's
//! player, which changes only to a new network that scores
//! `gate.threshold` against it over `gate.games` games. Training goes on
//! from the newest weights whatever the match says, so a network that lost
//! its match can still lead to one that wins the next. `LATEST` names the
//! player (workers, the GUI and `[eval]` play it), and the commit point
//! carries it, so a resumed run plays on with the same one.

use std::time::Instant;

use anyhow::{Context, Result};
use capa_net::{Inference, NetEvaluator, NetGame};
use capa_play::SearchPlayer;
use capa_rundir::{GateMatch, RunDir};

use crate::commit::load_net;
use crate::config::RunConfig;
use crate::evaluate::{match_search, match_settings, play_network};

/// The network self-play plays with, and its weights when they are not the
/// trainer's.
pub(crate) struct Player {
    name: String,
    weights: Option<Inference>,
}

impl Player {
    /// The player named `name` (its weights read when first needed).
    pub fn new(name: String) -> Player {
        Player { name, weights: None }
    }

    /// The network's hash.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Plays with `network`, the trainer's newest, from now on.
    pub fn promote(&mut self, network: &str) {
        self.name = network.to_string();
        self.weights = None;
    }

    /// Reads the player's weights from the run once they are no longer
    /// the trainer's (`newest` is the trainer's network).
    ///
    /// # Errors
    /// A missing or unreadable network file.
    pub fn load(&mut self, config: &RunConfig, dir: &RunDir, newest: &str) -> Result<()> {
        if self.name == newest {
            self.weights = None;
        } else if self.weights.is_none() {
            let weights = load_net(config, dir, &self.name).context("[gate]: the player's network")?;
            self.weights = Some(weights);
        }
        Ok(())
    }

    /// Its weights when they are not the trainer's (after [`Player::load`]).
    pub fn weights(&self) -> Option<&Inference> {
        self.weights.as_ref()
    }
}

/// Whether the gate challenges the player after `iteration`.
pub(crate) fn due(config: &RunConfig, iteration: u64) -> bool {
    config.gate.enabled() && iteration.is_multiple_of(config.gate.every)
}

/// The network `challenger` (its weights `weights`) against the player
/// `player`: the match, and whether the challenger takes over.
///
/// # Errors
/// A missing or unreadable network, a failing search.
pub(crate) fn challenge<G: NetGame>(
    config: &RunConfig,
    dir: &RunDir,
    weights: &Inference,
    challenger: &str,
    player: &str,
    iteration: u64,
) -> Result<GateMatch> {
    let started = Instant::now();
    let gate = &config.gate;
    let evaluator = NetEvaluator::<G>::from_inference(weights)?;
    let mut new = SearchPlayer {
        name: challenger.to_string(),
        evaluator: &evaluator,
        simulations: gate.simulations,
        params: match_search(config),
    };
    // Every game at once, so that the networks' batches stay full.
    let settings = match_settings::<G>(config, gate.games, gate.games as usize, iteration, GATE_MATCH);
    let label = format!("iteration {iteration} gate");
    let score = play_network::<G>(config, dir, &mut new, player, &settings, &label)
        .context("[gate]: the match against the player")?;
    Ok(GateMatch {
        challenger: challenger.to_string(),
        player: player.to_string(),
        wins: score.wins,
        draws: score.draws,
        losses: score.losses,
        score: score.fraction(),
        promoted: score.fraction() >= gate.threshold,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The gate's match among an iteration's matches (its openings and seeds
/// differ from `[eval]`'s, numbered from 0, and its anchor's, 63).
const GATE_MATCH: u32 = 62;
