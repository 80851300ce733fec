//! The replay buffer: a window over the newest training positions, kept as
//! whole games, and the batches drawn from it.
//!
//! A game is held as its replayed positions (for the input planes and their
//! history) plus its record (for the targets). Fully searched plies are
//! training positions; fast-search plies too, without a policy target, when
//! the value target asks for them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};

use capa_data::{Ending, GameRecord, PlyRecord, plies_to_end};
use capa_mcts::HISTORY_LEN;
use capa_net::{HostBatch, NetGame};
use capa_rules::Rng;
use capa_rules::{Color, History, MoveList, Termination};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// How training positions are drawn from the buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sampling {
    /// Every position equally likely (Lc0's way).
    Uniform,
    /// Won, drawn and lost positions (for the side to move) equally likely.
    ValueBalanced,
}

/// One game in the buffer.
struct Stored<G: NetGame> {
    record: GameRecord<G>,
    /// Every position, the start first.
    positions: Vec<G>,
    /// Whether each position occurred earlier in the game.
    repeated: Vec<bool>,
    /// The plies that are training positions.
    samples: Vec<u32>,
    /// Times each of them was drawn into a batch.
    drawn: Vec<AtomicU32>,
    /// Share of the best move's value in this game's value targets.
    q_weight: f32,
    /// A teacher's game (distillation data seeding a self-play buffer).
    teacher: bool,
    /// Go, where the game ended scored: each point's final owner from
    /// White's side (1 White's, -1 Black's, 0 neither's).
    final_owners: Option<Vec<f32>>,
}

/// How the value target of a position is made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValueTarget {
    /// Share of the search's value of its best move (as W/D/L); the rest is
    /// the game's result.
    pub q_weight: f32,
    /// Whether fast-search plies are training positions too, for every head
    /// but the policy (their policy target is zeros).
    pub fast_plies: bool,
}

impl ValueTarget {
    /// Whether `ply` is a training position.
    pub fn trains_on(&self, ply: &PlyRecord) -> bool {
        // A ply with no search (a forced move) has no target at all.
        if ply.full_search { !ply.visits.is_empty() } else { self.fast_plies && !ply.visits.is_empty() }
    }
}

/// A FIFO window over positions, fed game by game.
pub struct ReplayBuffer<G: NetGame> {
    games: VecDeque<Stored<G>>,
    positions: usize,
    window: usize,
    sampling: Sampling,
    value: ValueTarget,
}

impl<G: NetGame> ReplayBuffer<G> {
    /// An empty buffer of `window` positions.
    pub fn new(window: usize, sampling: Sampling, value: ValueTarget) -> ReplayBuffer<G> {
        ReplayBuffer { games: VecDeque::new(), positions: 0, window, sampling, value }
    }

    /// Training positions held.
    pub fn positions(&self) -> usize {
        self.positions
    }

    /// Games held.
    pub fn games(&self) -> usize {
        self.games.len()
    }

    /// Adds a game (newest last), dropping the oldest games that fall out of the window.
    pub fn push(&mut self, record: GameRecord<G>) {
        self.push_game(record, self.value.q_weight, false);
    }

    /// A teacher's game in a self-play buffer: it keeps the value target
    /// it was distilled with (`q_weight`), and [`drop_teacher`](Self::drop_teacher) takes it out.
    pub fn push_teacher(&mut self, record: GameRecord<G>, q_weight: f32) {
        self.push_game(record, q_weight, true);
    }

    /// Takes the oldest teacher's games out until `positions` of their
    /// positions have left (or none is left); returns how many left.
    pub fn drop_teacher(&mut self, positions: usize) -> usize {
        let mut dropped = 0;
        while dropped < positions {
            let Some(index) = self.games.iter().position(|g| g.teacher) else { break };
            let game = self.games.remove(index).expect("found");
            dropped += game.samples.len();
            self.positions -= game.samples.len();
        }
        dropped
    }

    /// Teacher's positions held.
    pub fn teacher_positions(&self) -> usize {
        self.games.iter().filter(|g| g.teacher).map(|g| g.samples.len()).sum()
    }

