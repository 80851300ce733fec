//! Capablanca chess: a 10x8 board with the archbishop (bishop + knight) and
//! the chancellor (rook + knight), on u128 bitboards.
//!
//! Rules and notation follow Fairy-Stockfish: the king starts on f1 and
//! castles to i1 (rook j1 -> h1) or c1 (rook a1 -> d1); pawns promote to
//! any of Q R B N A C; FEN and UCI as Fairy-Stockfish writes them.

mod attacks;
mod types;
mod zobrist;

use std::fmt;
use std::sync::LazyLock;

pub use attacks::{between, bishop_attacks, king_attacks, knight_attacks, line, pawn_attacks, rook_attacks};
pub use types::{Bitboard, FILES, Piece, RANKS, Role, SQUARES, Square};

use crate::game::{chess_like_outcome, ply_from_fullmove};
use crate::notation::{parse_square, split_fen, split_uci};
use crate::{Color, FenError, FenErrorKind, Game, GameKind, MoveError, MoveList, Outcome, PolicyMap};

/// What a move does besides moving a piece from one square to another.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MoveKind {
    /// A quiet move, a capture, or a pawn's single or double step.
    Normal,
    /// A pawn capturing en passant.
    EnPassant,
    /// Castling; the move's squares are the king's.
    Castle,
    /// A pawn reaching the last rank and becoming `Role`.
    Promotion(Role),
}

/// A Capablanca move. Castling is written as the king's move (`f1i1`).
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Move {
    from: Square,
    to: Square,
    kind: MoveKind,
}

impl Move {
    /// The square the moving piece (the king, for castling) leaves.
    pub const fn from(self) -> Square {
        self.from
    }

    /// The square it lands on.
    pub const fn to(self) -> Square {
        self.to
    }

    /// What kind of move it is.
    pub const fn kind(self) -> MoveKind {
        self.kind
    }

