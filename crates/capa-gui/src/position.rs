//! A position as the page asks for it (a game, a start FEN, UCI moves) and
//! what the page draws of it: the placement, legal moves with their SAN,
//! check and the game's end.

use capa_rules::GameKind;
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Color, Game, History, MoveList};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// Which game a request is about: a chess game (`capablanca` or `chess`).
pub fn parse_game(text: &str) -> Result<GameKind, ApiError> {
    let game: GameKind = text.parse().map_err(|e| ApiError::bad(format!("{e}")))?;
    if !game.is_chess() {
        return Err(ApiError::bad(format!("the GUI shows chess games, not {game}")));
    }
    Ok(game)
}

/// A position as requests name it.
#[derive(Clone, Debug, Deserialize)]
pub struct PositionQuery {
    /// `capablanca` or `chess`.
    pub game: String,
    /// The start position; absent or empty: the game's own.
    #[serde(default)]
    pub fen: Option<String>,
    /// UCI moves from the start, separated by spaces or commas.
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
    /// UCI, as the game's reference engine writes it.
    pub uci: String,
    /// SAN.
    pub san: String,
}

/// The game's end.
#[derive(Clone, Debug, Serialize)]
pub struct Ending {
    /// `1-0`, `0-1` or `1/2-1/2`.
    pub result: &'static str,
    /// Why: checkmate, stalemate, repetition...
    pub reason: String,
}

/// What the page draws of a position.
#[derive(Clone, Debug, Serialize)]
pub struct PositionView {
    /// `capablanca` or `chess`.
    pub game: &'static str,
    /// The position's FEN.
    pub fen: String,
    /// The start position's FEN.
    pub start_fen: String,
    /// Files and ranks of the board.
    pub files: usize,
    /// Ranks of the board.
    pub ranks: usize,
    /// `w` or `b`.
    pub turn: char,
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
pub fn view<G: Game>(game: GameKind, history: &History<G>) -> PositionView {
    let position = history.current();
    let mut moves = MoveList::new();
    position.legal_moves(&mut moves);
    let legal = moves.iter().map(|&m| LegalMove { uci: m.to_string(), san: position.san(m) }).collect();
    let ending = history.outcome().map(|outcome| Ending {
        result: match outcome.winner(position.turn()) {
            Some(Color::White) => "1-0",
            Some(Color::Black) => "0-1",
            None => "1/2-1/2",
        },
        reason: outcome.reason.to_string(),
    });
    PositionView {
        game: game.name(),
        fen: position.fen(),
        start_fen: history.start().fen(),
        files: game.files(),
        ranks: game.ranks(),
        turn: position.turn().fen_char(),
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
    Ok(match query.game()? {
        GameKind::Capablanca => view(GameKind::Capablanca, &query.history::<Capablanca>()?),
        GameKind::Chess => view(GameKind::Chess, &query.history::<Chess>()?),
        go => return Err(ApiError::bad(format!("unknown game '{}': expected 'capablanca' or 'chess'", go.name()))),
    })
}
