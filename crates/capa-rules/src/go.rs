//! Go on an N x N board (9x9, 13x13, 19x19): captures, suicide forbidden,
//! simple ko or positional superko, passes, and area scoring with komi.
//!
//! The game ends when both players pass in a row; it is then scored by area
//! (Tromp-Taylor counting: a player's stones, plus every empty point that
//! reaches only that player's stones), white adding komi. A game played out,
//! with every dead stone captured, scores the same under Chinese rules.
//!
//! Points are numbered `row * N + column` from A1 (bottom left); moves are
//! written as GTP vertices (`D4`, `pass`; the column letters skip `I`). The
//! player with the black stones moves first: [`Color::Black`].
//!
//! A position's text form (what [`Game::fen`] writes and [`Game::from_fen`]
//! reads) is modelled on FEN: the rows from the top, `X` black, `O` white,
//! digits for runs of empty points, `/` between rows; then the side to move
//! (`b` or `w`), the ko point (`-` for none), the passes in a row, the komi,
//! the ko rule (`simple` or `superko`) and the plies played, e.g.
//! `9/9/9/9/4X4/9/9/9/9 w - 0 7.5 simple 1`. Only the rows and the side are
//! required. A position read from text starts a fresh superko history.

use std::fmt;
use std::sync::Arc;

use crate::game::{GameResult, Outcome, Termination};
use crate::{Color, FenError, FenErrorKind, Game, GameKind, MoveError, MoveList};

/// Go on 9x9.
pub type Go9 = Go<9>;
/// Go on 13x13.
pub type Go13 = Go<13>;
/// Go on 19x19.
pub type Go19 = Go<19>;

/// The largest board: 19x19.
const MAX_POINTS: usize = 19 * 19;
/// The column letters of GTP and most Go programs: `I` is skipped.
const COLUMNS: &[u8; 25] = b"ABCDEFGHJKLMNOPQRSTUVWXYZ";

/// What may stop a move from repeating an earlier position.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum KoRule {
    /// Only the immediate recapture of a single stone is forbidden (GNU Go,
    /// Chinese rules as computers play them). Longer cycles are possible.
    #[default]
    Simple,
    /// No move may recreate the stones of any earlier position of the game
    /// (Tromp-Taylor).
    PositionalSuperko,
}

impl KoRule {
    /// The name in the position's text form and in configs.
    pub const fn name(self) -> &'static str {
        match self {
            KoRule::Simple => "simple",
            KoRule::PositionalSuperko => "superko",
        }
    }

    /// Reads [`KoRule::name`]; `positional-superko` and `tromp-taylor` too.
    pub fn parse(text: &str) -> Option<KoRule> {
        match text {
            "simple" | "chinese" => Some(KoRule::Simple),
            "superko" | "positional-superko" | "tromp-taylor" => Some(KoRule::PositionalSuperko),
            _ => None,
        }
    }
}

/// A point's content.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Cell {
    /// No stone.
    #[default]
    Empty,
    /// A black stone.
    Black,
    /// A white stone.
    White,
}

impl Cell {
    /// The stone of `color`.
    pub const fn stone(color: Color) -> Cell {
        match color {
            Color::White => Cell::White,
            Color::Black => Cell::Black,
        }
    }

    /// The stone's owner; `None` for an empty point.
    pub const fn color(self) -> Option<Color> {
        match self {
            Cell::Empty => None,
            Cell::Black => Some(Color::Black),
            Cell::White => Some(Color::White),
        }
    }
}

/// A move: a stone on a point, or a pass.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct GoMove<const N: usize>(u16);

impl<const N: usize> GoMove<N> {
    /// The pass.
    pub const PASS: GoMove<N> = GoMove((N * N) as u16);

    /// A stone on `point` (`row * N + column`).
    ///
    /// # Panics
    /// If `point` is off the board.
    pub fn at(point: usize) -> GoMove<N> {
        assert!(point < N * N, "point {point} is off a {N}x{N} board");
        GoMove(point as u16)
    }

