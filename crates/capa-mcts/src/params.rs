//! Search parameters, with Lc0's defaults.

use crate::SearchError;
use crate::gumbel::GumbelParams;

/// How the search selects, scores and stops. `Default` gives Lc0's values,
/// plus the mate-in-one proof, which Lc0 does not have.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchParams {
    /// Exploration constant at zero visits.
    pub cpuct: f32,
    /// Visit scale of cpuct's logarithmic growth.
    pub cpuct_base: f32,
    /// Weight of cpuct's logarithmic growth.
    pub cpuct_factor: f32,
    /// First-play urgency: an unvisited move is valued at the parent's Q
    /// minus this times the square root of the prior mass already visited.
    pub fpu_reduction: f32,
    /// The same, at the root.
    pub fpu_reduction_root: f32,
    /// How many losses one in-flight visit counts as while its evaluation is
    /// pending. Spreads a batch's selections over distinct leaves.
    pub virtual_loss: f32,
    /// How many leaves one game gathers per round (the per-game batch).
    pub parallel_sims: u16,
    /// A game stops gathering for the round after this many selections that
    /// ended on a leaf already being evaluated.
    pub max_collisions: u16,
    /// Root Dirichlet noise; `None` turns it off (play and analysis).
    pub noise: Option<DirichletNoise>,
    /// Draw aversion of the side to move at the root: a draw counts as
    /// `-contempt` for it and `+contempt` for its opponent, so Q is biased by
    /// contempt times the draw probability.
    pub contempt: f32,
    /// Prefer shorter wins and longer losses through the moves-left head.
    pub moves_left: MovesLeftUtility,
    /// Score a position that repeats one since the root as a draw (Lc0's
    /// two-fold rule); a third occurrence in the game is always a draw.
    pub two_fold_draws: bool,
    /// Stop when the root's visit distribution settles; `None` searches to the limit.
    pub kld_stop: Option<KldStop>,
    /// When a node is expanded, look for a move there that mates at once:
    /// if one exists the node is proven lost for the side that moved into
    /// it, whatever the network's prior of the mating move.
    pub prove_mate_in_one: bool,
    /// Gumbel AlphaZero's root instead of PUCT's (and no Dirichlet noise);
    /// `None`: PUCT at the root too.
    pub gumbel: Option<GumbelParams>,
    /// Lc0's policy softmax temperature: the priors are `softmax(logits /
    /// policy_temperature)`, so above 1 they move closer together and widen
    /// the search. 1 leaves the network's policy as it is.
    pub policy_temperature: f32,
}

impl Default for SearchParams {
    fn default() -> SearchParams {
        SearchParams {
            cpuct: 1.745,
            cpuct_base: 38739.0,
            cpuct_factor: 3.894,
            fpu_reduction: 0.330,
            fpu_reduction_root: 0.330,
            virtual_loss: 1.0,
            parallel_sims: 256,
            max_collisions: 256,
            noise: None,
            contempt: 0.0,
            moves_left: MovesLeftUtility::default(),
            two_fold_draws: true,
            kld_stop: None,
            prove_mate_in_one: true,
            gumbel: None,
            policy_temperature: 1.0,
        }
    }
}

/// Dirichlet noise mixed into the root priors: `(1 - epsilon) p + epsilon x`, `x ~ Dir(alpha)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DirichletNoise {
    /// Concentration; Lc0 uses 0.3 for chess. Smaller spreads noise over fewer moves.
    pub alpha: f32,
    /// Weight of the noise.
    pub epsilon: f32,
}

impl Default for DirichletNoise {
    fn default() -> DirichletNoise {
        DirichletNoise { alpha: 0.3, epsilon: 0.25 }
    }
}

/// Lc0's moves-left utility: a bonus, bounded by `max_effect`, for children
/// that end the game sooner when winning and later when losing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MovesLeftUtility {
    /// Largest bonus or malus; 0 turns the utility off.
    pub max_effect: f32,
    /// Bonus per ply of difference in expected game length.
    pub slope: f32,
    /// Linear weight of |Q| in the scale of the bonus.
    pub scaled_factor: f32,
    /// Quadratic weight of Q in the scale of the bonus.
    pub quadratic_factor: f32,
}

impl Default for MovesLeftUtility {
    fn default() -> MovesLeftUtility {
        MovesLeftUtility { max_effect: 0.0345, slope: 0.0027, scaled_factor: 1.6521, quadratic_factor: -0.6521 }
    }
}

/// Lc0's KLD-gain stop: every `interval` visits, compare the root's visit
/// distribution with the last one; stop when the divergence per new visit is
/// below `min_gain_per_node`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KldStop {
    /// Visits between two comparisons.
    pub interval: u32,
    /// Settled below this divergence (nats) per visit.
    pub min_gain_per_node: f64,
}

impl Default for KldStop {
    fn default() -> KldStop {
        KldStop { interval: 100, min_gain_per_node: 0.000_05 }
    }
}