    fn push_game(&mut self, record: GameRecord<G>, q_weight: f32, teacher: bool) {
        let mut history = History::new(record.start.clone());
        let mut repeated = Vec::with_capacity(record.moves.len() + 1);
        repeated.push(false);
        for &m in &record.moves {
            history.play(m);
            repeated.push(history.repetitions() > 0);
        }
        let positions = history.positions().to_vec();
        let final_owners =
            positions.last().filter(|_| record.ending == Ending::Rules(Termination::Scored)).and_then(|end| {
                let mut owners = vec![0.0; G::RANKS * G::FILES];
                end.final_owners(Color::White, &mut owners).then_some(owners)
            });
        let samples: Vec<u32> =
            record.plies.iter().enumerate().filter(|(_, p)| self.value.trains_on(p)).map(|(i, _)| i as u32).collect();
        self.positions += samples.len();
        let drawn = samples.iter().map(|_| AtomicU32::new(0)).collect();
        self.games.push_back(Stored { record, positions, repeated, samples, drawn, q_weight, teacher, final_owners });
        self.trim();
    }

    /// The window's size in positions.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Resizes the window (it grows with the run), dropping the oldest
    /// games that no longer fit.
    pub fn set_window(&mut self, window: usize) {
        self.window = window;
        self.trim();
    }

    fn trim(&mut self) {
        while self.games.len() > 1 && self.positions - self.games[0].samples.len() >= self.window {
            let oldest = self.games.pop_front().expect("more than one");
            self.positions -= oldest.samples.len();
        }
    }

    /// Times each position was drawn so far, as counted: the mean over the
    /// window, and over its oldest 5% (at least one position), which is
    /// about what a position gets in its lifetime in the window.
    pub fn passes(&self) -> (f64, f64) {
        if self.positions == 0 {
            return (0.0, 0.0);
        }
        let counts = || self.games.iter().flat_map(|g| g.drawn.iter().map(|d| f64::from(d.load(Ordering::Relaxed))));
        let oldest = self.positions.div_ceil(20);
        let mean = counts().sum::<f64>() / self.positions as f64;
        (mean, counts().take(oldest).sum::<f64>() / oldest as f64)
    }

    /// Draws `size` positions (with replacement) and encodes them in
    /// parallel. `None` when the buffer holds no position.
    pub fn sample(&self, size: usize, rng: &mut Rng) -> Option<HostBatch> {
        if self.positions == 0 {
            return None;
        }
        // (game, index into its samples)
        let picks: Vec<(usize, usize)> = match self.sampling {
            Sampling::Uniform => {
                (0..size).map(|_| self.nth((rng.next_u64() % self.positions as u64) as usize)).collect()
            }
            Sampling::ValueBalanced => {
                let classes = self.by_value();
                let present: Vec<&Vec<(usize, usize)>> = classes.iter().filter(|c| !c.is_empty()).collect();
                (0..size)
                    .map(|_| {
                        let class = present[(rng.next_u64() % present.len() as u64) as usize];
                        class[(rng.next_u64() % class.len() as u64) as usize]
                    })
                    .collect()
            }
        };
        for &(game, sample) in &picks {
            self.games[game].drawn[sample].fetch_add(1, Ordering::Relaxed);
        }
        Some(self.encode(&self.plies_of(&picks)))
    }

    /// (game, sample index) pairs as (game, ply).
    fn plies_of(&self, picks: &[(usize, usize)]) -> Vec<(usize, u32)> {
        picks.iter().map(|&(game, sample)| (game, self.games[game].samples[sample])).collect()
    }

    /// The training positions `range` (counted oldest first), encoded.
    pub(crate) fn encode_range(&self, range: std::ops::Range<usize>) -> HostBatch {
        let picks: Vec<(usize, usize)> = range.map(|n| self.nth(n)).collect();
        self.encode(&self.plies_of(&picks))
    }

    /// The `n`-th training position, oldest first, as (game, sample index).
    fn nth(&self, mut n: usize) -> (usize, usize) {
        for (index, game) in self.games.iter().enumerate() {
            if n < game.samples.len() {
                return (index, n);
            }
            n -= game.samples.len();
        }
        unreachable!("n < positions")
    }

