//! What Go's ownership and score heads say about a position: each point's
//! owner at the end, and the score lead after each of some moves. Both
//! GTP's `kata-analyze` and the GUI show them.

use capa_mcts::{HISTORY_LEN, LeafRequest};
use capa_rules::go::{Go, GoMove};
use capa_rules::{Color, Game, History};

use crate::NetError;
use crate::evaluator::NetEvaluator;

/// The network's view of a Go position's end.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Territory {
    /// The score lead for the player to move, komi counted, and its
    /// standard deviation: at the position itself, then after each move
    /// asked about. Empty without the score head.
    pub leads: Vec<(f32, f32)>,
    /// Each point's ownership for the player to move, from -1 (the
    /// opponent's) to 1, in point order (`row * N + column` from A1).
    /// Empty unless asked for; the ownership head must exist.
    pub ownership: Vec<f32>,
}

impl<const N: usize> NetEvaluator<Go<N>> {
    /// The network's score leads at `history`'s position and after each of
    /// `moves` (legal there), and, with `ownership`, each point's owner, in
    /// one call. The leads are the network's own, not averaged over a
    /// search tree as KataGo's are.
    ///
    /// # Errors
    /// [`NetError::Config`] when `ownership` is asked of a network without
    /// the head; a failed network call.
    pub fn territory(
        &self,
        history: &History<Go<N>>,
        moves: &[GoMove<N>],
        ownership: bool,
    ) -> Result<Territory, NetError> {
        let heads = self.config();
        if ownership && !heads.ownership_head {
            return Err(NetError::Config(
                "this network has no ownership head (train one with [net] ownership_head = true)".to_string(),
            ));
        }
        if !heads.score_head && !ownership {
            return Ok(Territory::default());
        }
        // The last positions are all the planes see: a short game to play
        // each move in.
        let positions = history.positions();
        let recent = positions.len().saturating_sub(HISTORY_LEN);
        let mut base = History::new(positions[recent].clone());
        for &m in &history.moves()[recent..] {
            base.play(m);
        }
        let mut requests = vec![LeafRequest::from_history(&base)];
        if heads.score_head {
            for &m in moves {
                let mut child = base.clone();
                child.play(m);
                requests.push(LeafRequest::from_history(&child));
            }
        }
        let answer = self.analyse(&requests)?;
        let root = history.current();
        // The area difference is the side to move's: the player's at the
        // root, the opponent's after a move.
        let komi = if root.turn() == Color::White { root.komi() } else { -root.komi() };
        let leads = (0..requests.len())
            .filter_map(|row| {
                let (difference, spread) = answer.area_difference(row)?;
                Some((if row == 0 { difference } else { -difference } + komi, spread))
            })
            .collect();
        let ownership = if ownership { answer.ownership[..N * N].to_vec() } else { Vec::new() };
        Ok(Territory { leads, ownership })
    }
}
