//! One game's search: selection with virtual loss, leaf preparation,
//! expansion, backup and proof propagation over an [`Arena`].
//!
//! A search proceeds in rounds. [`Tree::gather`] selects up to
//! `parallel_sims` leaves, adding one in-flight visit to every node on each
//! path; [`Tree::apply`] takes the evaluations, removes those in-flight
//! visits (once, for every leaf gathered) and backs the values up. The
//! driver in [`crate::driver`] runs rounds for many trees at once.

use std::collections::HashMap;

use capa_rules::{Game, GameResult, History, MoveList, Outcome, Termination};

use crate::SearchError;
use crate::evaluator::{Evaluations, HISTORY_LEN, LeafRequest};
use crate::gumbel::{Candidate, GumbelParams, GumbelRoot, improved_policy, logit, mixed_value, sigma, unit_q};
use crate::node::{Arena, Edge, NONE, Node, compress_prior};
use crate::params::SearchParams;
use crate::result::{GumbelOutcome, SearchResult, SearchSummary, StopReason};
use capa_rules::Rng;

/// When a search stops: at whichever limit comes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// New visits this search adds (Lc0's `go nodes`).
    pub playouts: u32,
    /// Visits at the root, counting those kept from earlier moves (Lc0's `--visits`).
    pub visits: u32,
}

impl Limits {
    /// Stop after `n` new visits.
    pub const fn playouts(n: u32) -> Limits {
        Limits { playouts: n, visits: u32::MAX }
    }

    /// Stop when the root has `n` visits, reused ones included.
    pub const fn visits(n: u32) -> Limits {
        Limits { playouts: u32::MAX, visits: n }
    }
}

/// How a gathered leaf gets its value.
#[derive(Clone, Copy, Debug)]
enum LeafKind {
    /// Expand the path's last node with request `i`'s evaluation.
    Evaluate(u32),
    /// The exact value of a proven node (game over, or solved) for the
    /// mover of the path's last node; bounds above may change.
    Known { wl: f32, d: f32, m: f32 },
    /// Analysis mode: the path reached a shared node that repeats a
    /// position on it. A draw for the path up to the node's parent; the
    /// node itself carries the in-flight visit (so the batch spreads) but no
    /// value, since on other paths it is worth what it is worth.
    RepetitionDraw,
    /// The selection ended on a leaf already being evaluated: only its
    /// in-flight visits are counted, to push later selections elsewhere.
    Collision,
}

#[derive(Clone, Copy, Debug)]
struct Leaf {
    path: (u32, u32),
    kind: LeafKind,
}

/// Reused buffers of the selection walk.
#[derive(Clone, Debug)]
struct Scratch<G: Game> {
    /// Positions along the current path; `[0]` is the root.
    positions: Vec<G>,
    /// Hashes of the game's positions, then of the path's.
    hashes: Vec<u64>,
}

/// Analysis mode's table: one node per position, so that move orders
/// reaching it pool their visits.
#[derive(Clone, Debug)]
struct Transpositions {
    nodes: HashMap<u64, u32>,
    node_limit: usize,
    /// Positions that stand twice in the game up to the root, sorted:
    /// reaching one again is a threefold repetition on every path, so its
    /// shared node may say so.
    drawn: Vec<u64>,
}

/// The hashes that occur at least twice in `hashes`, sorted.
fn repeated_hashes(hashes: &[u64]) -> Vec<u64> {
    let mut sorted = hashes.to_vec();
    sorted.sort_unstable();
    let mut drawn: Vec<u64> = sorted.windows(2).filter(|w| w[0] == w[1]).map(|w| w[0]).collect();
    drawn.dedup();
    drawn
}

/// Indices of the earlier occurrences, latest first, of the position whose
/// hash is `hashes[index]`: same side to move, and no capture or pawn move
/// since (within its halfmove clock).
fn earlier_occurrences(hashes: &[u64], index: usize, halfmove_clock: u32) -> impl Iterator<Item = usize> + '_ {
    let window = (halfmove_clock as usize).min(index);
    let hash = hashes[index];
    (2..=window).step_by(2).map(move |back| index - back).filter(move |&earlier| hashes[earlier] == hash)
}

/// A Gumbel root's view of the root moves, in edge order.
struct RootScores {
    /// The packed moves.
    moves: Vec<u16>,
    /// Their logits (the priors' logarithms).
    logits: Vec<f32>,
    /// Their completed Q, in `[0, 1]`.
    completed: Vec<f32>,
    /// The most visits of any root move.
    max_visits: u32,
}

impl RootScores {
    fn index_of(&self, mv: u16) -> usize {
        self.moves.iter().position(|&m| m == mv).expect("a root move")
    }

    /// σ of the move's completed Q.
    fn sigma(&self, mv: u16, params: &GumbelParams) -> f32 {
        sigma(self.completed[self.index_of(mv)], self.max_visits, params)
    }
}

/// Per-search progress.
#[derive(Clone, Debug)]
struct Progress {
    limits: Limits,
    playouts: u32,
    searching: bool,
    /// Ended, and the driver has not reported it yet.
    unreported: bool,
    full: bool,
    stop: StopReason,
    kld_visits: Vec<u32>,
    kld_next: u32,
    kld_gain: Option<f64>,
}

/// A search tree for one game, and the game up to its root.
#[derive(Clone, Debug)]
pub struct Tree<G: Game> {
    params: SearchParams,
    arena: Arena,
    root: u32,
    history: History<G>,
    history_hashes: Vec<u64>,
    table: Option<Transpositions>,
    rng: Rng,
    root_noised: bool,
    /// The Gumbel root of the search in progress, once the root is expanded.
    gumbel: Option<GumbelRoot>,
    scratch: Scratch<G>,
    leaves: Vec<Leaf>,
    paths: Vec<u32>,
    pub(crate) requests: Vec<LeafRequest<G>>,
    pub(crate) num_requests: usize,
    progress: Progress,
}

impl<G: Game> Tree<G> {
    /// A tree for the game `history`, searched with `params`; `seed` drives
    /// the root noise.
    ///
    /// # Errors
    /// [`SearchError::Params`] if the parameters are out of range.
    pub fn new(history: History<G>, params: SearchParams, seed: u64) -> Result<Tree<G>, SearchError> {
        params.validate()?;
        let history_hashes = history.positions().iter().map(Game::hash).collect();
        let root_position = history.current().clone();
        let mut arena = Arena::default();
        let root = arena.push(Node::NEW);
        Ok(Tree {
            params,
            arena,
            root,
            history,
            history_hashes,
            table: None,
            rng: Rng::new(seed),
            root_noised: false,
            gumbel: None,
            scratch: Scratch { positions: vec![root_position], hashes: Vec::new() },
            leaves: Vec::new(),
            paths: Vec::new(),
            requests: Vec::new(),
            num_requests: 0,
            progress: Progress {
                limits: Limits::playouts(0),
                playouts: 0,
                searching: false,
                unreported: false,
                full: true,
                stop: StopReason::Limit,
                kld_visits: Vec::new(),
                kld_next: 0,
                kld_gain: None,
            },
        })
    }

    /// Analysis mode: statistics live on positions, so transpositions pool
    /// their visits, and the table persists across searches and root
    /// changes until it holds more than `node_limit` nodes; then only what
    /// the current root reaches is kept.
    ///
    /// # Errors
    /// As [`Tree::new`].
    pub fn analysis(
        history: History<G>,
        params: SearchParams,
        seed: u64,
        node_limit: usize,
    ) -> Result<Tree<G>, SearchError> {
        let mut tree = Tree::new(history, params, seed)?;
        let mut nodes = HashMap::new();
        nodes.insert(tree.history.current().hash(), tree.root);
        let drawn = repeated_hashes(&tree.history_hashes);
        tree.table = Some(Transpositions { nodes, node_limit, drawn });
        Ok(tree)
    }