    /// The training positions by game result for the side to move: won, drawn, lost.
    fn by_value(&self) -> [Vec<(usize, usize)>; 3] {
        let mut classes: [Vec<(usize, usize)>; 3] = Default::default();
        for (index, game) in self.games.iter().enumerate() {
            for (sample, &ply) in game.samples.iter().enumerate() {
                let class = match game.record.winner {
                    None => 1,
                    Some(winner) if winner == game.positions[ply as usize].turn() => 0,
                    Some(_) => 2,
                };
                classes[class].push((index, sample));
            }
        }
        classes
    }

    fn encode(&self, picks: &[(usize, u32)]) -> HostBatch {
        let size = picks.len();
        let policy_size = G::policy_size();
        let mut batch = HostBatch {
            size,
            planes: vec![0.0; size * G::INPUT_LEN],
            policy: vec![0.0; size * policy_size],
            legal: vec![false; size * policy_size],
            wdl: vec![0.0; size * 3],
            moves_left: vec![0.0; size],
            future: vec![0.0; size * policy_size],
            ..HostBatch::default()
        };
        picks
            .par_iter()
            .zip(batch.planes.par_chunks_mut(G::INPUT_LEN))
            .zip(batch.policy.par_chunks_mut(policy_size))
            .zip(batch.legal.par_chunks_mut(policy_size))
            .zip(batch.wdl.par_chunks_mut(3))
            .zip(batch.moves_left.par_iter_mut())
            .zip(batch.future.par_chunks_mut(policy_size))
            .for_each(|((((((&(game, ply), planes), policy), legal), wdl), moves_left), future)| {
                let game = &self.games[game];
                let ply = ply as usize;
                let first = (ply + 1).saturating_sub(HISTORY_LEN);
                G::encode(&game.positions[first..=ply], &game.repeated[first..=ply], planes);
                let position = &game.positions[ply];
                let record = &game.record.plies[ply];
                if record.full_search {
                    let total: f32 = record.visits.iter().map(|&(_, share)| share).sum();
                    for &(index, share) in &record.visits {
                        policy[usize::from(index)] = share / total;
                    }
                }
                let mut moves = MoveList::new();
                position.legal_moves(&mut moves);
                for &m in &moves {
                    legal[position.policy_index(m)] = true;
                }
                let z = outcome_wdl(game.record.winner, position.turn());
                // The best move's value, as Lc0's trainer takes best_q: the
                // root's mean also averages the moves a Gumbel root visits
                // only to rule them out, and reads some 0.07 lower for the
                // side to move in Capablanca self-play at 128 simulations.
                let best = record.best;
                let q_wdl =
                    [(1.0 + best.q - best.d) / 2.0, best.d, (1.0 - best.q - best.d) / 2.0].map(|v| v.clamp(0.0, 1.0));
                for ((target, z), q) in wdl.iter_mut().zip(z).zip(q_wdl) {
                    *target = (1.0 - game.q_weight) * z + game.q_weight * q;
                }
                *moves_left = plies_to_end(game.record.moves.len(), ply);
                if let Some(&next) = game.record.moves.get(ply + 2) {
                    future[game.positions[ply + 2].policy_index(next)] = 1.0;
                }
            });
        if !G::KIND.is_chess() {
            self.encode_territory(picks, &mut batch);
        }
        batch
    }

    /// Go's ownership and score targets of `picks` into `batch`: the final
    /// owners from the side to move's side, and their sum (the area
    /// difference) one-hot; zeros for a game that did not end scored.
    fn encode_territory(&self, picks: &[(usize, u32)], batch: &mut HostBatch) {
        let squares = G::RANKS * G::FILES;
        let bins = 2 * squares + 1;
        batch.ownership = vec![0.0; picks.len() * squares];
        batch.score = vec![0.0; picks.len() * bins];
        picks.par_iter().zip(batch.ownership.par_chunks_mut(squares)).zip(batch.score.par_chunks_mut(bins)).for_each(
            |((&(game, ply), owned), score)| {
                let game = &self.games[game];
                let Some(owners) = &game.final_owners else { return };
                let side = if game.positions[ply as usize].turn() == Color::White { 1.0 } else { -1.0 };
                for (target, owner) in owned.iter_mut().zip(owners) {
                    *target = side * owner;
                }
                let difference = owned.iter().sum::<f32>().round() as i64;
                score[(difference + squares as i64) as usize] = 1.0;
            },
        );
    }
}

