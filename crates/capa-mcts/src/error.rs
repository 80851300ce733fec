//! What can stop a search.

use capa_rules::Outcome;

use crate::evaluator::EvalError;

/// Why a search could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// A parameter is out of range.
    #[error("invalid search parameter {0}")]
    Params(String),
    /// The game at the root is already over.
    #[error("the game is over ({}): there is nothing to search", .0.reason)]
    GameOver(Outcome),
    /// A move that is not legal where it was given.
    #[error("illegal move {0}")]
    IllegalMove(String),
    /// The evaluator failed.
    #[error("the evaluator failed: {0}")]
    Evaluator(EvalError),
    /// The evaluator answered something the search cannot use.
    #[error("the evaluator returned a bad evaluation: {0}")]
    BadEvaluation(String),
}
