//! Perft: counting the leaves of the legal-move tree, the rules' oracle test.

use crate::{Game, MoveList};

/// The number of legal move sequences of length `depth` from `pos`.
///
/// The last ply is counted in bulk (the number of legal moves, without
/// playing them), as Fairy-Stockfish and Stockfish do. Draw rules do not stop
/// the count: perft counts moves, not games.
///
/// ```
/// use capa_rules::{Game, chess::Chess, perft};
/// assert_eq!(perft(&Chess::startpos(), 3), 8902);
/// ```
pub fn perft<G: Game>(pos: &G, depth: u32) -> u64 {
    let mut buffers: Vec<MoveList<G::Move>> = (0..depth).map(|_| MoveList::new()).collect();
    count(pos, depth, &mut buffers)
}

/// Perft split by root move, in generation order: `(move, leaves below it)`.
/// Empty for `depth == 0`.
pub fn divide<G: Game>(pos: &G, depth: u32) -> Vec<(G::Move, u64)> {
    if depth == 0 {
        return Vec::new();
    }
    let mut moves = MoveList::new();
    pos.legal_moves(&mut moves);
    let mut buffers: Vec<MoveList<G::Move>> = (1..depth).map(|_| MoveList::new()).collect();
    moves
        .iter()
        .map(|&m| {
            let mut child = pos.clone();
            child.play(m);
            (m, count(&child, depth - 1, &mut buffers))
        })
        .collect()
}

fn count<G: Game>(pos: &G, depth: u32, buffers: &mut [MoveList<G::Move>]) -> u64 {
    match depth {
        0 => 1,
        1 => pos.count_legal_moves() as u64,
        _ => {
            let (moves, deeper) = buffers.split_first_mut().expect("one buffer per ply");
            pos.legal_moves(moves);
            let mut leaves = 0;
            for &m in moves.iter() {
                let mut child = pos.clone();
                child.play(m);
                leaves += count(&child, depth - 1, deeper);
            }
            leaves
        }
    }
}
