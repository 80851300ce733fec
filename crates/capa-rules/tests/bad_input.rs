//! Bad FENs and bad moves give errors that say what is wrong; nothing panics.
//!
//! The property tests at the bottom are the parsers' fuzzers: random strings,
//! and mutations of real FENs and moves. More cases:
//! `PROPTEST_CASES=100000 cargo test --release -p capa-rules bad_input`.

use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::go::Go9;
use capa_rules::{FenErrorKind, Game, MoveError};
use proptest::prelude::*;

fn capa_error(fen: &str) -> FenErrorKind {
    Capablanca::from_fen(fen).expect_err(fen).kind
}

fn chess_error(fen: &str) -> FenErrorKind {
    Chess::from_fen(fen).expect_err(fen).kind
}

#[test]
fn capablanca_fen_errors_name_the_problem() {
    // An 11-square rank (Fairy-Stockfish 11.1 silently wraps it).
    assert_eq!(
        capa_error("rnabqkbcnr1/pppppppppp/10/10/10/10/PPPPPPPPPP/RNABQKBCNR w KQkq - 0 1"),
        FenErrorKind::RankWidth { rank: 8, found: 11, expected: 10 }
    );
    assert_eq!(
        capa_error("rnabqkbcnr/pppppppppp/10/10/10/PPPPPPPPPP/RNABQKBCNR w KQkq - 0 1"),
        FenErrorKind::RankCount { found: 7, expected: 8 }
    );
    assert_eq!(
        capa_error("rnabqkbcnr/pppppppppp/10/10/4x5/10/PPPPPPPPPP/RNABQKBCNR w KQkq - 0 1"),
        FenErrorKind::UnknownPiece { piece: 'x', rank: 4 }
    );
    assert_eq!(
        capa_error("rnabq1bcnr/pppppppppp/10/10/10/10/PPPPPPPPPP/RNABQKBCNR w KQ - 0 1"),
        FenErrorKind::KingCount { color: capa_rules::Color::Black, count: 0 }
    );
    assert_eq!(
        capa_error("rnabqkbcnr/pppppppppp/10/10/4K5/10/PPPPPPPPPP/RNABQKBCNR w kq - 0 1"),
        FenErrorKind::KingCount { color: capa_rules::Color::White, count: 2 }
    );
    assert!(matches!(capa_error("k9/10/10/10/10/10/10/P8K w - - 0 1"), FenErrorKind::PawnOnBackRank { .. }));
    assert!(matches!(capa_error("k9/10/10/10/10/10/10/9K x - - 0 1"), FenErrorKind::SideToMove(_)));
    assert!(matches!(capa_error("k9/10/10/10/10/10/10/9K w - - x 1"), FenErrorKind::Clock { .. }));
    assert!(matches!(capa_error("k9/10/10/10/10/10/10/9K w - - 0 1 extra"), FenErrorKind::FieldCount(7)));
    assert!(matches!(capa_error(""), FenErrorKind::FieldCount(0)));
    assert!(matches!(capa_error("k9/10/10/10/10/10/10/9K w - - +5 1"), FenErrorKind::Clock { .. }));
}

/// Found in review: a huge empty-square count overflowed the file counter
/// (a panic in debug builds, a silently dropped rook in release builds).
#[test]
fn huge_empty_counts_are_rejected() {
    assert!(matches!(
        capa_error("18446744073709551615Rk9/10/10/10/10/10/10/9K w - - 0 1"),
        FenErrorKind::BadEmptyCount { .. }
    ));
    assert!(matches!(
        chess_error("18446744073709551615Rk7/8/8/8/8/8/8/7K w - - 0 1"),
        FenErrorKind::BadEmptyCount { .. }
    ));
    assert!(matches!(
        capa_error("99999999999999999999999/10/10/10/10/10/10/9K w - - 0 1"),
        FenErrorKind::BadEmptyCount { .. }
    ));
}