    /// The point played, `None` for a pass.
    pub const fn point(self) -> Option<usize> {
        if self.0 as usize == N * N { None } else { Some(self.0 as usize) }
    }

    /// Whether this is the pass.
    pub const fn is_pass(self) -> bool {
        self.0 as usize == N * N
    }

    /// Reads a GTP vertex (`D4`, `d4`, `pass`), checking only that it lies on the board.
    ///
    /// # Errors
    /// [`MoveError::Malformed`] naming what is wrong.
    pub fn parse_vertex(text: &str) -> Result<GoMove<N>, MoveError> {
        let malformed = |reason: String| MoveError::Malformed { uci: text.to_string(), reason };
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("pass") {
            return Ok(GoMove::PASS);
        }
        let mut chars = trimmed.chars();
        let letter = chars.next().ok_or_else(|| malformed("empty".to_string()))?.to_ascii_uppercase();
        let column = COLUMNS[..N].iter().position(|&c| char::from(c) == letter).ok_or_else(|| {
            malformed(format!("column '{letter}' is not one of A to {} (no I)", char::from(COLUMNS[N - 1])))
        })?;
        let digits = chars.as_str();
        let row = digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse::<usize>().ok())
            .flatten()
            .filter(|row| (1..=N).contains(row))
            .ok_or_else(|| malformed(format!("row '{digits}' is not a number from 1 to {N}")))?;
        Ok(GoMove(((row - 1) * N + column) as u16))
    }
}

impl<const N: usize> fmt::Display for GoMove<N> {
    /// The GTP vertex: `D4`, or `pass`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.point() {
            None => f.write_str("pass"),
            Some(point) => write!(f, "{}{}", char::from(COLUMNS[point % N]), point / N + 1),
        }
    }
}

impl<const N: usize> fmt::Debug for GoMove<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Zobrist keys, the same for every board size: a stone of each color on
/// each point, a ko point, the side to move, and one or two passes in a row.
struct Keys {
    stones: [[u64; MAX_POINTS]; 2],
    ko: [u64; MAX_POINTS],
    black_to_move: u64,
    passes: [u64; 3],
}

const KEYS: Keys = {
    const fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let mut state = 0x60_0d_ca_fe_u64;
    let mut keys = Keys { stones: [[0; MAX_POINTS]; 2], ko: [0; MAX_POINTS], black_to_move: 0, passes: [0; 3] };
    let mut i = 0;
    while i < MAX_POINTS {
        keys.stones[0][i] = splitmix(&mut state);
        keys.stones[1][i] = splitmix(&mut state);
        keys.ko[i] = splitmix(&mut state);
        i += 1;
    }
    keys.black_to_move = splitmix(&mut state);
    keys.passes[1] = splitmix(&mut state);
    keys.passes[2] = splitmix(&mut state);
    keys
};

#[inline]
fn stone_key(color: Color, point: usize) -> u64 {
    KEYS.stones[color.index()][point]
}

/// A Go position: the stones, the side to move, the ko point, the passes in
/// a row, the komi and the ko rule (with, under superko, the stones of every
/// earlier position).
#[derive(Clone)]
pub struct Go<const N: usize> {
    cells: [[Cell; N]; N],
    turn: Color,
    /// The point where the side to move may not retake a ko at once.
    ko: Option<u16>,
    /// Passes in a row just before this position (2 ends the game).
    passes: u8,
    /// Komi in half points, added to white's score.
    komi_halves: i16,
    ko_rule: KoRule,
    ply: u32,
    /// Zobrist hash of the stones alone (what superko compares).
    stones_hash: u64,
    /// The move that led here, for the network's recent-move planes.
    last_move: Option<GoMove<N>>,
    /// Under superko: the stones hash of every earlier position.
    earlier: Option<Arc<Vec<u64>>>,
}

/// Groups of a board, labelled once for move generation.
struct Groups {
    /// The group of each stone (`u16::MAX` on empty points).
    label: [u16; MAX_POINTS],
    /// Liberties of each group.
    liberties: [u16; MAX_POINTS],
    /// Xor of each group's stone keys: what capturing it does to the hash.
    keys: [u64; MAX_POINTS],
}

