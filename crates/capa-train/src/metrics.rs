//! `metrics.jsonl`: one line per completed iteration of the self-play
//! loop, its summary on stderr, and the warnings the seed's users learned
//! the hard way.

use anyhow::Result;
use capa_net::NetGame;
use serde::Serialize;

use crate::buffer::ReplayBuffer;
use crate::config::RunConfig;
use crate::curriculum::CurriculumReport;
use crate::evaluate::Evaluation;
use crate::keys::METRICS;
use crate::rundir::RunDir;
use crate::selfplay::SelfPlayStats;
use crate::steps::TrainReport;

/// One line of metrics.jsonl.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Metrics {
    iteration: u64,
    network: String,
    games: u64,
    plies: u64,
    new_positions: usize,
    buffer_positions: usize,
    white_draw_black: [u64; 3],
    mean_game_length: f64,
    resigned: u64,
    resign_checked: u64,
    resign_wrong: u64,
    selfplay_plies_per_second: f64,
    selfplay_playouts_per_second: f64,
    mean_playouts_per_search: f64,
    /// Share of searches the KLD-gain stop ended early.
    kld_stopped_share: f64,
    passes_per_position: f64,
    train: TrainReport,
    seconds_selfplay: f64,
    seconds_train: f64,
    seconds_checkpoint: f64,
    inference_share_of_selfplay: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    eval: Option<Evaluation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    curriculum: Option<CurriculumReport>,
}

impl Metrics {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new<G: NetGame>(
        iteration: u64,
        stats: &SelfPlayStats,
        buffer: &ReplayBuffer<G>,
        train: &TrainReport,
        config: &RunConfig,
        [selfplay, training, checkpoint]: [f64; 3],
        network: &str,
        eval: Option<Evaluation>,
        curriculum: Option<CurriculumReport>,
    ) -> Metrics {
        let per_second = |n: u64| n as f64 / stats.seconds.max(1e-9);
        let new_positions = new_positions(config, stats);
        Metrics {
            iteration,
            network: network.to_string(),
            games: stats.games,
            plies: stats.plies,
            new_positions,
            buffer_positions: buffer.positions(),
            white_draw_black: stats.results,
            mean_game_length: stats.plies as f64 / stats.games.max(1) as f64,
            resigned: stats.resigned,
            resign_checked: stats.resign_checked,
            resign_wrong: stats.resign_wrong,
            selfplay_plies_per_second: per_second(stats.plies),
            selfplay_playouts_per_second: per_second(stats.playouts),
            mean_playouts_per_search: stats.playouts as f64 / stats.searches.max(1) as f64,
            kld_stopped_share: stats.kld_stopped as f64 / stats.searches.max(1) as f64,
            passes_per_position: passes_per_position(config, new_positions),
            train: train.clone(),
            seconds_selfplay: selfplay,
            seconds_train: training,
            seconds_checkpoint: checkpoint,
            inference_share_of_selfplay: stats.inference_seconds / stats.seconds.max(1e-9),
            eval,
            curriculum,
        }
    }

    pub(crate) fn summary(&self) -> String {
        let curriculum = self.curriculum.as_ref().map_or_else(String::new, |c| {
            format!("; vs engine at UCI_Elo {}: +{} ={} -{}, next {}", c.elo, c.wins, c.draws, c.losses, c.next_elo)
        });
        let eval = self.eval.as_ref().map_or_else(String::new, |e| format!("; {}", e.summary()));
        format!(
            "iteration {}: {} games ({} plies, W/D/B {:?}), {:.1} plies/s; {} steps, loss {:.3} (policy {:.3}, wdl {:.3}); \
             {:.0}s self-play, {:.0}s training; data wait {:.0}%; network {}{eval}{curriculum}",
            self.iteration,
            self.games,
            self.plies,
            self.white_draw_black,
            self.selfplay_plies_per_second,
            self.train.steps,
            self.train.loss,
            self.train.policy,
            self.train.wdl,
            self.seconds_selfplay,
            self.seconds_train,
            100.0 * self.train.data_wait_share,
            self.network
        )
    }
}

/// The iteration's new training positions: its fully searched plies, and
/// with `train.fast_search_values` the fast ones too.
pub(crate) fn new_positions(config: &RunConfig, stats: &SelfPlayStats) -> usize {
    (if config.train.fast_search_values { stats.plies } else { stats.full_plies }) as usize
}

/// Training samples per new position: steps x batch / new positions.
fn passes_per_position(config: &RunConfig, new_positions: usize) -> f64 {
    (config.train.steps as f64 * config.train.batch as f64) / new_positions.max(1) as f64
}

/// The warnings the seed's users learned the hard way.
pub(crate) fn warnings(config: &RunConfig, new_positions: usize) -> Vec<String> {
    let mut warnings = Vec::new();
    let s = &config.selfplay;
    let ratio = s.simulations as f64 / f64::from(s.parallel_sims);
    if ratio < 12.0 {
        warnings.push(format!(
            "selfplay.simulations / selfplay.parallel_sims = {ratio:.1} is below 12: the visit distributions \
             (the policy targets) drift towards uniform; lower parallel_sims or raise simulations"
        ));
    }
    let passes = passes_per_position(config, new_positions);
    if !(2.0..=7.0).contains(&passes) {
        warnings.push(format!(
            "{passes:.1} passes per position (train.steps x train.batch / new positions) is outside 2 to 7: \
             {}",
            if passes > 7.0 {
                "the network memorises the buffer; play more games or train fewer steps"
            } else {
                "the new games are barely learned from; train more steps"
            }
        ));
    }
    warnings
}

/// Keeps the metric lines of completed iterations (a killed run may have
/// left a partial line or one of an iteration that never committed).
pub(crate) fn truncate_metrics(dir: &RunDir, completed: u64) -> Result<()> {
    let Some(bytes) = dir.read(METRICS)? else { return Ok(()) };
    let text = String::from_utf8_lossy(&bytes);
    let kept: String = text
        .lines()
        .filter(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("iteration")?.as_u64())
                .is_some_and(|i| i <= completed)
        })
        .map(|line| format!("{line}\n"))
        .collect();
    if kept != text {
        dir.write(METRICS, kept.as_bytes())?;
    }
    Ok(())
}