/// The game's result as win, draw, loss for `player`.
fn outcome_wdl(winner: Option<Color>, player: Color) -> [f32; 3] {
    match winner {
        None => [0.0, 1.0, 0.0],
        Some(w) if w == player => [1.0, 0.0, 0.0],
        Some(_) => [0.0, 0.0, 1.0],
    }
}

#[cfg(test)]
mod tests {
    use capa_data::{Resignation, SearchValues};
    use capa_rules::Game;
    use capa_rules::chess::Chess;
    use capa_rules::go::{Go9, GoMove};

    use super::*;

    /// 1. e4 e5 2. Nf3 Nc6; ply 1 was a fast search.
    fn game(winner: Option<Color>) -> GameRecord<Chess> {
        let mut position = Chess::startpos();
        let (mut moves, mut plies) = (Vec::new(), Vec::new());
        for (ply, uci) in ["e2e4", "e7e5", "g1f3", "b8c6"].into_iter().enumerate() {
            let m = position.parse_move(uci).unwrap();
            let mut legal = MoveList::new();
            position.legal_moves(&mut legal);
            let other = legal.iter().copied().find(|&o| o != m).unwrap();
            plies.push(PlyRecord {
                full_search: ply != 1,
                root: SearchValues { q: -0.3, d: 0.1, m: 12.0 },
                best: SearchValues { q: 0.5, d: 0.2, m: 10.0 },
                visits: vec![(position.policy_index(m) as u16, 0.6), (position.policy_index(other) as u16, 0.2)],
            });
            moves.push(m);
            position.play(m);
        }
        GameRecord {
            start: Chess::startpos(),
            network: "n".into(),
            moves,
            plies,
            winner,
            ending: Ending::Rules(Termination::PlyCap),
            resignation: Resignation::default(),
        }
    }

    /// Go on 9x9: black E5, white pass, black pass... as `vertices`, every
    /// ply a full search, ending as `ending`.
    fn go_game(vertices: &[&str], ending: Ending) -> GameRecord<Go9> {
        let mut position = Go9::startpos();
        let (mut moves, mut plies) = (Vec::new(), Vec::new());
        for vertex in vertices {
            let m = position.parse_move(vertex).unwrap();
            plies.push(PlyRecord {
                full_search: true,
                root: SearchValues::default(),
                best: SearchValues::default(),
                visits: vec![(position.policy_index(m) as u16, 1.0)],
            });
            moves.push(m);
            position.play(m);
        }
        GameRecord {
            start: Go9::startpos(),
            network: "n".into(),
            moves,
            plies,
            winner: Some(Color::Black),
            ending,
            resignation: Resignation::default(),
        }
    }

