//! A match: two players, games in pairs from one opening with the colours
//! swapped, `concurrency` games in flight. Each player answers every game
//! where it is to move at once (a network searches them in one batch; an
//! engine answers on its processes in parallel). A player that forfeits a
//! game (a crash, a hang, an illegal move, its flag falling) loses that
//! game and the match goes on. `capa match`, `capa elo`, the trainer's
//! `[eval]` all play through [`play_match`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use capa_data::{PgnTags, write_atomically, write_pgn};
use capa_rules::{Color, Game, History};
use capa_rules::{Rng, mix, random_opening};

use crate::elo::{MatchScore, Sprt};
use crate::player::{Clock, Player, Turn};

/// Where the games start.
#[derive(Clone, Debug)]
pub enum Openings<G: Game> {
    /// `plies` uniformly random moves from the start, seeded per pair of
    /// games by `seed`.
    Random {
        /// Plies per opening.
        plies: u32,
        /// Seeds the openings.
        seed: u64,
    },
    /// These, in turn, one per pair of games.
    List(Vec<History<G>>),
}

impl<G: Game> Openings<G> {
    /// The opening of pair `pair`.
    fn get(&self, pair: u32) -> History<G> {
        match self {
            Openings::Random { plies, seed } => random_opening(*plies, &mut Rng::new(mix(*seed, u64::from(pair)))),
            Openings::List(list) => list[pair as usize % list.len()].clone(),
        }
    }
}

/// How a match is played.
#[derive(Clone, Debug)]
pub struct MatchSettings<G: Game> {
    /// Games, rounded up to an even number.
    pub games: u32,
    /// Where they start.
    pub openings: Openings<G>,
    /// Plies after which a game is a draw; 0 leaves it to the rules.
    pub ply_cap: u32,
    /// Games in flight at once.
    pub concurrency: usize,
    /// A clock per game and player (base and increment, in ms): a player
    /// out of time loses.
    pub clock: Option<(u64, u64)>,
    /// Seeds the players' random choices.
    pub seed: u64,
    /// Stop starting games once this test decides.
    pub sprt: Option<Sprt>,
    /// Write the games here as PGN, rewritten after each game.
    pub pgn: Option<PathBuf>,
}

/// A finished game of a match.
#[derive(Debug)]
pub struct GameEnd<'a> {
    /// Its number, from 1.
    pub number: u32,
    /// The name of the player with white.
    pub white: &'a str,
    /// `1-0`, `0-1` or `1/2-1/2`.
    pub result: &'static str,
    /// How it ended.
    pub termination: &'a str,
    /// Its length.
    pub plies: usize,
    /// The match so far, from the first player's side.
    pub score: MatchScore,
}

/// A game in flight.
struct Live<G: Game> {
    index: u32,
    history: History<G>,
    first_color: Color,
    /// Time left, white then black, in ms.
    clocks: [i64; 2],
}

/// Spreads the players' move seeds away from the openings'.
const MOVE_SEED: u64 = 0x6d6f_7665;