/// Leaves per network batch when the network plays a game at a few hundred
/// playouts (`capa uci`'s MinibatchSize default, `capa play`): small enough
/// that virtual loss does not spread a batch over the root's moves (on 2 CPU
/// cores at `movetime 200`, about 200 playouts, 8 beat 32 by 35 wins, 2
/// draws, 3 losses), large enough to keep the network busy.
pub const PLAY_PARALLEL_SIMS: u16 = 8;

/// The most leaves, or collisions, one game may gather per round: in-flight
/// counts are 16-bit, and in analysis mode a node can be on one path up to
/// three times (3 x 2 x 8192 < 65536).
pub const MAX_PER_ROUND: u16 = 8_192;

impl SearchParams {
    /// cpuct grown with the parent's visits.
    #[inline]
    pub(crate) fn cpuct_at(&self, visits: u32) -> f32 {
        self.cpuct + self.cpuct_factor * ((visits as f32 + self.cpuct_base) / self.cpuct_base).ln()
    }

    /// Rejects values that would make the search meaningless or divide by zero.
    ///
    /// # Errors
    /// [`SearchError::Params`] naming the field and the accepted range.
    pub fn validate(&self) -> Result<(), SearchError> {
        let bad = |field: &str, why: &str| Err(SearchError::Params(format!("{field}: {why}")));
        let finite_non_negative = [
            ("cpuct", self.cpuct),
            ("cpuct_factor", self.cpuct_factor),
            ("fpu_reduction", self.fpu_reduction),
            ("fpu_reduction_root", self.fpu_reduction_root),
            ("virtual_loss", self.virtual_loss),
            ("moves_left.max_effect", self.moves_left.max_effect),
            ("moves_left.slope", self.moves_left.slope),
        ];
        for (field, value) in finite_non_negative {
            if !(value.is_finite() && value >= 0.0) {
                return bad(field, &format!("must be a finite number >= 0, got {value}"));
            }
        }
        if !(self.cpuct_base.is_finite() && self.cpuct_base > 0.0) {
            return bad("cpuct_base", &format!("must be > 0, got {}", self.cpuct_base));
        }
        if !(0.1..=10.0).contains(&self.policy_temperature) {
            return bad(
                "policy_temperature",
                &format!("must be within 0.1..=10 (as Lc0's), got {}", self.policy_temperature),
            );
        }
        if !(self.contempt.is_finite() && self.contempt.abs() <= 1.0) {
            return bad("contempt", &format!("must be within -1..=1, got {}", self.contempt));
        }
        // See MAX_PER_ROUND: a round adds at most three times
        // parallel_sims + max_collisions to one node's in-flight count.
        if !(1..=MAX_PER_ROUND).contains(&self.parallel_sims) {
            return bad("parallel_sims", &format!("must be within 1..={MAX_PER_ROUND}, got {}", self.parallel_sims));
        }
        if !(1..=MAX_PER_ROUND).contains(&self.max_collisions) {
            return bad("max_collisions", &format!("must be within 1..={MAX_PER_ROUND}, got {}", self.max_collisions));
        }
        for (field, value) in [
            ("moves_left.scaled_factor", self.moves_left.scaled_factor),
            ("moves_left.quadratic_factor", self.moves_left.quadratic_factor),
        ] {
            if !value.is_finite() {
                return bad(field, &format!("must be a finite number, got {value}"));
            }
        }
        if let Some(noise) = self.noise {
            if !(noise.alpha.is_finite() && noise.alpha > 0.0) {
                return bad("noise.alpha", &format!("must be > 0, got {}", noise.alpha));
            }
            if !(0.0..=1.0).contains(&noise.epsilon) {
                return bad("noise.epsilon", &format!("must be within 0..=1, got {}", noise.epsilon));
            }
        }
        if let Some(gumbel) = self.gumbel {
            if gumbel.considered == 0 {
                return bad("gumbel.considered", "must be at least 1");
            }
            if !(gumbel.c_visit.is_finite() && gumbel.c_visit >= 0.0) {
                return bad("gumbel.c_visit", &format!("must be a finite number >= 0, got {}", gumbel.c_visit));
            }
            if !(gumbel.scale.is_finite() && gumbel.scale >= 0.0) {
                return bad("gumbel.scale", &format!("must be a finite number >= 0, got {}", gumbel.scale));
            }
            if !(gumbel.c_scale.is_finite() && gumbel.c_scale > 0.0) {
                return bad("gumbel.c_scale", &format!("must be a finite number > 0, got {}", gumbel.c_scale));
            }
        }
        if let Some(kld) = self.kld_stop {
            if kld.interval == 0 {
                return bad("kld_stop.interval", "must be at least 1");
            }
            if !(kld.min_gain_per_node.is_finite() && kld.min_gain_per_node >= 0.0) {
                return bad("kld_stop.min_gain_per_node", "must be a finite number >= 0");
            }
        }
        Ok(())
    }
}
