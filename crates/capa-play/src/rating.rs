//! A network's Elo on an engine's `UCI_Elo` scale (`capa elo`), by
//! bisection over the engine's strength, each probe a match between UCI
//! processes.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, bail};
use capa_net::DeviceSpec;
use capa_uci::{OptionKind, UciEngine};

use crate::elo::{Bisection, MatchScore};
use crate::matches::{self, MatchArgs, MoveLimit};

/// What a rating needs.
pub struct EloArgs {
    /// The network file.
    pub net: PathBuf,
    /// The engine command; it must have `UCI_LimitStrength` and `UCI_Elo`.
    pub engine: String,
    /// Games per probe.
    pub games: u32,
    /// The move limit for both.
    pub limit: MoveLimit,
    /// The bracket's ends; the engine's advertised range by default.
    pub bracket: (Option<f64>, Option<f64>),
    /// Stop once the bracket is this narrow.
    pub tolerance: f64,
    /// Probes at most.
    pub max_probes: u32,
    /// Further options for the engine.
    pub engine_options: Vec<(String, String)>,
    /// Plies of random opening per pair of games.
    pub random_plies: u32,
    /// Seeds the openings; probe `i` uses `seed + i`.
    pub seed: u64,
    /// Games at once.
    pub concurrency: usize,
    /// How long an answer may take beyond the move's own time.
    pub timeout: Duration,
    /// Where the network runs.
    pub device: DeviceSpec,
    /// The `capa` executable that runs the network (`capa uci`).
    pub capa: PathBuf,
}

/// One probe of a rating: the engine's `UCI_Elo` and the network's score.
#[derive(Clone, Copy, Debug)]
pub struct EloProbe {
    /// The probe's number, from 1.
    pub number: u32,
    /// The engine's `UCI_Elo`.
    pub uci_elo: f64,
    /// The network's score.
    pub score: MatchScore,
}

/// Runs the bisection, reporting every probe; returns the bisection with
/// every probe, for the estimate.
///
/// # Errors
/// An engine without `UCI_Elo`, a bracket outside its range, and whatever
/// stops a match.
pub fn rate(args: &EloArgs, on_probe: &dyn Fn(EloProbe)) -> Result<Bisection> {
    if args.max_probes == 0 || args.games == 0 {
        bail!("--max-probes and --games must be at least 1");
    }
    if !(args.tolerance.is_finite() && args.tolerance > 0.0) {
        bail!("--tolerance must be a positive number of Elo, not {}", args.tolerance);
    }
    let (min, max) = engine_range(&args.engine, args.timeout)?;
    let low = args.bracket.0.unwrap_or(min);
    let high = args.bracket.1.unwrap_or(max);
    if !(min <= low && low < high && high <= max) {
        bail!("the bracket {low} to {high} must lie within {}'s UCI_Elo range, {min} to {max}", args.engine);
    }
    let mut bisection = Bisection::new(low, high, args.tolerance);
    bisection.drive(args.max_probes, None, |elo, probe| {
        let mut engine_options = args.engine_options.clone();
        engine_options.push(("UCI_LimitStrength".to_string(), "true".to_string()));
        engine_options.push(("UCI_Elo".to_string(), format!("{elo:.0}")));
        let (score, _) = matches::play(
            &MatchArgs {
                players: [args.net.to_string_lossy().into_owned(), args.engine.clone()],
                options: [Vec::new(), engine_options],
                variant: None,
                games: args.games,
                limit: args.limit,
                openings: None,
                random_plies: args.random_plies,
                seed: args.seed + u64::from(probe),
                concurrency: args.concurrency,
                pgn: None,
                sprt: None,
                ply_cap: 0,
                timeout: args.timeout,
                device: args.device,
                capa: args.capa.clone(),
            },
            &|_| {},
        )?;
        on_probe(EloProbe { number: probe + 1, uci_elo: elo, score });
        Ok::<_, anyhow::Error>((elo, score))
    })?;
    Ok(bisection)
}

/// The engine's `UCI_Elo` range; an error if it cannot limit its strength.
fn engine_range(command: &str, timeout: Duration) -> Result<(f64, f64)> {
    let engine = UciEngine::start_with_timeout(command, timeout)?;
    if engine.option("UCI_LimitStrength").is_none() {
        bail!("`{command}` has no UCI_LimitStrength option: its strength cannot be set");
    }
    match engine.option("UCI_Elo").map(|o| &o.kind) {
        Some(OptionKind::Spin { min, max }) if min < max => Ok((*min as f64, *max as f64)),
        _ => bail!("`{command}` has no UCI_Elo option with a range"),
    }
}
