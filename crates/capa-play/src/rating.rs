//! A player's Elo on an engine's `UCI_Elo` scale: matches against the
//! engine set to the levels a [`Bisection`] asks for (`capa elo`, and the
//! trainer's `[eval]` against an engine).

use anyhow::Result;
use capa_rules::Game;

use crate::elo::{Bisection, MatchScore};
use crate::matches::{GameEnd, MatchSettings, play_match};
use crate::player::Player;
use crate::uci_player::UciPlayer;

/// The bisection's bounds and stop rules.
#[derive(Clone, Copy, Debug)]
pub struct Bracket {
    /// The lowest `UCI_Elo` probed.
    pub low: i64,
    /// The highest.
    pub high: i64,
    /// Stop once the bracket is at most this wide.
    pub tolerance: f64,
    /// Probes at most.
    pub max_probes: u32,
    /// One probe here instead of a bisection: a quick check.
    pub anchor: Option<i64>,
}

/// One probe: the engine's `UCI_Elo` and the player's score against it.
#[derive(Clone, Copy, Debug)]
pub struct EloProbe {
    /// The probe's number, from 1.
    pub number: u32,
    /// The engine's `UCI_Elo`.
    pub uci_elo: i64,
    /// The player's score.
    pub score: MatchScore,
}

/// Plays `player` against `engine` (started, its strength limited) at the
/// levels the bisection asks for; `settings(probe)` is probe `probe`'s
/// match (from 0). Reports each game and each probe; returns the
/// bisection with every probe, for the estimate.
///
/// # Errors
/// A level the engine refuses, and whatever stops a match.
pub fn rate<G: Game>(
    player: &mut dyn Player<G>,
    engine: &mut UciPlayer,
    bracket: &Bracket,
    settings: impl Fn(u32) -> MatchSettings<G>,
    on_game: &mut dyn FnMut(i64, &GameEnd),
    on_probe: &mut dyn FnMut(EloProbe),
) -> Result<Bisection> {
    let mut bisection = Bisection::new(bracket.low as f64, bracket.high as f64, bracket.tolerance);
    bisection.drive(bracket.max_probes, bracket.anchor.map(|a| a as f64), |level, probe| {
        let level = engine.set_elo(level as i64)?;
        let score = play_match(player, engine, &settings(probe), &mut |end| on_game(level, end))?;
        on_probe(EloProbe { number: probe + 1, uci_elo: level, score });
        Ok::<_, anyhow::Error>((level as f64, score))
    })?;
    Ok(bisection)
}
