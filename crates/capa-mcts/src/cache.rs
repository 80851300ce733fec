//! An evaluation cache (Lc0's NN cache): a wrapper around any [`Evaluator`]
//! that remembers its answers by what the network sees, so that a
//! transposition, a position repeated in another game of the batch, or a
//! subtree searched again costs no network call.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use capa_rules::Game;

use crate::evaluator::{EvalError, Evaluations, Evaluator, LeafRequest, Value};
use capa_rules::mix;

/// An [`Evaluator`] that answers from a cache where it can and asks `inner`
/// for the rest (each distinct position of a batch once).
///
/// The key covers everything a request shows the network: every position
/// of its history (their Zobrist hashes, which include side to move,
/// castling and en passant), the repetition flags, and the leaf's halfmove
/// clock. A hit is the inner evaluator's earlier answer, bit for bit; with
/// a deterministic inner evaluator the cache changes only the cost of a
/// search, never its result. The oldest entries leave first once
/// `capacity` are held.
pub struct CachedEvaluator<E> {
    inner: E,
    capacity: usize,
    entries: Mutex<Entries>,
    hits: AtomicU64,
    lookups: AtomicU64,
}

#[derive(Default)]
struct Entries {
    map: HashMap<u64, (Vec<f32>, Value)>,
    order: VecDeque<u64>,
}

impl<E> CachedEvaluator<E> {
    /// A cache of at most `capacity` evaluations in front of `inner`.
    pub fn new(inner: E, capacity: usize) -> CachedEvaluator<E> {
        CachedEvaluator {
            inner,
            capacity,
            entries: Mutex::new(Entries::default()),
            hits: AtomicU64::new(0),
            lookups: AtomicU64::new(0),
        }
    }

    /// The evaluator behind the cache.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// Requests answered from the cache, and requests in all, so far.
    pub fn hits(&self) -> (u64, u64) {
        (self.hits.load(Ordering::Relaxed), self.lookups.load(Ordering::Relaxed))
    }

    /// Forgets every entry (for a new network behind the same cache).
    pub fn clear(&self) {
        let mut entries = self.entries.lock().expect("the cache lock is never poisoned");
        entries.map.clear();
        entries.order.clear();
    }
}

/// What the network sees of `request`, hashed.
fn key<G: Game>(request: &LeafRequest<G>) -> u64 {
    let mut key = mix(request.history().len() as u64, u64::from(request.position().halfmove_clock()));
    for (position, &repeated) in request.history().iter().zip(request.repeated()) {
        key = mix(key ^ position.hash(), u64::from(repeated));
    }
    key
}