    #[test]
    fn go_games_scored_at_the_end_give_ownership_and_score_targets() {
        let value = ValueTarget { q_weight: 0.0, fast_plies: false };
        let mut buffer = ReplayBuffer::<Go9>::new(100, Sampling::Uniform, value);
        // Black's stones on A1 and B1, white's on J9: black's region is the
        // whole board but J9... which reaches white too, so it is no one's.
        buffer.push(go_game(&["A1", "J9", "B1", "pass", "pass"], Ending::Rules(Termination::Scored)));
        buffer.push(go_game(&["A1", "J9"], Ending::Resignation));
        let batch = buffer.encode(&[(0, 0), (0, 1), (1, 0)]);
        let (squares, bins) = (81, 163);
        assert_eq!((batch.ownership.len(), batch.score.len()), (3 * squares, 3 * bins));
        let point = |vertex: &str| GoMove::<9>::parse_vertex(vertex).unwrap().point().unwrap();
        // Ply 0: black to move owns A1 and B1, white J9, the rest is dame.
        let black = &batch.ownership[..squares];
        assert_eq!(
            (black[point("A1")], black[point("B1")], black[point("J9")], black[point("E5")]),
            (1.0, 1.0, -1.0, 0.0)
        );
        assert_eq!(batch.score[..bins].iter().position(|&p| p == 1.0), Some(81 + 1), "2 points to 1");
        // Ply 1: white to move sees the same board from its side.
        let white = &batch.ownership[squares..2 * squares];
        assert!(black.iter().zip(white).all(|(b, w)| *b == -*w));
        assert_eq!(batch.score[bins..2 * bins].iter().position(|&p| p == 1.0), Some(81 - 1));
        // A resigned game has no final owners: no target.
        assert!(batch.ownership[2 * squares..].iter().chain(&batch.score[2 * bins..]).all(|&v| v == 0.0));
        // Chess has none at all.
        let mut chess = ReplayBuffer::<Chess>::new(100, Sampling::Uniform, value);
        chess.push(game(None));
        let batch = chess.encode(&[(0, 0)]);
        assert!(batch.ownership.is_empty() && batch.score.is_empty());
    }

    #[test]
    fn targets_follow_the_record() {
        let mut buffer =
            ReplayBuffer::<Chess>::new(100, Sampling::Uniform, ValueTarget { q_weight: 0.25, fast_plies: false });
        buffer.push(game(Some(Color::White)));
        assert_eq!(buffer.positions(), 3, "the fast search is not a training position");
        let batch = buffer.encode(&[(0, 0), (0, 2), (0, 3)]);
        let p = Chess::policy_size();
        for row in 0..3 {
            let policy = &batch.policy[row * p..][..p];
            assert!((policy.iter().sum::<f32>() - 1.0).abs() < 1e-6);
            assert!((policy.iter().copied().fold(0.0, f32::max) - 0.75).abs() < 1e-6);
            let legal = &batch.legal[row * p..][..p];
            assert_eq!(legal.iter().filter(|&&l| l).count(), [20, 29, 29][row].min(legal.len()), "row {row}");
            assert!(policy.iter().zip(legal).all(|(&v, &l)| v == 0.0 || l));
        }
        // Result for the side to move, mixed with the best move's values 3:1.
        let q_wdl = [0.65, 0.2, 0.15];
        let white = [0.75 + 0.25 * q_wdl[0], 0.25 * q_wdl[1], 0.25 * q_wdl[2]];
        let black = [0.25 * q_wdl[0], 0.25 * q_wdl[1], 0.75 + 0.25 * q_wdl[2]];
        for (row, expected) in [white, white, black].iter().enumerate() {
            for (a, e) in batch.wdl[row * 3..][..3].iter().zip(expected) {
                assert!((a - e).abs() < 1e-6, "row {row}: {:?}", &batch.wdl[row * 3..][..3]);
            }
        }
        assert_eq!(batch.moves_left, [4.0, 2.0, 1.0]);
        // The future move of ply 0 is white's Nf3, in white's frame; none after ply 2.
        let record = game(None);
        let third = record.history().positions()[2].clone();
        let future = &batch.future[..p];
        assert_eq!(future.iter().position(|&v| v == 1.0), Some(third.policy_index(record.moves[2])));
        assert!(batch.future[p..].iter().all(|&v| v == 0.0));
        // The planes are the encoder's for the position with its history.
        let mut expected = vec![0.0; Chess::INPUT_LEN];
        let positions = record.history().positions().to_vec();
        Chess::encode(&positions[..=2], &[false; 3], &mut expected);
        assert_eq!(&batch.planes[Chess::INPUT_LEN..2 * Chess::INPUT_LEN], &expected[..]);
    }