    /// The piece a pawn becomes, for a promotion.
    pub const fn promotion(self) -> Option<Role> {
        match self.kind {
            MoveKind::Promotion(role) => Some(role),
            _ => None,
        }
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.from, self.to)?;
        match self.promotion() {
            Some(role) => write!(f, "{}", role.char()),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// One castling move: its right bit, the king's and rook's squares, and what must hold.
struct CastleRule {
    right: u8,
    letter: char,
    king_from: Square,
    king_to: Square,
    rook_from: Square,
    rook_to: Square,
    /// Squares between king and rook: all must be empty.
    must_be_empty: Bitboard,
    /// Squares the king passes through or lands on: none may be attacked.
    must_be_safe: Bitboard,
}

const fn castle_rule(color: Color, kingside: bool) -> CastleRule {
    let rank = match color {
        Color::White => 0,
        Color::Black => RANKS - 1,
    };
    let (right, letter, king_to, rook_from, rook_to) = match (color, kingside) {
        (Color::White, true) => (1, 'K', 8, 9, 7),
        (Color::White, false) => (2, 'Q', 2, 0, 3),
        (Color::Black, true) => (4, 'k', 8, 9, 7),
        (Color::Black, false) => (8, 'q', 2, 0, 3),
    };
    let (empty_lo, empty_hi, safe_lo, safe_hi) = if kingside { (6, 8, 6, 8) } else { (1, 4, 2, 4) };
    let mut must_be_empty = 0u128;
    let mut must_be_safe = 0u128;
    let mut file = 0;
    while file < FILES {
        if file >= empty_lo && file <= empty_hi {
            must_be_empty |= Square::new(file, rank).bb().0;
        }
        if file >= safe_lo && file <= safe_hi {
            must_be_safe |= Square::new(file, rank).bb().0;
        }
        file += 1;
    }
    CastleRule {
        right,
        letter,
        king_from: Square::new(5, rank),
        king_to: Square::new(king_to, rank),
        rook_from: Square::new(rook_from, rank),
        rook_to: Square::new(rook_to, rank),
        must_be_empty: Bitboard(must_be_empty),
        must_be_safe: Bitboard(must_be_safe),
    }
}

/// `[color][kingside, queenside]`, in FEN order `K Q k q`.
static CASTLES: [[CastleRule; 2]; 2] = [
    [castle_rule(Color::White, true), castle_rule(Color::White, false)],
    [castle_rule(Color::Black, true), castle_rule(Color::Black, false)],
];

/// The rule of `color`'s castling move `m` (found by the king's destination).
fn castle_rule_of(color: Color, m: Move) -> &'static CastleRule {
    CASTLES[color.index()].iter().find(|r| r.king_to == m.to).expect("a castling move lands on a rule's square")
}

/// Castling rights kept when a piece leaves or lands on each square.
static CASTLING_KEPT: [u8; SQUARES] = {
    let mut kept = [15u8; SQUARES];
    let mut c = 0;
    while c < 2 {
        let mut side = 0;
        while side < 2 {
            let rule = &CASTLES[c][side];
            kept[rule.king_from.index()] &= !rule.right;
            kept[rule.rook_from.index()] &= !rule.right;
            side += 1;
        }
        c += 1;
    }
    kept
};

/// Squares where `(file + rank)` is odd: the light squares (a1 is dark).
const LIGHT_SQUARES: Bitboard = {
    let mut bits = 0u128;
    let mut sq = 0;
    while sq < SQUARES {
        if (sq % FILES + sq / FILES) % 2 == 1 {
            bits |= 1u128 << sq;
        }
        sq += 1;
    }
    Bitboard(bits)
};

const FILE_A: Bitboard = {
    let mut bits = 0u128;
    let mut rank = 0;
    while rank < RANKS {
        bits |= 1u128 << (rank * FILES);
        rank += 1;
    }
    Bitboard(bits)
};
const FILE_J: Bitboard = Bitboard(FILE_A.0 << (FILES - 1));

static POLICY: LazyLock<PolicyMap> = LazyLock::new(|| PolicyMap::build(FILES, RANKS, &['q', 'r', 'b', 'a', 'c']));

/// A Capablanca chess position (no history: see [`History`](crate::History)).
///
/// ```
/// use capa_rules::{Game, capablanca::Capablanca, perft};
/// let pos = Capablanca::startpos();
/// assert_eq!(perft(&pos, 2), 784);
/// assert_eq!(pos.fen(), "rnabqkbcnr/pppppppppp/10/10/10/10/PPPPPPPPPP/RNABQKBCNR w KQkq - 0 1");
/// ```
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct Capablanca {
    by_color: [Bitboard; 2],
    by_role: [Bitboard; 8],
    board: [Option<Piece>; SQUARES],
    turn: Color,
    /// Bits: 1 white O-O, 2 white O-O-O, 4 black O-O, 8 black O-O-O.
    castling: u8,
    /// Set after a double step when an enemy pawn attacks the square passed
    /// over, legal capture or not: Fairy-Stockfish writes it in the FEN then.
    /// The hash counts it only when the capture is legal (see `hashed_ep_file`).
    ep_square: Option<Square>,
    halfmove_clock: u32,
    fullmove_number: u32,
    hash: u64,
}

/// Receives generated moves: a list collects them, a counter only counts.
trait MoveSink {
    /// Ordinary moves of the piece on `from` to each of `targets`.
    fn targets(&mut self, from: Square, targets: Bitboard);
    /// Pawn moves to each of `targets`, each from `delta` squares back; on
    /// the last rank, one move per promotion piece.
    fn pawn_targets(&mut self, targets: Bitboard, delta: i32, promote: bool);
    /// One special move (castling, en passant).
    fn one(&mut self, m: Move);
}

impl MoveSink for MoveList<Move> {
    #[inline]
    fn targets(&mut self, from: Square, targets: Bitboard) {
        for to in targets {
            self.push(Move { from, to, kind: MoveKind::Normal });
        }
    }

    #[inline]
    fn pawn_targets(&mut self, targets: Bitboard, delta: i32, promote: bool) {
        for to in targets {
            let from = Square::from_index_unchecked((to.index() as i32 - delta) as u32);
            if promote {
                for role in Role::PROMOTIONS {
                    self.push(Move { from, to, kind: MoveKind::Promotion(role) });
                }
            } else {
                self.push(Move { from, to, kind: MoveKind::Normal });
            }
        }
    }

    #[inline]
    fn one(&mut self, m: Move) {
        self.push(m);
    }
}

/// Counts moves without building them: perft's last ply.
struct Counter(usize);

impl MoveSink for Counter {
    #[inline]
    fn targets(&mut self, _: Square, targets: Bitboard) {
        self.0 += targets.count();
    }

    #[inline]
    fn pawn_targets(&mut self, targets: Bitboard, _: i32, promote: bool) {
        self.0 += targets.count() * if promote { Role::PROMOTIONS.len() } else { 1 };
    }

