//! Invariants over random playouts: the incremental hash equals the hash
//! computed from scratch; FEN round-trips; moves regenerate the same from a
//! played position and from its FEN; every move survives UCI round trip.

use std::collections::BTreeSet;

use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, MoveList};

use crate::common::{CAPABLANCA_FENS, CHESS_FENS, Rng, random_game};

fn move_names<G: Game>(pos: &G, moves: &mut MoveList<G::Move>) -> BTreeSet<String> {
    pos.legal_moves(moves);
    moves.iter().map(ToString::to_string).collect()
}

fn check_invariants<G: Game>(pos: &G, extra: impl Fn(&G)) {
    let fen = pos.fen();
    let reparsed = G::from_fen(&fen).unwrap_or_else(|e| panic!("a played position must parse: {e}"));
    assert_eq!(reparsed.fen(), fen, "FEN round trip");
    assert_eq!(reparsed.hash(), pos.hash(), "incremental hash differs from the hash of {fen}");
    let (mut a, mut b) = (MoveList::new(), MoveList::new());
    let names = move_names(pos, &mut a);
    assert_eq!(names, move_names(&reparsed, &mut b), "moves of a played position vs its FEN {fen}");
    assert_eq!(pos.count_legal_moves(), a.len(), "bulk count vs list in {fen}");
    for &m in a.iter() {
        assert_eq!(pos.parse_uci(&m.to_string()), Ok(m), "UCI round trip of {m} in {fen}");
    }
    extra(pos);
}

fn run<G: Game>(fens: &[&str], playouts: usize, seed: u64, extra: impl Fn(&G)) {
    let mut rng = Rng::new(seed);
    for i in 0..playouts {
        let start = G::from_fen(fens[i % fens.len()]).unwrap();
        let plies = rng.below(300);
        for pos in random_game(start, plies, &mut Rng::new(rng.next())).positions() {
            check_invariants(pos, &extra);
        }
    }
}

#[test]
fn capablanca_invariants() {
    run::<Capablanca>(&CAPABLANCA_FENS, 120, 3, |pos| {
        assert_eq!(pos.hash(), pos.hash_from_scratch(), "{}", pos.fen());
    });
}

#[test]
fn chess_invariants() {
    run::<Chess>(&CHESS_FENS, 120, 4, |_| {});
}

#[test]
fn en_passant_only_when_legal() {
    // After d7d5, exd6 would take both pawns off the fifth rank and open the
    // rook on j5 onto the king on a5: the capture is illegal.
    let fen = "4k5/3p6/10/K3P4r/10/10/10/10 b - - 0 1";
    let mut pos = Capablanca::from_fen(fen).unwrap();
    pos.play(pos.parse_uci("d7d5").unwrap());
    assert_eq!(pos.ep_square(), None, "exd6 would expose the king: no en passant square");
    assert_eq!(pos.fen(), "4k5/10/10/K2pP4r/10/10/10/10 w - - 0 2");
    let free = "4k5/3p6/10/4P5/10/10/10/K9 b - - 0 1";
    let mut pos = Capablanca::from_fen(free).unwrap();
    pos.play(pos.parse_uci("d7d5").unwrap());
    assert_eq!(pos.fen(), "4k5/10/10/3pP5/10/10/10/K9 w - d6 0 2");
    assert!(pos.parse_uci("e5d6").is_ok());
}
