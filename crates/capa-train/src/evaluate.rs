//! `[eval]`: every `eval.every` iterations (epochs in distillation), the
//! trainer's network plays a match (capa-play), against the network it replaces,
//! against a UCI engine of set strength, or against the rungs of a
//! calibrated ladder. Against the engine, its Elo on the engine's `UCI_Elo`
//! scale comes from a bisection over that scale (the authoritative figure)
//! or from one match at a fixed anchor (the quick check); on a ladder, from
//! a bisection over the rungs, on a scale that reaches below the engine's
//! weakest level.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capa_mcts::SearchParams;
use capa_net::{Inference, NetEvaluator, NetGame, Training};
use capa_play::{
    Bisection, Bracket, EloEstimate, EstimateKind, Ladder, MatchScore, MatchSettings, Openings, Placement,
    SearchPlayer, UciPlayer, place, play_match, rate,
};
use capa_rules::Game;
use capa_rules::mix;
use capa_rundir::{EloKind, Evaluation, Probe, RunDir, keys, read_metrics};

use crate::config::{EvalMethod, EvalSection, RunConfig};
use crate::progress::progress;

/// One match of an evaluation: against the engine at `uci_elo`, a ladder's
/// `rung` (its name and Elo), or neither (the previous network).
fn new_probe(uci_elo: Option<i64>, rung: Option<(String, f64)>, score: MatchScore) -> Probe {
    let (rung, rung_elo) = rung.unzip();
    Probe {
        uci_elo,
        rung,
        rung_elo,
        wins: score.wins,
        draws: score.draws,
        losses: score.losses,
        score: score.fraction(),
    }
}

/// An estimate's kind as the metrics line writes it.
fn elo_kind(kind: EstimateKind) -> EloKind {
    match kind {
        EstimateKind::Value => EloKind::Value,
        EstimateKind::AtMost => EloKind::AtMost,
        EstimateKind::AtLeast => EloKind::AtLeast,
    }
}

/// An evaluation for an iteration's summary line.
pub(crate) fn summary(evaluation: &Evaluation) -> String {
    let results = |p: &Probe| format!("+{} ={} -{}", p.wins, p.draws, p.losses);
    let e = evaluation;
    match e.probes.as_slice() {
        [probe] if probe.uci_elo.is_none() && probe.rung.is_none() => {
            format!("vs previous {}, Elo {:+.0} ({:+.0} to {:+.0})", results(probe), e.elo, e.elo_low, e.elo_high)
        }
        probes => {
            let played: Vec<String> = probes
                .iter()
                .map(|p| match (&p.rung, p.rung_elo) {
                    (Some(rung), Some(elo)) => format!("{rung} ({elo:.0}): {}", results(p)),
                    _ => format!("{}: {}", p.uci_elo.unwrap_or_default(), results(p)),
                })
                .collect();
            let kind = match e.elo_kind {
                EloKind::Value => EstimateKind::Value,
                EloKind::AtMost => EstimateKind::AtMost,
                EloKind::AtLeast => EstimateKind::AtLeast,
            };
            let elo = EloEstimate { elo: e.elo, low: e.elo_low, high: e.elo_high, kind };
            let scale = if e.on_ladder() { "on the ladder" } else { "at UCI_Elo" };
            format!("vs {} {scale} {}; Elo {elo}", e.opponent, played.join(", "))
        }
    }
}

/// The bracket of `UCI_Elo` a bisection starts from, or the anchor alone,
/// checked against the engine's range.
fn engine_levels(section: &EvalSection, range: (i64, i64)) -> Result<(i64, i64)> {
    let (min, max) = range;
    let (low, high) = match section.method {
        EvalMethod::Anchor => (section.anchor, section.anchor),
        EvalMethod::Bisection => section.bracket.map_or(range, |[low, high]| (low, high)),
    };
    let key = if section.method == EvalMethod::Anchor { "eval.anchor" } else { "eval.bracket" };
    if low < min || high > max {
        bail!("{key}: {low} to {high} is outside `{}`'s UCI_Elo range, {min} to {max}", section.engine.trim());
    }
    if section.method == EvalMethod::Bisection && high - low <= section.tolerance {
        bail!("{key}: {low} to {high} is no wider than eval.tolerance ({}): nothing to bisect", section.tolerance);
    }
    Ok((low, high))
}