    /// The game up to the root.
    pub fn history(&self) -> &History<G> {
        &self.history
    }

    /// Visits of the root.
    pub fn root_visits(&self) -> u32 {
        self.arena.nodes[self.root as usize].n
    }

    /// Nodes in the arena (in analysis mode, also those off the current root).
    pub fn node_count(&self) -> usize {
        self.arena.nodes.len()
    }

    /// Bytes the arena's nodes, edges and child slots occupy.
    pub fn arena_bytes(&self) -> usize {
        self.arena.bytes()
    }

    /// Sum of in-flight visits over all nodes: zero whenever no round is pending.
    pub fn in_flight_total(&self) -> u64 {
        self.arena.nodes.iter().map(|n| u64::from(n.in_flight)).sum()
    }

    /// Sets the Gumbel root's noise scale for the searches to come (a
    /// temperature by move number in self-play); nothing under PUCT.
    pub fn set_gumbel_scale(&mut self, scale: f32) {
        if let Some(gumbel) = &mut self.params.gumbel {
            gumbel.scale = scale.max(0.0);
        }
    }

    /// Whether a search is under way (between [`Tree::start`] and its end).
    pub fn is_searching(&self) -> bool {
        self.progress.searching
    }

    /// Begins a search. `full` is recorded in the result: whether this
    /// position's search is a full one, worth a training sample (playout cap
    /// randomization searches most moves quickly and records only full ones).
    ///
    /// # Errors
    /// [`SearchError::GameOver`] if the game at the root has ended.
    pub fn start(&mut self, limits: Limits, full: bool) -> Result<(), SearchError> {
        if let Some(outcome) = self.history.outcome() {
            return Err(SearchError::GameOver(outcome));
        }
        if let Some(table) = &self.table
            && self.arena.nodes.len() > table.node_limit
        {
            self.compact(self.root);
        }
        self.reset_unsearchable_root();
        self.scratch.positions.truncate(0);
        self.scratch.positions.push(self.history.current().clone());
        self.progress = Progress {
            limits,
            playouts: 0,
            searching: true,
            unreported: true,
            full,
            stop: StopReason::Limit,
            kld_visits: std::mem::take(&mut self.progress.kld_visits),
            kld_next: 0,
            kld_gain: None,
        };
        self.gumbel = None;
        self.snapshot_kld();
        self.check_stop();
        // A forced move needs no search: Gumbel's search spends none on it,
        // and its position is no training sample.
        if self.params.gumbel.is_some() && self.history.current().count_legal_moves() == 1 {
            self.progress.searching = false;
            self.progress.full = false;
        }
        Ok(())
    }

    /// Whether a search has ended that the driver has not reported yet.
    pub(crate) fn has_finished_search(&self) -> bool {
        !self.progress.searching && self.progress.unreported
    }

    pub(crate) fn mark_reported(&mut self) {
        self.progress.unreported = false;
    }

    /// Selects this round's leaves. Leaves needing the network are left in
    /// `requests[..num_requests]`.
    pub(crate) fn gather(&mut self) {
        self.leaves.clear();
        self.paths.clear();
        self.num_requests = 0;
        if !self.progress.searching {
            return;
        }
        self.maybe_add_noise();
        self.maybe_start_gumbel();
        let budget = self.round_budget();
        let (mut gathered, mut collisions) = (0, 0);
        while gathered < budget && collisions < self.params.max_collisions {
            match self.select_leaf() {
                LeafKind::Collision => collisions += 1,
                _ => gathered += 1,
            }
            if !self.arena.nodes[self.root as usize].is_expanded() {
                break; // The root's own evaluation comes first.
            }
        }
    }

    /// Whether this round gathered anything (the tree needs an `apply`).
    pub(crate) fn has_leaves(&self) -> bool {
        !self.leaves.is_empty()
    }

    fn round_budget(&self) -> u32 {
        let p = &self.progress;
        let root_n = self.arena.nodes[self.root as usize].n;
        let left = (p.limits.playouts.saturating_sub(p.playouts)).min(p.limits.visits.saturating_sub(root_n));
        left.min(u32::from(self.params.parallel_sims))
    }

    /// One selection from the root, with virtual loss added along the path.
    fn select_leaf(&mut self) -> LeafKind {
        let path_start = self.paths.len() as u32;
        self.scratch.positions.truncate(1);
        self.scratch.hashes.clear();
        self.scratch.hashes.extend_from_slice(&self.history_hashes);
        let mut node = self.root;
        self.paths.push(node);
        let mut depth = 0;
        let mut gumbel_pick = None;
        let kind = loop {
            let current = self.arena.nodes[node as usize];
            if depth > 0 && current.is_proven() {
                let (wl, d, m) = current.proven_value();
                break LeafKind::Known { wl, d, m };
            }
            if !current.is_expanded() {
                if current.in_flight > 0 {
                    break LeafKind::Collision;
                }
                break self.prepare_leaf(node, depth);
            }
            let edge = match (depth, self.gumbel.is_some()) {
                (0, true) => {
                    let (candidate, edge) = self.select_gumbel_edge();
                    gumbel_pick = Some(candidate);
                    edge
                }
                _ => self.select_edge(node, depth),
            };
            let position = self.scratch.positions.last().expect("the root is always there");
            let mut next = position.clone();
            next.play(position.unpack_move(self.arena.edges(node)[edge].mv));
            self.scratch.hashes.push(next.hash());
            self.scratch.positions.push(next);
            depth += 1;
            let mut child = self.arena.child(node, edge);
            if child == NONE {
                child = self.node_for(*self.scratch.hashes.last().expect("just pushed"));
                self.arena.set_child(node, edge, child);
            }
            node = child;
            self.paths.push(node);
            if let Some(table) = &self.table
                && self.repetition_draw(depth)
            {
                // A position already twice in the game is drawn from every
                // path: its node can say so (and gets the visit). Any other
                // repetition is this path's alone.
                let hash = *self.scratch.hashes.last().expect("just pushed");
                let shared = &mut self.arena.nodes[node as usize];
                if node != self.root && shared.in_flight == 0 && table.drawn.binary_search(&hash).is_ok() {
                    shared.set_terminal(0);
                    break LeafKind::Known { wl: 0.0, d: 1.0, m: 0.0 };
                }
                break LeafKind::RepetitionDraw;
            }
        };
        // A collision is no visit: the schedule gives the move its turn again.
        if let (LeafKind::Collision, Some(candidate), Some(gumbel)) = (kind, gumbel_pick, self.gumbel.as_mut()) {
            gumbel.candidates[candidate].visits -= 1;
        }
        let path_end = self.paths.len() as u32;
        for &id in &self.paths[path_start as usize..] {
            self.arena.nodes[id as usize].in_flight += 1;
        }
        self.leaves.push(Leaf { path: (path_start, path_end), kind });
        kind
    }

    /// The node for the position just reached: in analysis mode the one
    /// node of that position. Whether the position repeats is a property of
    /// the path, checked by the caller, never stored in a shared node.
    fn node_for(&mut self, hash: u64) -> u32 {
        match self.table.as_ref().and_then(|t| t.nodes.get(&hash)) {
            Some(&id) => id,
            None => self.push_table_node(hash),
        }
    }

