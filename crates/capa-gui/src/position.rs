//! A position as the page asks for it (a game, a start FEN, moves) and
//! what the page draws of it: the placement, legal moves with their SAN,
//! check, Go's prisoners and the game's end.

use capa_rules::{Game, GameKind, History, MoveList, for_game};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::games::GuiGame;

/// Which game a request is about (`capablanca`, `chess`, `go9`, `go13`, `go19`).
pub fn parse_game(text: &str) -> Result<GameKind, ApiError> {
    text.parse().map_err(|e| ApiError::bad(format!("{e}")))
}

/// A position as requests name it.
#[derive(Clone, Debug, Deserialize)]
pub struct PositionQuery {
    /// The game's name.
    pub game: String,
    /// The start position (FEN, or Go's text form); absent or empty: the game's own.
    #[serde(default)]
    pub fen: Option<String>,
    /// Moves from the start (UCI, or Go's vertices), separated by spaces or commas.
    #[serde(default)]
    pub moves: Option<String>,
}

impl PositionQuery {
    /// The game, checked.
    pub fn game(&self) -> Result<GameKind, ApiError> {
        parse_game(&self.game)
    }

    /// The game's history up to the position, every move checked.
    pub fn history<G: Game>(&self) -> Result<History<G>, ApiError> {
        let start = match self.fen.as_deref().map(str::trim).filter(|f| !f.is_empty()) {
            Some(fen) => G::from_fen(fen).map_err(|e| ApiError::bad(e.to_string()))?,
            None => G::startpos(),
        };
        let mut history = History::new(start);
        let moves = self.moves.as_deref().unwrap_or("");
        history
            .play_moves(moves.split([' ', ',']).filter(|m| !m.is_empty()))
            .map_err(|e| ApiError::bad(e.to_string()))?;
        Ok(history)
    }
}

/// One legal move.
#[derive(Clone, Debug, Serialize)]
pub struct LegalMove {
    /// UCI, as the game's reference engine writes it (Go: the GTP vertex).
    pub uci: String,
    /// SAN.
    pub san: String,
}

/// The game's end.
#[derive(Clone, Debug, Serialize)]
pub struct Ending {
    /// `1-0`, `0-1` or `1/2-1/2`; Go's score, `B+3.5`.
    pub result: String,
    /// Why: checkmate, stalemate, repetition...
    pub reason: String,
}

/// What the page draws of a position.
#[derive(Clone, Debug, Serialize)]
pub struct PositionView {
    /// The game's name.
    pub game: &'static str,
    /// The position's FEN (Go: its text form, modelled on FEN).
    pub fen: String,
    /// The start position's FEN.
    pub start_fen: String,
    /// Files and ranks of the board.
    pub files: usize,
    /// Ranks of the board.
    pub ranks: usize,
    /// `w` or `b`.
    pub turn: char,
    /// Go: the stones black and white have taken.
    pub prisoners: Option<[u32; 2]>,
    /// The side to move is in check.
    pub check: bool,
    /// The moves played, in SAN.
    pub sans: Vec<String>,
    /// Every legal move.
    pub legal: Vec<LegalMove>,
    /// The game's end, when it is over.
    pub ending: Option<Ending>,
}

/// The view of `history`'s current position.
pub fn view<G: GuiGame>(history: &History<G>) -> PositionView {
    let position = history.current();
    let mut moves = MoveList::new();
    position.legal_moves(&mut moves);
    let legal = moves.iter().map(|&m| LegalMove { uci: m.to_string(), san: position.san(m) }).collect();
    let ending = history.outcome().map(|outcome| Ending {
        result: G::ending_text(position, outcome.winner(position.turn())),
        reason: outcome.reason.to_string(),
    });
    PositionView {
        game: G::NAME,
        fen: position.fen(),
        start_fen: history.start().fen(),
        files: G::FILES,
        ranks: G::RANKS,
        turn: position.turn().fen_char(),
        prisoners: G::prisoners(history),
        check: position.is_check(),
        sans: sans(history.start(), history.moves()),
        legal,
        ending,
    }
}

/// `moves` from `start` in SAN.
pub fn sans<G: Game>(start: &G, moves: &[G::Move]) -> Vec<String> {
    let mut position = start.clone();
    moves
        .iter()
        .map(|&m| {
            let san = position.san(m);
            position.play(m);
            san
        })
        .collect()
}

/// The view of the position `query` names.
pub fn position(query: &PositionQuery) -> Result<PositionView, ApiError> {
    Ok(for_game!(query.game()?, G => view(&query.history::<G>()?)))
}