impl<const N: usize> Go<N> {
    /// Points on the board.
    pub const POINTS: usize = N * N;

    /// The empty board, black to move, with `komi` and `ko_rule`.
    ///
    /// # Panics
    /// If `komi` is not a whole or half number within ±1000.
    pub fn empty(komi: f32, ko_rule: KoRule) -> Go<N> {
        let komi_halves = komi_to_halves(komi).expect("komi is a multiple of 0.5 within ±1000");
        let earlier = (ko_rule == KoRule::PositionalSuperko).then(|| Arc::new(Vec::new()));
        Go {
            cells: [[Cell::Empty; N]; N],
            turn: Color::Black,
            ko: None,
            passes: 0,
            komi_halves,
            ko_rule,
            ply: 0,
            stones_hash: 0,
            last_move: None,
            earlier,
        }
    }

    /// The same position with `komi` (a multiple of 0.5 within ±1000).
    ///
    /// # Errors
    /// The komi as written when it is not.
    pub fn with_komi(mut self, komi: f32) -> Result<Go<N>, String> {
        self.komi_halves =
            komi_to_halves(komi).ok_or_else(|| format!("komi {komi} is not a multiple of 0.5 within ±1000"))?;
        Ok(self)
    }

    /// The same position under `ko_rule` (a superko history starts here).
    pub fn with_ko_rule(mut self, ko_rule: KoRule) -> Go<N> {
        self.ko_rule = ko_rule;
        self.earlier = (ko_rule == KoRule::PositionalSuperko).then(|| Arc::new(Vec::new()));
        self
    }

    /// The same position with `color` to move (for setup and handicap stones).
    pub fn with_turn(mut self, color: Color) -> Go<N> {
        self.turn = color;
        self.ko = None;
        self
    }

    /// Puts `cell` on `point` whatever was there, as setup does (SGF's
    /// `AB`/`AW`/`AE`); clears the ko. Captures nothing: a setup may leave a
    /// group without liberties, which [`Go::setup_is_legal`] reports.
    pub fn set(&mut self, point: usize, cell: Cell) {
        let (row, column) = (point / N, point % N);
        if let Some(color) = self.cells[row][column].color() {
            self.stones_hash ^= stone_key(color, point);
        }
        self.cells[row][column] = cell;
        if let Some(color) = cell.color() {
            self.stones_hash ^= stone_key(color, point);
        }
        self.ko = None;
        self.last_move = None;
    }

    /// Whether every group has a liberty (a setup can make one that has none).
    pub fn setup_is_legal(&self) -> bool {
        let groups = self.groups();
        (0..N * N).all(|p| groups.label[p] == u16::MAX || groups.liberties[groups.label[p] as usize] > 0)
    }

    /// The content of `point`.
    #[inline]
    pub fn cell(&self, point: usize) -> Cell {
        self.cells[point / N][point % N]
    }

    /// The points next to `point`.
    pub fn neighbours(&self, point: usize) -> impl Iterator<Item = usize> + use<N> {
        neighbours::<N>(point)
    }

    /// The komi, added to white's score.
    pub fn komi(&self) -> f32 {
        f32::from(self.komi_halves) / 2.0
    }

    /// The ko rule.
    pub fn ko_rule(&self) -> KoRule {
        self.ko_rule
    }

    /// The point the side to move may not retake at once, if any.
    pub fn ko_point(&self) -> Option<usize> {
        self.ko.map(usize::from)
    }

    /// Passes in a row just before this position.
    pub fn passes(&self) -> u8 {
        self.passes
    }

    /// The move that led to this position, if it was reached by a move.
    pub fn last_move(&self) -> Option<GoMove<N>> {
        self.last_move
    }

    /// The liberties of the group on `point` (0 on an empty point).
    pub fn liberties(&self, point: usize) -> usize {
        if self.cell(point) == Cell::Empty {
            return 0;
        }
        self.group(point).1
    }