/// Checks, before a run starts, that `[eval]`'s engine (if any) starts,
/// plays `G` and can be set to the anchor or bracket.
///
/// # Errors
/// What is wrong, naming the key.
pub(crate) fn check_engine<G: Game>(section: &EvalSection) -> Result<()> {
    if section.every == 0 {
        return Ok(());
    }
    if let Some(path) = &section.ladder {
        return eval_ladder::<G>(path).map(drop);
    }
    if section.engine.trim().is_empty() {
        return Ok(());
    }
    let engine = eval_engine::<G>(section)?;
    engine_levels(section, engine.elo_range().expect("limited")).map(drop)
}

/// `[eval]`'s engine, started for `G` with its strength limited.
fn eval_engine<G: Game>(section: &EvalSection) -> Result<UciPlayer> {
    UciPlayer::strength_limited::<G>(&section.engine, section.nodes)
        .with_context(|| format!("[eval] engine `{}`", section.engine.trim()))
}

/// `[eval]`'s ladder, read and checked: calibrated, for `G`, its bottom
/// rung's engine able to start.
fn eval_ladder<G: Game>(path: &std::path::Path) -> Result<Ladder> {
    let context = || format!("eval.ladder = {}", path.display());
    let ladder = Ladder::read(path).with_context(context)?;
    ladder.check_game::<G>().with_context(context)?;
    ladder.elos().with_context(context)?;
    ladder.player(0, 1, LADDER_TIMEOUT)?.start::<G>().with_context(context)?;
    Ok(ladder)
}

/// The run's last Elo on a ladder, from metrics.jsonl: where the next
/// placement starts. Networks change little between evaluations, so a
/// placement that starts there needs fewer probes than one from the middle.
fn last_ladder_elo(dir: &RunDir) -> Result<Option<f64>> {
    let lines = read_metrics(dir)?;
    Ok(lines.into_iter().rev().find_map(|line| line.eval.filter(Evaluation::on_ladder).map(|eval| eval.elo)))
}

/// How long a ladder rung may take over one move before it forfeits.
const LADDER_TIMEOUT: Duration = Duration::from_secs(60);

/// [`evaluate`] when `iteration` is one of every `eval.every`; `None` otherwise.
///
/// # Errors
/// As [`evaluate`].
pub(crate) fn evaluate_if_due<G: NetGame>(
    config: &RunConfig,
    dir: &RunDir,
    trainer: &Training,
    previous: &str,
    iteration: u64,
) -> Result<Option<Evaluation>> {
    let due = config.eval.every > 0 && iteration.is_multiple_of(config.eval.every);
    due.then(|| evaluate::<G>(config, dir, trainer, previous, iteration)).transpose()
}

