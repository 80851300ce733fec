//! The input planes against Lc0's published layout (chess) and the design's
//! (Capablanca). Expected bitboards are written by hand from the layout:
//! bit `rank * 8 + file` of a plane, in the mover's frame.

use capa_net::NetGame;
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, History};

/// Encodes the last position of `history` (all of it as the request's window).
fn planes<G: NetGame>(history: &History<G>) -> Vec<f32> {
    let positions = history.positions();
    let window = &positions[positions.len().saturating_sub(8)..];
    let repeated: Vec<bool> = (0..window.len())
        .map(|i| {
            let index = positions.len() - window.len() + i;
            positions[..index].iter().any(|p| p.hash() == positions[index].hash())
        })
        .collect();
    let mut out = vec![f32::NAN; G::INPUT_LEN];
    G::encode(window, &repeated, &mut out);
    out
}

/// Plane `index` of a chess input as a bitboard (every value 0 or 1).
fn bitboard(planes: &[f32], index: usize) -> u64 {
    let plane = &planes[index * 64..(index + 1) * 64];
    plane.iter().enumerate().fold(0, |bits, (square, &v)| {
        assert!(v == 0.0 || v == 1.0, "plane {index} square {square} holds {v}");
        bits | (u64::from(v == 1.0) << square)
    })
}

fn constant(planes: &[f32], index: usize) -> f32 {
    let plane = &planes[index * 64..(index + 1) * 64];
    assert!(plane.iter().all(|&v| v == plane[0]), "plane {index} is not constant");
    plane[0]
}

fn play(history: &mut History<Chess>, moves: &str) {
    for uci in moves.split_whitespace() {
        let m = history.current().parse_move(uci).unwrap();
        history.play(m);
    }
}

const RANK_2: u64 = 0xFF00;
const RANK_7: u64 = 0x00FF_0000_0000_0000;

#[test]
fn chess_start_position_is_lc0s() {
    assert_eq!(Chess::PLANES, 112);
    let p = planes(&History::new(Chess::startpos()));
    // Ours: P N B R Q K; theirs the same.
    let ours = [RANK_2, 0x42, 0x24, 0x81, 0x08, 0x10];
    let theirs = [RANK_7, 0x42 << 56, 0x24 << 56, 0x81 << 56, 0x08 << 56, 0x10 << 56];
    for k in 0..6 {
        assert_eq!(bitboard(&p, k), ours[k], "our piece plane {k}");
        assert_eq!(bitboard(&p, 6 + k), theirs[k], "their piece plane {k}");
    }
    assert_eq!(bitboard(&p, 12), 0, "repetition");
    // A game from the start position: no history, no fill.
    for plane in 13..104 {
        assert_eq!(bitboard(&p, plane), 0, "history plane {plane}");
    }
    for (plane, value) in
        [(104, 1.0), (105, 1.0), (106, 1.0), (107, 1.0), (108, 0.0), (109, 0.0), (110, 0.0), (111, 1.0)]
    {
        assert_eq!(constant(&p, plane), value, "aux plane {plane}");
    }
}

#[test]
fn chess_black_to_move_sees_the_board_mirrored() {
    let mut history = History::new(Chess::startpos());
    play(&mut history, "e2e4");
    let p = planes(&history);
    // Black is "ours", mirrored onto the first ranks.
    assert_eq!(bitboard(&p, 0), RANK_2, "our (black) pawns");
    assert_eq!(bitboard(&p, 5), 0x10, "our king on e8, seen on e1");
    // White's pawns: a2..h2 without e2 seen on rank 7, e4 seen on e5.
    assert_eq!(bitboard(&p, 6), (RANK_7 & !(1 << 52)) | (1 << 36), "their pawns");
    assert_eq!(bitboard(&p, 11), 0x10 << 56, "their king");
    // Slot 1: the start position, in black's frame.
    assert_eq!(bitboard(&p, 13), RANK_2);
    assert_eq!(bitboard(&p, 13 + 6), RANK_7);
    assert_eq!(bitboard(&p, 13 + 9), 0x81 << 56, "their rooks");
    for plane in 26..104 {
        assert_eq!(bitboard(&p, plane), 0, "plane {plane}");
    }
    assert_eq!(constant(&p, 108), 1.0, "black to move");
}