    #[inline]
    fn one(&mut self, _: Move) {
        self.0 += 1;
    }
}

impl Capablanca {
    /// The policy map: the network's move vocabulary, Lc0's rule on this board.
    pub fn policy_map() -> &'static PolicyMap {
        &POLICY
    }

    fn empty() -> Capablanca {
        Capablanca {
            by_color: [Bitboard::EMPTY; 2],
            by_role: [Bitboard::EMPTY; 8],
            board: [None; SQUARES],
            turn: Color::White,
            castling: 0,
            ep_square: None,
            halfmove_clock: 0,
            fullmove_number: 1,
            hash: 0,
        }
    }

    /// The piece on `sq`, if any.
    #[inline]
    pub fn piece_at(&self, sq: Square) -> Option<Piece> {
        self.board[sq.index()]
    }

    /// The squares of `color`'s pieces of kind `role`.
    #[inline]
    pub fn pieces(&self, color: Color, role: Role) -> Bitboard {
        self.by_color[color.index()] & self.by_role[role.index()]
    }

    /// The squares of all of `color`'s pieces.
    #[inline]
    pub fn by_color(&self, color: Color) -> Bitboard {
        self.by_color[color.index()]
    }

    /// Every occupied square.
    #[inline]
    pub fn occupied(&self) -> Bitboard {
        self.by_color[0] | self.by_color[1]
    }

    /// The castling rights still held, as FEN letters (`KQkq` order, `-` if none).
    pub fn castling_rights(&self) -> String {
        let letters: String =
            CASTLES.iter().flatten().filter(|rule| self.castling & rule.right != 0).map(|rule| rule.letter).collect();
        if letters.is_empty() { "-".to_string() } else { letters }
    }

    /// Whether `color` may still castle on that side (`kingside` or queenside).
    pub fn can_castle(&self, color: Color, kingside: bool) -> bool {
        self.castling & CASTLES[color.index()][usize::from(!kingside)].right != 0
    }

    /// The en passant square: the square a pawn just passed over, when an
    /// enemy pawn attacks it (the capture may still be illegal).
    pub fn ep_square(&self) -> Option<Square> {
        self.ep_square
    }

    #[inline]
    fn king(&self, color: Color) -> Square {
        self.pieces(color, Role::King).single()
    }

    #[inline]
    fn roles(&self, a: Role, b: Role, c: Role) -> Bitboard {
        self.by_role[a.index()] | self.by_role[b.index()] | self.by_role[c.index()]
    }

    fn put(&mut self, sq: Square, piece: Piece) {
        self.board[sq.index()] = Some(piece);
        self.by_color[piece.color.index()] |= sq.bb();
        self.by_role[piece.role.index()] |= sq.bb();
        self.hash ^= zobrist::piece(piece, sq.index());
    }

    fn take(&mut self, sq: Square) -> Piece {
        let piece = self.board[sq.index()].take().expect("a piece on the square a legal move names");
        self.by_color[piece.color.index()] ^= sq.bb();
        self.by_role[piece.role.index()] ^= sq.bb();
        self.hash ^= zobrist::piece(piece, sq.index());
        piece
    }

    /// Pieces of either color standing where a knight, king or `attacker`'s
    /// pawn attacking `sq` would stand.
    #[inline]
    fn leapers_towards(&self, sq: Square, attacker: Color) -> Bitboard {
        (knight_attacks(sq) & self.roles(Role::Knight, Role::Archbishop, Role::Chancellor))
            | (king_attacks(sq) & self.by_role[Role::King.index()])
            | (pawn_attacks(!attacker, sq) & self.by_role[Role::Pawn.index()])
    }

    #[inline]
    fn rook_movers(&self) -> Bitboard {
        self.roles(Role::Rook, Role::Queen, Role::Chancellor)
    }

    #[inline]
    fn bishop_movers(&self) -> Bitboard {
        self.roles(Role::Bishop, Role::Queen, Role::Archbishop)
    }

    /// `attacker`'s pieces among `mask` that attack `sq`, with `occupied` blocking sliders.
    #[inline]
    fn attackers(&self, sq: Square, attacker: Color, mask: Bitboard, occupied: Bitboard) -> Bitboard {
        let sliders =
            (rook_attacks(sq, occupied) & self.rook_movers()) | (bishop_attacks(sq, occupied) & self.bishop_movers());
        (self.leapers_towards(sq, attacker) | sliders) & mask & self.by_color[attacker.index()]
    }

