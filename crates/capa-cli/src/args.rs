//! Argument groups and value parsers that several commands share.

use std::time::Duration;

use anyhow::{Result, bail};
use capa_net::{BackendKind, DeviceSpec, GameKind};
use capa_play::{MoveLimit, Sprt};
use clap::ValueEnum;

/// Where a network runs.
#[derive(clap::Args, Debug)]
pub struct DeviceArgs {
    /// The backend: `cpu`, `wgpu` or `cuda` (the last two need the cargo features of the same name).
    #[arg(long, default_value = "cpu")]
    pub backend: BackendKind,
    /// The device's index on the backend.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
}

impl DeviceArgs {
    /// The device as capa-net names it.
    pub fn spec(&self) -> DeviceSpec {
        DeviceSpec { backend: self.backend, index: self.device }
    }
}

/// How long each move of a match may take; one of the three.
#[derive(clap::Args, Debug)]
#[group(multiple = false)]
pub struct LimitArgs {
    /// Nodes per move (`go nodes`; playouts for a network). The default
    /// limit when none is given: 800.
    #[arg(long)]
    pub nodes: Option<u64>,
    /// Milliseconds per move (`go movetime`).
    #[arg(long)]
    pub movetime: Option<u64>,
    /// A clock per game and player: `BASE+INC` in seconds, such as `10+0.1`.
    /// Running out of time loses.
    #[arg(long, value_parser = parse_clock)]
    pub tc: Option<MoveLimit>,
}

impl LimitArgs {
    /// The limit given, or 800 nodes.
    ///
    /// # Errors
    /// A limit of 0.
    pub fn limit(&self) -> Result<MoveLimit> {
        Ok(match (self.nodes, self.movetime, self.tc) {
            (Some(0), ..) | (_, Some(0), _) => bail!("--nodes and --movetime must be at least 1"),
            (Some(n), ..) => MoveLimit::Nodes(n),
            (_, Some(ms), _) => MoveLimit::MoveTime(ms),
            (_, _, Some(clock)) => clock,
            _ => MoveLimit::Nodes(800),
        })
    }
}

/// A position of a game: `--variant` and `--fen`.
#[derive(clap::Args, Debug)]
pub struct PositionArgs {
    /// The game: `capablanca` (10x8) or `chess`.
    #[arg(long, value_enum)]
    pub variant: Variant,
    /// The position as FEN; the variant's start position when absent.
    #[arg(long)]
    pub fen: Option<String>,
}

/// A game, as `--variant` names it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Variant {
    /// Capablanca chess, 10x8.
    Capablanca,
    /// Standard chess.
    Chess,
}

impl Variant {
    /// The game as capa-net names it.
    pub fn kind(self) -> GameKind {
        match self {
            Variant::Capablanca => GameKind::Capablanca,
            Variant::Chess => GameKind::Chess,
        }
    }
}

/// `--timeout` as a duration.
///
/// # Errors
/// Not a positive number of seconds.
pub fn seconds(timeout: f64) -> Result<Duration> {
    if !(timeout.is_finite() && timeout > 0.0 && timeout < 1e9) {
        bail!("--timeout must be a positive number of seconds, not {timeout}");
    }
    Ok(Duration::from_secs_f64(timeout))
}

/// Parses `--sprt elo0,elo1[,alpha,beta]`.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_sprt(text: &str) -> Result<Sprt, String> {
    let numbers: Vec<f64> = text
        .split(',')
        .map(|n| n.trim().parse::<f64>().map_err(|_| format!("`{n}` is not a number")))
        .collect::<Result<_, _>>()?;
    let sprt = match numbers[..] {
        [elo0, elo1] => Sprt { elo0, elo1, alpha: 0.05, beta: 0.05 },
        [elo0, elo1, alpha, beta] => Sprt { elo0, elo1, alpha, beta },
        _ => return Err("expected elo0,elo1 or elo0,elo1,alpha,beta".to_string()),
    };
    sprt.validate()?;
    Ok(sprt)
}

/// Parses `--tc BASE+INC` in seconds (e.g. `10+0.1`) into a clock.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_clock(text: &str) -> Result<MoveLimit, String> {
    let (base, increment) = text.split_once('+').unwrap_or((text, "0"));
    let seconds = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e7)
            .map(|v| (v * 1000.0).round() as u64)
            .ok_or_else(|| format!("`{s}` is not a number of seconds"))
    };
    let (base, increment) = (seconds(base)?, seconds(increment)?);
    if base == 0 {
        return Err("the base time must be above 0".to_string());
    }
    Ok(MoveLimit::Clock { base, increment })
}

/// Parses `NAME=VALUE` for `--option-a` and `--option-b`.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_option(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_string(), value.trim().to_string())),
        _ => Err(format!("`{text}`: expected NAME=VALUE")),
    }
}
