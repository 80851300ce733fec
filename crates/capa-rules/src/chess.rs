//! Standard chess through shakmaty, behind the `Game` trait.
//!
//! No second chess generator: shakmaty is exact and fast. What capa adds is
//! the trait, FEN checks shared with Capablanca, and Lc0's policy map (castling
//! indexed as king-takes-rook, `e1h1`; UCI at the interface stays `e1g1`).

use std::fmt;
use std::sync::LazyLock;

use shakmaty::fen::{Fen, ParseFenError};
use shakmaty::uci::UciMove;
use shakmaty::zobrist::{Zobrist64, ZobristValue};
use shakmaty::{CastlingMode, EnPassantMode, FromSetup, Position, PositionErrorKinds, Role};

use crate::game::{chess_like_outcome, ply_from_fullmove};
use crate::notation::{check_castling_letters, split_fen, split_uci};
use crate::{Color, FenError, FenErrorKind, Game, GameKind, MoveError, MoveList, Outcome, PolicyMap};

static POLICY: LazyLock<PolicyMap> = LazyLock::new(|| PolicyMap::build(8, 8, &['q', 'r', 'b']));

/// A legal chess move, written in standard UCI (`e1g1` for castling). Made
/// only by `legal_moves` and `parse_move`, so it is legal where it came from.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct ChessMove(shakmaty::Move);

impl ChessMove {
    /// The shakmaty move, for code that needs its richer API (SAN).
    pub fn as_shakmaty(self) -> shakmaty::Move {
        self.0
    }
}

impl fmt::Display for ChessMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.to_uci(CastlingMode::Standard))
    }
}

impl fmt::Debug for ChessMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A standard chess position with its Zobrist hash.
#[derive(Clone)]
pub struct Chess {
    pos: shakmaty::Chess,
    hash: Zobrist64,
    /// The en passant file the hash includes (only when the capture is legal).
    ep_file: Option<shakmaty::File>,
}

impl Chess {
    /// The policy map: the network's move vocabulary, Lc0's rule on this board.
    pub fn policy_map() -> &'static PolicyMap {
        &POLICY
    }

    /// The shakmaty position, for code that needs its richer API (SAN, PGN).
    pub fn position(&self) -> &shakmaty::Chess {
        &self.pos
    }

    /// The legal move `san` names here (`Nf3`, `O-O`, `exd8=Q`).
    ///
    /// # Errors
    /// [`MoveError::Illegal`] when no legal move matches, or more than one does.
    pub fn parse_san(&self, san: &shakmaty::san::San) -> Result<ChessMove, MoveError> {
        san.to_move(&self.pos).map(ChessMove).map_err(|_| MoveError::Illegal { uci: san.to_string(), fen: self.fen() })
    }

    /// Lc0's twelve piece bitboards of this position drawn from `frame`'s
    /// side: the frame side's pawns, knights, bishops, rooks, queens and
    /// king, then the other side's. Bit `rank * 8 + file` is a square in the
    /// frame (ranks mirrored when `frame` is black), before Lc0's
    /// reversal of the bits in each byte. `undo_double_push` draws a pawn
    /// that just double-stepped back on its start square, as Lc0 does for
    /// the copies of a game's first position that fill its history.
    pub fn lc0_piece_bitboards(&self, frame: Color, undo_double_push: bool) -> [u64; 12] {
        const ROLES: [Role; 6] = [Role::Pawn, Role::Knight, Role::Bishop, Role::Rook, Role::Queen, Role::King];
        let board = self.pos.board();
        let mut pawns = shakmaty::ByColor::new_with(|color| board.by_color(color) & board.pawns());
        if let Some(ep) = self.pos.ep_square(EnPassantMode::Always).filter(|_| undo_double_push) {
            // The pawn that passed over `ep` stands one rank beyond it, seen from its side.
            let mover = !self.pos.turn();
            let step = if mover == shakmaty::Color::White { 8 } else { -8 };
            if let (Some(landing), Some(start)) = (ep.offset(step), ep.offset(-step)) {
                let side = pawns.get_mut(mover);
                if side.contains(landing) {
                    *side = side.without(landing).with(start);
                }
            }
        }
        let frame = shakmaty_color(frame);
        let mut out = [0; 12];
        for (side, color) in [frame, !frame].into_iter().enumerate() {
            for (index, role) in ROLES.into_iter().enumerate() {
                let pieces =
                    if role == Role::Pawn { *pawns.get(color) } else { board.by_color(color) & board.by_role(role) };
                let pieces = if frame == shakmaty::Color::Black { pieces.flip_vertical() } else { pieces };
                out[side * 6 + index] = u64::from(pieces);
            }
        }
        out
    }

    fn from_shakmaty(pos: shakmaty::Chess) -> Chess {
        let hash = pos.zobrist_hash(EnPassantMode::Legal);
        let ep_file = pos.ep_square(EnPassantMode::Legal).map(|sq| sq.file());
        Chess { pos, hash, ep_file }
    }
}