    /// Whether `attacker` attacks `sq`; the cheap leapers first.
    #[inline]
    fn is_attacked(&self, sq: Square, attacker: Color, occupied: Bitboard) -> bool {
        let theirs = self.by_color[attacker.index()];
        !(self.leapers_towards(sq, attacker) & theirs).is_empty()
            || !(rook_attacks(sq, occupied) & self.rook_movers() & theirs).is_empty()
            || !(bishop_attacks(sq, occupied) & self.bishop_movers() & theirs).is_empty()
    }

    /// The enemy pieces giving check to the side to move.
    #[inline]
    fn checkers(&self) -> Bitboard {
        self.attackers(self.king(self.turn), !self.turn, Bitboard::ALL, self.occupied())
    }

    /// Our pieces that shield our king from an enemy slider.
    #[inline]
    fn pinned(&self, us: Color, king: Square) -> Bitboard {
        let theirs = self.by_color[(!us).index()];
        let snipers = ((rook_attacks(king, Bitboard::EMPTY) & self.rook_movers())
            | (bishop_attacks(king, Bitboard::EMPTY) & self.bishop_movers()))
            & theirs;
        let occupied = self.occupied();
        let mut pinned = Bitboard::EMPTY;
        for sniper in snipers {
            let blockers = between(king, sniper) & occupied;
            if !blockers.is_empty() && !blockers.more_than_one() {
                pinned |= blockers & self.by_color[us.index()];
            }
        }
        pinned
    }

    #[inline]
    fn piece_attacks(role: Role, sq: Square, occupied: Bitboard) -> Bitboard {
        match role {
            Role::Knight => knight_attacks(sq),
            Role::Bishop => bishop_attacks(sq, occupied),
            Role::Rook => rook_attacks(sq, occupied),
            Role::Queen => rook_attacks(sq, occupied) | bishop_attacks(sq, occupied),
            Role::Archbishop => bishop_attacks(sq, occupied) | knight_attacks(sq),
            Role::Chancellor => rook_attacks(sq, occupied) | knight_attacks(sq),
            Role::King => king_attacks(sq),
            Role::Pawn => Bitboard::EMPTY,
        }
    }

    /// Generates every legal move into `sink`.
    #[inline]
    fn generate<S: MoveSink>(&self, sink: &mut S) {
        let us = self.turn;
        let them = !us;
        let ours = self.by_color[us.index()];
        let theirs = self.by_color[them.index()];
        let occupied = ours | theirs;
        let king = self.king(us);
        let checkers = self.attackers(king, them, Bitboard::ALL, occupied);

        let without_king = occupied ^ king.bb();
        let mut king_targets = king_attacks(king) & !ours;
        let mut safe = Bitboard::EMPTY;
        while let Some(to) = king_targets.pop() {
            if !self.is_attacked(to, them, without_king) {
                safe |= to.bb();
            }
        }
        sink.targets(king, safe);
        if checkers.more_than_one() {
            return;
        }

        // Non-king moves must land on `target`: anywhere not ours, or, in
        // check, on the checker or between it and the king.
        let target = match checkers.first() {
            None => !ours,
            Some(checker) => between(king, checker) | checker.bb(),
        };
        let pinned = self.pinned(us, king);

        for role in [Role::Knight, Role::Bishop, Role::Rook, Role::Queen, Role::Archbishop, Role::Chancellor] {
            for from in self.pieces(us, role) {
                let mut targets = Self::piece_attacks(role, from, occupied) & target;
                if pinned.contains(from) {
                    targets &= line(king, from);
                }
                sink.targets(from, targets);
            }
        }

        self.generate_pawn_moves(sink, target, pinned, king);

        if checkers.is_empty() {
            for rule in &CASTLES[us.index()] {
                if self.castling & rule.right != 0
                    && (occupied & rule.must_be_empty).is_empty()
                    && !rule.must_be_safe.into_iter().any(|sq| self.is_attacked(sq, them, occupied))
                {
                    sink.one(Move { from: rule.king_from, to: rule.king_to, kind: MoveKind::Castle });
                }
            }
        }

        if let Some(ep) = self.ep_square {
            for from in self.en_passant_captures(ep) {
                sink.one(Move { from, to: ep, kind: MoveKind::EnPassant });
            }
        }
    }