    /// Writes into `out` (`N * N` entries) the liberties of the group on
    /// each point, 0 on empty points.
    ///
    /// # Panics
    /// If `out` does not have `N * N` entries.
    pub fn liberty_counts(&self, out: &mut [u16]) {
        assert_eq!(out.len(), N * N, "one entry per point");
        let groups = self.groups();
        for (point, liberties) in out.iter_mut().enumerate() {
            let label = groups.label[point];
            *liberties = if label == u16::MAX { 0 } else { groups.liberties[usize::from(label)] };
        }
    }

    /// Black's area minus white's area minus komi: positive when black leads.
    pub fn score(&self) -> f32 {
        let (black, white) = self.area();
        black as f32 - white as f32 - self.komi()
    }

    /// The score as GTP's `final_score` writes it: `B+3.5`, `W+0.5`, `0`.
    pub fn score_text(&self) -> String {
        let score = self.score();
        match score.partial_cmp(&0.0) {
            Some(std::cmp::Ordering::Greater) => format!("B+{score}"),
            Some(std::cmp::Ordering::Less) => format!("W+{}", -score),
            _ => "0".to_string(),
        }
    }

    /// Each side's area: its stones plus the empty points that reach only its stones.
    pub fn area(&self) -> (u32, u32) {
        let mut owners = [None; MAX_POINTS];
        self.owners(&mut owners[..N * N]);
        let count = |color| owners.iter().filter(|&&owner| owner == Some(color)).count() as u32;
        (count(Color::Black), count(Color::White))
    }

    /// Each point's owner under area scoring: the color of its stone, or of
    /// the only color an empty point's region reaches; `None` for an empty
    /// region that reaches both colors or none (seki, dame).
    ///
    /// # Panics
    /// If `out` does not hold one entry per point.
    pub fn owners(&self, out: &mut [Option<Color>]) {
        assert_eq!(out.len(), N * N, "one owner per point");
        let mut seen = [false; MAX_POINTS];
        let mut region = [0u16; MAX_POINTS];
        for start in 0..N * N {
            if let Some(color) = self.cell(start).color() {
                out[start] = Some(color);
                continue;
            }
            if seen[start] {
                continue;
            }
            // Flood the empty region, noting which colors border it; the
            // region's points stay in `region[..size]` for the verdict.
            let (mut size, mut next, mut borders) = (1, 0, [false; 2]);
            region[0] = start as u16;
            seen[start] = true;
            while next < size {
                let point = usize::from(region[next]);
                next += 1;
                for neighbour in neighbours::<N>(point) {
                    match self.cell(neighbour).color() {
                        Some(color) => borders[color.index()] = true,
                        None if !seen[neighbour] => {
                            seen[neighbour] = true;
                            region[size] = neighbour as u16;
                            size += 1;
                        }
                        None => {}
                    }
                }
            }
            let owner = match borders {
                [true, false] => Some(Color::White),
                [false, true] => Some(Color::Black),
                _ => None,
            };
            for &point in &region[..size] {
                out[usize::from(point)] = owner;
            }
        }
    }

    /// The stones and the liberties of the group on `point` (a stone).
    fn group(&self, point: usize) -> (Vec<usize>, usize) {
        let cell = self.cell(point);
        let mut seen = [false; MAX_POINTS];
        let mut liberty = [false; MAX_POINTS];
        let (mut stones, mut liberties, mut next_index) = (vec![point], 0, 0);
        seen[point] = true;
        while next_index < stones.len() {
            let p = stones[next_index];
            next_index += 1;
            for q in neighbours::<N>(p) {
                let c = self.cell(q);
                if c == cell && !seen[q] {
                    seen[q] = true;
                    stones.push(q);
                } else if c == Cell::Empty && !liberty[q] {
                    liberty[q] = true;
                    liberties += 1;
                }
            }
        }
        (stones, liberties)
    }