fn shakmaty_color(c: Color) -> shakmaty::Color {
    match c {
        Color::White => shakmaty::Color::White,
        Color::Black => shakmaty::Color::Black,
    }
}

fn color(c: shakmaty::Color) -> Color {
    match c {
        shakmaty::Color::White => Color::White,
        shakmaty::Color::Black => Color::Black,
    }
}

/// Turns shakmaty's verdict on a position into our error, naming one problem.
fn position_error(kinds: PositionErrorKinds, fen: &str, pieces: &[(usize, usize, char)]) -> FenErrorKind {
    let kings = |c: char| pieces.iter().filter(|p| p.2 == c).count();
    let fields: Vec<&str> = fen.split_ascii_whitespace().collect();
    let field = |i: usize| fields.get(i).copied().unwrap_or("-").to_string();
    if kinds.intersects(
        PositionErrorKinds::MISSING_KING | PositionErrorKinds::TOO_MANY_KINGS | PositionErrorKinds::EMPTY_BOARD,
    ) {
        let (color, count) = if kings('K') != 1 { (Color::White, kings('K')) } else { (Color::Black, kings('k')) };
        FenErrorKind::KingCount { color, count }
    } else if kinds.contains(PositionErrorKinds::PAWNS_ON_BACKRANK) {
        let square = pieces
            .iter()
            .find(|p| p.2.eq_ignore_ascii_case(&'p') && (p.1 == 0 || p.1 == 7))
            .map_or_else(|| "the back rank".to_string(), |p| crate::notation::square_name(p.0, p.1));
        FenErrorKind::PawnOnBackRank { square }
    } else if kinds.contains(PositionErrorKinds::INVALID_CASTLING_RIGHTS) {
        FenErrorKind::Castling {
            field: field(2),
            reason: "a right without its king on e1/e8 and rook in the corner".to_string(),
        }
    } else if kinds.contains(PositionErrorKinds::INVALID_EP_SQUARE) {
        FenErrorKind::EnPassant {
            square: field(3),
            reason: "no pawn of the side that just moved can have double-stepped over it".to_string(),
        }
    } else if kinds.contains(PositionErrorKinds::OPPOSITE_CHECK) {
        FenErrorKind::OpponentInCheck
    } else if kinds.contains(PositionErrorKinds::IMPOSSIBLE_CHECK) {
        FenErrorKind::ImpossibleCheck
    } else if kinds.contains(PositionErrorKinds::TOO_MUCH_MATERIAL) {
        FenErrorKind::TooMuchMaterial
    } else {
        FenErrorKind::Invalid(format!("shakmaty rejects the position: {kinds:?}"))
    }
}

impl Game for Chess {
    type Move = ChessMove;

    const KIND: GameKind = GameKind::Chess;
    const FILES: usize = 8;
    const RANKS: usize = 8;

    fn startpos() -> Chess {
        Chess::from_shakmaty(shakmaty::Chess::default())
    }

    fn from_fen(fen: &str) -> Result<Chess, FenError> {
        let error = |kind| FenError { fen: fen.to_string(), kind };
        // Our own syntax check first: it names the rank, the width, the piece.
        let fields = split_fen(fen, 8, 8, "pnbrqk").map_err(error)?;
        check_castling_letters(fields.castling).map_err(error)?;
        let full = format!(
            "{} {} {} {} {} {}",
            fen.split_ascii_whitespace().next().unwrap_or_default(),
            fields.turn.fen_char(),
            fields.castling,
            fields.en_passant,
            fields.halfmove_clock,
            fields.fullmove_number
        );
        let setup = Fen::from_ascii(full.as_bytes()).map_err(|e| {
            error(match e {
                ParseFenError::InvalidCastling => FenErrorKind::Castling {
                    field: fields.castling.to_string(),
                    reason: "expected '-', or letters from KQkq (or rook files A-H, a-h)".to_string(),
                },
                ParseFenError::InvalidEpSquare => FenErrorKind::EnPassant {
                    square: fields.en_passant.to_string(),
                    reason: "not a square of the 8x8 board".to_string(),
                },
                other => FenErrorKind::Invalid(other.to_string()),
            })
        })?;
        let pos = shakmaty::Chess::from_setup(setup.into_setup(), CastlingMode::Standard)
            .map_err(|e| error(position_error(e.kinds(), &full, &fields.pieces)))?;
        Ok(Chess::from_shakmaty(pos))
    }

