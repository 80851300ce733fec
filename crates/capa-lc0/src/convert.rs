//! One PGN game to its V6 records: replay the moves, encode every position
//! before a move, and fill the targets from the result and an eval.

use std::fmt;

use capa_data::plies_to_end;
use capa_rules::chess::Chess;
use capa_rules::{Color, Game, History};
use shakmaty::san::SanPlus;

use super::engine::EngineEvaluator;
use super::pgn::{CommentEval, SourceGame, comment_eval};
use super::planes::encode;
use super::record::{ADJUDICATED, CLASSICAL_INPUT, POLICY_SIZE, V6Record};
use super::wdl::{WdlModel, r50_damp, static_eval};

/// Where each position's Q and D come from.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum EvalSource {
    /// The static evaluation, damped by the 50-move clock from
    /// `r50_damp_start` plies on.
    Static {
        /// The clock (after the move) where damping starts.
        r50_damp_start: u32,
    },
    /// The eval in the move comments (cutechess/Fishtest or Lichess form).
    PgnComments,
    /// A UCI engine's search of every position ([`EngineEvaluator`]): its
    /// WDL, its best move, its node count as the visits.
    Engine,
}

/// How games become records.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ConvertSettings {
    /// Where Q and D come from.
    pub eval: EvalSource,
    /// The eval-to-WDL model.
    pub wdl: WdlModel,
    /// 0: a one-hot policy on the played move, 1 visit. N > 0: the played
    /// move gets 0.5 + |Q|/2, the other legal moves share the rest, N visits.
    pub visit_budget: u32,
}

impl Default for ConvertSettings {
    fn default() -> ConvertSettings {
        ConvertSettings { eval: EvalSource::Static { r50_damp_start: 40 }, wdl: WdlModel::default(), visit_budget: 0 }
    }
}

/// A converted game.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvertedGame {
    /// One record per move, in game order.
    pub records: Vec<V6Record>,
    /// Positions whose eval came from a neighbouring move's comment
    /// (comment-eval mode: the move had none).
    pub neighbour_evals: usize,
    /// Positions whose eval came from the static evaluation in
    /// comment-eval mode (no eval on the move or its neighbours).
    pub static_fallbacks: usize,
    /// Positions the engine scored without a WDL (engine mode), whose Q
    /// and D came from its score through the model.
    pub model_evals: usize,
}

/// Why a game was not converted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// A `[Variant]` other than standard chess.
    Variant(String),
    /// A `[FEN]` capa cannot play from.
    Fen(String),
    /// A move that is not SAN, or not legal where it is played.
    Move {
        /// Its line.
        line: u64,
        /// The game's ply (0 for white's first move; a FEN's move number counts).
        ply: usize,
        /// The token.
        san: String,
        /// Malformed or illegal.
        reason: String,
    },
    /// No `1-0`, `0-1` or `1/2-1/2` result: an unfinished game is not a draw.
    NoResult,
    /// A game with no moves.
    NoMoves,
    /// The text is broken (an unterminated comment).
    Syntax {
        /// Where.
        line: u64,
        /// What.
        reason: String,
    },
    /// The engine failed on one of the game's positions.
    Engine(String),
}

impl SkipReason {
    /// A short name to count skips by in a summary.
    pub fn kind(&self) -> &'static str {
        match self {
            SkipReason::Variant(_) => "unsupported variant",
            SkipReason::Fen(_) => "bad FEN",
            SkipReason::Move { .. } => "bad or illegal move",
            SkipReason::NoResult => "no result",
            SkipReason::NoMoves => "no moves",
            SkipReason::Syntax { .. } => "broken PGN text",
            SkipReason::Engine(_) => "engine failure",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Variant(v) => write!(f, "variant \"{v}\" is not standard chess"),
            SkipReason::Fen(e) => write!(f, "bad FEN tag: {e}"),
            SkipReason::Move { line, ply, san, reason } => {
                let (number, dots) = (ply / 2 + 1, if ply % 2 == 0 { "." } else { "..." });
                write!(f, "line {line}: move {number}{dots}{san}: {reason}")
            }
            SkipReason::NoResult => write!(f, "no result (missing or `*`): an unfinished game is not converted"),
            SkipReason::NoMoves => write!(f, "no moves"),
            SkipReason::Syntax { line, reason } => write!(f, "line {line}: {reason}"),
            SkipReason::Engine(e) => write!(f, "engine: {e}"),
        }
    }
}

