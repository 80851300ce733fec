//! From one number (an eval in pawns) to a consistent (Q, D): Lc0's WDL_mu
//! model run backwards, Lc0's WDL rescale, the 50-move damping of static
//! evaluations, and the static evaluation itself.
//!
//! The formulas are those of the seed document
//! (../shared/seeds/000_28eb8f10a378f698.txt, "WDL reconstruction").

use capa_rules::chess::Chess;
use shakmaty::{Bitboard, Color, Position, Role};

/// Pawns an eval of "mate" stands for (either side), as trainingdata-tool does.
pub const MATE_PAWNS: f32 = 128.0;

/// The eval-to-WDL model: mu = scale x eval (pawns),
/// W = logistic((mu - 1) / spread), L = logistic((-mu - 1) / spread).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct WdlModel {
    /// Where the draw-to-decisive transition sits (half-won at eval 1 / scale).
    pub scale: f32,
    /// How steep the transition is; sets the draw rate at equality.
    pub spread: f32,
}

impl Default for WdlModel {
    /// Scale 1.13, spread 0.21: fitted to Fishtest outcomes.
    fn default() -> WdlModel {
        WdlModel { scale: 1.13, spread: 0.21 }
    }
}

impl WdlModel {
    /// (Q, D) for an eval in pawns from the side to move's point of view,
    /// after Lc0's WDL rescale at its neutral defaults.
    pub fn q_d(&self, eval_pawns: f32) -> (f32, f32) {
        let mu = self.scale * eval_pawns;
        let w = logistic((mu - 1.0) / self.spread);
        let l = logistic((-mu - 1.0) / self.spread);
        // 1 - W - L can round to a hair below 0 where the eval is decisive.
        wdl_rescale(w - l, (1.0 - w - l).max(0.0), 1.0, 0.0)
    }
}

/// The logistic function.
#[inline]
fn logistic(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// The widest logistic Lc0 believes (`max_reasonable_s`, its default).
const MAX_REASONABLE_S: f32 = 1.4;

/// Lc0's `WDLRescale` (search.cc): reads (Q, D) as a logistic pair with
/// centre mu and width s, stretches the width by `ratio` and moves the
/// centre by s^2 x `diff`. Ratio 1 and diff 0 (neutral contempt and draw
/// rate) leave any reasonable pair as it is; extreme pairs are left alone.
pub fn wdl_rescale(q: f32, d: f32, ratio: f32, diff: f32) -> (f32, f32) {
    let w = (1.0 + q - d) / 2.0;
    let l = (1.0 - q - d) / 2.0;
    const EPS: f32 = 1e-4;
    let inside = |v: f32| v > EPS && v < 1.0 - EPS;
    if !(inside(w) && inside(d) && inside(l)) {
        return (q, d);
    }
    let a = (1.0 / l - 1.0).ln();
    let b = (1.0 / w - 1.0).ln();
    let s = (2.0 / (a + b)).min(MAX_REASONABLE_S);
    let mu = (a - b) / (a + b);
    let s_new = s * ratio;
    let mu_new = mu + s * s * diff;
    let w_new = logistic((mu_new - 1.0) / s_new);
    let l_new = logistic((-mu_new - 1.0) / s_new);
    (w_new - l_new, (1.0 - w_new - l_new).max(0.0))
}

/// The 50-move damping of a static evaluation: c = clamp((clock after the
/// move - start) / (100 - start), 0, 1) moves (W, D, L) a share c of the
/// way to a certain draw.
pub fn r50_damp(q: f32, d: f32, clock_after_move: u32, start: u32) -> (f32, f32) {
    if start >= 100 {
        return (q, d);
    }
    let c = ((clock_after_move as f32 - start as f32) / (100 - start) as f32).clamp(0.0, 1.0);
    (q * (1.0 - c), d + (1.0 - d) * c)
}

/// Material in pawns: pawn 1, knight 3, bishop 3.25, rook 5, queen 9.
const VALUES: [(Role, f32); 5] =
    [(Role::Pawn, 1.0), (Role::Knight, 3.0), (Role::Bishop, 3.25), (Role::Rook, 5.0), (Role::Queen, 9.0)];

/// The static evaluation, in pawns for the side to move: material, the
/// bishop pair (+0.3), doubled (-0.15 per extra pawn on a file) and
/// isolated (-0.15) pawns, and passed pawns (+0.1 to +1.0 by how far they
/// have come). No search: it cannot see tactics or a coming draw (see
/// [`r50_damp`]).
pub fn static_eval(position: &Chess) -> f32 {
    let pos = position.position();
    let board = pos.board();
    let side = |color: Color| {
        let ours = board.by_color(color);
        let mut score: f32 =
            VALUES.iter().map(|&(role, value)| value * (ours & board.by_role(role)).count() as f32).sum();
        if (ours & board.bishops()).count() >= 2 {
            score += 0.3;
        }
        let pawns = ours & board.pawns();
        let theirs = board.by_color(!color) & board.pawns();
        for file in shakmaty::File::ALL {
            let on_file = (pawns & Bitboard::from_file(file)).count();
            if on_file > 1 {
                score -= 0.15 * (on_file - 1) as f32;
            }
            let neighbours = [file.offset(-1), file.offset(1)]
                .into_iter()
                .flatten()
                .fold(Bitboard::EMPTY, |b, f| b | Bitboard::from_file(f));
            if on_file > 0 && (pawns & neighbours).is_empty() {
                score -= 0.15 * on_file as f32;
            }
        }
        for pawn in pawns {
            if (theirs & passed_span(pawn, color)).is_empty() {
                let advanced = usize::from(color.relative_rank(pawn.rank()));
                score += [0.0, 0.1, 0.15, 0.25, 0.4, 0.6, 1.0, 0.0][advanced];
            }
        }
        score
    };
    side(pos.turn()) - side(!pos.turn())
}

/// The squares a pawn on `square` must find free of enemy pawns to be
/// passed: its file and the two next to it, ahead of it from `color`'s side.
fn passed_span(square: shakmaty::Square, color: Color) -> Bitboard {
    let files = [square.file().offset(-1), Some(square.file()), square.file().offset(1)]
        .into_iter()
        .flatten()
        .fold(Bitboard::EMPTY, |b, f| b | Bitboard::from_file(f));
    let ranks = shakmaty::Rank::ALL
        .into_iter()
        .filter(|&r| if color == Color::White { r > square.rank() } else { r < square.rank() })
        .fold(Bitboard::EMPTY, |b, r| b | Bitboard::from_rank(r));
    files & ranks
}
