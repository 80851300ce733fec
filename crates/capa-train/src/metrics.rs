//! A self-play iteration's line of `metrics.jsonl` (capa-rundir's
//! `MetricsLine`), its summary on stderr, and the warnings the seed's users
//! learned the hard way.

use capa_net::NetGame;
use capa_rundir::{CurriculumReport, Evaluation, MetricsLine, SelfPlayWork, TrainReport, Work};

use crate::buffer::ReplayBuffer;
use crate::config::RunConfig;
use crate::evaluate;
use crate::selfplay::SelfPlayStats;

/// A self-play iteration's metrics line.
#[allow(clippy::too_many_arguments)]
pub(crate) fn selfplay_line<G: NetGame>(
    iteration: u64,
    stats: &SelfPlayStats,
    buffer: &ReplayBuffer<G>,
    train: &TrainReport,
    config: &RunConfig,
    [selfplay, training, checkpoint]: [f64; 3],
    network: &str,
    eval: Option<Evaluation>,
    curriculum: Option<CurriculumReport>,
) -> MetricsLine {
    let per_second = |n: u64| n as f64 / stats.seconds.max(1e-9);
    let new_positions = new_positions(config, stats);
    let work = SelfPlayWork {
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
        seconds_selfplay: selfplay,
        inference_share_of_selfplay: stats.inference_seconds / stats.seconds.max(1e-9),
    };
    MetricsLine {
        iteration,
        network: network.to_string(),
        work: Work::SelfPlay(work),
        train: train.clone(),
        held_out: None,
        eval,
        curriculum,
        seconds_train: training,
        seconds_held_out: None,
        seconds_checkpoint: checkpoint,
    }
}

/// A self-play iteration's summary on stderr.
pub(crate) fn summary(line: &MetricsLine, work: &SelfPlayWork) -> String {
    let curriculum = line.curriculum.as_ref().map_or_else(String::new, |c| {
        format!("; vs engine at UCI_Elo {}: +{} ={} -{}, next {}", c.elo, c.wins, c.draws, c.losses, c.next_elo)
    });
    let eval = line.eval.as_ref().map_or_else(String::new, |e| format!("; {}", evaluate::summary(e)));
    format!(
        "iteration {}: {} games ({} plies, W/D/B {:?}), {:.1} plies/s; {} steps, loss {:.3} (policy {:.3}, wdl {:.3}); \
         {:.0}s self-play, {:.0}s training; data wait {:.0}%; network {}{eval}{curriculum}",
        line.iteration,
        work.games,
        work.plies,
        work.white_draw_black,
        work.selfplay_plies_per_second,
        line.train.steps,
        line.train.loss,
        line.train.policy,
        line.train.wdl,
        work.seconds_selfplay,
        line.seconds_train,
        100.0 * line.train.data_wait_share,
        line.network
    )
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