#[test]
fn capablanca_castling_needs_its_pieces() {
    let no_rook = "rnabqkbcnr/pppppppppp/10/10/10/10/PPPPPPPPPP/RNABQKBCN1 w KQkq - 0 1";
    let FenErrorKind::Castling { reason, .. } = capa_error(no_rook) else { panic!("castling error expected") };
    assert!(reason.contains("j1"), "{reason}");
    let moved_king = "r4k3r/pppppppppp/10/10/10/10/PPPPPPPPPP/R3K4R w KQkq - 0 1";
    assert!(matches!(capa_error(moved_king), FenErrorKind::Castling { .. }));
    assert!(matches!(capa_error("r4k3r/10/10/10/10/10/10/R4K3R w KX - 0 1"), FenErrorKind::Castling { .. }));
    assert!(matches!(capa_error("r4k3r/10/10/10/10/10/10/R4K3R w KK - 0 1"), FenErrorKind::Castling { .. }));
    // Rook-file letters are accepted and written back as KQkq.
    let pos = Capablanca::from_fen("r4k3r/10/10/10/10/10/10/R4K3R w JAja - 0 1").unwrap();
    assert_eq!(pos.fen(), "r4k3r/10/10/10/10/10/10/R4K3R w KQkq - 0 1");
}

#[test]
fn capablanca_en_passant_must_be_possible() {
    // No black pawn in front of e6.
    let fen = "rnabqkbcnr/pppppppppp/10/10/10/10/PPPPPPPPPP/RNABQKBCNR w KQkq e6 0 1";
    assert!(matches!(capa_error(fen), FenErrorKind::EnPassant { .. }));
    // Wrong rank for the side to move.
    let fen = "rnabqkbcnr/pppp1ppppp/10/4p5/10/10/PPPPPPPPPP/RNABQKBCNR w KQkq e3 0 2";
    assert!(matches!(capa_error(fen), FenErrorKind::EnPassant { .. }));
    assert!(matches!(capa_error("k9/10/10/10/10/10/10/9K w - z9 0 1"), FenErrorKind::EnPassant { .. }));
    // Possible but no capturer: accepted, and not written back (as Fairy-Stockfish does).
    let fen = "rnabqkbcnr/pppp1ppppp/10/4p5/10/10/PPPPPPPPPP/RNABQKBCNR w KQkq e6 0 2";
    assert_eq!(Capablanca::from_fen(fen).unwrap().fen(), fen.replace("e6", "-"));
    // With a capturer it stays.
    let fen = "rnabqkbcnr/pppp1ppppp/10/3Pp5/10/10/PPP1PPPPPP/RNABQKBCNR w KQkq e6 0 3";
    assert_eq!(Capablanca::from_fen(fen).unwrap().fen(), fen);
}

#[test]
fn side_not_to_move_in_check() {
    // White to move while the black king is attacked by the rook.
    assert_eq!(capa_error("k9/10/10/10/10/10/10/R8K w - - 0 1"), FenErrorKind::OpponentInCheck);
    assert_eq!(chess_error("k7/8/8/8/8/8/8/R6K w - - 0 1"), FenErrorKind::OpponentInCheck);
}

