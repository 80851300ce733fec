//! The arena: nodes, edges and child slots in three flat vectors, linked by
//! `u32` indices.
//!
//! Nodes hold no board: selection replays the moves from the root. Measured
//! with callgrind on `capa bench search --variant chess --nodes 50000`, the
//! replay (about five plays per playout, and the position copies) is about
//! a tenth of the search's instructions, while a stored position would cost
//! 152 bytes per node for chess and 352 for Capablanca: the tree would be
//! two to three times larger (140 and 184 bytes per node now, edges
//! included) and colder in cache. Replaying is the cheaper side.

/// No node, no edge block, no child block.
pub(crate) const NONE: u32 = u32::MAX;

/// A legal move of a node and its prior: four bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Edge {
    /// The move, packed by `Game::pack_move`.
    pub mv: u16,
    prior: u16,
}

impl Edge {
    /// An edge whose prior is already compressed.
    pub fn with_compressed_prior(mv: u16, prior: u16) -> Edge {
        Edge { mv, prior }
    }

    #[inline]
    pub fn prior(self) -> f32 {
        decompress_prior(self.prior)
    }

    pub fn set_prior(&mut self, prior: f32) {
        self.prior = compress_prior(prior);
    }
}

/// Priors in `[0, 1]` as a 16-bit float: 5 exponent bits covering 2^-31..1
/// and 11 mantissa bits (relative error below 0.03%).
#[inline]
pub(crate) fn compress_prior(p: f32) -> u16 {
    const BIAS: u32 = 96 << 23;
    let bits = p.clamp(0.0, 1.0).to_bits();
    if bits < BIAS { 0 } else { ((bits - BIAS + (1 << 11)) >> 12) as u16 }
}

#[inline]
fn decompress_prior(p: u16) -> f32 {
    if p == 0 { 0.0 } else { f32::from_bits((u32::from(p) << 12) + (96 << 23)) }
}

/// A position reached in the search: 32 bytes.
///
/// Statistics are from the point of view of the player who made the move
/// into the node, so a parent reads its children's values directly.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    /// Mean of win minus loss.
    pub wl: f32,
    /// Mean draw probability.
    pub d: f32,
    /// Mean plies left in the game.
    pub m: f32,
    /// Completed visits.
    pub n: u32,
    /// First edge in the arena; `NONE` until the node is expanded.
    pub edges: u32,
    /// The block of child slots (see [`Arena::set_child`]); `NONE` until the first child exists.
    pub children: u32,
    /// Visits selected through this node whose evaluation is pending.
    pub in_flight: u16,
    pub num_edges: u16,
    /// Proven bounds on the value for the mover: -1 loss, 0 draw, 1 win.
    pub lower: i8,
    pub upper: i8,
    /// For a proven node: plies to the end of the game with best play.
    pub plies: u16,
}

const _: () = assert!(size_of::<Node>() == 32);

impl Node {
    pub const NEW: Node = Node {
        wl: 0.0,
        d: 0.0,
        m: 0.0,
        n: 0,
        edges: NONE,
        children: NONE,
        in_flight: 0,
        num_edges: 0,
        lower: -1,
        upper: 1,
        plies: 0,
    };

    /// Marks the game over here, worth `wl` exactly to the mover; visits so far are kept.
    pub fn set_terminal(&mut self, wl: i8) {
        self.edges = 0;
        self.num_edges = 0;
        self.children = NONE;
        self.lower = wl;
        self.upper = wl;
        self.plies = 0;
    }

    #[inline]
    pub fn is_expanded(&self) -> bool {
        self.edges != NONE
    }

    #[inline]
    pub fn is_terminal(&self) -> bool {
        self.edges != NONE && self.num_edges == 0
    }

    /// Whether the value is known exactly (a game-over node or a solved subtree).
    #[inline]
    pub fn is_proven(&self) -> bool {
        self.lower == self.upper
    }

    /// The exact (wl, d, m) of a proven node, for the mover.
    pub fn proven_value(&self) -> (f32, f32, f32) {
        (f32::from(self.lower), if self.lower == 0 { 1.0 } else { 0.0 }, f32::from(self.plies))
    }

    /// Folds one more visit's value into the means.
    #[inline]
    pub fn add_visit(&mut self, wl: f32, d: f32, m: f32) {
        self.n += 1;
        let k = 1.0 / self.n as f32;
        self.wl += (wl - self.wl) * k;
        self.d += (d - self.d) * k;
        self.m += (m - self.m) * k;
    }
}

/// All nodes of one search tree (or graph, in analysis mode).
#[derive(Clone, Debug, Default)]
pub(crate) struct Arena {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    /// Child blocks: `slots[node.children]` slots follow, the child through
    /// each edge in turn, or `NONE`.
    pub slots: Vec<u32>,
}

