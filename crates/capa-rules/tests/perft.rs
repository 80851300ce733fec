//! Perft against the counts of real engines (../shared/reference/perft.md).
//!
//! Lines above a few million leaves run only in optimised builds
//! (scripts/test.sh builds in `quick-release`); the deepest are `#[ignore]`d:
//! `cargo test --profile quick-release -p capa-rules -- --ignored deep`.

use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, perft};

use crate::common::{CAPABLANCA_FENS, CHESS_FENS};

/// Checks every `(depth, nodes)` whose node count fits the build's budget.
fn check<G: Game>(fen: &str, lines: &[(u32, u64)], budget: u64) {
    let pos = G::from_fen(fen).unwrap();
    for &(depth, nodes) in lines.iter().filter(|l| l.1 <= budget) {
        assert_eq!(perft(&pos, depth), nodes, "{} perft({depth}) of {fen}", G::NAME);
    }
}

const BUDGET: u64 = if cfg!(debug_assertions) { 1_000_000 } else { 30_000_000 };

#[test]
fn capablanca_start() {
    check::<Capablanca>(CAPABLANCA_FENS[0], &[(1, 28), (2, 784), (3, 25_228), (4, 805_128), (5, 28_741_319)], BUDGET);
}

#[test]
fn capablanca_castling() {
    check::<Capablanca>(CAPABLANCA_FENS[1], &[(1, 31), (2, 961), (3, 29_210), (4, 887_784), (5, 26_548_436)], BUDGET);
}

#[test]
fn capablanca_check_by_archbishop() {
    check::<Capablanca>(CAPABLANCA_FENS[2], &[(1, 4), (2, 230), (3, 8_304), (4, 456_125), (5, 16_419_047)], BUDGET);
}

#[test]
fn capablanca_promotions() {
    check::<Capablanca>(CAPABLANCA_FENS[3], &[(1, 56), (2, 2_393), (3, 104_950), (4, 3_973_265)], BUDGET);
}

#[test]
fn chess_suite() {
    let lines: [&[(u32, u64)]; 6] = [
        &[(1, 20), (2, 400), (3, 8_902), (4, 197_281), (5, 4_865_609)],
        &[(1, 48), (2, 2_039), (3, 97_862), (4, 4_085_603)],
        &[(1, 14), (2, 191), (3, 2_812), (4, 43_238), (5, 674_624), (6, 11_030_083)],
        &[(1, 6), (2, 264), (3, 9_467), (4, 422_333), (5, 15_833_292)],
        &[(1, 44), (2, 1_486), (3, 62_379), (4, 2_103_487)],
        &[(1, 46), (2, 2_079), (3, 89_890), (4, 3_894_594)],
    ];
    for (fen, lines) in CHESS_FENS.iter().zip(lines) {
        check::<Chess>(fen, lines, BUDGET);
    }
}

#[test]
#[ignore = "deep perft, minutes: cargo test --profile quick-release -p capa-rules -- --ignored deep"]
fn deep_perft() {
    check::<Capablanca>(CAPABLANCA_FENS[0], &[(6, 1_015_802_437)], u64::MAX);
    check::<Chess>(CHESS_FENS[0], &[(6, 119_060_324)], u64::MAX);
    check::<Chess>(CHESS_FENS[1], &[(5, 193_690_690)], u64::MAX);
    check::<Chess>(CHESS_FENS[2], &[(7, 178_633_661)], u64::MAX);
    check::<Chess>(CHESS_FENS[3], &[(6, 706_045_033)], u64::MAX);
    check::<Chess>(CHESS_FENS[4], &[(5, 89_941_194)], u64::MAX);
    check::<Chess>(CHESS_FENS[5], &[(5, 164_075_551)], u64::MAX);
}

#[test]
fn divide_sums_to_perft() {
    let pos = Capablanca::from_fen(CAPABLANCA_FENS[2]).unwrap();
    let split = capa_rules::divide(&pos, 3);
    let names: Vec<String> = split.iter().map(|(m, _)| m.to_string()).collect();
    assert_eq!(names.len(), 4);
    for m in ["e4g3", "f1g1", "f1g2", "h2g3"] {
        assert!(names.contains(&m.to_string()), "{m} missing from {names:?}");
    }
    assert_eq!(split.iter().map(|(_, n)| n).sum::<u64>(), 8_304);
}