    /// The side to move's pawns that can legally take en passant on `ep`.
    ///
    /// Tested by playing the capture out: taking two pawns off one rank can
    /// expose the king in ways that pins do not capture. En passant is rare,
    /// so the cost does not show.
    fn en_passant_captures(&self, ep: Square) -> Bitboard {
        let us = self.turn;
        let them = !us;
        let king = self.king(us);
        let captured = Square::new(
            ep.file(),
            match us {
                Color::White => ep.rank() - 1,
                Color::Black => ep.rank() + 1,
            },
        );
        let mut legal = Bitboard::EMPTY;
        for from in pawn_attacks(them, ep) & self.pieces(us, Role::Pawn) {
            let after = self.occupied() ^ from.bb() ^ ep.bb() ^ captured.bb();
            if self.attackers(king, them, !captured.bb(), after).is_empty() {
                legal |= from.bb();
            }
        }
        legal
    }

    #[inline]
    fn generate_pawn_moves<S: MoveSink>(&self, sink: &mut S, target: Bitboard, pinned: Bitboard, king: Square) {
        let us = self.turn;
        let pawns = self.pieces(us, Role::Pawn);
        let theirs = self.by_color[(!us).index()];
        let empty = !self.occupied();
        let (up, double_rank, last_rank) = match us {
            Color::White => (FILES as i32, Bitboard::rank(2), Bitboard::rank(RANKS - 1)),
            Color::Black => (-(FILES as i32), Bitboard::rank(RANKS - 3), Bitboard::rank(0)),
        };

        let mut emit = |targets: Bitboard, delta: i32| {
            sink.pawn_targets(targets & !last_rank, delta, false);
            sink.pawn_targets(targets & last_rank, delta, true);
        };

        let free = pawns & !pinned;
        let single = free.shift(up) & empty;
        let double = (single & double_rank).shift(up) & empty;
        emit(single & target, up);
        emit(double & target, 2 * up);
        emit((free & !FILE_A).shift(up - 1) & theirs & target, up - 1);
        emit((free & !FILE_J).shift(up + 1) & theirs & target, up + 1);

        // A pinned pawn moves only along the pin line; there are rarely any.
        for from in pawns & pinned {
            let pawn = from.bb();
            let single = pawn.shift(up) & empty;
            let double = (single & double_rank).shift(up) & empty;
            let captures = pawn_attacks(us, from) & theirs;
            let allowed = target & line(king, from);
            emit(single & allowed, up);
            emit(double & allowed, 2 * up);
            for to in captures & allowed {
                emit(to.bb(), to.index() as i32 - from.index() as i32);
            }
        }
    }

    /// The hash computed from scratch; `play` keeps [`Game::hash`] equal to it incrementally.
    pub fn hash_from_scratch(&self) -> u64 {
        let mut hash = zobrist::side(self.turn) ^ zobrist::castling(self.castling) ^ self.en_passant_key();
        for sq in self.occupied() {
            hash ^= zobrist::piece(self.board[sq.index()].expect("occupied"), sq.index());
        }
        hash
    }

    fn is_insufficient_material(&self) -> bool {
        let heavy = self.by_role[Role::Pawn.index()]
            | self.roles(Role::Rook, Role::Queen, Role::Archbishop)
            | self.by_role[Role::Chancellor.index()];
        if !heavy.is_empty() {
            return false;
        }
        let knights = self.by_role[Role::Knight.index()];
        let bishops = self.by_role[Role::Bishop.index()];
        (knights | bishops).count() <= 1
            || (knights.is_empty() && ((bishops & LIGHT_SQUARES).is_empty() || (bishops & !LIGHT_SQUARES).is_empty()))
    }

    /// Records `ep` as the en passant square if a pawn of the side to move attacks it.
    fn set_en_passant(&mut self, ep: Square) {
        if !(pawn_attacks(!self.turn, ep) & self.pieces(self.turn, Role::Pawn)).is_empty() {
            self.ep_square = Some(ep);
            self.hash ^= self.en_passant_key();
        }
    }

    /// The en passant part of the hash: the file's key when a legal capture
    /// exists. Repetition is about the moves a position allows, so a capture
    /// that is pinned away must not make two positions differ.
    #[inline]
    fn en_passant_key(&self) -> u64 {
        match self.ep_square {
            Some(ep) if !self.en_passant_captures(ep).is_empty() => zobrist::en_passant_file(ep.file()),
            _ => 0,
        }
    }