    /// PUCT over the node's edges. Edges that have a child come first and
    /// the rest are sorted by prior, so only the first childless edge can
    /// beat the children: the scan stops there.
    #[inline]
    fn select_edge(&self, id: u32, depth: usize) -> usize {
        let p = &self.params;
        let node = &self.arena.nodes[id as usize];
        let edges = self.arena.edges(id);
        let children = self.arena.child_slots(id);
        let draw_score = self.draw_score(depth);
        let parent_q = -node.wl + draw_score * node.d;
        let parent_m = node.m - 1.0;
        let puct = p.cpuct_at(node.n) * (node.n.saturating_sub(1).max(1) as f32).sqrt();
        let score = |child: &Node, prior: f32, fpu: f32| {
            let in_flight = f32::from(child.in_flight) * p.virtual_loss;
            let visits = child.n as f32;
            let q = if child.is_proven() {
                let (wl, d, _) = child.proven_value();
                wl + draw_score * d
            } else if child.n == 0 {
                fpu
            } else {
                child.wl + draw_score * child.d + self.moves_left_utility(parent_q, parent_m, child.m)
            };
            // Each pending visit counts as a loss until its value comes back.
            let q = if in_flight > 0.0 { (q * visits - in_flight) / (visits + in_flight) } else { q };
            q + puct * prior / (1.0 + visits + f32::from(child.in_flight))
        };
        // One pass over the children. The first-play urgency depends on the
        // prior mass visited, known only at the end; the children whose score
        // needs it (no visit, none pending) are rare and scored after.
        let mut visited_policy = 0.0;
        let mut needs_fpu = false;
        let mut first_childless = children.len().min(edges.len());
        let mut best = (f32::NEG_INFINITY, 0);
        for (i, (&child, edge)) in children.iter().zip(edges).enumerate() {
            if child == NONE {
                first_childless = i;
                break;
            }
            let child = &self.arena.nodes[child as usize];
            if child.n > 0 {
                visited_policy += edge.prior();
            } else if !child.is_proven() && (child.in_flight == 0 || p.virtual_loss == 0.0) {
                needs_fpu = true;
                continue;
            }
            let s = score(child, edge.prior(), 0.0);
            if s > best.0 {
                best = (s, i);
            }
        }
        let reduction = if depth == 0 { p.fpu_reduction_root } else { p.fpu_reduction };
        let fpu = parent_q - reduction * visited_policy.sqrt();
        if needs_fpu {
            for (i, (&child, edge)) in children[..first_childless].iter().zip(edges).enumerate() {
                let child = &self.arena.nodes[child as usize];
                if child.n == 0 && !child.is_proven() && (child.in_flight == 0 || p.virtual_loss == 0.0) {
                    let s = score(child, edge.prior(), fpu);
                    if s > best.0 || (s == best.0 && i < best.1) {
                        best = (s, i);
                    }
                }
            }
        }
        if let Some(edge) = edges.get(first_childless) {
            let s = fpu + puct * edge.prior();
            if s > best.0 {
                best = (s, first_childless);
            }
        }
        best.1
    }

    /// What a draw is worth to the player choosing at `depth`.
    #[inline]
    fn draw_score(&self, depth: usize) -> f32 {
        if depth.is_multiple_of(2) { -self.params.contempt } else { self.params.contempt }
    }

    /// Lc0's moves-left utility: shorter when winning, longer when losing.
    #[inline]
    fn moves_left_utility(&self, parent_q: f32, parent_m: f32, child_m: f32) -> f32 {
        let mlu = &self.params.moves_left;
        if mlu.max_effect == 0.0 {
            return 0.0;
        }
        let scale = mlu.scaled_factor * parent_q + mlu.quadratic_factor * parent_q * parent_q.abs();
        -(mlu.slope * (child_m - parent_m)).clamp(-mlu.max_effect, mlu.max_effect) * scale
    }

    /// Whether the position at `depth` on the current path is drawn by
    /// repetition: a third occurrence in the game, or (with the two-fold
    /// rule) a second one since the root.
    fn repetition_draw(&self, depth: usize) -> bool {
        let hashes = &self.scratch.hashes;
        let clock = self.scratch.positions[depth].halfmove_clock();
        let root_index = self.history_hashes.len() - 1;
        let mut count = 0;
        for earlier in earlier_occurrences(hashes, hashes.len() - 1, clock) {
            if self.params.two_fold_draws && earlier >= root_index {
                return true;
            }
            count += 1;
        }
        count >= 2
    }

    /// A new leaf: decides whether the game is over there, and if not fills
    /// the next request for the network.
    fn prepare_leaf(&mut self, id: u32, depth: usize) -> LeafKind {
        if self.num_requests == self.requests.len() {
            self.requests.push(LeafRequest::default());
        }
        let request = &mut self.requests[self.num_requests];
        self.scratch.positions[depth].legal_moves(request.moves_mut());
        let has_legal_moves = !request.legal_moves().is_empty();
        if let Some(outcome) = self.game_over_at(depth, has_legal_moves) {
            // Values are for the mover, the other side from the one whose result this is.
            let wl: i8 = match outcome.result {
                GameResult::Win => -1,
                GameResult::Draw => 0,
                GameResult::Loss => 1,
            };
            let node = &mut self.arena.nodes[id as usize];
            node.set_terminal(wl);
            let (wl, d, m) = node.proven_value();
            return LeafKind::Known { wl, d, m };
        }
        self.fill_history(self.num_requests, depth);
        self.num_requests += 1;
        LeafKind::Evaluate(self.num_requests as u32 - 1)
    }

    /// The last `HISTORY_LEN` positions of the game up to the leaf at `depth`.
    fn fill_history(&mut self, request: usize, depth: usize) {
        let game = self.history.positions();
        let before_root = game.len() - 1;
        let total = before_root + depth + 1;
        let request = &mut self.requests[request];
        request.clear();
        let positions = game[..before_root].iter().chain(&self.scratch.positions[..=depth]);
        for (index, position) in positions.enumerate().skip(total.saturating_sub(HISTORY_LEN)) {
            let repeated = earlier_occurrences(&self.scratch.hashes, index, position.halfmove_clock()).next().is_some();
            request.push_history(position, repeated);
        }
    }

    /// Takes this round's evaluations (`evaluations.get(offset + i)` for
    /// request `i`), removes the round's in-flight visits and backs up.
    pub(crate) fn apply(&mut self, evaluations: &Evaluations, offset: usize) -> Result<(), SearchError> {
        if self.leaves.is_empty() {
            return Ok(());
        }
        let mut result = Ok(());
        let mut sorted = Vec::new();
        for leaf_index in 0..self.leaves.len() {
            let leaf = self.leaves[leaf_index];
            let path = leaf.path.0 as usize..leaf.path.1 as usize;
            self.remove_virtual_loss(path.clone());
            let (wl, d, m, proven) = match leaf.kind {
                LeafKind::Collision => continue,
                LeafKind::RepetitionDraw => {
                    self.backup(path.start..path.end - 1, 0.0, 1.0, 1.0);
                    self.progress.playouts += 1;
                    continue;
                }
                LeafKind::Known { wl, d, m } => (wl, d, m, true),
                LeafKind::Evaluate(request) => {
                    let leaf_node = self.paths[path.end - 1];
                    match self.expand(leaf_node, request as usize, evaluations, offset, &mut sorted) {
                        Ok(value) => value,
                        Err(e) => {
                            result = result.and(Err(e));
                            continue;
                        }
                    }
                }
            };
            self.backup(path.clone(), wl, d, m);
            if proven {
                self.propagate_bounds(path);
            }
            self.progress.playouts += 1;
        }
        self.leaves.clear();
        result?;
        self.after_round();
        Ok(())
    }

    /// Drops a round without backing anything up (the evaluator failed).
    pub(crate) fn abandon_round(&mut self) {
        for leaf_index in 0..self.leaves.len() {
            let path = self.leaves[leaf_index].path;
            self.remove_virtual_loss(path.0 as usize..path.1 as usize);
        }
        self.leaves.clear();
        self.progress.searching = false;
        self.progress.unreported = false;
    }

    /// The one place in-flight visits are removed: when a leaf's value comes back.
    fn remove_virtual_loss(&mut self, path: std::ops::Range<usize>) {
        for &id in &self.paths[path] {
            self.arena.nodes[id as usize].in_flight -= 1;
        }
    }