    fn fen(&self) -> String {
        // Stockfish writes the en passant square whenever a pawn attacks it,
        // even if the capture is illegal; the hash counts only legal ones.
        Fen::from_position(&self.pos, EnPassantMode::PseudoLegal).to_string()
    }

    #[inline]
    fn legal_moves(&self, out: &mut MoveList<ChessMove>) {
        out.clear();
        out.extend(self.pos.legal_moves().into_iter().map(ChessMove));
    }

    #[inline]
    fn count_legal_moves(&self) -> usize {
        self.pos.legal_moves().len()
    }

    #[inline]
    fn play(&mut self, m: ChessMove) {
        // shakmaty's own incremental update gives up on king moves, double
        // steps, castling-right squares and en passant; this one does not.
        let turn = self.pos.turn();
        let rights_before = self.pos.castles().castling_rights();
        let mut hash = self.hash ^ Zobrist64::zobrist_for_white_turn();
        if let Some(file) = self.ep_file {
            hash ^= Zobrist64::zobrist_for_en_passant_file(file);
        }
        let piece = |sq, role: Role, color| Zobrist64::zobrist_for_piece(sq, role.of(color));
        match m.0 {
            shakmaty::Move::Normal { role, from, capture, to, promotion } => {
                hash ^= piece(from, role, turn) ^ piece(to, promotion.unwrap_or(role), turn);
                if let Some(captured) = capture {
                    hash ^= piece(to, captured, !turn);
                }
            }
            shakmaty::Move::EnPassant { from, to } => {
                let captured = shakmaty::Square::from_coords(to.file(), from.rank());
                hash ^=
                    piece(from, Role::Pawn, turn) ^ piece(to, Role::Pawn, turn) ^ piece(captured, Role::Pawn, !turn);
            }
            shakmaty::Move::Castle { king, rook } => {
                let side = shakmaty::CastlingSide::from_queen_side(rook < king);
                let rank = king.rank();
                hash ^= piece(king, Role::King, turn)
                    ^ piece(shakmaty::Square::from_coords(side.king_to_file(), rank), Role::King, turn)
                    ^ piece(rook, Role::Rook, turn)
                    ^ piece(shakmaty::Square::from_coords(side.rook_to_file(), rank), Role::Rook, turn);
            }
            shakmaty::Move::Put { .. } => unreachable!("no drops in standard chess"),
        }
        self.pos.play_unchecked(m.0);
        // Rights are kept as rook squares: a1/h1 white, a8/h8 black.
        for rook in rights_before ^ self.pos.castles().castling_rights() {
            let color = shakmaty::Color::from_white(rook.rank() == shakmaty::Rank::First);
            let side = shakmaty::CastlingSide::from_queen_side(rook.file() == shakmaty::File::A);
            hash ^= Zobrist64::zobrist_for_castling_right(color, side);
        }
        self.ep_file = self.pos.ep_square(EnPassantMode::Legal).map(|sq| sq.file());
        if let Some(file) = self.ep_file {
            hash ^= Zobrist64::zobrist_for_en_passant_file(file);
        }
        self.hash = hash;
    }

    fn outcome_given(&self, has_legal_moves: bool) -> Option<Outcome> {
        chess_like_outcome(
            has_legal_moves,
            self.pos.is_check(),
            self.pos.is_insufficient_material(),
            self.pos.halfmoves(),
        )
    }

    fn is_check(&self) -> bool {
        self.pos.is_check()
    }

    fn material(&self, color: Color) -> u32 {
        let side = self.pos.board().material_side(shakmaty_color(color));
        let value = [(side.pawn, 1), (side.knight, 3), (side.bishop, 3), (side.rook, 5), (side.queen, 9)];
        value.into_iter().map(|(count, pawns)| u32::from(count) * pawns).sum()
    }