    /// Whether the group on `point` has a liberty, stopping at the first.
    fn has_liberty(&self, point: usize) -> bool {
        let cell = self.cell(point);
        let mut seen = [false; MAX_POINTS];
        let mut stack = [0u16; MAX_POINTS];
        let mut top = 1;
        stack[0] = point as u16;
        seen[point] = true;
        while top > 0 {
            top -= 1;
            for q in neighbours::<N>(usize::from(stack[top])) {
                let c = self.cell(q);
                if c == Cell::Empty {
                    return true;
                }
                if c == cell && !seen[q] {
                    seen[q] = true;
                    stack[top] = q as u16;
                    top += 1;
                }
            }
        }
        false
    }

    /// Removes the group on `point`, returning its size and the xor of its keys.
    fn remove_group(&mut self, point: usize) -> (usize, u64) {
        let color = self.cell(point).color().expect("a stone");
        let (mut removed, mut keys) = (0, 0);
        let mut stack = [0u16; MAX_POINTS];
        let mut top = 1;
        stack[0] = point as u16;
        self.cells[point / N][point % N] = Cell::Empty;
        while top > 0 {
            top -= 1;
            let p = usize::from(stack[top]);
            removed += 1;
            keys ^= stone_key(color, p);
            for q in neighbours::<N>(p) {
                if self.cell(q).color() == Some(color) {
                    self.cells[q / N][q % N] = Cell::Empty;
                    stack[top] = q as u16;
                    top += 1;
                }
            }
        }
        (removed, keys)
    }

    /// Labels every group with its liberties (and, for superko, its keys).
    fn groups(&self) -> Groups {
        let mut groups = Groups { label: [u16::MAX; MAX_POINTS], liberties: [0; MAX_POINTS], keys: [0; MAX_POINTS] };
        // The group that last counted each empty point, so a liberty counts once.
        let mut counted = [u16::MAX; MAX_POINTS];
        let mut stack = [0u16; MAX_POINTS];
        let mut next_label = 0u16;
        for start in 0..N * N {
            let Some(color) = self.cell(start).color() else { continue };
            if groups.label[start] != u16::MAX {
                continue;
            }
            let label = next_label;
            next_label += 1;
            let (mut liberties, mut keys, mut top) = (0u16, 0u64, 1);
            stack[0] = start as u16;
            groups.label[start] = label;
            while top > 0 {
                top -= 1;
                let p = usize::from(stack[top]);
                keys ^= stone_key(color, p);
                for q in neighbours::<N>(p) {
                    match self.cell(q).color() {
                        None if counted[q] != label => {
                            counted[q] = label;
                            liberties += 1;
                        }
                        Some(c) if c == color && groups.label[q] == u16::MAX => {
                            groups.label[q] = label;
                            stack[top] = q as u16;
                            top += 1;
                        }
                        _ => {}
                    }
                }
            }
            groups.liberties[usize::from(label)] = liberties;
            groups.keys[usize::from(label)] = keys;
        }
        groups
    }

    /// Whether a stone of the side to move on empty `point` is legal, and
    /// the stones hash after it (for superko).
    fn placement(&self, point: usize, groups: &Groups) -> Option<u64> {
        if self.ko == Some(point as u16) {
            return None;
        }
        let us = self.turn;
        let mut legal = false;
        let mut hash = self.stones_hash ^ stone_key(us, point);
        let mut captured = [u16::MAX; 4];
        for (i, q) in neighbours::<N>(point).enumerate() {
            match self.cell(q).color() {
                None => legal = true,
                Some(color) => {
                    let label = groups.label[q];
                    let liberties = groups.liberties[usize::from(label)];
                    if color == us {
                        legal |= liberties > 1;
                    } else if liberties == 1 {
                        legal = true;
                        if !captured.contains(&label) {
                            captured[i] = label;
                            hash ^= groups.keys[usize::from(label)];
                        }
                    }
                }
            }
        }
        legal.then_some(hash)
    }

    /// Whether a move leading to stones `hash` repeats an earlier position under superko.
    fn repeats(&self, hash: u64) -> bool {
        hash == self.stones_hash || self.earlier.as_ref().is_some_and(|earlier| earlier.contains(&hash))
    }

