//! Evaluators and helpers shared by the search tests.

use capa_mcts::{EvalError, Evaluations, Evaluator, LeafRequest, Limits, SearchParams, SearchResult, Tree, Value};
use capa_rules::{Color, Game, History};

/// Uniform priors; the value is the material balance for the side to move
/// (P1 N3 B3 R5 A7 C8 Q9), squashed into a WDL.
pub struct MaterialEvaluator;

pub fn material<G: Game>(position: &G) -> f32 {
    let fen = position.fen();
    let board = fen.split(' ').next().unwrap_or("");
    let mut balance = 0.0;
    for c in board.chars() {
        let value = match c.to_ascii_lowercase() {
            'p' => 1.0,
            'n' | 'b' => 3.0,
            'r' => 5.0,
            'a' => 7.0,
            'c' => 8.0,
            'q' => 9.0,
            _ => 0.0,
        };
        balance += if c.is_ascii_uppercase() { value } else { -value };
    }
    if position.turn() == Color::White { balance } else { -balance }
}

impl<G: Game> Evaluator<G> for MaterialEvaluator {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        for request in batch {
            let q = (material(request.position()) / 10.0).tanh();
            let draw = 0.2 * (1.0 - q.abs());
            let win = (1.0 - draw + q) / 2.0;
            let loss = 1.0 - draw - win;
            let priors = std::iter::repeat_n(1.0, request.legal_moves().len());
            out.push(priors, Value { wdl: [win, draw, loss], moves_left: 40.0 });
        }
        Ok(())
    }
}

/// Uniform priors except for the moves named, which get almost all the mass.
pub struct FavourEvaluator(pub Vec<String>);

impl<G: Game> Evaluator<G> for FavourEvaluator {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        for request in batch {
            let priors =
                request.legal_moves().iter().map(|m| if self.0.contains(&m.to_string()) { 100.0 } else { 1.0 });
            out.push(priors, Value { wdl: [0.3, 0.4, 0.3], moves_left: 40.0 });
        }
        Ok(())
    }
}

/// Deterministic parameters: no noise, no early stop.
pub fn params() -> SearchParams {
    SearchParams { parallel_sims: 16, ..SearchParams::default() }
}

pub fn tree<G: Game>(fen: &str, params: SearchParams) -> Tree<G> {
    let start = G::from_fen(fen).unwrap_or_else(|e| panic!("test FEN {fen}: {e}"));
    Tree::new(History::new(start), params, 1).expect("valid parameters")
}

pub fn search<G: Game, E: Evaluator<G>>(tree: &mut Tree<G>, evaluator: &E, playouts: u32) -> SearchResult<G> {
    let result = tree.search(evaluator, Limits::playouts(playouts)).expect("search runs");
    assert_eq!(tree.in_flight_total(), 0, "every in-flight visit is removed once its value is back");
    result
}
