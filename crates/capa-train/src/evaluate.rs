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
    Bisection, Bracket, EloEstimate, EstimateKind, Ladder, MatchScore, MatchSettings, MoveLimit, Openings, Placement,
    Player, SearchPlayer, UciPlayer, place, play_match, rate,
};
use capa_rules::Game;
use capa_rules::mix;
use capa_rundir::{AnchorMatch, EloKind, Evaluation, Probe, RunDir, Work, keys, read_metrics};

use crate::commit::load_net;
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
            let anchor = e.anchor.as_ref().map_or_else(String::new, |a| {
                format!(
                    "; vs {} at UCI_Elo {}: {}, Elo {:.0} ({:.0} to {:.0})",
                    a.engine,
                    a.probe.uci_elo.unwrap_or_default(),
                    results(&a.probe),
                    a.elo,
                    a.elo_low,
                    a.elo_high
                )
            });
            format!("vs {} {scale} {}; Elo {elo}{anchor}", e.opponent, played.join(", "))
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
    if !section.enabled() {
        return Ok(());
    }
    if let Some(path) = &section.ladder {
        eval_ladder::<G>(path)?;
    }
    if section.engine.trim().is_empty() {
        return Ok(());
    }
    if section.movetime > 0 {
        let capa = capa_program()?;
        if !capa.is_file() {
            bail!("eval.movetime: the network plays through `capa uci`, and {} is missing", capa.display());
        }
    }
    let engine = eval_engine::<G>(section)?;
    engine_levels(section, engine.elo_range().expect("limited")).map(drop)
}

/// `[eval]`'s engine, started for `G` with its strength limited: `nodes`
/// per move, or with `movetime`, that many ms on one thread per game.
fn eval_engine<G: Game>(section: &EvalSection) -> Result<UciPlayer> {
    let context = || format!("[eval] engine `{}`", section.engine.trim());
    if section.movetime == 0 {
        return UciPlayer::strength_limited::<G>(&section.engine, section.nodes).with_context(context);
    }
    let mut engine = UciPlayer::command(&section.engine)
        .with_context(context)?
        .with_options([("Threads".to_string(), "1".to_string())])
        .with_limit(MoveLimit::MoveTime(section.movetime))
        .with_processes(movetime_concurrency(section));
    engine.start::<G>().with_context(context)?;
    engine.limit_strength().with_context(context)?;
    Ok(engine)
}

/// Games at once in a `movetime` match.
fn movetime_concurrency(section: &EvalSection) -> usize {
    match section.concurrency {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    }
}

/// The `capa` program, which plays a network over UCI: beside `capa-train`.
fn capa_program() -> Result<std::path::PathBuf> {
    let me = std::env::current_exe().context("cannot find capa-train's own path")?;
    Ok(me.with_file_name(format!("capa{}", std::env::consts::EXE_SUFFIX)))
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

/// The networks of an evaluation: the one measured, `current` (the
/// trainer's, or `weights` when they are another's: a gated run's player),
/// and the one it replaces.
pub(crate) struct Networks<'a> {
    pub trainer: &'a Training,
    pub weights: Option<&'a Inference>,
    pub current: &'a str,
    pub previous: &'a str,
}

/// [`evaluate`] when due: `iteration` is one of every `eval.every`, or
/// with `eval.every_minutes`, the run has worked that long since the last
/// evaluation (`seconds` of it in this iteration, the rest in
/// metrics.jsonl); `None` otherwise.
///
/// # Errors
/// As [`evaluate`]; an unreadable metrics.jsonl.
pub(crate) fn evaluate_if_due<G: NetGame>(
    config: &RunConfig,
    dir: &RunDir,
    networks: Networks<'_>,
    iteration: u64,
    seconds: f64,
) -> Result<Option<Evaluation>> {
    let section = &config.eval;
    let due = if section.every_minutes > 0.0 {
        seconds + seconds_since_evaluation(dir)? >= section.every_minutes * 60.0
    } else {
        section.every > 0 && iteration.is_multiple_of(section.every)
    };
    due.then(|| evaluate::<G>(config, dir, &networks, iteration)).transpose()
}

/// Seconds of work metrics.jsonl records after its last evaluation
/// (the evaluation's own time included), or since the run began.
fn seconds_since_evaluation(dir: &RunDir) -> Result<f64> {
    let mut seconds = 0.0;
    for line in read_metrics(dir)?.into_iter().rev() {
        seconds += line.seconds_train + line.seconds_checkpoint + line.seconds_held_out.unwrap_or(0.0);
        if let Work::SelfPlay(work) = &line.work {
            seconds += work.seconds_selfplay;
        }
        if let Some(eval) = &line.eval {
            return Ok(seconds + eval.seconds);
        }
    }
    Ok(seconds)
}