    fn full_hash(&self) -> u64 {
        let mut hash = self.stones_hash ^ KEYS.passes[usize::from(self.passes.min(2))];
        if self.turn == Color::Black {
            hash ^= KEYS.black_to_move;
        }
        if let Some(ko) = self.ko {
            hash ^= KEYS.ko[usize::from(ko)];
        }
        hash
    }
}

fn komi_to_halves(komi: f32) -> Option<i16> {
    let halves = komi * 2.0;
    (halves.is_finite() && halves.fract() == 0.0 && halves.abs() <= 2000.0).then_some(halves as i16)
}

/// The points next to `point` on an N x N board.
#[inline]
fn neighbours<const N: usize>(point: usize) -> impl Iterator<Item = usize> {
    let (row, column) = (point / N, point % N);
    [
        (row > 0).then(|| point - N),
        (column > 0).then(|| point - 1),
        (column + 1 < N).then(|| point + 1),
        (row + 1 < N).then(|| point + N),
    ]
    .into_iter()
    .flatten()
}

/// The game for each board size; Go is played on 9x9, 13x13 and 19x19.
const fn kind_for(size: usize) -> GameKind {
    match size {
        9 => GameKind::Go9,
        13 => GameKind::Go13,
        19 => GameKind::Go19,
        _ => panic!("Go is played on 9x9, 13x13 or 19x19"),
    }
}

impl<const N: usize> Game for Go<N> {
    type Move = GoMove<N>;

    const KIND: GameKind = kind_for(N);
    const FILES: usize = N;
    const RANKS: usize = N;

    /// The empty board, black to move, komi 7.5, simple ko.
    fn startpos() -> Self {
        Go::empty(7.5, KoRule::Simple)
    }

    fn from_fen(text: &str) -> Result<Self, FenError> {
        parse_text(text).map_err(|kind| FenError { fen: text.to_string(), kind })
    }

    fn fen(&self) -> String {
        let mut rows = Vec::with_capacity(N);
        for row in (0..N).rev() {
            let mut text = String::new();
            let mut empty = 0;
            for column in 0..N {
                match self.cells[row][column] {
                    Cell::Empty => empty += 1,
                    stone => {
                        if empty > 0 {
                            text.push_str(&empty.to_string());
                            empty = 0;
                        }
                        text.push(if stone == Cell::Black { 'X' } else { 'O' });
                    }
                }
            }
            if empty > 0 {
                text.push_str(&empty.to_string());
            }
            rows.push(text);
        }
        let ko = self.ko.map_or_else(|| "-".to_string(), |p| GoMove::<N>(p).to_string());
        format!(
            "{} {} {ko} {} {} {} {}",
            rows.join("/"),
            self.turn.fen_char(),
            self.passes,
            self.komi(),
            self.ko_rule.name(),
            self.ply
        )
    }

    fn legal_moves(&self, out: &mut MoveList<Self::Move>) {
        out.clear();
        let groups = self.groups();
        for point in 0..N * N {
            if self.cell(point) != Cell::Empty {
                continue;
            }
            match self.placement(point, &groups) {
                Some(hash) if self.ko_rule == KoRule::Simple || !self.repeats(hash) => out.push(GoMove(point as u16)),
                _ => {}
            }
        }
        out.push(GoMove::PASS);
    }

    fn play(&mut self, m: Self::Move) {
        if let Some(earlier) = &mut self.earlier {
            Arc::make_mut(earlier).push(self.stones_hash);
        }
        let us = self.turn;
        self.ko = None;
        self.last_move = Some(m);
        self.ply += 1;
        self.turn = !us;
        let Some(point) = m.point() else {
            self.passes = self.passes.saturating_add(1);
            return;
        };
        self.passes = 0;
        self.cells[point / N][point % N] = Cell::stone(us);
        self.stones_hash ^= stone_key(us, point);
        let (mut captured, mut captured_at) = (0, point);
        for q in neighbours::<N>(point) {
            if self.cell(q).color() == Some(!us) && !self.has_liberty(q) {
                let (removed, keys) = self.remove_group(q);
                self.stones_hash ^= keys;
                captured += removed;
                captured_at = q;
            }
        }
        // A single stone that took a single stone and now has that point as
        // its only liberty: retaking at once would repeat the position.
        if captured == 1 {
            let alone = neighbours::<N>(point).all(|q| self.cell(q) != Cell::stone(us));
            let liberties = neighbours::<N>(point).filter(|&q| self.cell(q) == Cell::Empty).count();
            if alone && liberties == 1 {
                self.ko = Some(captured_at as u16);
            }
        }
    }

