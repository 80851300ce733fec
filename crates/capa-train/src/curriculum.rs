//! `[curriculum]`: a share of the trainer's self-play games is played
//! against a UCI engine at a set strength (Fairy-Stockfish's `UCI_Elo`),
//! raised when the network scores well and lowered when it scores badly.
//!
//! Only the network's moves are training positions; the engine's are
//! recorded as moves without a search (as fast searches are), so the game
//! replays and its result still teaches the value head. The engine answers
//! from the search driver's thread, one position at a time.

use anyhow::Context;
use anyhow::Result;
use capa_data::{PlyRecord, SearchValues};
use capa_play::{MatchScore, UciPlayer};
use capa_rules::{Color, Game, GameResult, History};
use capa_rundir::CurriculumReport;

use crate::config::CurriculumSection;

/// The engine, its current strength, and this iteration's results.
pub struct Curriculum {
    engine: UciPlayer,
    step: i64,
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
        if section.engine.trim().is_empty() || section.fraction == 0.0 {
            return Ok(None);
        }
        let mut engine = UciPlayer::strength_limited::<G>(&section.engine, section.nodes)
            .with_context(|| format!("[curriculum] engine `{}`", section.engine.trim()))?;
        engine.set_elo(elo.unwrap_or(section.elo))?;
        Ok(Some(Curriculum { engine, step: section.step, fraction: section.fraction, score: MatchScore::default() }))
    }

    /// The engine's current `UCI_Elo`.
    pub fn elo(&self) -> i64 {
        self.engine.elo().expect("a strength-limited engine has a UCI_Elo")
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

    /// Ends an iteration: its report, and the engine's strength moved a
    /// step up if the network scored above 60%, down below 40%.
    ///
    /// # Errors
    /// An engine that no longer takes options.
    pub fn end_iteration(&mut self) -> Result<CurriculumReport> {
        let score = std::mem::take(&mut self.score);
        let played = self.engine.elo().expect("a strength-limited engine has a UCI_Elo");
        if score.games() > 0 {
            let s = score.fraction();
            if s > 0.6 {
                self.engine.set_elo(played + self.step)?;
            } else if s < 0.4 {
                self.engine.set_elo(played - self.step)?;
            }
        }
        Ok(CurriculumReport {
            elo: played,
            wins: score.wins,
            draws: score.draws,
            losses: score.losses,
            next_elo: self.engine.elo().expect("a strength-limited engine has a UCI_Elo"),
        })
    }
}

/// Which games of an iteration the engine plays, and its colour: a game is
/// the engine's with probability `fraction` (drawn from the game's own
/// random stream), and the engine alternates colours by game number.
pub fn engine_color(fraction: f32, draw: f64, index: u32) -> Option<Color> {
    (draw < f64::from(fraction)).then_some(if index.is_multiple_of(2) { Color::Black } else { Color::White })
}
