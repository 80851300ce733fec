//! Many trees searched together, in groups, with the evaluator on its own
//! thread.
//!
//! The trees are split into `groups`. Each round of a group selects leaves
//! in all its trees (in parallel, on the rayon pool), sends one batch to the
//! inference thread, and backs up the answer. While the evaluator works on
//! one group's batch, the CPU selects and backs up the others, so with two
//! groups or more neither side waits for the other.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use capa_rules::Game;
use rayon::prelude::*;

use crate::SearchError;
use crate::evaluator::{EvalError, Evaluations, Evaluator, LeafRequest};
use crate::result::SearchResult;
use crate::tree::{Limits, Tree};

/// A batch in transit between the search and the inference thread.
struct Work<G: Game> {
    group: usize,
    batch: Vec<LeafRequest<G>>,
    evaluations: Evaluations,
    outcome: Result<(), EvalError>,
}

/// Per-group bookkeeping.
struct Group<G: Game> {
    trees: std::ops::Range<usize>,
    /// Where each tree's requests start in the batch.
    offsets: Vec<usize>,
    spare: Option<Work<G>>,
    in_flight: bool,
    active: bool,
}

/// How a [`search_many`] call used the evaluator.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pipeline {
    /// Batches sent to the evaluator.
    pub batches: u64,
    /// Leaves in them.
    pub leaves: u64,
    /// Time this thread waited for the evaluator with nothing else to do.
    pub waited: Duration,
}

/// Searches every tree that has a search started ([`Tree::start`]) until
/// none has. When a tree's search ends, `on_done(index, tree, result)` runs
/// on this thread; it may play the move ([`Tree::advance`]) and start the
/// next search, which joins the following rounds.
///
/// `groups` is clamped to `1..=trees.len()`. Returns how the evaluator was used.
///
/// # Errors
/// The evaluator's failure, or an evaluation that does not fit its request.
/// The trees are left consistent (no visit in flight) but stopped.
pub fn search_many<G, E, F>(
    trees: &mut [Tree<G>],
    evaluator: &E,
    groups: usize,
    mut on_done: F,
) -> Result<Pipeline, SearchError>
where
    G: Game,
    E: Evaluator<G>,
    F: FnMut(usize, &mut Tree<G>, SearchResult<G>),
{
    let mut pipeline = Pipeline::default();
    if trees.is_empty() {
        return Ok(pipeline);
    }
    let groups = groups.clamp(1, trees.len());
    let per_group = trees.len().div_ceil(groups);
    let mut groups: Vec<Group<G>> = (0..trees.len())
        .step_by(per_group)
        .enumerate()
        .map(|(group, start)| Group {
            trees: start..(start + per_group).min(trees.len()),
            offsets: Vec::new(),
            spare: Some(Work { group, batch: Vec::new(), evaluations: Evaluations::default(), outcome: Ok(()) }),
            in_flight: false,
            active: true,
        })
        .collect();

    std::thread::scope(|scope| {
        let (to_inference, inference_queue) = mpsc::channel::<Work<G>>();
        let (inference_done, from_inference) = mpsc::channel::<Work<G>>();
        scope.spawn(move || {
            for mut work in inference_queue {
                work.evaluations.clear();
                work.outcome = evaluator.evaluate(&work.batch, &mut work.evaluations);
                if inference_done.send(work).is_err() {
                    break;
                }
            }
        });

        let mut failure = None;
        loop {
            for group in groups.iter_mut().filter(|g| g.active && !g.in_flight) {
                if failure.is_some() {
                    break;
                }
                // Rounds whose leaves are all known need no evaluator: apply them at once.
                loop {
                    let mut work = group.spare.take().expect("an idle group holds its buffers");
                    let any = gather(&mut trees[group.trees.clone()], &mut group.offsets, &mut work.batch);
                    if !any {
                        group.active = false;
                        group.spare = Some(work);
                        break;
                    }
                    if !work.batch.is_empty() {
                        pipeline.batches += 1;
                        pipeline.leaves += work.batch.len() as u64;
                        to_inference.send(work).expect("the inference thread lives as long as the search");
                        group.in_flight = true;
                        break;
                    }
                    work.evaluations.clear();
                    if let Err(e) = finish_round(trees, group, &mut work, &mut on_done) {
                        failure = Some(e);
                        group.spare = Some(work);
                        break;
                    }
                    group.spare = Some(work);
                }
            }
            if !groups.iter().any(|g| g.in_flight) {
                break;
            }
            let waiting = Instant::now();
            let mut work = from_inference.recv().expect("the inference thread answers every batch");
            pipeline.waited += waiting.elapsed();
            let group = &mut groups[work.group];
            group.in_flight = false;
            let outcome = std::mem::replace(&mut work.outcome, Ok(()));
            let result = match outcome {
                Err(e) => Err(SearchError::Evaluator(e)),
                Ok(()) if work.evaluations.len() != work.batch.len() => Err(SearchError::BadEvaluation(format!(
                    "{} evaluations for a batch of {}",
                    work.evaluations.len(),
                    work.batch.len()
                ))),
                Ok(()) if failure.is_some() => Ok(()),
                Ok(()) => finish_round(trees, group, &mut work, &mut on_done),
            };
            if let Err(e) = result {
                failure.get_or_insert(e);
            }
            if failure.is_some() {
                abandon(trees, group, &mut work);
                group.active = false;
            }
            let index = work.group;
            groups[index].spare = Some(work);
        }
        drop(to_inference);
        match failure {
            Some(e) => {
                for group in groups.iter_mut().filter(|g| g.active) {
                    let mut work = group.spare.take().expect("no batch is in flight any more");
                    abandon(trees, group, &mut work);
                    group.spare = Some(work);
                }
                Err(e)
            }
            None => Ok(pipeline),
        }
    })
}

