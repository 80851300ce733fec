//! Helpers shared by the tests: a seeded RNG and random games.

use capa_rules::{Game, History, MoveList};

/// SplitMix64: tiny, seedable, the same on every platform.
pub struct Rng(u64);

impl Rng {
    /// Seeded from `CAPA_SEED` when set (to explore), else from `seed`.
    pub fn new(seed: u64) -> Rng {
        let seed = std::env::var("CAPA_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(seed);
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A game of up to `plies` random legal moves from `start`, shorter if it
/// reaches a position without moves (draw rules do not stop it).
pub fn random_game<G: Game>(start: G, plies: usize, rng: &mut Rng) -> History<G> {
    let mut game = History::new(start);
    let mut moves = MoveList::new();
    for _ in 0..plies {
        game.current().legal_moves(&mut moves);
        if moves.is_empty() {
            break;
        }
        game.play(moves[rng.below(moves.len())]);
    }
    game
}

/// Capablanca positions from ../shared/reference/perft.md.
pub const CAPABLANCA_FENS: [&str; 4] = [
    "rnabqkbcnr/pppppppppp/10/10/10/10/PPPPPPPPPP/RNABQKBCNR w KQkq - 0 1",
    "r4k3r/pppppppppp/10/10/10/10/PPPPPPPPPP/R4K3R w KQkq - 0 1",
    "r4k3r/ppppp1pppp/5c4/10/4N5/5Na3/PPPP3PPP/R4K3R w KQkq - 0 1",
    "n1n4r1k/1P4P3/10/10/10/4K5/2p5p1/1N5R1N w - - 0 1",
];

/// The chessprogramming wiki's perft positions.
pub const CHESS_FENS: [&str; 6] = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
];