    fn parse_fen(fen: &str) -> Result<Capablanca, FenErrorKind> {
        let fields = split_fen(fen, FILES, RANKS, "pnbrqkac")?;
        let mut pos = Capablanca::empty();
        for (file, rank, c) in fields.pieces {
            let role = Role::from_char(c).expect("split_fen admits only listed letters");
            let color = if c.is_ascii_uppercase() { Color::White } else { Color::Black };
            pos.put(Square::new(file, rank), Piece { color, role });
        }
        for color in Color::ALL {
            let count = pos.pieces(color, Role::King).count();
            if count != 1 {
                return Err(FenErrorKind::KingCount { color, count });
            }
        }
        if let Some(sq) = (pos.by_role[Role::Pawn.index()] & (Bitboard::rank(0) | Bitboard::rank(RANKS - 1))).first() {
            return Err(FenErrorKind::PawnOnBackRank { square: sq.to_string() });
        }
        pos.turn = fields.turn;
        pos.castling = pos.parse_castling(fields.castling)?;
        let ep = pos.parse_en_passant(fields.en_passant)?;
        pos.halfmove_clock = fields.halfmove_clock;
        pos.fullmove_number = fields.fullmove_number;
        let them = !pos.turn;
        if pos.is_attacked(pos.king(them), pos.turn, pos.occupied()) {
            return Err(FenErrorKind::OpponentInCheck);
        }
        if pos.checkers().count() > 2 {
            return Err(FenErrorKind::ImpossibleCheck);
        }
        pos.hash = pos.hash_from_scratch();
        if let Some(ep) = ep {
            pos.set_en_passant(ep);
        }
        Ok(pos)
    }

    fn parse_castling(&self, field: &str) -> Result<u8, FenErrorKind> {
        let bad = |reason: String| FenErrorKind::Castling { field: field.to_string(), reason };
        if field == "-" {
            return Ok(0);
        }
        let mut rights = 0u8;
        for c in field.chars() {
            let color = if c.is_ascii_uppercase() { Color::White } else { Color::Black };
            // `K`/`Q`, or the rook's file as in X-FEN/Shredder-FEN (`J` / `A`).
            let kingside = match c.to_ascii_lowercase() {
                'k' | 'j' => true,
                'q' | 'a' => false,
                _ => {
                    return Err(bad(format!(
                        "'{c}' is not a castling right (use K, Q, k, q, or the rook files J, A, j, a)"
                    )));
                }
            };
            let rule = &CASTLES[color.index()][usize::from(!kingside)];
            if rights & rule.right != 0 {
                return Err(bad(format!("the right '{c}' is given twice")));
            }
            let king = Piece { color, role: Role::King };
            let rook = Piece { color, role: Role::Rook };
            if self.piece_at(rule.king_from) != Some(king) || self.piece_at(rule.rook_from) != Some(rook) {
                return Err(bad(format!(
                    "'{c}' needs the {color:?} king on {} and a rook on {}",
                    rule.king_from, rule.rook_from
                )));
            }
            rights |= rule.right;
        }
        Ok(rights)
    }

    fn parse_en_passant(&self, field: &str) -> Result<Option<Square>, FenErrorKind> {
        if field == "-" {
            return Ok(None);
        }
        let bad = |reason: &str| FenErrorKind::EnPassant { square: field.to_string(), reason: reason.to_string() };
        let (file, rank) = parse_square(field, FILES, RANKS).ok_or_else(|| bad("not a square of the 10x8 board"))?;
        let ep = Square::new(file, rank);
        let (ep_rank, pawn_rank, origin_rank) = match self.turn {
            Color::White => (RANKS - 3, RANKS - 4, RANKS - 2),
            Color::Black => (2, 3, 1),
        };
        if rank != ep_rank {
            return Err(bad(&format!("with {:?} to move it must be on rank {}", self.turn, ep_rank + 1)));
        }
        let pushed = Piece { color: !self.turn, role: Role::Pawn };
        if self.piece_at(Square::new(file, pawn_rank)) != Some(pushed) {
            return Err(bad("no pawn stands on the square in front of it"));
        }
        if self.piece_at(ep).is_some() || self.piece_at(Square::new(file, origin_rank)).is_some() {
            return Err(bad("the squares the pawn passed over are not empty"));
        }
        Ok(Some(ep))
    }
}

impl Game for Capablanca {
    type Move = Move;

    const KIND: GameKind = GameKind::Capablanca;
    const FILES: usize = FILES;
    const RANKS: usize = RANKS;

    fn startpos() -> Capablanca {
        Capablanca::parse_fen("rnabqkbcnr/pppppppppp/10/10/10/10/PPPPPPPPPP/RNABQKBCNR w KQkq - 0 1")
            .expect("the start position parses")
    }