/// Selects a round's leaves in every tree of the group, in parallel, and
/// moves the requests into one batch. Returns whether any tree gathered.
fn gather<G: Game>(trees: &mut [Tree<G>], offsets: &mut Vec<usize>, batch: &mut Vec<LeafRequest<G>>) -> bool {
    trees.par_iter_mut().for_each(Tree::gather);
    offsets.clear();
    batch.clear();
    let mut any = false;
    for tree in trees.iter_mut() {
        offsets.push(batch.len());
        batch.extend(tree.requests.drain(..tree.num_requests));
        any |= tree.has_leaves() || tree.has_finished_search();
    }
    any
}

/// Hands each tree its requests back (they are reused), in the order taken.
fn return_requests<G: Game>(trees: &mut [Tree<G>], offsets: &[usize], batch: &mut Vec<LeafRequest<G>>) {
    for (tree, &offset) in trees.iter_mut().zip(offsets).rev() {
        tree.requests.splice(0..0, batch.drain(offset..));
    }
}

/// Backs up a group's evaluated round and reports the searches that ended.
fn finish_round<G, F>(
    all: &mut [Tree<G>],
    group: &mut Group<G>,
    work: &mut Work<G>,
    on_done: &mut F,
) -> Result<(), SearchError>
where
    G: Game,
    F: FnMut(usize, &mut Tree<G>, SearchResult<G>),
{
    let trees = &mut all[group.trees.clone()];
    return_requests(trees, &group.offsets, &mut work.batch);
    let evaluations = &work.evaluations;
    trees
        .par_iter_mut()
        .zip(group.offsets.par_iter())
        .try_for_each(|(tree, &offset)| tree.apply(evaluations, offset))?;
    let first = group.trees.start;
    let mut any_searching = false;
    for (i, tree) in trees.iter_mut().enumerate() {
        // A search started in the callback can end at once (a proven root,
        // a visit limit already met): report that one too.
        while tree.has_finished_search() {
            let result = tree.result();
            tree.mark_reported();
            on_done(first + i, tree, result);
        }
        any_searching |= tree.is_searching();
    }
    group.active = any_searching;
    Ok(())
}

/// Drops a group's pending round after a failure.
fn abandon<G: Game>(all: &mut [Tree<G>], group: &mut Group<G>, work: &mut Work<G>) {
    let trees = &mut all[group.trees.clone()];
    if !work.batch.is_empty() {
        return_requests(trees, &group.offsets, &mut work.batch);
    }
    trees.iter_mut().for_each(Tree::abandon_round);
}

impl<G: Game> Tree<G> {
    /// Searches this tree alone to `limits` and returns the result.
    ///
    /// # Errors
    /// As [`Tree::start`] and [`search_many`].
    pub fn search<E: Evaluator<G>>(&mut self, evaluator: &E, limits: Limits) -> Result<SearchResult<G>, SearchError> {
        self.start(limits, true)?;
        let mut result = None;
        search_many(std::slice::from_mut(self), evaluator, 1, |_, _, r| result = Some(r))?;
        Ok(result.unwrap_or_else(|| self.result()))
    }
}