    /// Over after two passes in a row, scored by area with komi.
    fn outcome_given(&self, _has_legal_moves: bool) -> Option<Outcome> {
        if self.passes < 2 {
            return None;
        }
        let score = self.score();
        let leader = match score.partial_cmp(&0.0) {
            Some(std::cmp::Ordering::Greater) => Some(Color::Black),
            Some(std::cmp::Ordering::Less) => Some(Color::White),
            _ => None,
        };
        let result = match leader {
            None => GameResult::Draw,
            Some(color) if color == self.turn => GameResult::Win,
            Some(_) => GameResult::Loss,
        };
        Some(Outcome { result, reason: Termination::Scored })
    }

    fn outcome(&self) -> Option<Outcome> {
        self.outcome_given(true)
    }

    /// Go has no check.
    fn is_check(&self) -> bool {
        false
    }

    /// The player's area: stones plus the empty points that reach only them.
    fn material(&self, color: Color) -> u32 {
        let (black, white) = self.area();
        if color == Color::Black { black } else { white }
    }

    /// The score with komi, which decides the game as two passes would.
    fn adjudication_lead(&self) -> f32 {
        -self.score()
    }

    #[inline]
    fn hash(&self) -> u64 {
        self.full_hash()
    }

    #[inline]
    fn turn(&self) -> Color {
        self.turn
    }

    fn ply(&self) -> u32 {
        self.ply
    }

    /// 0: no position of Go repeats by the rules that count repetitions
    /// (superko forbids it; under simple ko a long cycle runs to the ply cap).
    fn halfmove_clock(&self) -> u32 {
        0
    }

    /// The point, or `N * N` for the pass.
    fn pack_move(m: Self::Move) -> u16 {
        m.0
    }

    fn unpack_move(&self, packed: u16) -> Self::Move {
        GoMove(packed.min((N * N) as u16))
    }

    /// Reads a GTP vertex (`D4`, `pass`) and checks that the move is legal.
    fn parse_move(&self, text: &str) -> Result<Self::Move, MoveError> {
        let m = GoMove::parse_vertex(text)?;
        let mut moves = MoveList::new();
        self.legal_moves(&mut moves);
        if moves.contains(&m) {
            Ok(m)
        } else {
            Err(MoveError::Illegal { uci: text.trim().to_string(), fen: self.fen() })
        }
    }

    /// The GTP vertex: Go has no other notation.
    fn san(&self, m: Self::Move) -> String {
        m.to_string()
    }

    fn read_san(&self, text: &str) -> Result<Self::Move, MoveError> {
        self.parse_move(text)
    }

    fn policy_size() -> usize {
        N * N + 1
    }

    /// The point, or `N * N` for the pass: Go needs no mirroring.
    fn policy_index(&self, m: Self::Move) -> usize {
        usize::from(m.0)
    }
}

impl<const N: usize> PartialEq for Go<N> {
    /// Positions are equal when their stones, side, ko, passes, komi and rule
    /// are (the superko history and the last move are not compared).
    fn eq(&self, other: &Self) -> bool {
        self.cells == other.cells
            && self.turn == other.turn
            && self.ko == other.ko
            && self.passes == other.passes
            && self.komi_halves == other.komi_halves
            && self.ko_rule == other.ko_rule
    }
}

impl<const N: usize> fmt::Debug for Go<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Go<{N}>({})", self.fen())
    }
}

