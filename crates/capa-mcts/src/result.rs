//! What a search returns, and how a move is chosen from it.

use std::cmp::Ordering;

use capa_rules::Game;

use crate::node::{Arena, NONE, Node};
use capa_rules::Rng;

/// Why a search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The playout or visit limit.
    Limit,
    /// The root's visit distribution settled (KLD gain below the threshold).
    KldGain,
    /// The root's value is proven: more search cannot change it.
    Proven,
}

/// What is proven about a move, for the side to move at the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proof {
    /// Wins with best play; the game ends `plies` plies after the move.
    Win {
        /// Plies from the position after the move to the end.
        plies: u16,
    },
    /// Draws with best play.
    Draw,
    /// Loses with best play, `plies` plies after the move.
    Loss {
        /// Plies from the position after the move to the end.
        plies: u16,
    },
    /// Not proven.
    Unknown,
}

impl Proof {
    /// Moves to mate as UCI's `score mate` counts them from the root,
    /// counting this move: positive when the side to move mates, negative
    /// when it is mated; `None` unless a win or a loss is proven.
    pub fn mate_in(self) -> Option<i32> {
        match self {
            // `plies` counts from the position after the move.
            Proof::Win { plies } => Some((i32::from(plies) + 2) / 2),
            Proof::Loss { plies } => Some(-(i32::from(plies) + 1) / 2),
            Proof::Draw | Proof::Unknown => None,
        }
    }

    fn of(node: &Node) -> Proof {
        if !node.is_proven() {
            return Proof::Unknown;
        }
        match node.lower {
            1 => Proof::Win { plies: node.plies },
            0 => Proof::Draw,
            _ => Proof::Loss { plies: node.plies },
        }
    }
}

/// One root move's statistics, for the side to move at the root.
#[derive(Clone, Debug, PartialEq)]
pub struct MoveInfo<G: Game> {
    /// The move.
    pub mv: G::Move,
    /// Completed visits through it.
    pub visits: u32,
    /// Its prior as searched (after root noise).
    pub prior: f32,
    /// Mean win minus loss after it (0 when unvisited).
    pub q: f32,
    /// Mean draw probability after it.
    pub d: f32,
    /// Mean plies left after it.
    pub m: f32,
    /// What is proven about it.
    pub proof: Proof,
    /// The principal variation starting with this move.
    pub pv: Vec<G::Move>,
}

/// A search's findings: what self-play records and analysis prints.
#[derive(Clone, Debug)]
pub struct SearchResult<G: Game> {
    /// Every legal root move, best first: proven wins (shortest first),
    /// then unproven and drawn moves by visits, then proven losses (longest first).
    pub moves: Vec<MoveInfo<G>>,
    /// Root visits, reused ones included.
    pub visits: u32,
    /// Visits this search added.
    pub playouts: u32,
    /// Root mean win minus loss, for the side to move.
    pub q: f32,
    /// Root mean draw probability.
    pub d: f32,
    /// Root mean plies left.
    pub m: f32,
    /// Whether this was a full search (worth recording for training).
    pub full_search: bool,
    /// The last KLD gain per visit measured, when the KLD stop is on.
    pub kld_gain: Option<f64>,
    /// Why the search ended.
    pub stop: StopReason,
    /// Nodes in the arena.
    pub nodes: usize,
    /// Arena bytes (nodes, edges, child slots).
    pub bytes: usize,
    /// What a Gumbel root found ([`crate::GumbelParams`]); `None` under PUCT.
    pub gumbel: Option<GumbelOutcome<G>>,
}

/// A Gumbel root's findings.
#[derive(Clone, Debug, PartialEq)]
pub struct GumbelOutcome<G: Game> {
    /// The improved policy `softmax(logits + σ(completed Q))`, one share
    /// per entry of [`SearchResult::moves`], in that order: positive on
    /// every legal move, summing to 1.
    pub policy: Vec<f32>,
    /// The move to play: a proven win, or the best survivor of sequential halving.
    pub choice: G::Move,
}

/// Best-first order of moves: proof class, then visits, Q and prior.
fn rank(a: (&Node, f32), b: (&Node, f32)) -> Ordering {
    let class = |n: &Node| match Proof::of(n) {
        Proof::Win { plies } => (2, -i32::from(plies)),
        Proof::Loss { plies } => (0, i32::from(plies)),
        _ => (1, 0),
    };
    class(b.0).cmp(&class(a.0)).then(b.0.n.cmp(&a.0.n)).then(b.0.wl.total_cmp(&a.0.wl)).then(b.1.total_cmp(&a.1))
}

/// The best child of `id` by [`rank`]: (edge index, child), if any child has visits.
fn best_child(arena: &Arena, id: u32) -> Option<(usize, u32)> {
    let edges = arena.edges(id);
    (0..edges.len())
        .filter_map(|i| {
            let child = arena.child(id, i);
            (child != NONE && (arena.nodes[child as usize].n > 0 || arena.nodes[child as usize].is_proven()))
                .then_some((i, child))
        })
        .min_by(|&(i, a), &(j, b)| {
            rank((&arena.nodes[a as usize], edges[i].prior()), (&arena.nodes[b as usize], edges[j].prior()))
        })
}

/// What a tree says of its search besides its nodes, for [`SearchResult`].
pub(crate) struct SearchSummary {
    pub playouts: u32,
    pub full_search: bool,
    pub stop: StopReason,
    pub kld_gain: Option<f64>,
    pub nodes: usize,
    pub bytes: usize,
}

