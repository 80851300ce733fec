//! The `Game` trait that search, encoders and data tools are generic over.

use std::fmt::{Debug, Display};
use std::hash::Hash;
use std::ops::Deref;

use crate::color::Color;
use crate::error::{FenError, MoveError};
use crate::kind::GameKind;

/// How a finished game ended for one player.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum GameResult {
    /// That player won.
    Win,
    /// Nobody won.
    Draw,
    /// That player lost.
    Loss,
}

/// Why a game is over.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Termination {
    /// The side to move is in check and has no legal move.
    Checkmate,
    /// The side to move is not in check and has no legal move.
    Stalemate,
    /// A hundred plies without a capture or a pawn move.
    FiftyMoveRule,
    /// The same position (pieces, side to move, castling, en passant) for the third time.
    ThreefoldRepetition,
    /// Neither side has the material to deliver mate.
    InsufficientMaterial,
    /// The game reached the configured ply cap (an adjudicated draw).
    PlyCap,
    /// Both players passed in a row and the board was scored (Go).
    Scored,
}

impl Display for Termination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Termination::Checkmate => "checkmate",
            Termination::Stalemate => "stalemate",
            Termination::FiftyMoveRule => "50-move rule",
            Termination::ThreefoldRepetition => "threefold repetition",
            Termination::InsufficientMaterial => "insufficient material",
            Termination::PlyCap => "ply cap",
            Termination::Scored => "two passes, scored",
        })
    }
}

/// The end of a game, seen by the side to move in the final position.
///
/// A checkmate is therefore always a `Loss`: the mated side is the one to move.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// The result for the side to move in the final position.
    pub result: GameResult,
    /// What ended the game.
    pub reason: Termination,
}

impl Outcome {
    /// A drawn game for `reason`.
    pub const fn draw(reason: Termination) -> Outcome {
        Outcome { result: GameResult::Draw, reason }
    }

    /// The winner, given that `to_move` was to move in the final position;
    /// `None` for a draw.
    pub fn winner(&self, to_move: Color) -> Option<Color> {
        match self.result {
            GameResult::Win => Some(to_move),
            GameResult::Loss => Some(!to_move),
            GameResult::Draw => None,
        }
    }

    /// The result for `player`, given that `to_move` was to move in the final position.
    pub fn result_for(&self, player: Color, to_move: Color) -> GameResult {
        match (self.result, player == to_move) {
            (r, true) | (r @ GameResult::Draw, false) => r,
            (GameResult::Win, false) => GameResult::Loss,
            (GameResult::Loss, false) => GameResult::Win,
        }
    }
}

/// The position-decided outcome of any chess-like game, in order of
/// precedence: checkmate, stalemate, insufficient material, the 50-move rule
/// (a mate on the hundredth ply still counts as mate).
pub(crate) fn chess_like_outcome(
    has_moves: bool,
    in_check: bool,
    insufficient_material: bool,
    halfmove_clock: u32,
) -> Option<Outcome> {
    match (has_moves, in_check) {
        (false, true) => Some(Outcome { result: GameResult::Loss, reason: Termination::Checkmate }),
        (false, false) => Some(Outcome::draw(Termination::Stalemate)),
        _ if insufficient_material => Some(Outcome::draw(Termination::InsufficientMaterial)),
        _ if halfmove_clock >= 100 => Some(Outcome::draw(Termination::FiftyMoveRule)),
        _ => None,
    }
}

/// Plies since the game's first move, from a FEN's fullmove number.
pub(crate) fn ply_from_fullmove(fullmove_number: u32, turn: Color) -> u32 {
    (fullmove_number.max(1) - 1) * 2 + turn.index() as u32
}

/// A reusable buffer of moves: `Game::legal_moves` clears it and fills it.
///
/// Allocate one per search thread (or per perft depth) and reuse it; the
/// capacity it grows to is kept.
#[derive(Clone, Debug, Default)]
pub struct MoveList<M> {
    moves: Vec<M>,
}

impl<M> MoveList<M> {
    /// An empty list with room for the moves of any ordinary position.
    pub fn new() -> MoveList<M> {
        MoveList { moves: Vec::with_capacity(256) }
    }