#[test]
fn chess_repetition_and_rule50() {
    let mut history = History::new(Chess::startpos());
    play(&mut history, "g1f3 g8f6 f3g1 f6g8 g1f3");
    let p = planes(&history);
    // The current position (after Nf3) occurred after ply 1.
    assert_eq!(bitboard(&p, 12), u64::MAX, "slot 0 repeated");
    // Slot 1 is the start position again.
    assert_eq!(bitboard(&p, 13 + 12), u64::MAX, "slot 1 (the start again) repeated");
    // Slots 4 and 5 are their first occurrences.
    assert_eq!(bitboard(&p, 4 * 13 + 12), 0, "slot 4 (after Nf3 the first time)");
    assert_eq!(bitboard(&p, 5 * 13 + 12), 0, "slot 5 (the start)");
    assert_eq!(constant(&p, 109), 5.0 / 99.0, "rule50 after five quiet plies");
    // Black to move, white has moved the knight only: all castling rights remain.
    for plane in 104..108 {
        assert_eq!(constant(&p, plane), 1.0);
    }
}

#[test]
fn chess_castling_planes_follow_the_mover() {
    // White may castle queenside only, black kingside only; black to move.
    let history = History::new(Chess::from_fen("r3k2r/8/8/8/8/8/8/R3K2R b Qk - 0 1").unwrap());
    let p = planes(&history);
    assert_eq!(constant(&p, 104), 0.0, "our (black) O-O-O");
    assert_eq!(constant(&p, 105), 1.0, "our O-O");
    assert_eq!(constant(&p, 106), 1.0, "their (white) O-O-O");
    assert_eq!(constant(&p, 107), 0.0, "their O-O");
}

#[test]
fn chess_fen_start_fills_history_and_undoes_the_double_push() {
    // White just played e2e4; a black pawn on f4 can take en passant.
    let fen = "rnbqkbnr/ppppp1pp/8/8/4Pp2/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3";
    let p = planes(&History::new(Chess::from_fen(fen).unwrap()));
    let theirs_now = (RANK_7 & !(1 << 52)) | (1 << 36); // white pawns, mirrored
    assert_eq!(bitboard(&p, 6), theirs_now);
    for slot in 1..8 {
        let base = slot * 13;
        // The copies draw white's e-pawn back on e2 (mirrored: e7).
        assert_eq!(bitboard(&p, base + 6), RANK_7, "slot {slot} their pawns");
        assert_eq!(bitboard(&p, base), (RANK_2 & !(1 << 13)) | (1 << 37), "slot {slot} our pawns (f4 seen on f5)");
        assert_eq!(bitboard(&p, base + 12), 0);
    }
}

#[test]
fn chess_fen_start_undoes_a_black_double_push_too() {
    // Black just played d7d5; white's pawn on e5 can take en passant. White to move.
    let fen = "rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3";
    let mut history = History::new(Chess::from_fen(fen).unwrap());
    play(&mut history, "g1f3");
    let p = planes(&history);
    // Black to move now, so ranks are mirrored. Slot 1 is the FEN position
    // itself: black's d-pawn really stands on d5 (seen on d4).
    let black_pawns_now = (RANK_2 & !(1 << 11)) | (1 << (3 * 8 + 3));
    assert_eq!(bitboard(&p, 13), black_pawns_now, "slot 1: our pawns as they stood");
    for slot in 2..8 {
        // The fill copies draw the d-pawn back on d7 (seen on d2).
        assert_eq!(bitboard(&p, slot * 13), RANK_2, "slot {slot}: our pawns, double push undone");
    }
}