    #[test]
    fn a_game_pushed_with_its_own_q_weight_keeps_it() {
        let mut buffer =
            ReplayBuffer::<Chess>::new(100, Sampling::Uniform, ValueTarget { q_weight: 0.0, fast_plies: false });
        buffer.push(game(Some(Color::White)));
        buffer.push_teacher(game(Some(Color::White)), 1.0);
        let batch = buffer.encode(&[(0, 0), (1, 0)]);
        assert_eq!(&batch.wdl[..3], &[1.0, 0.0, 0.0], "the buffer's target: the result");
        let best = [0.65, 0.2, 0.15];
        assert!(
            batch.wdl[3..].iter().zip(best).all(|(a, e)| (a - e).abs() < 1e-6),
            "the best move's: {:?}",
            &batch.wdl[3..]
        );
    }

    #[test]
    fn fast_plies_train_every_head_but_the_policy() {
        let value = ValueTarget { q_weight: 0.0, fast_plies: true };
        let mut buffer = ReplayBuffer::<Chess>::new(100, Sampling::Uniform, value);
        buffer.push(game(Some(Color::Black)));
        assert_eq!(buffer.positions(), 4, "the fast search at ply 1 is a position too");
        let batch = buffer.encode(&[(0, 0), (0, 1)]);
        let p = Chess::policy_size();
        assert!((batch.policy[..p].iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(batch.policy[p..].iter().all(|&v| v == 0.0), "no policy target after a fast search");
        assert_eq!(&batch.wdl[3..], &[1.0, 0.0, 0.0], "black, to move at ply 1, won");
        assert_eq!(batch.moves_left[1], 3.0);
        assert!(batch.legal[p..].iter().any(|&l| l));
    }

    #[test]
    fn teacher_games_leave_on_demand_oldest_first() {
        let mut buffer =
            ReplayBuffer::<Chess>::new(100, Sampling::Uniform, ValueTarget { q_weight: 0.0, fast_plies: false });
        buffer.push_teacher(game(None), 1.0);
        buffer.push_teacher(game(Some(Color::White)), 1.0);
        buffer.push(game(None));
        assert_eq!((buffer.positions(), buffer.teacher_positions()), (9, 6));
        assert_eq!(buffer.drop_teacher(2), 3, "whole games leave");
        assert_eq!(buffer.games[0].record.winner, Some(Color::White), "the oldest first");
        assert_eq!(buffer.drop_teacher(100), 3);
        assert_eq!((buffer.positions(), buffer.teacher_positions(), buffer.games()), (3, 0, 1));
    }

    #[test]
    fn passes_count_every_draw_and_the_window_resizes() {
        let mut buffer =
            ReplayBuffer::<Chess>::new(100, Sampling::Uniform, ValueTarget { q_weight: 0.0, fast_plies: false });
        for _ in 0..10 {
            buffer.push(game(None));
        }
        assert_eq!(buffer.passes(), (0.0, 0.0));
        buffer.sample(300, &mut Rng::new(2)).unwrap();
        let (mean, oldest) = buffer.passes();
        assert!((mean - 10.0).abs() < 1e-9, "300 draws over 30 positions: {mean}");
        assert!(oldest > 0.0);
        buffer.set_window(7);
        assert_eq!((buffer.games(), buffer.positions(), buffer.window()), (3, 9, 7));
    }

    #[test]
    fn the_window_drops_the_oldest_games_and_balanced_sampling_mixes_results() {
        let mut buffer =
            ReplayBuffer::<Chess>::new(7, Sampling::ValueBalanced, ValueTarget { q_weight: 0.0, fast_plies: false });
        for winner in [Some(Color::White), None, Some(Color::Black)] {
            buffer.push(game(winner));
        }
        assert_eq!((buffer.games(), buffer.positions()), (3, 9));
        buffer.push(game(None));
        assert_eq!((buffer.games(), buffer.positions()), (3, 9), "the oldest game fell out");
        let batch = buffer.sample(3000, &mut Rng::new(1)).unwrap();
        let mut classes = [0usize; 3];
        for row in batch.wdl.chunks_exact(3) {
            classes[row.iter().position(|&v| v == 1.0).unwrap()] += 1;
        }
        // Draws are 6 of 9 positions, but a third of the samples.
        assert!(classes.iter().all(|&c| (850..1150).contains(&c)), "{classes:?}");
    }
}
