//! A self-play iteration's line of `metrics.jsonl` (capa-rundir's
//! `MetricsLine`), its summary on stderr, and the warnings the seed's users
//! learned the hard way.

use capa_net::NetGame;
use capa_rundir::{CurriculumReport, Evaluation, MetricsLine, SelfPlayWork, TimeShares, TrainReport, Work};

use crate::buffer::ReplayBuffer;
use crate::config::{RootSearch, RunConfig};
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
    let new_positions = new_positions(config, stats);
    let (passes_mean, passes_oldest) = buffer.passes();
    let work = SelfPlayWork {
        buffer_positions: buffer.positions(),
        resign_checked: stats.resign_checked,
        resign_wrong: stats.resign_wrong,
        kld_stopped_share: stats.kld_stopped as f64 / stats.searches.max(1) as f64,
        passes_per_position: passes_per_position(train.steps, config, new_positions),
        // The iteration's, the writing of its games included.
        seconds_selfplay: selfplay,
        passes_mean,
        passes_oldest,
        window: buffer.window(),
        ..throughput(stats, new_positions)
    };
    MetricsLine {
        iteration,
        network: network.to_string(),
        work: Work::SelfPlay(work),
        train: train.clone(),
        held_out: None,
        eval,
        gate: None,
        curriculum,
        seconds_train: training,
        seconds_held_out: None,
        seconds_checkpoint: checkpoint,
        store: None,
    }
}

/// What self-play's throughput figures say, for the metrics line and
/// `capa bench selfplay` (the other fields zero).
pub fn throughput(stats: &SelfPlayStats, positions: usize) -> SelfPlayWork {
    let wall = stats.seconds.max(1e-9);
    let per_position = |n: u64| n as f64 / positions.max(1) as f64;
    let (waited, bookkeeping) = (stats.waited_seconds / wall, stats.bookkeeping_seconds / wall);
    SelfPlayWork {
        games: stats.games,
        plies: stats.plies,
        new_positions: positions,
        white_draw_black: stats.results,
        resigned: stats.resigned,
        positions_per_second: positions as f64 / wall,
        positions_per_cpu_second: positions as f64 / stats.cpu_seconds.max(1e-9),
        seconds_cpu_selfplay: stats.cpu_seconds,
        network_calls_per_position: per_position(stats.batches),
        evaluations_per_position: per_position(stats.leaves - stats.cache_hits),
        mean_batch_fill: stats.leaves as f64 / (stats.batches * stats.batch_capacity).max(1) as f64,
        cache_hit_rate: stats.cache_hits as f64 / stats.leaves.max(1) as f64,
        time_shares: TimeShares { search: (1.0 - waited - bookkeeping).max(0.0), network_wait: waited, bookkeeping },
        selfplay_plies_per_second: stats.plies as f64 / wall,
        selfplay_playouts_per_second: stats.playouts as f64 / wall,
        mean_playouts_per_search: stats.playouts as f64 / stats.searches.max(1) as f64,
        inference_share_of_selfplay: stats.inference_seconds / wall,
        mean_game_length: stats.plies as f64 / stats.games.max(1) as f64,
        seconds_selfplay: stats.seconds,
        ..SelfPlayWork::default()
    }
}

/// A self-play iteration's summary on stderr.
pub(crate) fn summary(line: &MetricsLine, work: &SelfPlayWork) -> String {
    let curriculum = line.curriculum.as_ref().map_or_else(String::new, |c| {
        let level = match &c.rung {
            Some(rung) => format!("ladder rung {rung} ({})", c.elo),
            None => format!("UCI_Elo {}", c.elo),
        };
        format!("; vs engine at {level}: +{} ={} -{}, next {}", c.wins, c.draws, c.losses, c.next_elo)
    });
    let eval = line.eval.as_ref().map_or_else(String::new, |e| format!("; {}", evaluate::summary(e)));
    let train = &line.train;
    let territory = if train.ownership > 0.0 || train.score > 0.0 {
        format!(", ownership {:.3}, score {:.3}", train.ownership, train.score)
    } else {
        String::new()
    };
    let store = line.store.map_or_else(String::new, |traffic| format!("; run directory {traffic}"));
    let gate = line.gate.as_ref().map_or_else(String::new, |g| {
        let verdict = if g.promoted { "plays from now on" } else { "the player stays" };
        format!(
            "; gate vs player {}: +{} ={} -{} ({:.0}%), {verdict}",
            g.player,
            g.wins,
            g.draws,
            g.losses,
            100.0 * g.score
        )
    });
    format!(
        "iteration {}: {} games ({} plies, W/D/B {:?}), {:.1} positions/s ({:.1} per CPU-s); {} steps, \
         {:.1} passes (oldest 5%), loss {:.3} (policy {:.3}, wdl {:.3}{territory}); {:.1}s self-play, \
         {:.0}s training; data wait {:.0}%; network {}{gate}{eval}{curriculum}{store}",
        line.iteration,
        work.games,
        work.plies,
        work.white_draw_black,
        work.positions_per_second,
        work.positions_per_cpu_second,
        line.train.steps,
        work.passes_oldest,
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

/// Training samples per new position, as planned: steps x batch / new positions.
fn passes_per_position(steps: u64, config: &RunConfig, new_positions: usize) -> f64 {
    (steps as f64 * config.train.batch as f64) / new_positions.max(1) as f64
}

/// The warnings the seed's users learned the hard way, from the
/// iteration's metrics.
pub(crate) fn warnings(config: &RunConfig, line: &MetricsLine, work: &SelfPlayWork) -> Vec<String> {
    let mut warnings = Vec::new();
    let s = &config.selfplay;
    let ratio = s.simulations as f64 / f64::from(s.parallel_sims);
    // Gumbel's target is the improved policy, not the visit counts.
    if ratio < 12.0 && s.search == RootSearch::Puct {
        warnings.push(format!(
            "selfplay.simulations / selfplay.parallel_sims = {ratio:.1} is below 12: the visit distributions \
             (the policy targets) drift towards uniform; lower parallel_sims or raise simulations"
        ));
    }
    let planned = passes_per_position(line.train.steps, config, work.new_positions);
    if !(2.0..=7.0).contains(&planned) {
        warnings.push(format!(
            "{planned:.1} passes per position (steps x train.batch / new positions) is outside 2 to 7: {}",
            if planned > 7.0 {
                "the network memorises the buffer; play more games or train fewer steps (train.passes)"
            } else {
                "the new games are barely learned from; train more steps (train.passes)"
            }
        ));
    }
    // AlphaGo Zero kept false resignations below 5%, checked on the games
    // played out; a few games say nothing yet.
    let wrong = work.resign_wrong as f64 / work.resign_checked.max(1) as f64;
    if work.resign_checked >= 10 && wrong > 0.05 {
        warnings.push(format!(
            "{} of {} games played out past a resignation were not lost ({:.0}%, above 5%): \
             raise selfplay.resign_loss",
            work.resign_wrong,
            work.resign_checked,
            100.0 * wrong
        ));
    }
    // While the window fills nothing leaves it, and its oldest positions
    // are drawn far more often than the plan says.
    if work.passes_oldest > 7.0 {
        warnings.push(format!(
            "the window's oldest positions have been drawn {:.1} times each: the network memorises them; \
             train fewer steps, or start from a smaller buffer.window_start",
            work.passes_oldest
        ));
    }
    warnings
}
