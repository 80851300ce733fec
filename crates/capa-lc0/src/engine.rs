//! Q and D from a UCI engine's own WDL (`--stockfish`): one search per
//! position, `UCI_ShowWDL` on, the model only where the engine reports no
//! WDL.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use capa_rules::chess::{Chess, ChessMove};
use capa_rules::{Game, History};

use super::wdl::{MATE_PAWNS, WdlModel};
use capa_uci::{DEFAULT_TIMEOUT, Go, UciEngine, UciError, UciScore, position_command};

/// How to start and run the engine that scores positions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineSpec {
    /// The engine's program (a path, or a name looked up on `PATH` and in
    /// `/usr/games`).
    pub program: PathBuf,
    /// The search depth per position.
    pub depth: u32,
    /// The engine's hash table, MB.
    pub hash_mb: u32,
    /// The engine's search threads (`Threads`).
    pub threads: u32,
}

/// A running engine set up to score positions: the threads and hash asked
/// for, `UCI_ShowWDL` on when it has the option.
pub struct EngineEvaluator {
    engine: UciEngine,
    depth: u32,
    shows_wdl: bool,
}

/// The engine's verdict on one position, from the side to move.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct EngineVerdict {
    /// Win minus loss.
    pub q: f32,
    /// Draw.
    pub d: f32,
    /// The move it would play.
    pub best: ChessMove,
    /// Nodes it searched.
    pub nodes: u64,
    /// Whether Q and D are the engine's own WDL (else the model's, from its score).
    pub from_wdl: bool,
    /// Its score.
    pub score: UciScore,
    /// The depth its line reached.
    pub depth: u32,
}

impl EngineEvaluator {
    /// Starts the engine of `spec` and sets it up.
    ///
    /// # Errors
    /// The engine cannot be started, or refuses the hash size.
    pub fn start(spec: &EngineSpec) -> Result<EngineEvaluator, UciError> {
        let mut engine = UciEngine::launch(&spec.program, &[] as &[&str], DEFAULT_TIMEOUT)?;
        if engine.option("Threads").is_some() {
            engine.set_option("Threads", &spec.threads.to_string())?;
        }
        if engine.option("Hash").is_some() {
            engine.set_option("Hash", &spec.hash_mb.to_string())?;
        }
        let shows_wdl = engine.option("UCI_ShowWDL").is_some();
        if shows_wdl {
            engine.set_option("UCI_ShowWDL", "true")?;
        }
        engine.ready()?;
        Ok(EngineEvaluator { engine, depth: spec.depth, shows_wdl })
    }

    /// The engine's name.
    pub fn name(&self) -> &str {
        self.engine.name()
    }

    /// Whether the engine has `UCI_ShowWDL` (without it, every Q and D
    /// comes from the model).
    pub fn shows_wdl(&self) -> bool {
        self.shows_wdl
    }

    /// Clears the engine's state (`ucinewgame`), so that a game's scores do
    /// not depend on which games the engine searched before: the output is
    /// then the same whatever the number of threads.
    ///
    /// # Errors
    /// The engine is gone or hangs.
    pub fn new_game(&mut self) -> Result<(), UciError> {
        self.engine.new_game()
    }

    /// Searches the current position of `history` (the moves before it are
    /// sent too, so the engine sees repetitions).
    ///
    /// # Errors
    /// The engine failed, or answered with no line or an illegal move.
    pub fn evaluate(&mut self, history: &History<Chess>, model: &WdlModel) -> Result<EngineVerdict, String> {
        let output = self.engine.go(&position_command(history), Go::Depth(self.depth)).map_err(|e| e.to_string())?;
        let position = history.current();
        if output.stopped {
            // Its numbers would depend on the machine's speed, not the depth.
            return Err(format!(
                "{} did not reach depth {} within {:.0} s on {} and was stopped",
                self.engine.name(),
                self.depth,
                DEFAULT_TIMEOUT.as_secs_f64(),
                position.fen()
            ));
        }
        let best = output
            .best
            .as_deref()
            .ok_or_else(|| format!("{} has no best move in {}", self.engine.name(), position.fen()))?;
        let best = position
            .parse_move(best)
            .map_err(|_| format!("{}'s best move {best} is not legal in {}", self.engine.name(), position.fen()))?;
        let line = output
            .lines
            .first()
            .ok_or_else(|| format!("{} sent no scored line for {}", self.engine.name(), position.fen()))?;
        let nodes = line.nodes.unwrap_or(1).max(1);
        let (q, d, from_wdl) = match line.wdl {
            Some([w, d, l]) if w + d + l > 0 => {
                let total = (w + d + l) as f32;
                ((w as f32 - l as f32) / total, d as f32 / total, true)
            }
            _ => {
                let pawns = match line.score {
                    UciScore::Cp(cp) => cp as f32 / 100.0,
                    UciScore::Mate(n) if n > 0 => MATE_PAWNS,
                    UciScore::Mate(_) => -MATE_PAWNS,
                };
                let (q, d) = model.q_d(pawns);
                (q, d, false)
            }
        };
        Ok(EngineVerdict { q, d, best, nodes, from_wdl, score: line.score, depth: line.depth })
    }
}

/// Engines shared by the threads of a pool: a task takes an idle one (or
/// starts one) and gives it back, unless it failed, when it is dropped
/// (killed) and a fresh one is started for the next task.
pub(crate) struct EnginePool<'a> {
    spec: &'a EngineSpec,
    idle: Mutex<Vec<EngineEvaluator>>,
}

impl<'a> EnginePool<'a> {
    /// A pool with one engine started, so that a wrong program or option is
    /// an error before any work.
    pub(crate) fn start(spec: &'a EngineSpec) -> Result<EnginePool<'a>, UciError> {
        let first = EngineEvaluator::start(spec)?;
        Ok(EnginePool { spec, idle: Mutex::new(vec![first]) })
    }

    /// Runs `task` on an engine; `failed` says which errors leave the
    /// engine in doubt. An engine that cannot be started is `start_error`'s.
    pub(crate) fn run<T, E>(
        &self,
        task: impl FnOnce(&mut EngineEvaluator) -> Result<T, E>,
        failed: impl FnOnce(&E) -> bool,
        start_error: impl FnOnce(UciError) -> E,
    ) -> Result<T, E> {
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let mut engine = match idle {
            Some(engine) => engine,
            None => EngineEvaluator::start(self.spec).map_err(start_error)?,
        };
        let result = task(&mut engine);
        if !result.as_ref().is_err_and(failed) {
            self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(engine);
        }
        result
    }
}
