//! Every legal move of many random positions has its own policy index.

use std::collections::HashMap;

use capa_rules::capablanca::{Capablanca, MoveKind};
use capa_rules::chess::Chess;
use capa_rules::{Game, MoveList, PolicyMap};

use crate::common::{CAPABLANCA_FENS, CHESS_FENS, Rng, random_game};

/// `uci` seen from the other side: ranks mirrored (`e7e5` -> `e2e4`).
fn mirrored(uci: &str, ranks: u8) -> String {
    uci.chars().map(|c| if c.is_ascii_digit() { (b'0' + ranks + 1 - (c as u8 - b'0')) as char } else { c }).collect()
}

/// Every legal move gets its own index, and the entry at that index names the
/// move itself (mirrored for black) unless `renamed` says the map spells it
/// differently (castling as king-takes-rook, knight promotions unsuffixed).
/// Returns how many positions were checked.
fn distinct_indices<G: Game>(
    map: &PolicyMap,
    fens: &[&str],
    playouts: usize,
    seed: u64,
    renamed: impl Fn(G::Move) -> bool,
) -> usize {
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
                if !renamed(m) {
                    let own = match pos.turn() {
                        capa_rules::Color::White => m.to_string(),
                        capa_rules::Color::Black => mirrored(&m.to_string(), G::RANKS as u8),
                    };
                    assert_eq!(map.uci(index).unwrap(), own, "{m} in {}", pos.fen());
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
    let renamed = |m: capa_rules::capablanca::Move| {
        m.kind() == MoveKind::Castle || m.promotion() == Some(capa_rules::capablanca::Role::Knight)
    };
    assert!(distinct_indices::<Capablanca>(Capablanca::policy_map(), &CAPABLANCA_FENS, 200, 1, renamed) > 10_000);
}

#[test]
fn chess_indices_are_distinct() {
    assert_eq!(Chess::policy_size(), 1858);
    let renamed = |m: capa_rules::chess::ChessMove| {
        let m = m.as_shakmaty();
        m.is_castle() || m.promotion() == Some(shakmaty::Role::Knight)
    };
    assert!(distinct_indices::<Chess>(Chess::policy_map(), &CHESS_FENS, 200, 2, renamed) > 10_000);
}

#[test]
fn chess_castling_is_king_takes_rook() {
    let pos = Chess::from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1").unwrap();
    let map = Chess::policy_map();
    let index = |p: &Chess, uci: &str| map.uci(p.policy_index(p.parse_move(uci).unwrap())).unwrap();
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
    let index = |p: &Capablanca, uci: &str| map.uci(p.policy_index(p.parse_move(uci).unwrap())).unwrap();
    assert_eq!(index(&pos, "b7a8c"), "b7a8c");
    assert_eq!(index(&pos, "b7a8a"), "b7a8a");
    // A knight promotion uses the plain entry, as in Lc0.
    assert_eq!(index(&pos, "b7a8n"), "b7a8");
    let castle = Capablanca::from_fen(CAPABLANCA_FENS[1]).unwrap();
    assert_eq!(index(&castle, "f1i1"), "f1j1");
    assert_eq!(index(&castle, "f1c1"), "f1a1");
}
