//! Every legal move of many random positions has its own policy index.

use std::collections::HashMap;

use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, MoveList};

use crate::common::{CAPABLANCA_FENS, CHESS_FENS, Rng, random_game};

/// Returns how many positions were checked.
fn distinct_indices<G: Game>(fens: &[&str], playouts: usize, seed: u64) -> usize {
    let mut rng = Rng::new(seed);
    let mut moves = MoveList::new();
    let mut positions = 0;
    for i in 0..playouts {
        let start = G::from_fen(fens[i % fens.len()]).unwrap();
        let plies = rng.below(200);
        for pos in random_game(start, plies, &mut Rng::new(rng.next())).positions() {
            pos.legal_moves(&mut moves);
            let mut seen = HashMap::new();
            for &m in moves.iter() {
                let index = pos.policy_index(m);
                assert!(index < G::policy_size(), "{m} -> {index} in {}", pos.fen());
                if let Some(other) = seen.insert(index, m) {
                    panic!("{m} and {other} share policy index {index} in {}", pos.fen());
                }
            }
            positions += 1;
        }
    }
    positions
}

#[test]
fn capablanca_indices_are_distinct() {
    assert_eq!(Capablanca::policy_size(), 2644);
    assert!(distinct_indices::<Capablanca>(&CAPABLANCA_FENS, 200, 1) > 10_000);
}

#[test]
fn chess_indices_are_distinct() {
    assert_eq!(Chess::policy_size(), 1858);
    assert!(distinct_indices::<Chess>(&CHESS_FENS, 200, 2) > 10_000);
}

#[test]
fn chess_castling_is_king_takes_rook() {
    let pos = Chess::from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1").unwrap();
    let map = Chess::policy_map();
    let index = |p: &Chess, uci: &str| map.uci(p.policy_index(p.parse_uci(uci).unwrap())).unwrap();
    assert_eq!(index(&pos, "e1g1"), "e1h1");
    assert_eq!(index(&pos, "e1c1"), "e1a1");
    // Black's moves are mirrored: O-O is e8h8, seen from black's side e1h1.
    let black = Chess::from_fen("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1").unwrap();
    assert_eq!(index(&black, "e8g8"), "e1h1");
    assert_eq!(index(&black, "a8a1"), "a1a8");
}

#[test]
fn capablanca_promotions_and_castling() {
    let map = Capablanca::policy_map();
    let pos = Capablanca::from_fen(CAPABLANCA_FENS[3]).unwrap();
    let index = |p: &Capablanca, uci: &str| map.uci(p.policy_index(p.parse_uci(uci).unwrap())).unwrap();
    assert_eq!(index(&pos, "b7a8c"), "b7a8c");
    assert_eq!(index(&pos, "b7a8a"), "b7a8a");
    // A knight promotion uses the plain entry, as in Lc0.
    assert_eq!(index(&pos, "b7a8n"), "b7a8");
    let castle = Capablanca::from_fen(CAPABLANCA_FENS[1]).unwrap();
    assert_eq!(index(&castle, "f1i1"), "f1j1");
    assert_eq!(index(&castle, "f1c1"), "f1a1");
}