    #[inline]
    fn hash(&self) -> u64 {
        self.hash.0
    }

    #[inline]
    fn turn(&self) -> Color {
        color(self.pos.turn())
    }

    fn ply(&self) -> u32 {
        ply_from_fullmove(self.pos.fullmoves().get(), self.turn())
    }

    fn halfmove_clock(&self) -> u32 {
        self.pos.halfmoves()
    }

    /// Bits 0-5 the from-square, 6-11 the to-square (the rook's, for
    /// castling), 12-14 a code: 0 plain, 1-4 promotion to N B R Q, 5
    /// castling, 6 en passant. Role and capture come back from the board.
    #[inline]
    fn pack_move(m: ChessMove) -> u16 {
        let (from, to, code) = match m.0 {
            shakmaty::Move::Normal { from, to, promotion, .. } => {
                (from, to, promotion.map_or(0, |role| role as u16 - 1))
            }
            shakmaty::Move::Castle { king, rook } => (king, rook, 5),
            shakmaty::Move::EnPassant { from, to } => (from, to, 6),
            shakmaty::Move::Put { .. } => unreachable!("no drops in standard chess"),
        };
        u16::from(from) | u16::from(to) << 6 | code << 12
    }

    #[inline]
    fn unpack_move(&self, packed: u16) -> ChessMove {
        let from = shakmaty::Square::new(u32::from(packed & 63));
        let to = shakmaty::Square::new(u32::from(packed >> 6 & 63));
        ChessMove(match packed >> 12 {
            5 => shakmaty::Move::Castle { king: from, rook: to },
            6 => shakmaty::Move::EnPassant { from, to },
            code => {
                let board = self.pos.board();
                shakmaty::Move::Normal {
                    role: board.role_at(from).unwrap_or(Role::Pawn),
                    from,
                    capture: board.role_at(to),
                    to,
                    promotion: Role::ALL.get(usize::from(code)).copied().filter(|_| code != 0),
                }
            }
        })
    }

    fn parse_move(&self, uci: &str) -> Result<ChessMove, MoveError> {
        split_uci(uci, 8, 8, "qrbn")?;
        let illegal = || MoveError::Illegal { uci: uci.to_string(), fen: self.fen() };
        let parsed = UciMove::from_ascii(uci.as_bytes()).map_err(|_| illegal())?;
        let m = parsed.to_move(&self.pos).map(ChessMove).map_err(|_| illegal())?;
        // shakmaty also takes king-takes-rook (`e1h1`) for castling; UCI here is `e1g1` only.
        if m.to_string() != uci {
            return Err(illegal());
        }
        Ok(m)
    }

    /// shakmaty's reader, which also takes a needless disambiguation, then
    /// the loose match of every game.
    fn read_san(&self, text: &str) -> Result<ChessMove, MoveError> {
        let strict = text.trim().trim_end_matches(['!', '?']).replace("0-0", "O-O");
        match strict.parse::<shakmaty::san::SanPlus>() {
            Ok(san) if let Ok(m) = self.parse_san(&san.san) => Ok(m),
            _ => crate::game::read_san_by_matching(self, text),
        }
    }

    fn san(&self, m: ChessMove) -> String {
        shakmaty::san::SanPlus::from_move(self.pos.clone(), m.0).to_string()
    }

    fn policy_size() -> usize {
        POLICY.len()
    }

    fn policy_index(&self, m: ChessMove) -> usize {
        let (from, to, promotion) = match m.0 {
            shakmaty::Move::Normal { from, to, promotion, .. } => (from, to, promotion),
            shakmaty::Move::EnPassant { from, to } => (from, to, None),
            shakmaty::Move::Castle { king, rook } => (king, rook, None),
            shakmaty::Move::Put { .. } => unreachable!("no drops in standard chess"),
        };
        let frame = |sq: shakmaty::Square| match self.pos.turn() {
            shakmaty::Color::White => sq as usize,
            shakmaty::Color::Black => sq.flip_vertical() as usize,
        };
        let promotion = promotion.filter(|&r| r != Role::Knight).map(Role::char);
        POLICY.index(frame(from), frame(to), promotion).expect("every legal move has a policy index")
    }
}

impl fmt::Debug for Chess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Chess({})", self.fen())
    }
}