impl<G: Game> SearchResult<G> {
    /// The result of the search below `root_id` in `arena`, from `position`.
    pub(crate) fn build(arena: &Arena, root_id: u32, position: &G, summary: SearchSummary) -> SearchResult<G> {
        let root = &arena.nodes[root_id as usize];
        let unvisited = Node::NEW;
        let mut ranked: Vec<(usize, &Node)> = (0..arena.edges(root_id).len())
            .map(|i| match arena.child(root_id, i) {
                NONE => (i, &unvisited),
                c => (i, &arena.nodes[c as usize]),
            })
            .collect();
        let edges = arena.edges(root_id);
        if edges.is_empty() {
            // Not searched (a forced move): every legal move, unvisited.
            let mut legal = capa_rules::MoveList::new();
            position.legal_moves(&mut legal);
            let moves = legal
                .iter()
                .map(|&mv| MoveInfo {
                    mv,
                    visits: 0,
                    prior: 0.0,
                    q: 0.0,
                    d: 0.0,
                    m: 0.0,
                    proof: Proof::Unknown,
                    pv: vec![mv],
                })
                .collect();
            return SearchResult::with_moves(moves, root, summary);
        }
        ranked.sort_by(|&(i, a), &(j, b)| rank((a, edges[i].prior()), (b, edges[j].prior())));
        let moves = ranked
            .into_iter()
            .map(|(i, node)| {
                let mv = position.unpack_move(edges[i].mv);
                let mut pv = vec![mv];
                let mut at = position.clone();
                at.play(mv);
                // Analysis graphs have cycles (a position reached again by
                // another path): the line ends at the first repetition.
                let mut seen = vec![position.hash(), at.hash()];
                let mut id = arena.child(root_id, i);
                while id != NONE
                    && let Some((edge, child)) = best_child(arena, id)
                {
                    let next = at.unpack_move(arena.edges(id)[edge].mv);
                    at.play(next);
                    pv.push(next);
                    if seen.contains(&at.hash()) {
                        break;
                    }
                    seen.push(at.hash());
                    id = child;
                }
                let visited = node.n > 0;
                MoveInfo {
                    mv,
                    visits: node.n,
                    prior: edges[i].prior(),
                    q: if visited { node.wl } else { 0.0 },
                    d: if visited { node.d } else { 0.0 },
                    m: if visited { node.m } else { 0.0 },
                    proof: Proof::of(node),
                    pv,
                }
            })
            .collect();
        SearchResult::with_moves(moves, root, summary)
    }

    fn with_moves(moves: Vec<MoveInfo<G>>, root: &Node, summary: SearchSummary) -> SearchResult<G> {
        let SearchSummary { playouts, full_search, stop, kld_gain, nodes, bytes } = summary;
        SearchResult {
            moves,
            visits: root.n,
            playouts,
            q: -root.wl,
            d: root.d,
            m: root.m,
            full_search,
            kld_gain,
            stop,
            nodes,
            bytes,
            gumbel: None,
        }
    }

    /// The policy training target: a Gumbel root's improved policy, or
    /// else each move's share of the root visits.
    pub fn policy_target(&self) -> Box<dyn Iterator<Item = (G::Move, f32)> + '_> {
        match &self.gumbel {
            Some(gumbel) => Box::new(self.moves.iter().zip(&gumbel.policy).map(|(m, &share)| (m.mv, share))),
            None => Box::new(self.visit_distribution()),
        }
    }

    /// The move to play without randomness: first by proof class, then visits.
    pub fn best(&self) -> Option<&MoveInfo<G>> {
        self.moves.first()
    }

    /// Each move's share of the root visits (the policy training target).
    /// A root proven won before any child was visited (a mate in one found
    /// as the node was expanded) gives the whole share to the winning move.
    pub fn visit_distribution(&self) -> impl Iterator<Item = (G::Move, f32)> + '_ {
        let total: u32 = self.moves.iter().map(|m| m.visits).sum();
        let proven_win = total == 0 && self.best().is_some_and(|m| matches!(m.proof, Proof::Win { .. }));
        self.moves.iter().enumerate().map(move |(i, m)| {
            let share = match total {
                0 if proven_win && i == 0 => 1.0,
                0 => 0.0,
                _ => m.visits as f32 / total as f32,
            };
            (m.mv, share)
        })
    }

    /// A move drawn with probability proportional to visits^(1/temperature);
    /// the best move at temperature 0, when a win is proven, or when only
    /// losing moves would be drawn otherwise. A Gumbel root's choice is
    /// already a draw (its Gumbel noise, scaled by the temperature the
    /// search was given: [`crate::Tree::set_gumbel_scale`]): it stands.
    pub fn choose(&self, temperature: f32, rng: &mut Rng) -> Option<G::Move> {
        if let Some(gumbel) = &self.gumbel {
            return Some(gumbel.choice);
        }
        let best = self.best()?;
        if temperature <= 0.0 || matches!(best.proof, Proof::Win { .. }) {
            return Some(best.mv);
        }
        let candidates = || self.moves.iter().filter(|m| m.visits > 0 && !matches!(m.proof, Proof::Loss { .. }));
        let Some(max) = candidates().map(|m| m.visits).max() else { return Some(best.mv) };
        let weight = |m: &MoveInfo<G>| (m.visits as f64 / f64::from(max)).powf(1.0 / f64::from(temperature));
        let total: f64 = candidates().map(weight).sum();
        let mut pick = rng.uniform() * total;
        for m in candidates() {
            pick -= weight(m);
            if pick < 0.0 {
                return Some(m.mv);
            }
        }
        candidates().last().map(|m| m.mv)
    }
}
