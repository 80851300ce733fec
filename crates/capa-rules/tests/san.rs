//! Standard algebraic notation: known cases for each rule, and over random
//! games, one distinct SAN per legal move.

use std::collections::HashSet;

use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, MoveList};

use crate::common::{Rng, random_game};

fn san<G: Game>(fen: &str, uci: &str) -> String {
    let position = G::from_fen(fen).unwrap();
    let m = position.parse_move(uci).unwrap();
    position.san(m)
}

#[test]
fn capablanca_san_follows_the_rules() {
    let start = Capablanca::startpos().fen();
    let cases = [
        (start.as_str(), "b1c3", "Nc3"),
        (start.as_str(), "c1b3", "Ab3"),
        (start.as_str(), "h1i3", "Ci3"),
        (start.as_str(), "e2e4", "e4"),
        // Two knights reach c3: the file tells them apart, then the rank.
        ("4k5/10/10/10/10/10/10/1N1N1K4 w - - 0 1", "b1c3", "Nbc3"),
        ("4k5/10/10/1N8/10/10/10/1N3K4 w - - 0 1", "b1c3", "N1c3"),
        // Three: neither alone is enough.
        ("4k5/10/10/1N8/10/10/10/1N1N1K4 w - - 0 1", "b1c3", "Nb1c3"),
        // Captures, promotion, en passant, check and mate.
        ("4k5/10/10/10/10/3p6/4P5/5K4 w - - 0 1", "e2d3", "exd3"),
        ("4k5/1P8/10/10/10/10/10/5K4 w - - 0 1", "b7b8c", "b8=C+"),
        ("4k5/10/10/3pP5/10/10/10/5K4 w - d6 0 1", "e5d6", "exd6"),
        ("k9/10/1Q8/10/10/10/10/5K4 w - - 0 1", "b6b7", "Qb7+"),
        ("k9/2K7/10/10/10/10/10/9R w - - 0 1", "j1a1", "Ra1#"),
        // Castling both ways (the king's move in UCI).
        ("r4k3r/10/10/10/10/10/10/R4K3R w KQkq - 0 1", "f1i1", "O-O"),
        ("r4k3r/10/10/10/10/10/10/R4K3R w KQkq - 0 1", "f1c1", "O-O-O"),
    ];
    for (fen, uci, expected) in cases {
        assert_eq!(san::<Capablanca>(fen, uci), expected, "{fen} {uci}");
    }
    assert_eq!(san::<Chess>(&Chess::startpos().fen(), "g1f3"), "Nf3");
    assert_eq!(san::<Chess>("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1c1"), "O-O-O");
}

fn distinct<G: Game>(seed: u64) {
    let mut rng = Rng::new(seed);
    let mut moves = MoveList::new();
    for _ in 0..60 {
        let game = random_game(G::startpos(), 120, &mut rng);
        for position in game.positions() {
            position.legal_moves(&mut moves);
            let sans: HashSet<String> = moves.iter().map(|&m| position.san(m)).collect();
            assert_eq!(sans.len(), moves.len(), "{}: {sans:?}", position.fen());
        }
    }
}

#[test]
fn every_legal_move_has_its_own_san() {
    distinct::<Capablanca>(11);
    distinct::<Chess>(12);
}

fn read_back<G: Game>(seed: u64) {
    let mut rng = Rng::new(seed);
    let mut moves = MoveList::new();
    for _ in 0..6 {
        let game = random_game(G::startpos(), 120, &mut rng);
        for position in game.positions() {
            position.legal_moves(&mut moves);
            for &m in moves.iter() {
                let san = position.san(m);
                assert_eq!(position.read_san(&san), Ok(m), "{} {san}", position.fen());
                // As other writers put it: no capture mark or check sign, an annotation.
                let loose = format!("{}!?", san.replace(['x', '+', '#'], ""));
                assert_eq!(position.read_san(&loose), Ok(m), "{} {loose}", position.fen());
            }
        }
    }
}

#[test]
fn san_reads_back_as_the_same_move() {
    read_back::<Capablanca>(13);
    read_back::<Chess>(14);
    let start = Capablanca::startpos();
    assert_eq!(start.read_san("Ci3").map(|m| m.to_string()), Ok("h1i3".to_string()));
    let castle = Capablanca::from_fen("r4k3r/10/10/10/10/10/10/R4K3R w KQkq - 0 1").unwrap();
    assert_eq!(castle.read_san("0-0").map(|m| m.to_string()), Ok("f1i1".to_string()));
    assert!(start.read_san("Ce5").is_err());
    assert!(start.read_san("").is_err());
    assert!(Chess::startpos().read_san("Nf6").is_err());
    assert!(Chess::startpos().read_san("%%").is_err());
}