/// The variants that are standard chess under another name.
fn is_standard(variant: &str) -> bool {
    ["standard", "chess", "normal", "from position", "fromposition"]
        .iter()
        .any(|v| v.eq_ignore_ascii_case(variant.trim()))
}

/// The position a game starts from, once its text and variant are
/// checked: its `[FEN]`, or the standard start.
pub(super) fn start_position(game: &SourceGame) -> Result<Chess, SkipReason> {
    if let Some((line, reason)) = &game.syntax_error {
        return Err(SkipReason::Syntax { line: *line, reason: reason.clone() });
    }
    if let Some(variant) = game.tag("Variant").filter(|v| !is_standard(v)) {
        return Err(SkipReason::Variant(variant.to_string()));
    }
    match game.tag("FEN") {
        Some(fen) => Chess::from_fen(fen).map_err(|e| SkipReason::Fen(e.to_string())),
        None => Ok(Chess::startpos()),
    }
}

/// The game's moves played from `start`, and per position whether it
/// occurred before in the game.
pub(super) fn play_moves(start: Chess, game: &SourceGame) -> Result<(History<Chess>, Vec<bool>), SkipReason> {
    let mut history = History::new(start);
    let mut repeated = vec![false];
    for source in &game.moves {
        // The game's own ply, so a game from a FEN names its real move numbers.
        let ply = history.current().ply() as usize;
        let bad = |reason: String| SkipReason::Move { line: source.line, ply, san: source.san.clone(), reason };
        let san = SanPlus::from_ascii(source.san.as_bytes()).map_err(|_| bad("not SAN".to_string()))?;
        let m = history
            .current()
            .parse_san(&san.san)
            .map_err(|_| bad(format!("not legal in {}", history.current().fen())))?;
        history.play(m);
        repeated.push(history.repetitions() > 0);
    }
    Ok((history, repeated))
}

