//! What the search asks of a network, and the free evaluators used to test
//! and benchmark the search without one.

use capa_rules::{Game, History, MoveList};

use capa_rules::Rng;

/// How many positions, the leaf included, a request carries for the
/// encoder's history planes.
pub const HISTORY_LEN: usize = 8;

/// A leaf to evaluate: the position, the positions before it, and its legal
/// moves in the order the priors must follow.
///
/// Requests own their data, so a batch can move to the inference thread
/// while the search selects the next one. The search reuses their buffers.
#[derive(Clone, Debug)]
pub struct LeafRequest<G: Game> {
    positions: Vec<G>,
    repeated: Vec<bool>,
    moves: MoveList<G::Move>,
}

impl<G: Game> Default for LeafRequest<G> {
    fn default() -> LeafRequest<G> {
        LeafRequest { positions: Vec::new(), repeated: Vec::new(), moves: MoveList::new() }
    }
}

impl<G: Game> LeafRequest<G> {
    /// The position to evaluate.
    pub fn position(&self) -> &G {
        self.positions.last().expect("a request holds its leaf")
    }

    /// Up to [`HISTORY_LEN`] positions ending with the leaf, oldest first;
    /// fewer near the start of a game.
    pub fn history(&self) -> &[G] {
        &self.positions
    }

    /// For each position of [`LeafRequest::history`], whether it occurred
    /// earlier in the game (the encoder's repetition plane).
    pub fn repeated(&self) -> &[bool] {
        &self.repeated
    }

    /// The leaf's legal moves; priors are given in this order.
    pub fn legal_moves(&self) -> &[G::Move] {
        &self.moves
    }

    pub(crate) fn clear(&mut self) {
        self.positions.clear();
        self.repeated.clear();
    }

    pub(crate) fn push_history(&mut self, position: &G, repeated: bool) {
        self.positions.push(position.clone());
        self.repeated.push(repeated);
    }

    pub(crate) fn moves_mut(&mut self) -> &mut MoveList<G::Move> {
        &mut self.moves
    }

    /// A request for the end of `history`: its last [`HISTORY_LEN`]
    /// positions with their repetition flags, as the search builds them.
    pub fn from_history(history: &History<G>) -> LeafRequest<G> {
        let mut request = LeafRequest::default();
        history.current().legal_moves(&mut request.moves);
        let positions = history.positions();
        for (i, position) in positions.iter().enumerate().skip(positions.len().saturating_sub(HISTORY_LEN)) {
            let repeated = positions[..i].iter().any(|earlier| earlier.hash() == position.hash());
            request.push_history(position, repeated);
        }
        request
    }

    /// A request for a position with no history, for evaluators' own tests.
    pub fn standalone(position: G) -> LeafRequest<G> {
        let mut request = LeafRequest::default();
        position.legal_moves(&mut request.moves);
        request.push_history(&position, false);
        request
    }
}

/// The network's answer for one batch, flat: one evaluation per request in
/// request order.
#[derive(Clone, Debug, Default)]
pub struct Evaluations {
    priors: Vec<f32>,
    ends: Vec<u32>,
    values: Vec<Value>,
}

/// The value part of an evaluation, for the side to move at the leaf.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Value {
    /// Win, draw, loss probabilities.
    pub wdl: [f32; 3],
    /// Expected plies until the game ends.
    pub moves_left: f32,
}

impl Evaluations {
    /// Empties the buffer, keeping its capacity.
    pub fn clear(&mut self) {
        self.priors.clear();
        self.ends.clear();
        self.values.clear();
    }

    /// Appends the evaluation of the next request: a prior for each legal
    /// move (any non-negative scale; the search normalises), and the value.
    pub fn push(&mut self, priors: impl IntoIterator<Item = f32>, value: Value) {
        self.priors.extend(priors);
        self.ends.push(self.priors.len() as u32);
        self.values.push(value);
    }

    /// How many evaluations the buffer holds.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The priors and value of evaluation `i`.
    pub fn get(&self, i: usize) -> (&[f32], Value) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        (&self.priors[start..self.ends[i] as usize], self.values[i])
    }
}

/// A failure of the evaluator (the network, the device): ends the search
/// with [`SearchError::Evaluator`](crate::SearchError::Evaluator).
pub type EvalError = Box<dyn std::error::Error + Send + Sync>;

/// Evaluates batches of leaves; the search calls it from its inference
/// thread while it selects the next batch on others.
pub trait Evaluator<G: Game>: Send + Sync {
    /// Appends to `out` (cleared by the caller) one evaluation per request, in order.
    ///
    /// # Errors
    /// Whatever stops the evaluator from answering; the search returns it.
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError>;
}

/// Equal priors and an even value: search guided by nothing but the rules.
#[derive(Clone, Copy, Debug, Default)]
pub struct UniformEvaluator;

impl<G: Game> Evaluator<G> for UniformEvaluator {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        for request in batch {
            let moves = request.legal_moves().len();
            out.push(std::iter::repeat_n(1.0, moves), Value { wdl: [0.0, 1.0, 0.0], moves_left: 60.0 });
        }
        Ok(())
    }
}

/// Pseudo-random priors and values derived from the position's hash, as
/// Lc0's `random` backend does: costs almost nothing, and grows trees of
/// the same shape as a network does, for benchmarking the search itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct RandomEvaluator;

impl<G: Game> Evaluator<G> for RandomEvaluator {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        for request in batch {
            let mut rng = Rng::new(request.position().hash());
            let mut next = move || rng.uniform() as f32;
            let win = next() * 0.5;
            let loss = next() * 0.5;
            let moves_left = 20.0 + 80.0 * next();
            let priors = (0..request.legal_moves().len()).map(|_| next() * next() + 1e-3);
            out.push(priors, Value { wdl: [win, 1.0 - win - loss, loss], moves_left });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use capa_rules::chess::Chess;
    use capa_rules::{Game, History};

    use super::LeafRequest;

    #[test]
    fn a_request_from_a_history_keeps_the_last_positions_and_repetitions() {
        let mut history = History::new(Chess::startpos());
        for uci in ["g1f3", "g8f6", "f3g1", "f6g8", "e2e4", "e7e5", "d2d4", "d7d5", "c2c4"] {
            let m = history.current().parse_move(uci).unwrap();
            history.play(m);
        }
        let request = LeafRequest::from_history(&history);
        assert_eq!(request.history().len(), 8);
        assert_eq!(request.position().fen(), history.current().fen());
        // The window starts after 1...Nf6; the knights' return repeats the start.
        assert_eq!(request.repeated(), [false, false, true, false, false, false, false, false]);
        assert_eq!(request.legal_moves().len(), history.current().count_legal_moves());
    }
}