#[test]
fn chess_fen_errors_name_the_problem() {
    assert_eq!(
        chess_error("rnbqkbnr/ppppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"),
        FenErrorKind::RankWidth { rank: 7, found: 9, expected: 8 }
    );
    // Archbishops are not chess pieces.
    assert_eq!(
        chess_error("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBAR w KQkq - 0 1"),
        FenErrorKind::UnknownPiece { piece: 'A', rank: 1 }
    );
    assert!(matches!(chess_error("8/8/8/8/8/8/8/7K w - - 0 1"), FenErrorKind::KingCount { .. }));
    assert!(matches!(chess_error("4k3/8/8/8/8/8/8/R3K3 w KQ - 0 1"), FenErrorKind::Castling { .. }));
    assert!(matches!(chess_error("4k3/8/8/8/8/8/8/4K3 w - e6 0 1"), FenErrorKind::EnPassant { .. }));
    assert!(matches!(chess_error("4k3/8/8/8/8/8/8/P3K3 w - - 0 1"), FenErrorKind::PawnOnBackRank { .. }));
    assert!(matches!(chess_error("r3k2r/8/8/8/8/8/8/R3K2R w KKQQkq - 0 1"), FenErrorKind::Castling { .. }));
    assert!(matches!(chess_error("r3k2r/8/8/8/8/8/8/R3K2R w KX - 0 1"), FenErrorKind::Castling { .. }));
    assert!(matches!(chess_error("4k3/8/8/8/8/8/8/4K3 w - e9 0 1"), FenErrorKind::EnPassant { .. }));
    assert_eq!(chess_error("k7/8/8/8/8/8/8/R6K w - - 0 1"), FenErrorKind::OpponentInCheck);
    assert!(matches!(chess_error("4k3/8/8/8/8/8/8/4K3 w - - 0 1 1"), FenErrorKind::FieldCount(7)));
    assert!(matches!(chess_error("k7/8/8/8/8/8/PPPPPPPP/QQQQQKQQ w - - 0 1"), FenErrorKind::TooMuchMaterial));
}

#[test]
fn errors_render_with_the_fen() {
    let err = Capablanca::from_fen("k10/10/10/10/10/10/10/9K w - - 0 1").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid FEN 'k10/10/10/10/10/10/10/9K w - - 0 1': rank 8 describes 11 squares, expected 10"
    );
}

#[test]
fn uci_errors() {
    let pos = Capablanca::startpos();
    assert!(matches!(pos.parse_move("e2e5"), Err(MoveError::Illegal { .. })));
    assert!(matches!(pos.parse_move("e2"), Err(MoveError::Malformed { .. })));
    assert!(matches!(pos.parse_move("k2k4"), Err(MoveError::Malformed { .. })));
    assert!(matches!(pos.parse_move("e2e4q"), Err(MoveError::Illegal { .. })));
    assert!(matches!(pos.parse_move("0000"), Err(MoveError::Malformed { .. })));
    assert!(matches!(pos.parse_move("e2e4x"), Err(MoveError::Malformed { .. })));
    assert_eq!(pos.parse_move("j2j4").unwrap().to_string(), "j2j4");
    let chess = Chess::startpos();
    assert!(matches!(chess.parse_move("i2i4"), Err(MoveError::Malformed { .. })));
    assert!(matches!(chess.parse_move("e2e5"), Err(MoveError::Illegal { .. })));
    assert!(matches!(chess.parse_move("e7e8c"), Err(MoveError::Malformed { .. })));
    // Castling is the king's two-square move in UCI, not king-takes-rook.
    let castling = Chess::from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1").unwrap();
    assert!(castling.parse_move("e1g1").is_ok());
    assert!(matches!(castling.parse_move("e1h1"), Err(MoveError::Illegal { .. })));
    let capa = Capablanca::from_fen("r4k3r/10/10/10/10/10/10/R4K3R w KQkq - 0 1").unwrap();
    assert!(capa.parse_move("f1i1").is_ok());
    assert!(matches!(capa.parse_move("f1j1"), Err(MoveError::Illegal { .. })));
    let err = pos.parse_move("e2e5").unwrap_err().to_string();
    assert!(err.contains("e2e5") && err.contains("rnabqkbcnr/"), "{err}");
}

/// A FEN of the given game with one random edit: what a fuzzer would try.
/// Inserted text includes long digit runs, which once overflowed the parser.
fn mutated(fens: &'static [&'static str]) -> impl Strategy<Value = String> {
    let edit = prop_oneof![
        single_edit(fens),
        (0..fens.len(), any::<usize>(), "[0-9]{1,25}").prop_map(move |(i, at, digits)| {
            let fen = fens[i];
            let at = fen.char_indices().map(|(j, _)| j).nth(at % fen.len()).unwrap_or(0);
            format!("{}{digits}{}", &fen[..at], &fen[at..])
        }),
    ];
    edit
}