/// Evaluates the network `current` for `iteration`: against the engine
/// when `[eval]` names one, otherwise against the network `previous`.
///
/// # Errors
/// A missing previous network, an engine or search failure.
fn evaluate<G: NetGame>(
    config: &RunConfig,
    dir: &RunDir,
    networks: &Networks<'_>,
    iteration: u64,
) -> Result<Evaluation> {
    let started = Instant::now();
    let section = &config.eval;
    let Networks { trainer, weights, current: current_name, previous } = *networks;
    let trainers;
    let weights = match weights {
        Some(weights) => weights,
        None => {
            trainers = trainer.inference()?;
            &trainers
        }
    };
    let current = NetEvaluator::<G>::from_inference(weights)?;
    let mut network = SearchPlayer {
        name: "new".to_string(),
        evaluator: &current,
        simulations: section.simulations,
        params: match_search(config),
    };
    let concurrency = if section.movetime > 0 { movetime_concurrency(section) } else { section.games as usize };
    let settings = |probe: u32| match_settings::<G>(config, section.games, concurrency, iteration, probe);
    let pairs = u64::from(section.games.div_ceil(2) * 2);
    if section.engine.trim().is_empty() && section.ladder.is_none() {
        let label = format!("iteration {iteration} eval");
        let score = play_network::<G>(config, dir, &mut network, previous, &settings(0), &label)
            .context("[eval]: the match against the previous network")?;
        let (elo, elo_low, elo_high) = score.elo();
        return Ok(Evaluation {
            opponent: previous.to_string(),
            probes: vec![new_probe(None, None, score)],
            elo,
            elo_low,
            elo_high,
            elo_kind: EloKind::Value,
            seconds: started.elapsed().as_secs_f64(),
            anchor: None,
        });
    }
    // Against the engine at movetime, the network plays as a `capa uci`
    // child, on one thread per game as the engine does.
    let mut uci_network = None;
    if section.movetime > 0 {
        let key = keys::network(current_name);
        let path = dir.local_copy(&key)?.with_context(|| format!("[eval]: the network {key} is missing"))?;
        let mut player = UciPlayer::network(&capa_program()?, &path, &config.device().child_args())
            .with_options([("Threads".to_string(), "1".to_string())])
            .with_limit(MoveLimit::MoveTime(section.movetime))
            .with_processes(movetime_concurrency(section));
        player.start::<G>().context("[eval]: the network through `capa uci`")?;
        uci_network = Some(player);
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
            anchor: None,
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
        let bisection = place::<G>(&mut network, &ladder, placement, &settings, &mut on_game, &mut |probe| {
            probes.push(new_probe(None, Some((probe.rung.clone(), probe.elo)), probe.score))
        })?;
        let mut evaluation = estimate_of(&bisection, probes, path.display().to_string())?;
        if !section.engine.trim().is_empty() {
            // The anchor match, after the placement (eval.method is "anchor").
            let mut engine = eval_engine::<G>(section)?;
            let level = engine.set_elo(section.anchor)?;
            let player: &mut dyn Player<G> = match uci_network.as_mut() {
                Some(player) => player,
                None => &mut network,
            };
            let score = play_match::<G>(player, &mut engine, &settings(63), &mut |end| {
                on_game(&format!("UCI_Elo {level}"), end)
            })?;
            let (diff, low, high) = score.elo();
            evaluation.anchor = Some(AnchorMatch {
                engine: section.engine.trim().to_string(),
                movetime: section.movetime,
                probe: new_probe(Some(level), None, score),
                elo: level as f64 + diff,
                elo_low: level as f64 + low,
                elo_high: level as f64 + high,
            });
            evaluation.seconds = started.elapsed().as_secs_f64();
        }
        return Ok(evaluation);
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
    let player: &mut dyn Player<G> = match uci_network.as_mut() {
        Some(player) => player,
        None => &mut network,
    };
    let bisection = rate::<G>(
        player,
        &mut engine,
        &bracket,
        settings,
        &mut |level, end| on_game(&format!("UCI_Elo {level}"), end),
        &mut |_| {},
    )?;
    let probes = bisection.probes().iter().map(|&(level, score)| new_probe(Some(level as i64), None, score)).collect();
    estimate_of(&bisection, probes, section.engine.trim().to_string())
}

/// The search of a match between networks: no noise, the self-play's
/// `parallel_sims`.
pub(crate) fn match_search(config: &RunConfig) -> SearchParams {
    SearchParams { parallel_sims: config.selfplay.parallel_sims, ..SearchParams::default() }
}

/// A match of `games` games in pairs from random openings
/// (`eval.random_plies`), `concurrency` at once, seeded by the run, the
/// iteration and `probe` (each match of an iteration its own).
pub(crate) fn match_settings<G: Game>(
    config: &RunConfig,
    games: u32,
    concurrency: usize,
    iteration: u64,
    probe: u32,
) -> MatchSettings<G> {
    MatchSettings {
        games,
        openings: Openings::Random {
            plies: config.eval.random_plies,
            seed: mix(config.run.seed ^ 0x6576_616c, iteration.wrapping_mul(64) + u64::from(probe)),
        },
        ply_cap: config.game.ply_cap,
        concurrency,
        clock: None,
        seed: mix(config.run.seed ^ 0x0061_7265_6e61, iteration.wrapping_mul(64) + u64::from(probe)),
        sprt: None,
        pgn: None,
    }
}

/// Plays `player` against the run's network `opponent` (read from its
/// file), at the same playouts and search, with a progress bar named
/// `label`; the score is `player`'s.
///
/// # Errors
/// A missing or unreadable network, a failing search.
pub(crate) fn play_network<G: NetGame>(
    config: &RunConfig,
    dir: &RunDir,
    player: &mut SearchPlayer<'_, NetEvaluator<G>>,
    opponent: &str,
    settings: &MatchSettings<G>,
    label: &str,
) -> Result<MatchScore> {
    let weights = load_net(config, dir, opponent)?;
    let evaluator = NetEvaluator::<G>::from_inference(&weights)?;
    let mut opponent = SearchPlayer {
        name: opponent.to_string(),
        evaluator: &evaluator,
        simulations: player.simulations,
        params: player.params.clone(),
    };
    let bar = progress(u64::from(settings.games.div_ceil(2) * 2), label);
    let score = play_match::<G>(player, &mut opponent, settings, &mut |_| bar.inc(1))?;
    bar.finish_and_clear();
    Ok(score)
}