impl Arena {
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.edges.clear();
        self.slots.clear();
    }

    pub fn push(&mut self, node: Node) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(node);
        id
    }

    #[inline]
    pub fn edges(&self, id: u32) -> &[Edge] {
        let node = &self.nodes[id as usize];
        if node.is_expanded() { &self.edges[node.edges as usize..][..usize::from(node.num_edges)] } else { &[] }
    }

    pub fn edges_mut(&mut self, id: u32) -> &mut [Edge] {
        let node = self.nodes[id as usize];
        if node.is_expanded() { &mut self.edges[node.edges as usize..][..usize::from(node.num_edges)] } else { &mut [] }
    }

    /// The child through edge `i` of node `id`, or `NONE`.
    #[inline]
    pub fn child(&self, id: u32, i: usize) -> u32 {
        let block = self.nodes[id as usize].children as usize;
        if block == NONE as usize || i >= self.slots[block] as usize { NONE } else { self.slots[block + 1 + i] }
    }

    /// The child slots of node `id`, edge by edge (fewer than its edges
    /// while the block has not grown to them; empty before the first child).
    #[inline]
    pub fn child_slots(&self, id: u32) -> &[u32] {
        let block = self.nodes[id as usize].children as usize;
        if block == NONE as usize { &[] } else { &self.slots[block + 1..][..self.slots[block] as usize] }
    }

    /// Links edge `i` of node `id` to `child`.
    ///
    /// A child block is a capacity followed by that many slots. Children
    /// take a prefix of the edges (selection creates them in edge order),
    /// so the block starts with two slots and doubles when full: most nodes
    /// have a few children among dozens of edges. An outgrown block stays
    /// behind until the next compaction.
    pub fn set_child(&mut self, id: u32, i: usize, child: u32) {
        let node = self.nodes[id as usize];
        let edges = usize::from(node.num_edges);
        let block = node.children as usize;
        let capacity = if block == NONE as usize { 0 } else { self.slots[block] as usize };
        let block = if i < capacity {
            block
        } else {
            let grown = (2 * capacity).max((i + 1).next_power_of_two()).max(2).min(edges);
            let new_block = self.slots.len();
            self.slots.push(grown as u32);
            if capacity > 0 {
                self.slots.extend_from_within(block + 1..block + 1 + capacity);
            }
            self.slots.resize(new_block + 1 + grown, NONE);
            self.nodes[id as usize].children = new_block as u32;
            new_block
        };
        self.slots[block + 1 + i] = child;
    }

    /// Links the first `children.len()` edges of node `id`, in one block of
    /// exactly that size (tree compaction).
    pub fn set_children(&mut self, id: u32, children: &[u32]) {
        if children.is_empty() {
            return;
        }
        self.nodes[id as usize].children = self.slots.len() as u32;
        self.slots.push(children.len() as u32);
        self.slots.extend_from_slice(children);
    }

    /// Gives node `id` its edges (moves packed, priors), highest prior first.
    pub fn expand(&mut self, id: u32, edges: impl ExactSizeIterator<Item = Edge>) {
        let first = self.edges.len() as u32;
        let count = edges.len();
        self.edges.extend(edges);
        let node = &mut self.nodes[id as usize];
        node.edges = first;
        node.num_edges = count as u16;
        node.children = NONE;
    }

    /// Bytes held by live entries (what a node costs, edges included).
    pub fn bytes(&self) -> usize {
        self.nodes.len() * size_of::<Node>() + self.edges.len() * size_of::<Edge>() + self.slots.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::{Arena, Edge, NONE, Node, compress_prior, decompress_prior};

    #[test]
    fn child_blocks_grow_and_keep_their_children() {
        let mut arena = Arena::default();
        let parent = arena.push(Node::NEW);
        arena.expand(parent, (0..37).map(|mv| Edge::with_compressed_prior(mv, 1)));
        for i in 0..37 {
            assert_eq!(arena.child(parent, i), NONE);
            let child = arena.push(Node::NEW);
            arena.set_child(parent, i, child);
            for j in 0..37 {
                let expected = if j <= i { j as u32 + 1 } else { NONE };
                assert_eq!(arena.child(parent, j), expected, "child {j} after {} children", i + 1);
            }
        }
        let capacity = arena.slots[arena.nodes[parent as usize].children as usize];
        assert_eq!(capacity, 37, "the last block is capped at the edge count");
    }

    #[test]
    fn priors_round_trip_within_a_small_relative_error() {
        assert_eq!(decompress_prior(compress_prior(0.0)), 0.0);
        assert_eq!(decompress_prior(compress_prior(1.0)), 1.0);
        for i in 1..10_000 {
            let p = i as f32 / 10_000.0;
            let back = decompress_prior(compress_prior(p));
            assert!((back - p).abs() <= p * 0.0003, "{p} came back as {back}");
        }
        assert!(compress_prior(0.3) > compress_prior(0.2), "compression keeps the order");
    }
}