    /// Gives the leaf its edges, sorted by prior; returns its value for the
    /// mover (wl, d, m) and whether that value is proven.
    fn expand(
        &mut self,
        id: u32,
        request: usize,
        evaluations: &Evaluations,
        offset: usize,
        sorted: &mut Vec<u32>,
    ) -> Result<(f32, f32, f32, bool), SearchError> {
        let (priors, value) = evaluations.get(offset + request);
        let moves = self.requests[request].legal_moves();
        if priors.len() != moves.len() {
            return Err(SearchError::BadEvaluation(format!(
                "{} priors for a position with {} legal moves",
                priors.len(),
                moves.len()
            )));
        }
        let [win, draw, loss] = value.wdl;
        if !(value.wdl.iter().all(|x| x.is_finite() && *x >= 0.0) && win + draw + loss > 0.0) {
            return Err(SearchError::BadEvaluation(format!("WDL {:?} is not a distribution", value.wdl)));
        }
        // A prior to the power 1 / T is the softmax of the logits over T.
        let exponent = self.params.policy_temperature.recip();
        let sane = |p: f32| match p.is_finite() && p > 0.0 {
            true if exponent == 1.0 => p,
            true => p.powf(exponent),
            false => 0.0,
        };
        let total: f32 = priors.iter().copied().map(sane).sum();
        // Below the smallest normal float the reciprocal overflows: uniform then.
        let usable = total >= f32::MIN_POSITIVE;
        let scale = if usable { total.recip() } else { 0.0 };
        let uniform = 1.0 / moves.len() as f32;
        // Sort keys: the complemented compressed prior above the move's
        // index, so that an ascending sort puts the highest prior first and
        // equal priors keep the generator's order.
        sorted.clear();
        sorted.extend(priors.iter().enumerate().map(|(i, &p)| {
            let p = if usable { sane(p) * scale } else { uniform };
            u32::from(!compress_prior(p)) << 16 | i as u32
        }));
        sorted.sort_unstable();
        self.arena.expand(
            id,
            sorted.iter().map(|&key| {
                let mv = G::pack_move(moves[(key & 0xffff) as usize]);
                Edge::with_compressed_prior(mv, !(key >> 16) as u16)
            }),
        );
        if self.params.prove_mate_in_one && self.prove_mate_in_one(id, request) {
            let (wl, d, m) = self.arena.nodes[id as usize].proven_value();
            return Ok((wl, d, m, true));
        }
        let sum = win + draw + loss;
        let moves_left = if value.moves_left.is_finite() { value.moves_left.max(0.0) } else { 0.0 };
        // The network speaks for the side to move; nodes for the mover.
        Ok(((loss - win) / sum, draw / sum, moves_left, false))
    }

    /// Proves a node just expanded lost for its mover when the side to move
    /// there mates at once. The mating edge moves to the front, since edges
    /// with a child come first, and gets a game-over child. Without this a
    /// sharp prior can leave the opponent's mate unvisited, and the search
    /// walks into it. Returns whether the node is now proven.
    fn prove_mate_in_one(&mut self, id: u32, request: usize) -> bool {
        let position = self.requests[request].position();
        let mate = self.arena.edges(id).iter().enumerate().find_map(|(i, edge)| {
            let mut next = position.clone();
            next.play(position.unpack_move(edge.mv));
            (next.is_check() && next.count_legal_moves() == 0).then(|| (i, next.hash()))
        });
        let Some((i, hash)) = mate else { return false };
        self.arena.edges_mut(id)[..=i].rotate_right(1);
        let child = self.node_for(hash);
        self.arena.nodes[child as usize].set_terminal(1);
        self.arena.set_child(id, 0, child);
        self.update_bounds(id);
        true
    }

    fn backup(&mut self, path: std::ops::Range<usize>, mut wl: f32, d: f32, mut m: f32) {
        for &id in self.paths[path].iter().rev() {
            self.arena.nodes[id as usize].add_visit(wl, d, m);
            wl = -wl;
            m += 1.0;
        }
    }

    /// Recomputes bounds up the path from a proven leaf, while they change.
    fn propagate_bounds(&mut self, path: std::ops::Range<usize>) {
        for i in (path.start..path.end - 1).rev() {
            let id = self.paths[i];
            if !self.update_bounds(id) {
                break;
            }
        }
    }

    /// Sets a node's bounds from its children's; returns whether they changed.
    fn update_bounds(&mut self, id: u32) -> bool {
        let (lower, upper, plies) = self.bounds_from_children(id);
        let node = &mut self.arena.nodes[id as usize];
        if (lower, upper, plies) == (node.lower, node.upper, node.plies) {
            return false;
        }
        node.lower = lower;
        node.upper = upper;
        node.plies = plies;
        true
    }

    /// A node's bounds (lower, upper, plies) as its children make them: the
    /// mover's value is minus the best the opponent can reach; a win takes
    /// the shortest way, anything else the longest.
    fn bounds_from_children(&self, id: u32) -> (i8, i8, u16) {
        let (mut best_lower, mut best_upper) = (-1i8, -1i8);
        let bounds = |i| match self.arena.child(id, i) {
            NONE => (-1, 1, 0),
            c => {
                let c = &self.arena.nodes[c as usize];
                (c.lower, c.upper, c.plies)
            }
        };
        let edges = usize::from(self.arena.nodes[id as usize].num_edges);
        for (lower, upper, _) in (0..edges).map(bounds) {
            best_lower = best_lower.max(lower);
            best_upper = best_upper.max(upper);
        }
        let (lower, upper) = (-best_upper, -best_lower);
        if lower != upper {
            return (lower, upper, 0);
        }
        // Proven: the opponent's best result is best_lower. A win takes the
        // shortest way to it, a draw or a loss the longest.
        let plies = (0..edges).map(bounds).filter(|&(l, _, _)| l == best_lower).map(|(_, _, plies)| plies);
        let plies = if best_lower == 1 { plies.min() } else { plies.max() };
        (lower, upper, plies.unwrap_or(0).saturating_add(1))
    }

    /// Checks the stop conditions after a round. The KLD gain is measured
    /// on the round that reaches the limit too: a driver that slices a
    /// search into calls of about one interval (a slow network, a loaded
    /// machine) would otherwise never see it.
    fn after_round(&mut self) {
        self.check_stop();
        let measured = self.progress.searching || self.progress.stop == StopReason::Limit;
        if let (true, Some(kld)) = (measured, self.params.kld_stop)
            && self.progress.playouts >= self.progress.kld_next
        {
            let gain = self.kld_gain();
            self.progress.kld_gain = gain;
            if gain.is_some_and(|g| g < kld.min_gain_per_node) {
                self.progress.searching = false;
                self.progress.stop = StopReason::KldGain;
            }
            self.snapshot_kld();
        }
    }

    fn check_stop(&mut self) {
        let root = &self.arena.nodes[self.root as usize];
        if root.is_expanded() && root.is_proven() {
            self.progress.searching = false;
            self.progress.stop = StopReason::Proven;
        } else if self.round_budget() == 0 {
            self.progress.searching = false;
            self.progress.stop = StopReason::Limit;
        }
    }

    /// Lc0's KLD gain: the KL divergence of the last snapshot's root visit
    /// distribution from today's, in nats per new visit; `None` without a
    /// snapshot to compare with.
    fn kld_gain(&self) -> Option<f64> {
        let visits = self.root_child_visits();
        let old_total: u32 = self.progress.kld_visits.iter().sum();
        let new_total: u32 = visits.iter().sum();
        if old_total == 0 || new_total <= old_total || visits.len() != self.progress.kld_visits.len() {
            return None;
        }
        let mut kld = 0.0;
        for (&new, &old) in visits.iter().zip(&self.progress.kld_visits) {
            if old > 0 {
                // Visits only grow, so new > 0 here.
                let p = f64::from(old) / f64::from(old_total);
                let q = f64::from(new) / f64::from(new_total);
                kld += p * (p / q).ln();
            }
        }
        Some(kld / f64::from(new_total - old_total))
    }

