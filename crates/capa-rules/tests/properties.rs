//! Invariants over random playouts: the incremental hash equals the hash
//! computed from scratch; FEN round-trips; moves regenerate the same from a
//! played position and from its FEN; every move survives the UCI and the
//! 16-bit (search tree) round trips.

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
    let mut packed = BTreeSet::new();
    for &m in a.iter() {
        assert_eq!(pos.parse_move(&m.to_string()), Ok(m), "UCI round trip of {m} in {fen}");
        assert_eq!(pos.unpack_move(G::pack_move(m)), m, "16-bit round trip of {m} in {fen}");
        assert!(packed.insert(G::pack_move(m)), "two moves pack to the same bits in {fen}");
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
fn en_passant_square_as_the_engines_write_it() {
    // After d7d5, exd6 would take both pawns off the fifth rank and open the
    // rook on j5 onto the king on a5: the capture is illegal. Fairy-Stockfish
    // still writes d6 (a pawn attacks it), but the hash ignores it.
    let pinned = "4k5/3p6/10/K3P4r/10/10/10/10 b - - 0 1";
    let mut pos = Capablanca::from_fen(pinned).unwrap();
    pos.play(pos.parse_move("d7d5").unwrap());
    assert_eq!(pos.fen(), "4k5/10/10/K2pP4r/10/10/10/10 w - d6 0 2");
    assert!(pos.parse_move("e5d6").is_err());
    let without = Capablanca::from_fen("4k5/10/10/K2pP4r/10/10/10/10 w - - 0 2").unwrap();
    assert_eq!(pos.hash(), without.hash(), "an illegal en passant capture does not change the position");

    let free = "4k5/3p6/10/4P5/10/10/10/K9 b - - 0 1";
    let mut pos = Capablanca::from_fen(free).unwrap();
    pos.play(pos.parse_move("d7d5").unwrap());
    assert_eq!(pos.fen(), "4k5/10/10/3pP5/10/10/10/K9 w - d6 0 2");
    assert!(pos.parse_move("e5d6").is_ok());
    let without = Capablanca::from_fen("4k5/10/10/3pP5/10/10/10/K9 w - - 0 2").unwrap();
    assert_ne!(pos.hash(), without.hash(), "a legal en passant capture makes a different position");

    // No pawn attacks the square: not written.
    let mut pos = Capablanca::from_fen("4k5/3p6/10/10/10/10/10/K9 b - - 0 1").unwrap();
    pos.play(pos.parse_move("d7d5").unwrap());
    assert_eq!(pos.fen(), "4k5/10/10/3p6/10/10/10/K9 w - - 0 2");

    // Chess, the same with Stockfish's rule.
    let mut pos = Chess::from_fen("4k3/3p4/8/K3P2r/8/8/8/8 b - - 0 1").unwrap();
    pos.play(pos.parse_move("d7d5").unwrap());
    assert_eq!(pos.fen(), "4k3/8/8/K2pP2r/8/8/8/8 w - d6 0 2");
    assert_eq!(pos.hash(), Chess::from_fen("4k3/8/8/K2pP2r/8/8/8/8 w - - 0 2").unwrap().hash());
}

/// The legal castling moves of a Capablanca position, as UCI.
fn castles(fen: &str) -> Vec<String> {
    let pos = Capablanca::from_fen(fen).unwrap();
    let mut moves = MoveList::new();
    pos.legal_moves(&mut moves);
    let mut castles: Vec<String> = moves
        .iter()
        .filter(|m| m.kind() == capa_rules::capablanca::MoveKind::Castle)
        .map(ToString::to_string)
        .collect();
    castles.sort();
    castles
}

#[test]
fn capablanca_castling_rules() {
    let open = "r4k3r/10/10/10/10/10/10/R4K3R w KQkq - 0 1";
    assert_eq!(castles(open), ["f1c1", "f1i1"]);
    assert_eq!(castles("r4k3r/10/10/10/10/10/10/R4K3R b KQkq - 0 1"), ["f8c8", "f8i8"]);
    // Rights matter.
    assert_eq!(castles("r4k3r/10/10/10/10/10/10/R4K3R w Kkq - 0 1"), ["f1i1"]);
    // Every square between king and rook must be empty: b1 too.
    assert_eq!(castles("r4k3r/10/10/10/10/10/10/RN3K3R w KQkq - 0 1"), ["f1i1"]);
    assert_eq!(castles("r4k3r/10/10/10/10/10/10/R4KB2R w KQkq - 0 1"), ["f1c1"]);
    // Not out of check.
    assert_eq!(castles("r4k3r/10/10/10/10/10/5r4/R4K3R w KQ - 0 1"), Vec::<String>::new());
    // Not through an attacked square (h1 by a rook on h2; e1 by a rook on e2)...
    assert_eq!(castles("r4k3r/10/10/10/10/10/7r2/R4K3R w KQ - 0 1"), ["f1c1"]);
    assert_eq!(castles("r4k3r/10/10/10/10/10/4r5/R4K3R w KQ - 0 1"), ["f1i1"]);
    // ... nor onto one (i1 by a bishop on j2; c1 by a knight on b3)...
    assert_eq!(castles("r4k3r/10/10/10/10/10/9b/R4K3R w KQ - 0 1"), ["f1c1"]);
    assert_eq!(castles("r4k3r/10/10/10/10/1n8/10/R4K3R w KQ - 0 1"), ["f1i1"]);
    // ... but an attacked b1 (the rook passes it, the king does not) is fine,
    // and so is an attacked rook.
    assert_eq!(castles("r4k3r/10/10/10/10/10/1r8/R4K3R w KQ - 0 1"), ["f1c1", "f1i1"]);
    assert_eq!(castles("r4k3r/10/10/10/10/10/9r/R4K3R w KQ - 0 1"), ["f1c1", "f1i1"]);
    // The rooks land on h1 and d1.
    let mut pos = Capablanca::from_fen(open).unwrap();
    pos.play(pos.parse_move("f1i1").unwrap());
    assert_eq!(pos.fen(), "r4k3r/10/10/10/10/10/10/R6RK1 b kq - 1 1");
    let mut pos = Capablanca::from_fen(open).unwrap();
    pos.play(pos.parse_move("f1c1").unwrap());
    assert_eq!(pos.fen(), "r4k3r/10/10/10/10/10/10/2KR5R b kq - 1 1");
}

#[test]
fn castling_rights_follow_king_and_rooks() {
    let mut pos = Capablanca::from_fen("r4k3r/10/10/10/10/10/10/R4K3R w KQkq - 0 1").unwrap();
    // A rook captured on its corner takes the right with it.
    pos.play(pos.parse_move("a1a8").unwrap());
    assert_eq!(pos.castling_rights(), "Kk");
    pos.play(pos.parse_move("f8f7").unwrap());
    assert_eq!(pos.castling_rights(), "K");
    pos.play(pos.parse_move("j1j2").unwrap());
    assert_eq!(pos.castling_rights(), "-");
}