/// Reads the text form described in the module's documentation.
fn parse_text<const N: usize>(text: &str) -> Result<Go<N>, FenErrorKind> {
    let fields: Vec<&str> = text.split_ascii_whitespace().collect();
    if !(2..=7).contains(&fields.len()) {
        return Err(FenErrorKind::Invalid(format!(
            "expected 2 to 7 fields (rows, side, ko, passes, komi, ko rule, plies), found {}",
            fields.len()
        )));
    }
    let rows: Vec<&str> = fields[0].split('/').collect();
    if rows.len() != N {
        return Err(FenErrorKind::RankCount { found: rows.len(), expected: N });
    }
    let turn = match fields[1] {
        "b" | "B" => Color::Black,
        "w" | "W" => Color::White,
        other => return Err(FenErrorKind::SideToMove(other.to_string())),
    };
    let komi = match fields.get(4) {
        None => 7.5,
        Some(text) => text
            .parse::<f32>()
            .ok()
            .filter(|&k| komi_to_halves(k).is_some())
            .ok_or_else(|| FenErrorKind::Invalid(format!("komi '{text}' is not a multiple of 0.5 within ±1000")))?,
    };
    let ko_rule = match fields.get(5) {
        None => KoRule::Simple,
        Some(text) => KoRule::parse(text)
            .ok_or_else(|| FenErrorKind::Invalid(format!("ko rule '{text}' is not 'simple' or 'superko'")))?,
    };
    let mut go = Go::<N>::empty(komi, ko_rule).with_turn(turn);
    for (i, row_text) in rows.iter().enumerate() {
        let (rank, row) = (N - i, N - 1 - i);
        let mut column = 0;
        let mut digits = String::new();
        let flush = |digits: &mut String, column: &mut usize| -> Result<(), FenErrorKind> {
            if digits.is_empty() {
                return Ok(());
            }
            let count = digits.parse::<usize>().ok().filter(|&n| n >= 1 && !digits.starts_with('0'));
            let count = count.ok_or_else(|| FenErrorKind::BadEmptyCount { count: digits.clone(), rank })?;
            *column += count;
            digits.clear();
            Ok(())
        };
        for c in row_text.chars() {
            if c.is_ascii_digit() {
                digits.push(c);
                continue;
            }
            flush(&mut digits, &mut column)?;
            let cell = match c {
                'X' | 'x' => Cell::Black,
                'O' | 'o' => Cell::White,
                '.' => Cell::Empty,
                piece => return Err(FenErrorKind::UnknownPiece { piece, rank }),
            };
            if column < N {
                go.set(row * N + column, cell);
            }
            column += 1;
        }
        flush(&mut digits, &mut column)?;
        if column != N {
            return Err(FenErrorKind::RankWidth { rank, found: column, expected: N });
        }
    }
    if !go.setup_is_legal() {
        return Err(FenErrorKind::Invalid("a group has no liberty".to_string()));
    }
    if let Some(&ko) = fields.get(2).filter(|&&ko| ko != "-") {
        let point = GoMove::<N>::parse_vertex(ko)
            .ok()
            .and_then(GoMove::point)
            .ok_or_else(|| FenErrorKind::Invalid(format!("ko point '{ko}' is not a point of the board")))?;
        // A ko point is empty, and the stone that just took there is alone
        // in atari with that point as its liberty.
        let taker = neighbours::<N>(point).find(|&q| go.cell(q) == Cell::stone(!turn) && go.liberties(q) == 1);
        if go.cell(point) != Cell::Empty || taker.is_none() {
            return Err(FenErrorKind::Invalid(format!("no ko can be at '{ko}'")));
        }
        go.ko = Some(point as u16);
    }
    if let Some(text) = fields.get(3) {
        go.passes = text
            .parse::<u8>()
            .ok()
            .filter(|&p| p <= 2)
            .ok_or_else(|| FenErrorKind::Invalid(format!("passes '{text}' is not 0, 1 or 2")))?;
    }
    if let Some(text) = fields.get(6) {
        go.ply = text.parse::<u32>().ok().filter(|&p| p <= 1_000_000).ok_or_else(|| FenErrorKind::Clock {
            field: "plies",
            value: text.to_string(),
            max: 1_000_000,
        })?;
    }
    Ok(go)
}