    fn from_fen(fen: &str) -> Result<Capablanca, FenError> {
        Capablanca::parse_fen(fen).map_err(|kind| FenError { fen: fen.to_string(), kind })
    }

    fn fen(&self) -> String {
        let mut placement = String::new();
        for rank in (0..RANKS).rev() {
            let mut empty = 0;
            for file in 0..FILES {
                match self.board[Square::new(file, rank).index()] {
                    None => empty += 1,
                    Some(piece) => {
                        if empty > 0 {
                            placement += &empty.to_string();
                            empty = 0;
                        }
                        placement.push(piece.char());
                    }
                }
            }
            if empty > 0 {
                placement += &empty.to_string();
            }
            if rank > 0 {
                placement.push('/');
            }
        }
        let ep = self.ep_square.map_or_else(|| "-".to_string(), |sq| sq.to_string());
        format!(
            "{placement} {} {} {ep} {} {}",
            self.turn.fen_char(),
            self.castling_rights(),
            self.halfmove_clock,
            self.fullmove_number
        )
    }

    #[inline]
    fn legal_moves(&self, out: &mut MoveList<Move>) {
        out.clear();
        self.generate(out);
    }

    #[inline]
    fn count_legal_moves(&self) -> usize {
        let mut counter = Counter(0);
        self.generate(&mut counter);
        counter.0
    }

    fn play(&mut self, m: Move) {
        let us = self.turn;
        self.hash ^= self.en_passant_key();
        self.ep_square = None;
        let moving = self.take(m.from);
        let mut double_step = None;
        self.halfmove_clock += 1;
        if moving.role == Role::Pawn {
            self.halfmove_clock = 0;
        }
        match m.kind {
            MoveKind::Normal | MoveKind::Promotion(_) => {
                if self.board[m.to.index()].is_some() {
                    self.take(m.to);
                    self.halfmove_clock = 0;
                }
                let role = m.promotion().unwrap_or(moving.role);
                self.put(m.to, Piece { color: us, role });
                if moving.role == Role::Pawn && m.from.index().abs_diff(m.to.index()) == 2 * FILES {
                    double_step = Some(Square::from_index_unchecked(((m.from.index() + m.to.index()) / 2) as u32));
                }
            }
            MoveKind::EnPassant => {
                let captured = Square::new(m.to.file(), m.from.rank());
                self.take(captured);
                self.put(m.to, moving);
            }
            MoveKind::Castle => {
                let rule = castle_rule_of(us, m);
                let rook = self.take(rule.rook_from);
                self.put(rule.king_to, moving);
                self.put(rule.rook_to, rook);
            }
        }
        let kept = self.castling & CASTLING_KEPT[m.from.index()] & CASTLING_KEPT[m.to.index()];
        if kept != self.castling {
            self.hash ^= zobrist::castling(self.castling) ^ zobrist::castling(kept);
            self.castling = kept;
        }
        if us == Color::Black {
            self.fullmove_number += 1;
        }
        self.turn = !us;
        self.hash ^= zobrist::side(Color::Black);
        if let Some(ep) = double_step {
            self.set_en_passant(ep);
        }
    }

    fn outcome_given(&self, has_legal_moves: bool) -> Option<Outcome> {
        chess_like_outcome(has_legal_moves, self.is_check(), self.is_insufficient_material(), self.halfmove_clock)
    }

    fn is_check(&self) -> bool {
        !self.checkers().is_empty()
    }

    fn material(&self, color: Color) -> u32 {
        Role::ALL.into_iter().map(|role| role.value() * self.pieces(color, role).count() as u32).sum()
    }

    #[inline]
    fn hash(&self) -> u64 {
        self.hash
    }

    #[inline]
    fn turn(&self) -> Color {
        self.turn
    }

    fn ply(&self) -> u32 {
        ply_from_fullmove(self.fullmove_number, self.turn)
    }

    fn halfmove_clock(&self) -> u32 {
        self.halfmove_clock
    }

    /// Bits 0-6 the from-square, 7-13 the to-square, 14-15 the kind. A
    /// promotion's to-square is on the last rank, so its bits hold the file
    /// (7-10) and the new role (11-13) instead.
    #[inline]
    fn pack_move(m: Move) -> u16 {
        let (kind, to) = match m.kind {
            MoveKind::Normal => (0, m.to.index()),
            MoveKind::EnPassant => (1, m.to.index()),
            MoveKind::Castle => (2, m.to.index()),
            MoveKind::Promotion(role) => (3, m.to.file() | role.index() << 4),
        };
        (m.from.index() | to << 7 | kind << 14) as u16
    }

