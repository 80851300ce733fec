//! `[curriculum]`: a share of the trainer's self-play games is played
//! against a UCI engine at a set strength (Fairy-Stockfish's `UCI_Elo`, or
//! a rung of a calibrated ladder, which reaches below the engine's weakest
//! `UCI_Elo`), raised when the network scores well and lowered when it
//! scores badly.
//!
//! Only the network's moves are training positions; the engine's are
//! recorded as moves without a search (as fast searches are), so the game
//! replays and its result still teaches the value head. The engine answers
//! from the search driver's thread, one position at a time.

use std::time::Duration;

use anyhow::Context;
use anyhow::Result;
use capa_data::{PlyRecord, SearchValues};
use capa_play::{Ladder, MatchScore, UciPlayer};
use capa_rules::{Color, Game, GameResult, History};
use capa_rundir::CurriculumReport;

use crate::config::CurriculumSection;

/// How the opponent's strength is set and moved.
enum Levels {
    /// The engine's `UCI_Elo`, moved by `step`.
    Elo { step: i64 },
    /// A ladder's rungs, moved one at a time; `rung` is the one playing.
    Ladder { ladder: Ladder, elos: Vec<f64>, rung: usize },
}

/// How long a ladder rung may take over one move before it forfeits.
const RUNG_TIMEOUT: Duration = Duration::from_secs(60);

/// The engine, its current strength, and this iteration's results.
pub struct Curriculum {
    engine: UciPlayer,
    levels: Levels,
    /// Share of games played against the engine.
    pub fraction: f32,
    score: MatchScore,
}

impl Curriculum {
    /// Starts the engine of `section` for game `G` at `elo` (the section's
    /// starting strength when `None`); `None` when the curriculum is off.
    ///
    /// # Errors
    /// An engine that cannot start, play `G`, or limit its strength.
    pub fn start<G: Game>(section: &CurriculumSection, elo: Option<i64>) -> Result<Option<Curriculum>> {
        let fraction = section.fraction;
        let elo = elo.unwrap_or(section.elo);
        if fraction == 0.0 {
            return Ok(None);
        }
        if let Some(path) = &section.ladder {
            let context = || format!("curriculum.ladder = {}", path.display());
            let ladder = Ladder::read(path).with_context(context)?;
            ladder.check_game::<G>().with_context(context)?;
            let elos = ladder.elos().with_context(context)?;
            // The rung nearest the starting (or carried) Elo.
            let distance = |i: usize| (elos[i] - elo as f64).abs();
            let rung = (0..elos.len()).min_by(|&a, &b| distance(a).total_cmp(&distance(b))).context("no rung")?;
            let engine = rung_player::<G>(&ladder, rung)?;
            let levels = Levels::Ladder { ladder, elos, rung };
            return Ok(Some(Curriculum { engine, levels, fraction, score: MatchScore::default() }));
        }
        if section.engine.trim().is_empty() {
            return Ok(None);
        }
        let mut engine = UciPlayer::strength_limited::<G>(&section.engine, section.nodes)
            .with_context(|| format!("[curriculum] engine `{}`", section.engine.trim()))?;
        engine.set_elo(elo)?;
        Ok(Some(Curriculum {
            engine,
            levels: Levels::Elo { step: section.step },
            fraction,
            score: MatchScore::default(),
        }))
    }

    /// The opponent's current strength: the engine's `UCI_Elo`, or the
    /// rung's calibrated Elo (rounded).
    pub fn elo(&self) -> i64 {
        match &self.levels {
            Levels::Elo { .. } => self.engine.elo().expect("a strength-limited engine has a UCI_Elo"),
            Levels::Ladder { elos, rung, .. } => elos[*rung].round() as i64,
        }
    }

    /// The engine's move at the end of `history`, and the record of that
    /// ply: one move with all the visits, no search values, not a
    /// training position.
    ///
    /// # Errors
    /// An engine that fails or answers with an illegal move.
    pub fn reply<G: Game>(&mut self, history: &History<G>) -> Result<(G::Move, PlyRecord)> {
        let m = self.engine.best_move(history).map_err(|e| e.context("[curriculum]"))?;
        let none = SearchValues { q: 0.0, d: 0.0, m: 0.0 };
        let ply = PlyRecord {
            full_search: false,
            root: none,
            best: none,
            visits: vec![(history.current().policy_index(m) as u16, 1.0)],
        };
        Ok((m, ply))
    }

    /// Counts a finished curriculum game, `result` for the network.
    pub fn count(&mut self, result: GameResult) {
        match result {
            GameResult::Win => self.score.wins += 1,
            GameResult::Draw => self.score.draws += 1,
            GameResult::Loss => self.score.losses += 1,
        }
    }

    /// Ends an iteration: its report, and the opponent moved a step (of
    /// `UCI_Elo`, or a rung) up if the network scored above 60%, down below 40%.
    ///
    /// # Errors
    /// An engine that no longer takes options, or a rung's that does not start.
    pub fn end_iteration<G: Game>(&mut self) -> Result<CurriculumReport> {
        let score = std::mem::take(&mut self.score);
        let played = self.elo();
        let rung = match &self.levels {
            Levels::Elo { .. } => None,
            Levels::Ladder { ladder, rung, .. } => Some(ladder.rungs[*rung].name.clone()),
        };
        let direction = match score.fraction() {
            _ if score.games() == 0 => 0,
            s if s > 0.6 => 1,
            s if s < 0.4 => -1,
            _ => 0,
        };
        match &mut self.levels {
            Levels::Elo { step } => {
                if direction != 0 {
                    self.engine.set_elo(played + direction * *step)?;
                }
            }
            Levels::Ladder { ladder, elos, rung } => {
                let next = rung.saturating_add_signed(direction as isize).min(elos.len() - 1);
                if next != *rung {
                    self.engine = rung_player::<G>(ladder, next)?;
                    *rung = next;
                }
            }
        }
        Ok(CurriculumReport {
            elo: played,
            rung,
            wins: score.wins,
            draws: score.draws,
            losses: score.losses,
            next_elo: self.elo(),
        })
    }
}

/// Rung `rung` of `ladder`, started for `G`.
fn rung_player<G: Game>(ladder: &Ladder, rung: usize) -> Result<UciPlayer> {
    let mut player = ladder.player(rung, 1, RUNG_TIMEOUT)?;
    player.start::<G>().with_context(|| format!("[curriculum] ladder rung `{}`", ladder.rungs[rung].name))?;
    Ok(player)
}

/// Which games of an iteration the engine plays, and its colour: a game is
/// the engine's with probability `fraction` (drawn from the game's own
/// random stream), and the engine alternates colours by game number.
pub fn engine_color(fraction: f32, draw: f64, index: u32) -> Option<Color> {
    (draw < f64::from(fraction)).then_some(if index.is_multiple_of(2) { Color::Black } else { Color::White })
}