    fn snapshot_kld(&mut self) {
        let visits = self.root_child_visits();
        self.progress.kld_visits.clear();
        self.progress.kld_visits.extend(visits);
        if let Some(kld) = self.params.kld_stop {
            self.progress.kld_next = self.progress.playouts + kld.interval;
        }
    }

    /// Completed visits of each root edge, in edge order.
    fn root_child_visits(&self) -> Vec<u32> {
        (0..self.arena.edges(self.root).len())
            .map(|i| match self.arena.child(self.root, i) {
                NONE => 0,
                c => self.arena.nodes[c as usize].n,
            })
            .collect()
    }

    /// Samples the Gumbel root's moves once the root is expanded, for the
    /// simulations the search has left.
    fn maybe_start_gumbel(&mut self) {
        let Some(params) = self.params.gumbel else { return };
        let root = self.arena.nodes[self.root as usize];
        if self.gumbel.is_some() || !root.is_expanded() || root.is_terminal() {
            return;
        }
        let p = &self.progress;
        let budget = (p.limits.playouts.saturating_sub(p.playouts)).min(p.limits.visits.saturating_sub(root.n));
        let moves = self.arena.edges(self.root).iter().map(|e| (e.mv, e.prior()));
        self.gumbel = Some(GumbelRoot::new(moves, budget, -root.wl, &params, &mut self.rng));
    }

    /// The root moves as the Gumbel root scores them, in edge order.
    fn root_scores(&self, raw_value: f32) -> RootScores {
        let edges = self.arena.edges(self.root);
        // (prior, visits, Q for the side to move at the root, proven)
        let stats: Vec<(f32, u32, f32, bool)> = (0..edges.len())
            .map(|i| match self.arena.child(self.root, i) {
                NONE => (edges[i].prior(), 0, 0.0, false),
                c => {
                    let node = &self.arena.nodes[c as usize];
                    let q = if node.is_proven() { node.proven_value().0 } else { node.wl };
                    (edges[i].prior(), node.n, q, node.is_proven())
                }
            })
            .collect();
        let mixed = mixed_value(raw_value, stats.iter().map(|&(prior, n, q, _)| (prior, n, q)));
        RootScores {
            moves: edges.iter().map(|e| e.mv).collect(),
            logits: stats.iter().map(|s| logit(s.0)).collect(),
            completed: stats.iter().map(|&(_, n, q, proven)| unit_q(if n > 0 || proven { q } else { mixed })).collect(),
            max_visits: stats.iter().map(|s| s.1).max().unwrap_or(0),
        }
    }

    /// The root move of the next selection by sequential halving: the
    /// candidate with the best `g + logit + σ(q̂)` among those at the visit
    /// level the schedule requires. Counts the selection, and returns the
    /// candidate and its edge, moved (if it has no child yet) to the front
    /// of the childless edges, where the next child goes.
    fn select_gumbel_edge(&mut self) -> (usize, usize) {
        let gumbel = self.gumbel.as_ref().expect("a Gumbel root");
        let params = self.params.gumbel.expect("Gumbel parameters");
        let scores = self.root_scores(gumbel.raw_value);
        let score = |c: &Candidate| scores.sigma(c.mv, &params);
        let candidate = gumbel
            .required_visits()
            .and_then(|level| gumbel.best(|c| c.visits == level, score))
            .or_else(|| {
                let fewest = gumbel.candidates.iter().map(|c| c.visits).min()?;
                gumbel.best(|c| c.visits == fewest, score)
            })
            .expect("at least one candidate");
        let mv = gumbel.candidates[candidate].mv;
        self.gumbel.as_mut().expect("a Gumbel root").candidates[candidate].visits += 1;
        let edge = scores.index_of(mv);
        if self.arena.child(self.root, edge) != NONE {
            return (candidate, edge);
        }
        let first_childless = (0..edge).find(|&i| self.arena.child(self.root, i) == NONE).unwrap_or(edge);
        self.arena.edges_mut(self.root)[first_childless..=edge].rotate_right(1);
        (candidate, first_childless)
    }

    /// The improved policy over every root move (in `result`'s order) and
    /// the move to play: a proven win, or else the best survivor of
    /// sequential halving.
    fn gumbel_outcome(&self, result: &SearchResult<G>) -> Option<GumbelOutcome<G>> {
        let params = self.params.gumbel?;
        let Some(gumbel) = &self.gumbel else {
            // No search (a forced move, or none yet): the prior, or uniform.
            let first = result.moves.first()?;
            let uniform = 1.0 / result.moves.len() as f32;
            let total: f32 = result.moves.iter().map(|m| m.prior).sum();
            let policy = result.moves.iter().map(|m| if total > 0.0 { m.prior / total } else { uniform }).collect();
            return Some(GumbelOutcome { policy, choice: first.mv });
        };
        let scores = self.root_scores(gumbel.raw_value);
        let policy = improved_policy(&scores.logits, &scores.completed, scores.max_visits, &params);
        let policy = result.moves.iter().map(|m| policy[scores.index_of(G::pack_move(m.mv))]).collect();
        let best = result.best()?;
        let choice = if matches!(best.proof, crate::Proof::Win { .. }) {
            best.mv
        } else {
            let survivors = gumbel.survivor_visits();
            let survivor = gumbel.best(|c| c.visits == survivors, |c| scores.sigma(c.mv, &params))?;
            self.history.current().unpack_move(gumbel.candidates[survivor].mv)
        };
        Some(GumbelOutcome { policy, choice })
    }

    /// Mixes Dirichlet noise into the root priors once per root, then
    /// restores the edge order selection relies on.
    fn maybe_add_noise(&mut self) {
        let Some(noise) = self.params.noise.filter(|_| self.params.gumbel.is_none()) else { return };
        if self.root_noised || !self.progress.full || !self.arena.nodes[self.root as usize].is_expanded() {
            return;
        }
        self.root_noised = true;
        let count = self.arena.edges(self.root).len();
        let mut x = vec![0.0; count];
        self.rng.dirichlet(f64::from(noise.alpha), &mut x);
        let first_childless = (0..count).find(|&i| self.arena.child(self.root, i) == NONE).unwrap_or(count);
        let edges = self.arena.edges_mut(self.root);
        for (edge, x) in edges.iter_mut().zip(x) {
            edge.set_prior((1.0 - noise.epsilon) * edge.prior() + noise.epsilon * x as f32);
        }
        edges[first_childless..].sort_by(|a, b| b.prior().total_cmp(&a.prior()));
    }

    /// The search's findings so far.
    pub fn result(&self) -> SearchResult<G> {
        let (playouts, full_search, stop, kld_gain) = self.progress_summary();
        let summary = SearchSummary {
            playouts,
            full_search,
            stop,
            kld_gain,
            nodes: self.node_count(),
            bytes: self.arena_bytes(),
        };
        let mut result = SearchResult::build(&self.arena, self.root, self.history().current(), summary);
        result.gumbel = self.gumbel_outcome(&result);
        result
    }

    pub(crate) fn progress_summary(&self) -> (u32, bool, StopReason, Option<f64>) {
        let p = &self.progress;
        (p.playouts, p.full, p.stop, p.kld_gain)
    }