    /// Empties the list, keeping its capacity.
    #[inline]
    pub fn clear(&mut self) {
        self.moves.clear();
    }

    /// Appends a move.
    #[inline]
    pub fn push(&mut self, m: M) {
        self.moves.push(m);
    }
}

impl<M> Deref for MoveList<M> {
    type Target = [M];
    #[inline]
    fn deref(&self) -> &[M] {
        &self.moves
    }
}

impl<M> Extend<M> for MoveList<M> {
    fn extend<I: IntoIterator<Item = M>>(&mut self, iter: I) {
        self.moves.extend(iter);
    }
}

impl<'a, M> IntoIterator for &'a MoveList<M> {
    type Item = &'a M;
    type IntoIter = std::slice::Iter<'a, M>;
    fn into_iter(self) -> Self::IntoIter {
        self.moves.iter()
    }
}

/// A two-player board game with perfect information: a position and its rules.
///
/// A value is one position (no history); [`History`](crate::History) adds the
/// earlier positions that repetition and the network's input need. Search,
/// encoders, records and tools are generic over this trait.
///
/// Every game has a text form for positions and one for moves: FEN and UCI
/// for the chess games, a FEN-like form and GTP vertices for Go (see
/// [`crate::go`]). Chess notions have a general meaning here: a game without
/// check is never in check, a game without irreversible moves has a
/// halfmove clock of 0.
pub trait Game: Clone + Send + Sync + 'static {
    /// A move of this game. `Display` writes its text form as the reference
    /// engine for this game expects it: UCI for the chess games (e.g.
    /// Fairy-Stockfish's `f1i1` for castling), a GTP vertex for Go (`D4`, `pass`).
    type Move: Copy + Eq + Hash + Send + Sync + Debug + Display;

    /// Which game this is.
    const KIND: GameKind;
    /// The game's name in configs; for chess games as UCI engines spell it
    /// (`UCI_Variant`): `capablanca`, `chess`, `go9`, `go13`, `go19`.
    const NAME: &'static str = Self::KIND.name();
    /// Board width.
    const FILES: usize;
    /// Board height.
    const RANKS: usize;

    /// The standard starting position.
    fn startpos() -> Self;

    /// Parses the position's text form (FEN for chess games), rejecting
    /// anything that is not a reachable-looking position.
    ///
    /// # Errors
    /// A [`FenError`] naming the field and what is wrong with it.
    fn from_fen(fen: &str) -> Result<Self, FenError>;

    /// The position's text form (FEN for chess games), written as the
    /// reference engine writes it.
    fn fen(&self) -> String;

    /// Clears `out` and fills it with every legal move.
    fn legal_moves(&self, out: &mut MoveList<Self::Move>);

    /// The number of legal moves (what perft counts at its last ply).
    fn count_legal_moves(&self) -> usize {
        let mut moves = MoveList::new();
        self.legal_moves(&mut moves);
        moves.len()
    }

    /// Plays `m`, which must be one of this position's legal moves.
    ///
    /// Playing a move that `legal_moves` did not produce may panic or leave
    /// the position in an unspecified (but memory-safe) state; parse user
    /// input with [`Game::parse_move`], which checks legality.
    fn play(&mut self, m: Self::Move);

    /// The outcome that this position alone decides: checkmate, stalemate,
    /// the 50-move rule, insufficient material; Go's two passes. Repetition and the ply cap
    /// need the game's history: see [`History::outcome`](crate::History::outcome).
    fn outcome(&self) -> Option<Outcome> {
        self.outcome_given(self.count_legal_moves() > 0)
    }

    /// [`Game::outcome`] for a caller that already knows whether the side to
    /// move has a legal move (a search that has just generated them).
    fn outcome_given(&self, has_legal_moves: bool) -> Option<Outcome>;

    /// Whether the side to move is in check (never, in a game without check).
    fn is_check(&self) -> bool;

    /// What `color` holds on the board, for adjudicating games that reach a
    /// ply cap (not for search). Chess games: the conventional value of the
    /// pieces, in pawns (pawn 1, knight and bishop 3, rook 5, archbishop 7,
    /// chancellor 8, queen 9, king 0). Go: the area (stones and the empty
    /// points that reach only them), without komi.
    fn material(&self, color: Color) -> u32;

    /// White's lead when a game is adjudicated at the ply cap: the
    /// difference in [`material`](Self::material) (chess games), or the
    /// score (Go: White's area plus komi, minus Black's area). Negative
    /// when Black leads.
    fn adjudication_lead(&self) -> f32 {
        self.material(Color::White) as f32 - self.material(Color::Black) as f32
    }

    /// Zobrist hash of what makes the position (chess: pieces, side to move,
    /// castling rights and en passant; Go: stones, side, ko point, passes);
    /// updated incrementally by `play`.
    fn hash(&self) -> u64;

    /// The side to move.
    fn turn(&self) -> Color;

    /// Plies since the game's first move (chess: from the FEN's fullmove number).
    fn ply(&self) -> u32;

    /// Plies since the last irreversible move (chess: a capture or a pawn
    /// move, the FEN's halfmove clock): only that far back can a position
    /// repeat. 0 in games where repetition is not counted (Go).
    fn halfmove_clock(&self) -> u32;

    /// The move in 16 bits, for compact search trees: from-square, to-square
    /// and whatever else the move needs that the position does not tell.
    fn pack_move(m: Self::Move) -> u16;

    /// The move that [`Game::pack_move`] packed, given the position it was
    /// legal in. Anything else gives an unspecified move (never undefined
    /// behaviour): only unpack what was packed from this position's moves.
    fn unpack_move(&self, packed: u16) -> Self::Move;

    /// Parses a move's text form (UCI for chess games, a GTP vertex for Go)
    /// and checks that it is legal here.
    ///
    /// # Errors
    /// [`MoveError`] when the text is not a move, or not a legal one.
    fn parse_move(&self, uci: &str) -> Result<Self::Move, MoveError>;

    /// Legal move `m` as people write it: for chess games standard
    /// algebraic notation, as PGN writes it (piece letter, the least
    /// disambiguation, `x` for captures, `=Q` for promotions, `O-O`/`O-O-O`,
    /// and `+` or `#`); for Go the vertex.
    fn san(&self, m: Self::Move) -> String;

    /// The legal move that SAN text `text` names here, as people and
    /// other programs write it: check, mate and annotation marks, `x` and
    /// `=` are optional, castling may be written with zeros.
    ///
    /// # Errors
    /// [`MoveError::Illegal`] when no legal move matches.
    fn read_san(&self, text: &str) -> Result<Self::Move, MoveError> {
        read_san_by_matching(self, text)
    }

    /// The number of moves the policy head scores: the size of the game's
    /// move vocabulary (a chess game's [`PolicyMap`](crate::PolicyMap), Go's points and the pass).
    fn policy_size() -> usize;

    /// The index of legal move `m` in the policy map, in the side-to-move
    /// frame (ranks mirrored when black is to move).
    ///
    /// # Panics
    /// If `m` is not a legal move of this position (no move of one lacks an index).
    fn policy_index(&self, m: Self::Move) -> usize;
}

/// The legal move whose SAN reads as `text` once what writers differ on is
/// left out (see [`Game::read_san`]).
pub(crate) fn read_san_by_matching<G: Game>(position: &G, text: &str) -> Result<G::Move, MoveError> {
    let wanted = san_key(text);
    let mut moves = MoveList::new();
    position.legal_moves(&mut moves);
    moves
        .iter()
        .copied()
        .find(|&m| san_key(&position.san(m)) == wanted)
        .ok_or_else(|| MoveError::Illegal { uci: text.to_string(), fen: position.fen() })
}

/// SAN without what writers differ on: marks, `x`, `=`, zeros for castling.
fn san_key(text: &str) -> String {
    let text = text.trim().trim_end_matches("e.p.");
    let castling = text.starts_with("0-0");
    text.chars()
        .filter(|c| !matches!(c, '+' | '#' | '!' | '?' | 'x' | '=' | ':'))
        .map(|c| if castling && c == '0' { 'O' } else { c })
        .collect()
}