/// Converts one game. `engine` scores the positions when `settings.eval`
/// is [`EvalSource::Engine`] (and is not used otherwise).
///
/// # Errors
/// Why the game cannot be converted; nothing of it is kept then.
pub fn convert_game(
    game: &SourceGame,
    settings: &ConvertSettings,
    engine: Option<&mut EngineEvaluator>,
) -> Result<ConvertedGame, SkipReason> {
    let start = start_position(game)?;
    let winner = game.winner().ok_or(SkipReason::NoResult)?;
    if game.moves.is_empty() {
        return Err(SkipReason::NoMoves);
    }
    let (history, repeated) = play_moves(start, game)?;
    let moves = history.moves();
    let positions = history.positions();
    let count = moves.len();

    let mut neighbour_evals = 0;
    let mut static_fallbacks = 0;
    let mut model_evals = 0;
    // Each position's (Q, D) for its side to move; the engine's best move
    // and node count where an engine searched it.
    let mut searched: Vec<Option<(usize, u32)>> = vec![None; count];
    let values: Vec<(f32, f32)> = match settings.eval {
        EvalSource::Static { r50_damp_start } => (0..count)
            .map(|i| {
                let (q, d) = settings.wdl.q_d(static_eval(&positions[i]));
                // Scored by the clock the played move leaves behind.
                r50_damp(q, d, positions[i + 1].halfmove_clock(), r50_damp_start)
            })
            .collect(),
        EvalSource::PgnComments => {
            // White's eval of each position, from the comments.
            let mut white = vec![None; count + 1];
            for (i, source) in game.moves.iter().enumerate() {
                match comment_eval(&source.comment) {
                    Some(CommentEval::Mover(e)) => {
                        white[i] = Some(if positions[i].turn() == Color::White { e } else { -e });
                    }
                    Some(CommentEval::WhiteAfter(e)) => white[i + 1] = Some(e),
                    None => {}
                }
            }
            (0..count)
                .map(|i| {
                    let own = white[i];
                    let neighbour = || white[i + 1].or(if i > 0 { white[i - 1] } else { None });
                    let for_mover = |w: f32| if positions[i].turn() == Color::White { w } else { -w };
                    let eval = match (own, neighbour()) {
                        (Some(w), _) => for_mover(w),
                        (None, Some(w)) => {
                            neighbour_evals += 1;
                            for_mover(w)
                        }
                        (None, None) => {
                            static_fallbacks += 1;
                            static_eval(&positions[i])
                        }
                    };
                    settings.wdl.q_d(eval)
                })
                .collect()
        }
        EvalSource::Engine => {
            let engine = engine.ok_or_else(|| SkipReason::Engine("no engine to search with".to_string()))?;
            engine.new_game().map_err(|e| SkipReason::Engine(e.to_string()))?;
            let mut replay = History::new(positions[0].clone());
            let mut values = Vec::with_capacity(count);
            for i in 0..count {
                let verdict = engine.evaluate(&replay, &settings.wdl).map_err(SkipReason::Engine)?;
                model_evals += usize::from(!verdict.from_wdl);
                searched[i] =
                    Some((positions[i].policy_index(verdict.best), verdict.nodes.min(u64::from(u32::MAX)) as u32));
                values.push((verdict.q, verdict.d));
                replay.play(moves[i]);
            }
            values
        }
    };

    let adjudicated = game.tag("Termination").is_some_and(|t| t.trim().eq_ignore_ascii_case("adjudication"));
    let mut records = Vec::with_capacity(count);
    for i in 0..count {
        let position = &positions[i];
        let (q, d) = values[i];
        let first = (i + 1).saturating_sub(8);
        let input = encode(&positions[first..=i], &repeated[first..=i]);
        let mut legal = capa_rules::MoveList::new();
        position.legal_moves(&mut legal);
        let played = position.policy_index(moves[i]);
        let mut probabilities = vec![-1.0f32; POLICY_SIZE];
        let share = if settings.visit_budget > 0 && legal.len() > 1 { 0.5 + q.abs() / 2.0 } else { 1.0 };
        let other = if legal.len() > 1 { (1.0 - share) / (legal.len() - 1) as f32 } else { 0.0 };
        for &m in &legal {
            probabilities[position.policy_index(m)] = other;
        }
        probabilities[played] = share;
        let result_q = match winner {
            None => 0.0,
            Some(w) if w == position.turn() => 1.0,
            Some(_) => -1.0,
        };
        let plies_left = plies_to_end(count, i);
        records.push(V6Record {
            input_format: CLASSICAL_INPUT,
            probabilities,
            planes: input.planes,
            castling: input.castling,
            side_to_move_or_enpassant: input.black_to_move,
            rule50_count: input.rule50,
            invariance_info: if adjudicated { ADJUDICATED } else { 0 },
            root_q: q,
            best_q: q,
            root_d: d,
            best_d: d,
            root_m: plies_left,
            best_m: plies_left,
            plies_left,
            result_q,
            result_d: if winner.is_none() { 1.0 } else { 0.0 },
            played_q: 0.0,
            played_d: d,
            played_m: plies_left,
            orig_q: f32::NAN,
            orig_d: f32::NAN,
            orig_m: f32::NAN,
            visits: match (settings.visit_budget, searched[i]) {
                (0, Some((_, nodes))) => nodes,
                (budget, _) => budget.max(1),
            },
            played_idx: played as u16,
            best_idx: searched[i].map_or(played, |(best, _)| best) as u16,
            policy_kld: 0.0,
            q_st: 0.0,
        });
    }
    // The played move's value is the next position's, from this side.
    for i in 0..count {
        records[i].played_q = if i + 1 < count { -records[i + 1].best_q } else { records[i].result_q };
    }
    Ok(ConvertedGame { records, neighbour_evals, static_fallbacks, model_evals })
}