/// Evaluates the trainer's network for `iteration`: against the engine
/// when `[eval]` names one, otherwise against the network `previous`.
///
/// # Errors
/// A missing previous network, an engine or search failure.
fn evaluate<G: NetGame>(
    config: &RunConfig,
    dir: &RunDir,
    trainer: &Training,
    previous: &str,
    iteration: u64,
) -> Result<Evaluation> {
    let started = Instant::now();
    let section = &config.eval;
    let current = NetEvaluator::<G>::from_inference(&trainer.inference()?)?;
    let params = SearchParams { parallel_sims: config.selfplay.parallel_sims, ..SearchParams::default() };
    let searched = |name: &str, evaluator| SearchPlayer {
        name: name.to_string(),
        evaluator,
        simulations: section.simulations,
        params: params.clone(),
    };
    let mut network = searched("new", &current);
    // Every game at once, so the network's batches stay full.
    let settings = |probe: u32| MatchSettings::<G> {
        games: section.games,
        openings: Openings::Random {
            plies: section.random_plies,
            seed: mix(config.run.seed ^ 0x6576_616c, iteration.wrapping_mul(64) + u64::from(probe)),
        },
        ply_cap: config.game.ply_cap,
        concurrency: section.games as usize,
        clock: None,
        seed: mix(config.run.seed ^ 0x0061_7265_6e61, iteration.wrapping_mul(64) + u64::from(probe)),
        sprt: None,
        pgn: None,
    };
    let pairs = u64::from(section.games.div_ceil(2) * 2);
    if section.engine.trim().is_empty() && section.ladder.is_none() {
        let key = keys::network(previous);
        let path = dir.local_copy(&key)?.with_context(|| format!("[eval]: the previous network {key} is missing"))?;
        let opponent = Inference::load(&path, config.device()).with_context(|| format!("[eval]: cannot load {key}"))?;
        let opponent = NetEvaluator::<G>::from_inference(&opponent)?;
        let mut opponent = searched(previous, &opponent);
        let bar = progress(pairs, &format!("iteration {iteration} eval"));
        let score = play_match::<G>(&mut network, &mut opponent, &settings(0), &mut |_| bar.inc(1))?;
        bar.finish_and_clear();
        let (elo, elo_low, elo_high) = score.elo();
        return Ok(Evaluation {
            opponent: previous.to_string(),
            probes: vec![new_probe(None, None, score)],
            elo,
            elo_low,
            elo_high,
            elo_kind: EloKind::Value,
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    // The progress bar of the probe in flight, named by its opponent.
    let mut bar = None;
    let mut on_game = |opponent: &str, end: &capa_play::GameEnd| {
        bar.get_or_insert_with(|| progress(pairs, &format!("iteration {iteration} eval vs {opponent}"))).inc(1);
        if u64::from(end.score.games()) == pairs
            && let Some(bar) = bar.take()
        {
            bar.finish_and_clear();
        }
    };
    let estimate_of = |bisection: &Bisection, probes: Vec<Probe>, opponent: String| -> Result<Evaluation> {
        let estimate = bisection.estimate().context("[eval] played no probe")?;
        Ok(Evaluation {
            opponent,
            probes,
            elo: estimate.elo,
            elo_low: estimate.low,
            elo_high: estimate.high,
            elo_kind: elo_kind(estimate.kind),
            seconds: started.elapsed().as_secs_f64(),
        })
    };
    if let Some(path) = &section.ladder {
        let ladder = eval_ladder::<G>(path)?;
        let placement = Placement {
            max_probes: section.max_probes,
            processes: section.games as usize,
            timeout: LADDER_TIMEOUT,
            guess: last_ladder_elo(dir)?,
        };
        let mut probes = Vec::new();
        let bisection = place::<G>(&mut network, &ladder, placement, settings, &mut on_game, &mut |probe| {
            probes.push(new_probe(None, Some((probe.rung.clone(), probe.elo)), probe.score))
        })?;
        return estimate_of(&bisection, probes, path.display().to_string());
    }
    let mut engine = eval_engine::<G>(section)?;
    let (low, high) = engine_levels(section, engine.elo_range().expect("limited"))?;
    // The anchor's one probe is recorded in a bisection too, for its estimate.
    let bracket = Bracket {
        low,
        high,
        tolerance: section.tolerance as f64,
        max_probes: section.max_probes,
        anchor: (section.method == EvalMethod::Anchor).then_some(low),
    };
    let bisection = rate::<G>(
        &mut network,
        &mut engine,
        &bracket,
        settings,
        &mut |level, end| on_game(&format!("UCI_Elo {level}"), end),
        &mut |_| {},
    )?;
    let probes = bisection.probes().iter().map(|&(level, score)| new_probe(Some(level as i64), None, score)).collect();
    estimate_of(&bisection, probes, section.engine.trim().to_string())
}