#[test]
fn capablanca_planes() {
    assert_eq!(Capablanca::PLANES, 139);
    let mut history = History::new(Capablanca::startpos());
    let m = history.current().parse_move("e2e4").unwrap();
    history.play(m);
    let p = planes(&history);
    let square = |plane: usize, file: usize, rank: usize| p[plane * 80 + rank * 10 + file];
    // Black to move: black's pieces are ours, mirrored. Black's king is on f8.
    assert_eq!(square(5, 5, 0), 1.0, "our king on f8, seen on f1");
    assert_eq!(square(6, 2, 0), 1.0, "our archbishop on c8, seen on c1");
    assert_eq!(square(7, 7, 0), 1.0, "our chancellor on h8, seen on h1");
    assert_eq!(square(8, 4, 4), 1.0, "their pawn on e4, seen on e5");
    assert_eq!(square(8, 4, 6), 0.0, "no pawn left on e2 (seen on e7)");
    // Slot 1 holds the start position; slots 2.. are empty (standard start).
    assert_eq!(square(17 + 8, 4, 6), 1.0, "slot 1: their pawn on e2, seen on e7");
    assert!(p[2 * 17 * 80..8 * 17 * 80].iter().all(|&v| v == 0.0));
    // Castling: the four corners; clock 0; ones.
    let aux = 8 * 17;
    let corners: Vec<(usize, usize)> = (0..80).filter(|&s| p[aux * 80 + s] == 1.0).map(|s| (s % 10, s / 10)).collect();
    assert_eq!(corners, vec![(0, 0), (9, 0), (0, 7), (9, 7)]);
    assert!(p[(aux + 1) * 80..(aux + 2) * 80].iter().all(|&v| v == 0.0));
    assert!(p[(aux + 2) * 80..(aux + 3) * 80].iter().all(|&v| v == 1.0));
    // Every piece plane of slot 0 counts the pieces: 20 of each side's.
    let count = |planes: std::ops::Range<usize>| p[planes.start * 80..planes.end * 80].iter().sum::<f32>();
    assert_eq!(count(0..8), 20.0);
    assert_eq!(count(8..16), 20.0);
}

/// The points set in plane `index` of a 9x9 Go input, as GTP vertices.
fn go_points(planes: &[f32], index: usize) -> Vec<String> {
    let plane = &planes[index * 81..(index + 1) * 81];
    assert!(plane.iter().all(|&v| v == 0.0 || v == 1.0), "plane {index} is 0 or 1");
    (0..81).filter(|&p| plane[p] == 1.0).map(|p| capa_rules::go::GoMove::<9>::at(p).to_string()).collect()
}

fn go_constant(planes: &[f32], index: usize) -> f32 {
    let plane = &planes[index * 81..(index + 1) * 81];
    assert!(plane.iter().all(|&v| v == plane[0]), "plane {index} is not constant");
    plane[0]
}

#[test]
fn go_planes_show_stones_liberties_ko_recent_moves_and_komi() {
    use capa_rules::go::Go9;
    let mut history = History::new(Go9::startpos());
    // A ko: black takes at E5; then white passes.
    for vertex in "D6 E6 C5 F5 D4 E4 pass D5 E5 pass".split_whitespace() {
        let m = history.current().parse_move(vertex).unwrap();
        history.play(m);
    }
    let out = planes(&history);
    assert_eq!(out.len(), Go9::INPUT_LEN);
    assert_eq!(Go9::PLANES, 15);
    assert!(out[..81].iter().all(|&v| v == 1.0), "plane 0: ones");
    // Black is to move: black's stones are "ours".
    assert_eq!(go_points(&out, 1), ["D4", "C5", "E5", "D6"]);
    assert_eq!(go_points(&out, 2), ["E4", "F5", "E6"]);
    // E5 has one liberty (D5, the ko point); E4 and E6 two; the rest three or four.
    assert_eq!(go_points(&out, 3), ["E5"]);
    assert_eq!(go_points(&out, 4), ["E4", "E6"]);
    assert_eq!(go_points(&out, 5), ["D4", "C5", "F5", "D6"]);
    // The ko was white's to respect, and white passed: no ko for black now.
    assert!(go_points(&out, 6).is_empty());
    // Recent moves, newest first: pass, E5, D5, pass, E4.
    let recent: Vec<Vec<String>> = (7..12).map(|i| go_points(&out, i)).collect();
    assert_eq!(recent, [vec![], vec!["E5".to_string()], vec!["D5".to_string()], vec![], vec!["E4".to_string()]]);
    assert_eq!(go_constant(&out, 12), 1.0, "the last move was a pass");
    assert_eq!(go_constant(&out, 13), 0.0, "the one before was not");
    assert_eq!(go_constant(&out, 14), -7.5 / 15.0, "komi from black's side");
    // White to move after black's reply sees the ko point and the komi as its own.
    history.play(history.current().parse_move("J9").unwrap());
    history.undo();
    history.undo();
    let out = planes(&history);
    assert_eq!(go_points(&out, 6), ["D5"], "white may not retake at D5");
    assert_eq!(go_points(&out, 1), ["E4", "F5", "E6"], "white's stones are ours");
    assert_eq!(go_constant(&out, 14), 7.5 / 15.0);
}