    #[inline]
    fn unpack_move(&self, packed: u16) -> Move {
        let square = |bits: u16| Square::from_index_unchecked(u32::from(bits & 127).min(SQUARES as u32 - 1));
        let from = square(packed);
        let to_bits = packed >> 7 & 127;
        let (to, kind) = match packed >> 14 {
            0 => (square(to_bits), MoveKind::Normal),
            1 => (square(to_bits), MoveKind::EnPassant),
            2 => (square(to_bits), MoveKind::Castle),
            _ => {
                let rank = if from.rank() == RANKS - 2 { RANKS - 1 } else { 0 };
                let file = usize::from(to_bits & 15).min(FILES - 1);
                (Square::new(file, rank), MoveKind::Promotion(Role::ALL[usize::from(to_bits >> 4 & 7)]))
            }
        };
        Move { from, to, kind }
    }

    fn parse_move(&self, uci: &str) -> Result<Move, MoveError> {
        let parts = split_uci(uci, FILES, RANKS, "qrbnac")?;
        let from = Square::new(parts.from.0, parts.from.1);
        let to = Square::new(parts.to.0, parts.to.1);
        let promotion = parts.promotion.and_then(Role::from_char);
        let mut moves = MoveList::new();
        self.legal_moves(&mut moves);
        moves
            .iter()
            .copied()
            .find(|m| m.from == from && m.to == to && m.promotion() == promotion)
            .ok_or_else(|| MoveError::Illegal { uci: uci.to_string(), fen: self.fen() })
    }

    fn san(&self, m: Move) -> String {
        let mut san = String::new();
        match m.kind {
            MoveKind::Castle => san.push_str(if m.to.file() > m.from.file() { "O-O" } else { "O-O-O" }),
            _ => {
                let role = self.piece_at(m.from).expect("a legal move moves a piece").role;
                let capture = m.kind == MoveKind::EnPassant || self.piece_at(m.to).is_some();
                if role == Role::Pawn {
                    if capture {
                        san.push(char::from(b'a' + m.from.file() as u8));
                    }
                } else {
                    san.push(role.char().to_ascii_uppercase());
                    let mut moves = MoveList::new();
                    self.legal_moves(&mut moves);
                    let rivals: Vec<Square> = moves
                        .iter()
                        .filter(|o| o.to == m.to && o.from != m.from && o.kind != MoveKind::Castle)
                        .filter(|o| self.piece_at(o.from).is_some_and(|p| p.role == role))
                        .map(|o| o.from)
                        .collect();
                    let name = m.from.to_string();
                    let (file, rank) = name.split_at(1);
                    if !rivals.is_empty() {
                        if rivals.iter().all(|r| r.file() != m.from.file()) {
                            san.push_str(file);
                        } else if rivals.iter().all(|r| r.rank() != m.from.rank()) {
                            san.push_str(rank);
                        } else {
                            san.push_str(&name);
                        }
                    }
                }
                if capture {
                    san.push('x');
                }
                san.push_str(&m.to.to_string());
                if let Some(role) = m.promotion() {
                    san.push('=');
                    san.push(role.char().to_ascii_uppercase());
                }
            }
        }
        let mut after = *self;
        after.play(m);
        if after.is_check() {
            san.push(if after.count_legal_moves() == 0 { '#' } else { '+' });
        }
        san
    }

    fn policy_size() -> usize {
        POLICY.len()
    }

    fn policy_index(&self, m: Move) -> usize {
        // Castling is indexed as the king taking its own rook, as Lc0 does.
        let to = match m.kind {
            MoveKind::Castle => castle_rule_of(self.turn, m).rook_from,
            _ => m.to,
        };
        let (from, to) = match self.turn {
            Color::White => (m.from, to),
            Color::Black => (m.from.flip_vertical(), to.flip_vertical()),
        };
        let promotion = m.promotion().map(Role::char);
        POLICY.index(from.index(), to.index(), promotion).expect("every legal move has a policy index")
    }
}

impl fmt::Debug for Capablanca {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Capablanca({})", self.fen())
    }
}

impl Default for Capablanca {
    fn default() -> Capablanca {
        Capablanca::startpos()
    }
}