    /// Plays `m` (legal at the root) and keeps the subtree below it, visits
    /// and all, as the new tree.
    ///
    /// # Errors
    /// [`SearchError::IllegalMove`] if `m` is not legal at the root.
    pub fn advance(&mut self, m: G::Move) -> Result<(), SearchError> {
        let root_position = self.history.current();
        let mut moves = MoveList::new();
        root_position.legal_moves(&mut moves);
        if !moves.contains(&m) {
            return Err(SearchError::IllegalMove(format!("{m} in {}", root_position.fen())));
        }
        let packed = G::pack_move(m);
        let edge = self.arena.edges(self.root).iter().position(|e| e.mv == packed);
        let child = edge.map_or(NONE, |i| self.arena.child(self.root, i));
        self.history.play(m);
        self.history_hashes.push(self.history.current().hash());
        if let Some(table) = &mut self.table {
            table.drawn = repeated_hashes(&self.history_hashes);
        }
        self.root_noised = false;
        self.progress.searching = false;
        let hash = self.history.current().hash();
        match (&self.table, child) {
            (Some(table), _) => {
                let existing = table.nodes.get(&hash).copied();
                self.root = match existing.or((child != NONE).then_some(child)) {
                    Some(id) => id,
                    None => self.push_table_node(hash),
                };
            }
            (None, NONE) => self.reset_arena(),
            (None, child) => {
                self.compact(child);
                self.revalidate_draws();
            }
        }
        Ok(())
    }

    /// After tree reuse: a two-fold draw that repeated the old root's
    /// position no longer counts (the old root is now before the root), so
    /// every game-over draw below the new root is checked again, those that
    /// no longer hold go back to unexpanded leaves (their visits kept), and
    /// proofs are recomputed from the leaves up.
    fn revalidate_draws(&mut self) {
        self.scratch.positions.truncate(0);
        self.scratch.positions.push(self.history.current().clone());
        self.scratch.hashes.clear();
        self.scratch.hashes.extend_from_slice(&self.history_hashes);
        let mut stack = vec![(self.root, 0usize)];
        while let Some((id, next_edge)) = stack.last_mut() {
            let (id, edge) = (*id, *next_edge);
            let node = self.arena.nodes[id as usize];
            if edge < usize::from(node.num_edges) && node.children != NONE {
                stack.last_mut().expect("not empty").1 += 1;
                let child = self.arena.child(id, edge);
                if child == NONE {
                    continue;
                }
                let position = self.scratch.positions.last().expect("the root is always there");
                let mut next = position.clone();
                next.play(position.unpack_move(self.arena.edges(id)[edge].mv));
                self.scratch.hashes.push(next.hash());
                self.scratch.positions.push(next);
                let depth = stack.len();
                let child_node = self.arena.nodes[child as usize];
                if child_node.is_terminal() && child_node.lower == 0 {
                    let has_legal_moves = self.scratch.positions[depth].count_legal_moves() > 0;
                    if self.game_over_at(depth, has_legal_moves).is_none() {
                        let node = &mut self.arena.nodes[child as usize];
                        (node.edges, node.num_edges, node.lower, node.upper, node.plies) = (NONE, 0, -1, 1, 0);
                    }
                }
                if self.arena.nodes[child as usize].is_expanded() && !self.arena.nodes[child as usize].is_terminal() {
                    stack.push((child, 0));
                } else {
                    self.scratch.positions.pop();
                    self.scratch.hashes.pop();
                }
            } else {
                if node.is_expanded() && !node.is_terminal() {
                    let node = &mut self.arena.nodes[id as usize];
                    (node.lower, node.upper, node.plies) = (-1, 1, 0);
                    self.update_bounds(id);
                }
                stack.pop();
                if !stack.is_empty() {
                    self.scratch.positions.pop();
                    self.scratch.hashes.pop();
                }
            }
        }
    }

    /// How the game ends at `depth` on the current path, if it does there:
    /// the position's own rules, then repetition, then the ply cap.
    fn game_over_at(&self, depth: usize, has_legal_moves: bool) -> Option<Outcome> {
        self.scratch.positions[depth].outcome_given(has_legal_moves).or_else(|| {
            if depth > 0 && self.repetition_draw(depth) {
                return Some(Outcome::draw(Termination::ThreefoldRepetition));
            }
            let cap = self.history.ply_cap()?;
            (self.history.moves().len() + depth >= cap as usize).then_some(Outcome::draw(Termination::PlyCap))
        })
    }

    /// Moves the root to the end of `history`: through [`Tree::advance`]
    /// when it continues the current game (the tree is reused), otherwise
    /// afresh; in analysis mode a position already in the table keeps its
    /// statistics either way.
    ///
    /// # Errors
    /// [`SearchError::IllegalMove`] if a move of `history` is illegal where played.
    pub fn set_history(&mut self, history: History<G>) -> Result<(), SearchError> {
        let played = self.history.moves().len();
        let continues =
            history.start().fen() == self.history.start().fen() && history.moves().starts_with(self.history.moves());
        if continues {
            for &m in &history.moves()[played..] {
                self.advance(m)?;
            }
            self.history = history;
            return Ok(());
        }
        self.history_hashes = history.positions().iter().map(Game::hash).collect();
        self.history = history;
        self.root_noised = false;
        self.forget_history_draws();
        self.progress.searching = false;
        let hash = self.history.current().hash();
        match self.table.as_ref().map(|t| t.nodes.get(&hash).copied()) {
            Some(Some(id)) => self.root = id,
            Some(None) => self.root = self.push_table_node(hash),
            None => self.reset_arena(),
        }
        Ok(())
    }

    /// Analysis mode, on a root from another game: nodes drawn by the old
    /// game's repetitions become ordinary again, and proofs are dropped (the
    /// searches to come derive them again).
    fn forget_history_draws(&mut self) {
        let Some(table) = &mut self.table else { return };
        let drawn = repeated_hashes(&self.history_hashes);
        let stale: Vec<u32> = table
            .nodes
            .iter()
            .filter(|(hash, _)| table.drawn.binary_search(hash).is_ok() && drawn.binary_search(hash).is_err())
            .map(|(_, &id)| id)
            .collect();
        table.drawn = drawn;
        for id in stale {
            let node = &mut self.arena.nodes[id as usize];
            if node.is_terminal() && node.lower == 0 {
                (node.edges, node.lower, node.upper, node.plies) = (NONE, -1, 1, 0);
            }
        }
        for node in &mut self.arena.nodes {
            if node.is_expanded() && !node.is_terminal() {
                (node.lower, node.upper, node.plies) = (-1, 1, 0);
            }
        }
    }

    fn push_table_node(&mut self, hash: u64) -> u32 {
        let id = self.arena.push(Node::NEW);
        if let Some(table) = &mut self.table {
            table.nodes.insert(hash, id);
        }
        id
    }

    fn reset_arena(&mut self) {
        self.arena.clear();
        self.root = self.arena.push(Node::NEW);
    }

    /// A root that cannot be searched as it is: one marked over by a
    /// path-dependent rule (the two-fold draw) whose game goes on, or a
    /// former two-fold draw that reuse turned back into a leaf with its
    /// visits (enough of them would end a search before it expanded the
    /// root, with no move to play). Either is searched afresh.
    fn reset_unsearchable_root(&mut self) {
        let root = &mut self.arena.nodes[self.root as usize];
        if root.is_terminal() || !root.is_expanded() {
            *root = Node::NEW;
        }
    }