impl<G: Game, E: Evaluator<G>> Evaluator<G> for CachedEvaluator<E> {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        let keys: Vec<u64> = batch.iter().map(key).collect();
        // Which requests the inner evaluator answers: each missing key once.
        let mut missing: Vec<usize> = Vec::new();
        {
            let entries = self.entries.lock().expect("the cache lock is never poisoned");
            let mut asked = HashMap::new();
            for (i, k) in keys.iter().enumerate() {
                if !entries.map.contains_key(k) && asked.insert(*k, i).is_none() {
                    missing.push(i);
                }
            }
        }
        let mut fresh = Evaluations::default();
        if missing.len() == batch.len() {
            self.inner.evaluate(batch, &mut fresh)?;
        } else if !missing.is_empty() {
            let requests: Vec<LeafRequest<G>> = missing.iter().map(|&i| batch[i].clone()).collect();
            self.inner.evaluate(&requests, &mut fresh)?;
        }
        let mut entries = self.entries.lock().expect("the cache lock is never poisoned");
        // The fresh answers by key: where each lies in `fresh`.
        let answered: HashMap<u64, usize> = missing.iter().enumerate().map(|(n, &i)| (keys[i], n)).collect();
        for k in &keys {
            match answered.get(k) {
                Some(&n) => {
                    let (priors, value) = fresh.get(n);
                    out.push(priors.iter().copied(), value);
                }
                None => match entries.map.get(k) {
                    Some((priors, value)) => out.push(priors.iter().copied(), *value),
                    None => return Err("an evaluation left the cache while its batch was answered".into()),
                },
            }
        }
        self.lookups.fetch_add(batch.len() as u64, Ordering::Relaxed);
        self.hits.fetch_add((batch.len() - missing.len()) as u64, Ordering::Relaxed);
        if self.capacity > 0 {
            for (n, &i) in missing.iter().enumerate() {
                let (priors, value) = fresh.get(n);
                if entries.map.insert(keys[i], (priors.to_vec(), value)).is_none() {
                    entries.order.push_back(keys[i]);
                }
                while entries.order.len() > self.capacity {
                    let oldest = entries.order.pop_front().expect("not empty");
                    entries.map.remove(&oldest);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use capa_rules::capablanca::Capablanca;
    use capa_rules::chess::Chess;
    use capa_rules::{Game, History};

    use super::*;
    use crate::{Limits, RandomEvaluator, SearchParams, SearchResult, Tree};

    /// The random evaluator, counting the positions it is asked for.
    struct Counting(AtomicUsize);

    impl<G: Game> Evaluator<G> for Counting {
        fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
            self.0.fetch_add(batch.len(), Ordering::Relaxed);
            RandomEvaluator.evaluate(batch, out)
        }
    }

    fn answers<G: Game>(evaluator: &impl Evaluator<G>, batch: &[LeafRequest<G>]) -> Vec<(Vec<f32>, Value)> {
        let mut out = Evaluations::default();
        evaluator.evaluate(batch, &mut out).unwrap();
        (0..out.len()).map(|i| (out.get(i).0.to_vec(), out.get(i).1)).collect()
    }

    fn history(moves: &[&str]) -> History<Chess> {
        let mut history = History::new(Chess::startpos());
        history.play_moves(moves.iter().copied()).unwrap();
        history
    }

    #[test]
    fn a_hit_is_exactly_the_evaluators_answer_and_costs_no_call() {
        let cached = CachedEvaluator::new(Counting(AtomicUsize::new(0)), 100);
        // 1. Nf3 Nf6 2. Ng1 Ng8 repeats the start: the same board as the
        // start, seen differently (history and repetition), is another key.
        let start = LeafRequest::from_history(&history(&[]));
        let repeated = LeafRequest::from_history(&history(&["g1f3", "g8f6", "f3g1", "f6g8"]));
        let other = LeafRequest::from_history(&history(&["e2e4"]));
        let batch = [start.clone(), repeated.clone(), start.clone(), other.clone()];
        let first = answers(&cached, &batch);
        assert_eq!(first, answers(&RandomEvaluator, &batch));
        assert_eq!(cached.inner().0.load(Ordering::Relaxed), 3, "the duplicate in the batch is asked once");
        let second = answers(&cached, &[other, start, repeated]);
        assert_eq!(second, [first[3].clone(), first[0].clone(), first[1].clone()]);
        assert_eq!(cached.inner().0.load(Ordering::Relaxed), 3, "all hits");
        assert_eq!(cached.hits(), (4, 7));
        // 1. e4 e5 2. Nf3 and 1. Nf3 e5 2. e4 reach the same board by
        // different histories, which the network sees: two keys.
        let a = key(&LeafRequest::from_history(&history(&["e2e4", "e7e5", "g1f3"])));
        let b = key(&LeafRequest::from_history(&history(&["g1f3", "e7e5", "e2e4"])));
        assert_ne!(a, b);
    }

    #[test]
    fn the_oldest_entries_leave_first() {
        let cached = CachedEvaluator::new(Counting(AtomicUsize::new(0)), 2);
        let requests: Vec<_> =
            ["e2e4", "d2d4", "c2c4"].iter().map(|m| LeafRequest::from_history(&history(&[m]))).collect();
        answers(&cached, &requests);
        answers(&cached, &requests[1..]);
        assert_eq!(cached.inner().0.load(Ordering::Relaxed), 3, "the newest two stayed");
        answers(&cached, &requests[..1]);
        assert_eq!(cached.inner().0.load(Ordering::Relaxed), 4, "the oldest left");
        cached.clear();
        answers(&cached, &requests[2..]);
        assert_eq!(cached.inner().0.load(Ordering::Relaxed), 5);
    }

    #[test]
    fn the_cache_never_changes_a_search_only_its_cost() {
        let params = SearchParams { parallel_sims: 8, ..SearchParams::default() };
        let cached = CachedEvaluator::new(Counting(AtomicUsize::new(0)), 1 << 16);
        let plain = Counting(AtomicUsize::new(0));
        // Two searches of one game in a row, the second from scratch: the
        // cache answers the shared part of the second tree.
        fn search(
            game: &History<Capablanca>,
            params: &SearchParams,
            evaluator: &impl Evaluator<Capablanca>,
        ) -> SearchResult<Capablanca> {
            let mut tree = Tree::new(game.clone(), params.clone(), 7).unwrap();
            tree.search(evaluator, Limits::playouts(400)).unwrap()
        }
        let mut game = History::new(Capablanca::startpos());
        for _ in 0..2 {
            let (with, without) = (search(&game, &params, &cached), search(&game, &params, &plain));
            assert_eq!(with.moves.len(), without.moves.len());
            for (a, b) in with.moves.iter().zip(&without.moves) {
                assert_eq!((a.mv, a.visits, a.q.to_bits()), (b.mv, b.visits, b.q.to_bits()));
            }
            game.play(with.best().unwrap().mv);
        }
        let (calls, plain_calls) = (cached.inner().0.load(Ordering::Relaxed), plain.0.load(Ordering::Relaxed));
        assert!(calls < plain_calls, "the cache saved nothing: {calls} calls against {plain_calls}");
    }
}