fn single_edit(fens: &'static [&'static str]) -> impl Strategy<Value = String> {
    (
        0..fens.len(),
        any::<usize>(),
        prop::sample::select(" /0123456789KQkqABCJRNPpnbrqkac-wxe".chars().collect::<Vec<char>>()),
        0..3usize,
    )
        .prop_map(move |(i, at, piece, op)| {
            let mut s: Vec<char> = fens[i].chars().collect();
            let at = at % (s.len() + 1);
            match op {
                0 => s.insert(at, piece),
                1 if at < s.len() => {
                    s.remove(at);
                }
                _ if at < s.len() => s[at] = piece,
                _ => {}
            }
            s.into_iter().collect()
        })
}

const CAPA: &[&str] = &crate::common::CAPABLANCA_FENS;
const CHESS: &[&str] = &crate::common::CHESS_FENS;
/// Go positions in their text form: the empty board, stones with a ko, passes, superko.
const GO: &[&str] = &[
    "9/9/9/9/9/9/9/9/9 b - 0 7.5 simple 0",
    "9/9/9/3XO4/2X1XO3/3XO4/9/9/9 w D5 0 7.5 simple 9",
    "XO7/1O7/9/9/4X4/9/9/9/8X w - 1 0.5 superko 31",
    "9/9/9/9/9/9/9/9/9 b",
];

/// What every accepted FEN must satisfy: it writes back to a FEN that parses
/// to the same position, and moves can be generated, played and judged.
fn accepted_is_consistent<G: Game>(fen: &str) {
    if let Ok(pos) = G::from_fen(fen) {
        let again = G::from_fen(&pos.fen()).expect("our own FEN parses");
        assert_eq!(again.fen(), pos.fen());
        assert_eq!(again.hash(), pos.hash());
        let split = capa_rules::divide(&pos, 2);
        assert_eq!(split.iter().map(|(_, n)| n).sum::<u64>(), capa_rules::perft(&pos, 2));
        let _ = pos.outcome();
    }
}

proptest! {
    #[test]
    fn fen_parsers_never_panic(s in "\\PC{0,100}") {
        accepted_is_consistent::<Capablanca>(&s);
        accepted_is_consistent::<Chess>(&s);
        accepted_is_consistent::<Go9>(&s);
    }

    #[test]
    fn mutated_go_texts(text in mutated(GO)) {
        accepted_is_consistent::<Go9>(&text);
    }

    #[test]
    fn go_vertices_never_panic(s in "[A-Za-z0-9]{0,4}|\\PC{0,8}") {
        for text in GO {
            let _ = Go9::from_fen(text).unwrap().parse_move(&s);
        }
    }

    #[test]
    fn mutated_capablanca_fens(fen in mutated(CAPA)) {
        accepted_is_consistent::<Capablanca>(&fen);
    }

    #[test]
    fn mutated_chess_fens(fen in mutated(CHESS)) {
        accepted_is_consistent::<Chess>(&fen);
    }

    #[test]
    fn uci_parsers_never_panic(s in "[a-l0-9qrbnack]{0,6}|\\PC{0,8}") {
        let _ = Capablanca::startpos().parse_move(&s);
        let _ = Capablanca::from_fen(CAPA[3]).unwrap().parse_move(&s);
        let _ = Chess::startpos().parse_move(&s);
        let _ = Chess::from_fen(CHESS[3]).unwrap().parse_move(&s);
    }

    #[test]
    fn san_readers_never_panic(s in "[KQRBNACa-j1-8x=+#O0-]{0,8}|\\PC{0,10}") {
        for position in [Capablanca::startpos(), Capablanca::from_fen(CAPA[3]).unwrap()] {
            if let Ok(m) = position.read_san(&s) {
                prop_assert!(position.parse_move(&m.to_string()).is_ok());
            }
        }
        for position in [Chess::startpos(), Chess::from_fen(CHESS[3]).unwrap()] {
            if let Ok(m) = position.read_san(&s) {
                prop_assert!(position.parse_move(&m.to_string()).is_ok());
            }
        }
    }
}