    /// Keeps only what `new_root` reaches, in a fresh arena.
    fn compact(&mut self, new_root: u32) {
        let old = std::mem::take(&mut self.arena);
        let mut remap = vec![NONE; old.nodes.len()];
        let mut queue = vec![new_root];
        remap[new_root as usize] = self.arena.push(old.nodes[new_root as usize]);
        while let Some(old_id) = queue.pop() {
            let new_id = remap[old_id as usize];
            let node = old.nodes[old_id as usize];
            if !node.is_expanded() || node.is_terminal() {
                continue;
            }
            self.arena.expand(new_id, old.edges(old_id).iter().copied());
            // Children are a prefix of the edges: one block of exactly their number.
            let children: Vec<u32> = old
                .child_slots(old_id)
                .iter()
                .take_while(|&&child| child != NONE)
                .map(|&child| {
                    if remap[child as usize] == NONE {
                        remap[child as usize] = self.arena.push(old.nodes[child as usize]);
                        queue.push(child);
                    }
                    remap[child as usize]
                })
                .collect();
            self.arena.set_children(new_id, &children);
        }
        self.root = remap[new_root as usize];
        if let Some(table) = &mut self.table {
            table.nodes.retain(|_, id| {
                *id = remap[*id as usize];
                *id != NONE
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use capa_rules::chess::Chess;

    use super::*;
    use crate::{Evaluator, UniformEvaluator};

    fn evaluate(tree: &mut Tree<Chess>) {
        let mut out = Evaluations::default();
        UniformEvaluator.evaluate(&tree.requests[..tree.num_requests], &mut out).unwrap();
        tree.apply(&out, 0).unwrap();
    }

    fn gumbel_params(considered: u16, parallel_sims: u16) -> SearchParams {
        SearchParams {
            parallel_sims,
            max_collisions: parallel_sims,
            gumbel: Some(crate::GumbelParams { considered, ..crate::GumbelParams::default() }),
            ..SearchParams::default()
        }
    }

    /// Sequential halving over a real search: m = 4 and 16 simulations
    /// after the root's own evaluation give the four candidates 2 visits
    /// each, then the better two 4 more; batched selection gives the same.
    #[test]
    fn gumbel_spends_the_budget_by_sequential_halving() {
        for parallel_sims in [1, 8] {
            let history = History::new(Chess::startpos());
            let mut tree = Tree::new(history, gumbel_params(4, parallel_sims), 3).unwrap();
            let result = tree.search(&crate::RandomEvaluator, Limits::playouts(17)).unwrap();
            let mut visits: Vec<u32> = result.moves.iter().map(|m| m.visits).filter(|&n| n > 0).collect();
            visits.sort_unstable();
            assert_eq!(visits, [2, 2, 6, 6], "parallel_sims {parallel_sims}");
            assert_eq!(tree.in_flight_total(), 0);
            let gumbel = result.gumbel.as_ref().expect("a Gumbel outcome");
            let chosen = result.moves.iter().find(|m| m.mv == gumbel.choice).unwrap();
            assert_eq!(chosen.visits, 6, "the move played is a survivor");
        }
    }

    /// The improved policy covers every legal move with a positive share
    /// and sums to 1; as a target over the policy vector it is zero exactly
    /// on the illegal moves.
    #[test]
    fn gumbel_policy_target_is_positive_exactly_on_legal_moves() {
        let history = History::new(Chess::startpos());
        let mut tree = Tree::new(history, gumbel_params(16, 8), 5).unwrap();
        let result = tree.search(&crate::RandomEvaluator, Limits::playouts(65)).unwrap();
        let mut target = vec![0.0f32; Chess::policy_size()];
        for (mv, share) in result.policy_target() {
            target[Chess::startpos().policy_index(mv)] = share;
        }
        let mut legal = MoveList::new();
        Chess::startpos().legal_moves(&mut legal);
        let legal: Vec<usize> = legal.iter().map(|&m| Chess::startpos().policy_index(m)).collect();
        assert!((target.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        for (index, &share) in target.iter().enumerate() {
            assert_eq!(share > 0.0, legal.contains(&index), "policy index {index}: {share}");
        }
    }

    /// A forced move costs no search and is no training position.
    #[test]
    fn gumbel_spends_nothing_on_a_forced_move() {
        // Black's king on h8, shut in by the rook on the seventh rank, has one move.
        let position = Chess::from_fen("7k/R7/8/8/8/8/8/K7 b - - 0 1").unwrap();
        assert_eq!(position.count_legal_moves(), 1);
        let mut tree = Tree::new(History::new(position.clone()), gumbel_params(16, 8), 1).unwrap();
        let result = tree.search(&crate::RandomEvaluator, Limits::playouts(64)).unwrap();
        assert_eq!(result.playouts, 0);
        assert!(!result.full_search);
        let gumbel = result.gumbel.expect("a Gumbel outcome");
        assert_eq!(gumbel.policy, [1.0]);
        assert_eq!(gumbel.choice.to_string(), "h8g8");
    }

    /// Root children with a selection pending.
    fn busy_root_moves(tree: &Tree<Chess>) -> usize {
        (0..tree.arena.edges(tree.root).len())
            .filter(|&i| match tree.arena.child(tree.root, i) {
                NONE => false,
                c => tree.arena.nodes[c as usize].in_flight > 0,
            })
            .count()
    }

    #[test]
    fn virtual_loss_spreads_a_batch_over_root_moves() {
        let params = SearchParams { parallel_sims: 8, ..SearchParams::default() };
        let mut tree = Tree::new(History::new(Chess::startpos()), params, 1).unwrap();
        tree.start(Limits::playouts(1000), true).unwrap();
        tree.gather();
        assert_eq!(tree.leaves.len(), 1, "the root's own evaluation comes first");
        evaluate(&mut tree);
        tree.gather();
        assert_eq!(busy_root_moves(&tree), 8, "eight selections, eight distinct root moves");
        let root = tree.arena.nodes[tree.root as usize];
        assert_eq!(u32::from(root.in_flight), tree.leaves.len() as u32);
        evaluate(&mut tree);
        assert_eq!(tree.in_flight_total(), 0);
    }

    /// The root's priors under a policy temperature T are the network's
    /// to the power 1 / T, renormalised: `softmax(logits / T)`.
    #[test]
    fn policy_temperature_flattens_the_priors() {
        let root_priors = |policy_temperature: f32| {
            let params = SearchParams { policy_temperature, ..SearchParams::default() };
            let mut tree = Tree::new(History::new(Chess::startpos()), params, 1).unwrap();
            tree.start(Limits::playouts(1), true).unwrap();
            tree.gather();
            let mut out = Evaluations::default();
            crate::RandomEvaluator.evaluate(&tree.requests[..tree.num_requests], &mut out).unwrap();
            tree.apply(&out, 0).unwrap();
            let mut priors: Vec<(u16, f32)> = tree.arena.edges(tree.root).iter().map(|e| (e.mv, e.prior())).collect();
            priors.sort_unstable_by_key(|&(mv, _)| mv);
            priors
        };
        let (plain, flat) = (root_priors(1.0), root_priors(2.0));
        let total: f32 = plain.iter().map(|&(_, p)| p.sqrt()).sum();
        for (&(mv, p), &(_, q)) in plain.iter().zip(&flat) {
            let expected = p.sqrt() / total;
            assert!((q - expected).abs() <= 0.01 * expected, "move {mv}: {q}, expected {expected}");
        }
        let largest = |priors: &[(u16, f32)]| priors.iter().map(|&(_, p)| p).fold(0.0, f32::max);
        assert!(largest(&flat) < largest(&plain));
        let bad = SearchParams { policy_temperature: 0.0, ..SearchParams::default() };
        assert!(Tree::<Chess>::new(History::new(Chess::startpos()), bad, 1).is_err());
    }

    #[test]
    fn moves_left_utility_prefers_short_wins_and_long_losses() {
        let tree = Tree::new(History::new(Chess::startpos()), SearchParams::default(), 1).unwrap();
        let (parent_m, short, long) = (30.0, 10.0, 50.0);
        for q in [0.9, 0.3] {
            assert!(tree.moves_left_utility(q, parent_m, short) > tree.moves_left_utility(q, parent_m, long));
            assert!(tree.moves_left_utility(-q, parent_m, short) < tree.moves_left_utility(-q, parent_m, long));
        }
        let max = tree.params.moves_left.max_effect;
        assert!(tree.moves_left_utility(1.0, 0.0, 1000.0).abs() <= max * 1.0001, "bounded by max_effect");
        let off = SearchParams {
            moves_left: crate::MovesLeftUtility { max_effect: 0.0, ..Default::default() },
            ..SearchParams::default()
        };
        let tree = Tree::new(History::new(Chess::startpos()), off, 1).unwrap();
        assert_eq!(tree.moves_left_utility(0.9, parent_m, short), 0.0);
    }

    #[test]
    fn contempt_makes_draws_worse_for_the_root_side_only() {
        let params = SearchParams { contempt: 0.25, ..SearchParams::default() };
        let tree = Tree::new(History::new(Chess::startpos()), params, 1).unwrap();
        assert_eq!(tree.draw_score(0), -0.25, "the root side chooses at even depths");
        assert_eq!(tree.draw_score(1), 0.25);
        assert_eq!(tree.draw_score(4), -0.25);
    }

    /// The node reached from the root by `moves` (UCI), if the tree has it.
    fn node_at(tree: &Tree<Chess>, moves: &[&str]) -> u32 {
        let mut position = tree.history.current().clone();
        let mut id = tree.root;
        for uci in moves {
            let m = position.parse_move(uci).unwrap();
            let edge = tree.arena.edges(id).iter().position(|e| e.mv == Chess::pack_move(m)).unwrap();
            id = tree.arena.child(id, edge);
            assert_ne!(id, NONE, "{uci} has no child");
            position.play(m);
        }
        id
    }

    #[test]
    fn reuse_drops_two_fold_draws_that_no_longer_hold() {
        struct Dance;
        impl Evaluator<Chess> for Dance {
            fn evaluate(&self, batch: &[LeafRequest<Chess>], out: &mut Evaluations) -> Result<(), crate::EvalError> {
                for request in batch {
                    let priors = request.legal_moves().iter().map(|m| {
                        if ["g1f3", "g8f6", "f3g1", "f6g8"].contains(&m.to_string().as_str()) { 100.0 } else { 1.0 }
                    });
                    out.push(priors, crate::Value { wdl: [0.3, 0.4, 0.3], moves_left: 40.0 });
                }
                Ok(())
            }
        }
        let mut tree = Tree::new(History::new(Chess::startpos()), SearchParams::default(), 1).unwrap();
        tree.search(&Dance, Limits::playouts(3_000)).unwrap();
        let back_home = node_at(&tree, &["g1f3", "g8f6", "f3g1", "f6g8"]);
        assert!(tree.arena.nodes[back_home as usize].is_terminal(), "the root repeated since the root: a draw");
        let m = tree.history.current().parse_move("g1f3").unwrap();
        tree.advance(m).unwrap();
        let back_home = node_at(&tree, &["g8f6", "f3g1", "f6g8"]);
        let node = tree.arena.nodes[back_home as usize];
        assert!(!node.is_expanded() && !node.is_proven(), "the start position is now before the root");
        assert!(node.n > 0, "its visits are kept");
        let kept = node.n;
        // That leaf as the root: a search whose visit limit its kept visits
        // already meet must still expand it and give a move to play.
        let mut at_home = tree.clone();
        for uci in ["g8f6", "f3g1", "f6g8"] {
            let m = at_home.history.current().parse_move(uci).unwrap();
            at_home.advance(m).unwrap();
        }
        let result = at_home.search(&Dance, Limits::visits(kept)).unwrap();
        assert!(result.best().is_some(), "no move after reuse made the root a leaf with {kept} visits");
        assert_eq!(at_home.in_flight_total(), 0);
        let result = tree.search(&Dance, Limits::playouts(1_000)).unwrap();
        assert_eq!(tree.in_flight_total(), 0);
        assert!(result.playouts > 0);
        assert!(tree.arena.nodes[back_home as usize].is_expanded(), "searched again as an ordinary position");
    }

    impl<G: Game> Tree<G> {
        /// The invariants: nothing in flight and the edge order selection
        /// relies on; in tree mode also every visit accounted for and proofs
        /// that follow from the children (a shared node's other parents
        /// learn of its proof only when a search passes through them).
        fn check_invariants(&self) -> Result<(), String> {
            for id in 0..self.arena.nodes.len() as u32 {
                let node = self.arena.nodes[id as usize];
                if node.in_flight != 0 {
                    return Err(format!("node {id}: {} visits in flight", node.in_flight));
                }
                if !node.is_expanded() || node.is_terminal() {
                    continue;
                }
                let edges = self.arena.edges(id);
                let children: Vec<u32> = (0..edges.len()).map(|i| self.arena.child(id, i)).collect();
                let with_child = children.iter().take_while(|&&c| c != NONE).count();
                if children[with_child..].iter().any(|&c| c != NONE) {
                    return Err(format!("node {id}: a childless edge before a child"));
                }
                if edges[with_child..].windows(2).any(|w| w[0].prior() < w[1].prior()) {
                    return Err(format!("node {id}: childless edges out of prior order"));
                }
                if self.table.is_some() {
                    continue;
                }
                let child_visits: u32 = children[..with_child].iter().map(|&c| self.arena.nodes[c as usize].n).sum();
                if node.n < 1 + child_visits {
                    return Err(format!("node {id}: {} visits, its children {child_visits}", node.n));
                }
                let stored = (node.lower, node.upper, node.plies);
                if stored != self.bounds_from_children(id) {
                    return Err(format!(
                        "node {id}: bounds {stored:?}, children say {:?}",
                        self.bounds_from_children(id)
                    ));
                }
            }
            Ok(())
        }
    }

    /// Random positions, parameters and evaluators; after every search and
    /// every reuse the invariants hold.
    #[test]
    fn invariants_hold_over_random_searches() {
        use capa_rules::capablanca::Capablanca;
        fn run<G: Game>(seed: u64) {
            let mut rng = capa_rules::Rng::new(seed);
            let mut below = |n: u64| rng.next_u64() % n;
            let mut game = History::new(G::startpos());
            let mut moves = MoveList::new();
            for _ in 0..below(80) {
                game.current().legal_moves(&mut moves);
                if moves.is_empty() || game.outcome().is_some() {
                    break;
                }
                let m = moves[below(moves.len() as u64) as usize];
                game.play(m);
            }
            if game.outcome().is_some() {
                return;
            }
            let params = SearchParams {
                parallel_sims: 1 + below(64) as u16,
                max_collisions: 1 + below(64) as u16,
                virtual_loss: below(3) as f32,
                fpu_reduction: below(100) as f32 / 100.0,
                contempt: (below(100) as f32 - 50.0) / 100.0,
                two_fold_draws: below(2) == 0,
                noise: (below(2) == 0).then(crate::DirichletNoise::default),
                kld_stop: (below(3) == 0).then(crate::KldStop::default),
                gumbel: (below(3) == 0).then(|| crate::GumbelParams {
                    considered: 1 + below(20) as u16,
                    scale: (below(3) as f32) / 2.0,
                    ..crate::GumbelParams::default()
                }),
                ..SearchParams::default()
            };
            let analysis = below(4) == 0;
            let context =
                format!("seed {seed}, {} after {} moves, analysis {analysis}, {params:?}", G::NAME, game.moves().len());
            let mut tree = if analysis {
                Tree::analysis(game, params, seed, 1 + below(3000) as usize).unwrap()
            } else {
                Tree::new(game, params, seed).unwrap()
            };
            for _ in 0..3 {
                let playouts = 1 + below(1500) as u32;
                let Ok(result) = tree.search(&crate::RandomEvaluator, Limits::playouts(playouts)) else { break };
                tree.check_invariants().unwrap_or_else(|e| panic!("{context}: {e}"));
                let Some(best) = result.best() else { break };
                let chosen = result.gumbel.as_ref().map_or(best.mv, |g| g.choice);
                tree.advance(chosen).unwrap();
                tree.check_invariants().unwrap_or_else(|e| panic!("{context}, after reuse: {e}"));
            }
        }
        let cases = std::env::var("CAPA_SEARCH_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(60);
        for seed in 0..cases {
            run::<Chess>(seed);
            run::<Capablanca>(seed);
        }
    }
}
