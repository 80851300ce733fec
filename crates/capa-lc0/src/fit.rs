//! What real outcomes say about the eval-to-WDL model: positions bucketed
//! by the eval in their move comment, the measured win/draw/loss rates per
//! bucket, the (scale, spread) that fits them best, and the draw rate near
//! equality with the spread it implies.

use capa_rules::Color;

use super::pgn::{CommentEval, SourceGame, comment_eval};
use super::wdl::WdlModel;

/// Width of an eval band, in pawns.
pub const BAND_WIDTH: f32 = 0.25;
/// Evals beyond this many pawns (either side) fall in the outermost bands.
const LAST_BAND: f32 = 4.0;
/// Bands with fewer positions are left out of the fit.
pub const MIN_BAND_POSITIONS: u64 = 20;

/// One position's eval and its game's result, both for the side to move.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct LabelledEval {
    /// Pawns, for the side to move (mates ±[`super::wdl::MATE_PAWNS`]).
    pub eval: f32,
    /// +1 the side to move won, 0 drawn, -1 lost.
    pub result: i8,
}

/// The evals of a game's comments with the result, each for the side to
/// move of the position it describes; none for a game without a result.
/// Moves are not replayed: the side to move follows from the `[FEN]` and
/// the ply.
pub fn labelled_evals(game: &SourceGame) -> Vec<LabelledEval> {
    let Some(winner) = game.winner() else { return Vec::new() };
    let first = match game.tag("FEN").and_then(|fen| fen.split_whitespace().nth(1)) {
        Some("b") => Color::Black,
        _ => Color::White,
    };
    let to_move = |ply: usize| if ply.is_multiple_of(2) { first } else { !first };
    let result = |side: Color| match winner {
        None => 0,
        Some(w) if w == side => 1,
        Some(_) => -1,
    };
    game.moves
        .iter()
        .enumerate()
        .filter_map(|(ply, m)| match comment_eval(&m.comment)? {
            CommentEval::Mover(eval) => Some(LabelledEval { eval, result: result(to_move(ply)) }),
            CommentEval::WhiteAfter(white) => {
                let side = to_move(ply + 1);
                Some(LabelledEval { eval: if side == Color::White { white } else { -white }, result: result(side) })
            }
        })
        .collect()
}

/// Positions of one eval band and their outcomes.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Band {
    /// The band's lower edge in pawns (the outermost bands reach further).
    pub low: f32,
    /// Positions in it.
    pub positions: u64,
    /// Their evals' sum, for the mean.
    eval_sum: f64,
    /// Won, drawn, lost by the side to move.
    pub wdl: [u64; 3],
}

impl Band {
    /// The mean eval of its positions.
    pub fn mean_eval(&self) -> f32 {
        (self.eval_sum / self.positions.max(1) as f64) as f32
    }

    /// Measured win, draw and loss rates.
    pub fn rates(&self) -> [f32; 3] {
        self.wdl.map(|n| n as f32 / self.positions.max(1) as f32)
    }
}

/// Positions bucketed by eval, [`BAND_WIDTH`] pawns a band.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalBands {
    /// From the most negative eval up.
    pub bands: Vec<Band>,
}

impl Default for EvalBands {
    fn default() -> EvalBands {
        let count = (2.0 * LAST_BAND / BAND_WIDTH) as usize;
        EvalBands {
            bands: (0..count).map(|i| Band { low: -LAST_BAND + i as f32 * BAND_WIDTH, ..Band::default() }).collect(),
        }
    }
}

impl EvalBands {
    /// Counts one position.
    pub fn add(&mut self, labelled: LabelledEval) {
        let last = self.bands.len() - 1;
        let index = ((labelled.eval + LAST_BAND) / BAND_WIDTH).floor().clamp(0.0, last as f32) as usize;
        let band = &mut self.bands[index];
        band.positions += 1;
        band.eval_sum += f64::from(labelled.eval);
        band.wdl[match labelled.result {
            1 => 0,
            0 => 1,
            _ => 2,
        }] += 1;
    }

    /// Positions counted.
    pub fn positions(&self) -> u64 {
        self.bands.iter().map(|b| b.positions).sum()
    }

    /// The bands the fit uses: at least [`MIN_BAND_POSITIONS`] positions.
    pub fn populated(&self) -> impl Iterator<Item = &Band> {
        self.bands.iter().filter(|b| b.positions >= MIN_BAND_POSITIONS)
    }

    /// The model's root-mean-square error on (W, L) over the populated
    /// bands (each band counts once), at each band's mean eval.
    pub fn rmse(&self, model: &WdlModel) -> f32 {
        let (mut sum, mut n) = (0.0f32, 0);
        for band in self.populated() {
            let (q, d) = model.q_d(band.mean_eval());
            let (w, l) = ((1.0 + q - d) / 2.0, (1.0 - q - d) / 2.0);
            let [rw, _, rl] = band.rates();
            sum += (w - rw).powi(2) + (l - rl).powi(2);
            n += 2;
        }
        if n == 0 { f32::NAN } else { (sum / n as f32).sqrt() }
    }

    /// The (scale, spread) of least [`EvalBands::rmse`] on a grid: scale
    /// 0.50 to 3.00 by 0.01, spread 0.05 to 1.00 by 0.005.
    pub fn fit(&self) -> (WdlModel, f32) {
        let mut best = (WdlModel::default(), f32::INFINITY);
        for s in 50..=300 {
            for p in 10..=200 {
                let model = WdlModel { scale: s as f32 / 100.0, spread: p as f32 / 200.0 };
                let rmse = self.rmse(&model);
                if rmse < best.1 {
                    best = (model, rmse);
                }
            }
        }
        best
    }

    /// The draw rate of the positions within one band of equality, the
    /// spread it implies (1 / ln((1 + r) / (1 - r))) and the positions.
    pub fn equal_draw_rate(&self) -> Option<(f32, f32, u64)> {
        let near: Vec<&Band> = self.bands.iter().filter(|b| b.low >= -BAND_WIDTH && b.low < BAND_WIDTH).collect();
        let positions: u64 = near.iter().map(|b| b.positions).sum();
        if positions == 0 {
            return None;
        }
        let rate = near.iter().map(|b| b.wdl[1]).sum::<u64>() as f32 / positions as f32;
        Some((rate, implied_spread(rate), positions))
    }
}

/// The spread whose model draws `rate` of the time at equality.
pub fn implied_spread(rate: f32) -> f32 {
    1.0 / ((1.0 + rate) / (1.0 - rate)).ln()
}

/// Q as Lc0's centipawn display formula reads an eval backwards:
/// cp = 90 tan(1.5637541897 Q), the form the seed document measures
/// against outcomes (capa's own displays use Lc0's newer constants,
/// [`capa_data::centipawns`]).
pub fn lc0_display_q(eval_pawns: f32) -> f32 {
    (eval_pawns * 100.0 / 90.0).atan() / 1.563_754_2
}