/// Plays `first` against `second`; the score is `first`'s.
///
/// # Errors
/// A player's failure that is not a forfeit, an unwritable PGN.
pub fn play_match<G: Game>(
    first: &mut dyn Player<G>,
    second: &mut dyn Player<G>,
    settings: &MatchSettings<G>,
    on_game: &mut dyn FnMut(&GameEnd),
) -> Result<MatchScore> {
    let total = settings.games.div_ceil(2) * 2;
    let names = [first.name().to_string(), second.name().to_string()];
    let mut score = MatchScore::default();
    let mut pgn = BTreeMap::new();
    let mut next = 0u32;
    let mut slots: Vec<Option<Live<G>>> = (0..settings.concurrency.clamp(1, total as usize)).map(|_| None).collect();
    let mut decided = false;
    loop {
        // Fill the free slots with the next games.
        for (slot, live) in slots.iter_mut().enumerate() {
            if live.is_none() && next < total && !decided {
                // Even games: the first player has white. Each pair shares an opening.
                let first_color = if next.is_multiple_of(2) { Color::White } else { Color::Black };
                let opening = settings.openings.get(next / 2);
                let history = if settings.ply_cap > 0 { opening.with_ply_cap(settings.ply_cap) } else { opening };
                let base = settings.clock.map_or(0, |(base, _)| base as i64);
                first.new_game(slot);
                second.new_game(slot);
                *live = Some(Live { index: next, history, first_color, clocks: [base; 2] });
                next += 1;
            }
        }
        if slots.iter().all(Option::is_none) {
            return Ok(score);
        }
        for first_moves in [true, false] {
            let playing: Vec<usize> = (0..slots.len())
                .filter(|&s| {
                    slots[s].as_ref().is_some_and(|g| (g.history.current().turn() == g.first_color) == first_moves)
                })
                .collect();
            if playing.is_empty() {
                continue;
            }
            let turns: Vec<Turn<'_, G>> = playing
                .iter()
                .map(|&slot| {
                    let live = slots[slot].as_ref().expect("playing");
                    let ply = live.history.moves().len() as u64;
                    Turn {
                        slot,
                        history: &live.history,
                        seed: mix(settings.seed ^ MOVE_SEED, (u64::from(live.index) << 20) + ply),
                        clock: settings.clock.map(|(_, increment)| Clock {
                            white: live.clocks[0].max(0) as u64,
                            black: live.clocks[1].max(0) as u64,
                            increment,
                        }),
                    }
                })
                .collect();
            let player: &mut dyn Player<G> = if first_moves { &mut *first } else { &mut *second };
            let answers = player.moves(&turns)?;
            drop(turns);
            let name = &names[usize::from(!first_moves)];
            for (&slot, answer) in playing.iter().zip(answers) {
                let live = slots[slot].as_mut().expect("playing");
                let mover = live.history.current().turn();
                let ended = match (answer.played, settings.clock) {
                    (Err(why), _) => Some(forfeit(name, mover, why)),
                    (Ok(_), Some(_)) if out_of_time(&mut live.clocks[mover.index()], answer.thinking, settings) => {
                        Some(forfeit(name, mover, "out of time".to_string()))
                    }
                    (Ok(m), _) => {
                        live.history.play(m);
                        live.history
                            .outcome()
                            .map(|outcome| (outcome.winner(live.history.current().turn()), outcome.reason.to_string()))
                    }
                };
                let Some((winner, termination)) = ended else { continue };
                let live = slots[slot].take().expect("playing");
                match winner {
                    None => score.draws += 1,
                    Some(color) if color == live.first_color => score.wins += 1,
                    Some(_) => score.losses += 1,
                }
                let white = &names[usize::from(live.first_color != Color::White)];
                let black = &names[usize::from(live.first_color == Color::White)];
                let round = (live.index + 1).to_string();
                let tags = PgnTags { event: "capa match", site: "capa", round: &round, white, black };
                let text = write_pgn(&tags, live.history.start(), live.history.moves(), &[], winner, &termination);
                pgn.insert(live.index, text);
                on_game(&GameEnd {
                    number: live.index + 1,
                    white,
                    result: match winner {
                        Some(Color::White) => "1-0",
                        Some(Color::Black) => "0-1",
                        None => "1/2-1/2",
                    },
                    termination: &termination,
                    plies: live.history.moves().len(),
                    score,
                });
                if let Some(path) = &settings.pgn {
                    let text: String = pgn.values().map(String::as_str).collect();
                    write_atomically(path, text.as_bytes())
                        .with_context(|| format!("cannot write {}", path.display()))?;
                }
                decided |= settings.sprt.as_ref().is_some_and(|sprt| sprt.verdict(&score).is_some());
            }
        }
    }
}

/// The game lost by the player of `mover`, and why.
fn forfeit(name: &str, mover: Color, why: String) -> (Option<Color>, String) {
    tracing::warn!("{name} loses the game: {why}");
    (Some(!mover), format!("forfeit: {why}"))
}

/// Takes `thinking` off `clock` and adds the increment; whether the flag fell.
fn out_of_time<G: Game>(clock: &mut i64, thinking: Duration, settings: &MatchSettings<G>) -> bool {
    *clock -= thinking.as_millis() as i64;
    if *clock < 0 {
        return true;
    }
    *clock += settings.clock.map_or(0, |(_, increment)| increment as i64);
    false
}

#[cfg(test)]
mod tests {
    use capa_mcts::{RandomEvaluator, SearchParams, UniformEvaluator};
    use capa_rules::capablanca::Capablanca;

    use super::*;
    use crate::player::SearchPlayer;

    #[test]
    fn every_game_is_counted_and_colours_alternate() {
        let params = SearchParams { parallel_sims: 4, ..SearchParams::default() };
        let mut first =
            SearchPlayer { name: "u".into(), evaluator: &UniformEvaluator, simulations: 8, params: params.clone() };
        let mut second = SearchPlayer { name: "r".into(), evaluator: &RandomEvaluator, simulations: 8, params };
        for concurrency in [1, 4, 6] {
            let settings = MatchSettings::<Capablanca> {
                games: 5,
                openings: Openings::Random { plies: 4, seed: 3 },
                ply_cap: 30,
                concurrency,
                clock: None,
                seed: 3,
                sprt: None,
                pgn: None,
            };
            let mut ends = Vec::new();
            let score = play_match(&mut first, &mut second, &settings, &mut |end| {
                ends.push((end.number, end.white.to_string()))
            })
            .unwrap();
            assert_eq!((score.games(), ends.len()), (6, 6), "rounded up to pairs");
            ends.sort();
            let whites: Vec<&str> = ends.iter().map(|(_, w)| w.as_str()).collect();
            assert_eq!(whites, ["u", "r", "u", "r", "u", "r"], "concurrency {concurrency}");
        }
    }
}
