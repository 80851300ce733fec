//! Gumbel AlphaZero's root (Danihelka et al., ICLR 2022): sample `m` root
//! moves without replacement by Gumbel-top-k, spend the simulations on them
//! by sequential halving, play the best survivor, and train on the improved
//! policy `softmax(logits + σ(completed Q))`.
//!
//! Below the root the search stays PUCT with virtual loss (the paper's
//! deterministic non-root rule is not used): it batches leaves the same
//! way, keeps tree reuse and proofs, and the paper's policy-improvement
//! guarantee is a property of the root alone.

use capa_rules::Rng;

/// The Gumbel root's parameters; mctx's defaults for board games.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GumbelParams {
    /// Root moves sampled (`m`; the paper's and mctx's 16).
    pub considered: u16,
    /// `c_visit` of σ: the scale of Q against the logits at few visits (50).
    pub c_visit: f32,
    /// `c_scale` of σ (1 for board games, with Q in `[0, 1]`).
    pub c_scale: f32,
    /// The Gumbel noise's scale: 1 samples root moves as the paper does
    /// (self-play, where it is the exploration), 0 takes them by prior
    /// alone (play and analysis: a deterministic search); in between, a
    /// temperature.
    pub scale: f32,
}

impl Default for GumbelParams {
    fn default() -> GumbelParams {
        GumbelParams { considered: 16, c_visit: 50.0, c_scale: 1.0, scale: 1.0 }
    }
}

/// mctx's `get_sequence_of_considered_visits`: for each simulation of a
/// budget of `simulations` over `considered` root moves, the visit count a
/// move must have to be chosen. Each of the `ceil(log2 m)` phases gives
/// every surviving move `max(1, n / (phases · survivors))` more visits,
/// then keeps the better half (at least two).
pub fn considered_visits(considered: u16, simulations: u32) -> Vec<u32> {
    let simulations = simulations as usize;
    if considered <= 1 {
        return (0..simulations as u32).collect();
    }
    let phases = f64::from(considered).log2().ceil() as usize;
    let mut sequence = Vec::with_capacity(simulations);
    let mut visits = vec![0u32; usize::from(considered)];
    let mut survivors = usize::from(considered);
    while sequence.len() < simulations {
        let extra = (simulations / (phases * survivors)).max(1);
        for _ in 0..extra {
            sequence.extend_from_slice(&visits[..survivors]);
            for v in &mut visits[..survivors] {
                *v += 1;
            }
        }
        survivors = (survivors / 2).max(2);
    }
    sequence.truncate(simulations);
    sequence
}

/// σ, the paper's monotone transform of a Q in `[0, 1]`:
/// `(c_visit + max_b N(b)) · c_scale · q`.
pub fn sigma(q: f32, max_visits: u32, params: &GumbelParams) -> f32 {
    (params.c_visit + max_visits as f32) * params.c_scale * q
}

/// A Q in `[-1, 1]` (win minus loss) as σ takes it, in `[0, 1]`.
pub fn unit_q(q: f32) -> f32 {
    ((q + 1.0) / 2.0).clamp(0.0, 1.0)
}

/// The paper's mixed value, which completes the Q of unvisited moves:
/// `(v̂ + ΣN · Σ_visited π(a) q(a) / Σ_visited π(a)) / (1 + ΣN)`, from the
/// raw value `v̂`, and the moves as `(prior, visits, q)`. Q in any scale.
pub fn mixed_value(raw_value: f32, moves: impl Iterator<Item = (f32, u32, f32)>) -> f32 {
    let (mut visits, mut prior_mass, mut weighted_q) = (0.0f64, 0.0f64, 0.0f64);
    for (prior, n, q) in moves.filter(|&(_, n, _)| n > 0) {
        visits += f64::from(n);
        prior_mass += f64::from(prior);
        weighted_q += f64::from(prior) * f64::from(q);
    }
    if visits == 0.0 {
        return raw_value;
    }
    // Visited moves whose priors underflowed to 0 are averaged plainly.
    let visited_q = if prior_mass > 0.0 { weighted_q / prior_mass } else { f64::from(raw_value) };
    ((f64::from(raw_value) + visits * visited_q) / (1.0 + visits)) as f32
}

/// The smallest prior edges store: logits are the priors' logarithms, so
/// a legal move is never given minus infinity.
const MIN_PRIOR: f32 = 1.0 / (1u64 << 31) as f32;

/// A move's logit from its prior. Priors are a softmax of the network's
/// logits, so their logarithms differ from those by one constant, which
/// no softmax and no argmax sees.
pub fn logit(prior: f32) -> f32 {
    prior.max(MIN_PRIOR).ln()
}

/// The improved policy `softmax(logits + σ(completed Q))`, one entry per
/// move, from the moves' logits and completed Q (in `[0, 1]`) and the most
/// visits of any move. Every entry is positive and they sum to 1.
pub fn improved_policy(logits: &[f32], completed_q: &[f32], max_visits: u32, params: &GumbelParams) -> Vec<f32> {
    let scores: Vec<f64> =
        logits.iter().zip(completed_q).map(|(&l, &q)| f64::from(l + sigma(q, max_visits, params))).collect();
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    let total: f64 = exps.iter().sum();
    exps.iter().map(|e| (e / total) as f32).collect()
}

/// A standard Gumbel sample, `-ln(-ln u)`.
pub fn gumbel(rng: &mut Rng) -> f32 {
    let u = rng.uniform().clamp(1e-12, 1.0 - 1e-12);
    -(-u.ln()).ln() as f32
}

/// A sampled root move of the search in progress.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Candidate {
    /// The move, packed.
    pub mv: u16,
    /// Its Gumbel sample, scaled (0 without noise).
    pub gumbel: f32,
    /// Its logit.
    pub logit: f32,
    /// Selections through it in this search, pending ones included.
    pub visits: u32,
}

/// The Gumbel root of one search: its candidates and their visit schedule.
#[derive(Clone, Debug, Default)]
pub(crate) struct GumbelRoot {
    pub candidates: Vec<Candidate>,
    /// [`considered_visits`] for the search's budget.
    pub schedule: Vec<u32>,
    /// The root's value for its side to move when the search began (the
    /// network's, or the reused subtree's mean): `v̂` of the mixed value.
    pub raw_value: f32,
}

impl GumbelRoot {
    /// Samples `params.considered` of the root moves `(packed move, prior)`
    /// by Gumbel-top-k on their logits, for a search of `budget` simulations.
    pub fn new(
        moves: impl Iterator<Item = (u16, f32)>,
        budget: u32,
        raw_value: f32,
        params: &GumbelParams,
        rng: &mut Rng,
    ) -> GumbelRoot {
        let mut candidates: Vec<Candidate> = moves
            .map(|(mv, prior)| Candidate {
                mv,
                gumbel: if params.scale > 0.0 { params.scale * gumbel(rng) } else { 0.0 },
                logit: logit(prior),
                visits: 0,
            })
            .collect();
        candidates.sort_by(|a, b| (b.gumbel + b.logit).total_cmp(&(a.gumbel + a.logit)));
        let considered = usize::from(params.considered).min(candidates.len()).max(1);
        candidates.truncate(considered);
        let schedule = considered_visits(considered as u16, budget);
        GumbelRoot { candidates, schedule, raw_value }
    }

    /// The visit count the next selection's move must have, if the budget
    /// is not spent.
    pub fn required_visits(&self) -> Option<u32> {
        let spent: u32 = self.candidates.iter().map(|c| c.visits).sum();
        self.schedule.get(spent as usize).copied()
    }

    /// The index of the candidate with the best `g + logit + σ(q̂)` among
    /// those `eligible`, given each candidate's score `sigma_q`.
    pub fn best(&self, eligible: impl Fn(&Candidate) -> bool, sigma_q: impl Fn(&Candidate) -> f32) -> Option<usize> {
        self.candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| eligible(c))
            .max_by(|(_, a), (_, b)| (a.gumbel + a.logit + sigma_q(a)).total_cmp(&(b.gumbel + b.logit + sigma_q(b))))
            .map(|(i, _)| i)
    }

    /// The most visits any candidate has: the survivors of the last phase have them.
    pub fn survivor_visits(&self) -> u32 {
        self.candidates.iter().map(|c| c.visits).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_halving_splits_the_budget_into_phases() {
        // m = 4, n = 16: two phases; 16 / (2·4) = 2 visits each to all
        // four, then 16 / (2·2) = 4 each to the better two.
        let schedule = considered_visits(4, 16);
        assert_eq!(schedule, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
        // m = 16, n = 64: 4 phases of 1, 2, 4 and 8 extra visits.
        let schedule = considered_visits(16, 64);
        assert_eq!(schedule.len(), 64);
        assert_eq!(&schedule[..16], &[0; 16]);
        assert_eq!(&schedule[16..24], &[1; 8]);
        assert_eq!(&schedule[24..32], &[2; 8]);
        assert_eq!(&schedule[32..36], &[3; 4]);
        // A budget smaller than m visits only the first moves once.
        assert_eq!(considered_visits(16, 8), [0; 8]);
        // One move takes every simulation.
        assert_eq!(considered_visits(1, 3), [0, 1, 2]);
        assert!(considered_visits(16, 0).is_empty());
    }

    #[test]
    fn the_schedule_visits_each_survivor_equally_within_a_phase() {
        for (m, n) in [(2, 7), (3, 50), (8, 200), (16, 800), (5, 33)] {
            let schedule = considered_visits(m, n);
            assert_eq!(schedule.len(), n as usize);
            // Visits only ever step by one from a level all survivors share.
            let mut visits = vec![0u32; usize::from(m)];
            for &level in &schedule {
                let i = visits.iter().position(|&v| v == level).expect("a move at the required level");
                visits[i] += 1;
            }
            let total: u32 = visits.iter().sum();
            assert_eq!(total, n);
        }
    }

    #[test]
    fn the_improved_policy_is_a_distribution_over_the_moves() {
        let params = GumbelParams::default();
        let logits = [logit(0.7), logit(0.2), logit(0.1), logit(0.0)];
        let policy = improved_policy(&logits, &[0.5, 0.9, 0.1, 0.5], 8, &params);
        assert!((policy.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        assert!(policy.iter().all(|&p| p > 0.0), "{policy:?}");
        assert!(policy[1] > policy[0], "a better Q lifts a move above a higher prior: {policy:?}");
    }

    #[test]
    fn the_mixed_value_weights_visited_moves_by_prior() {
        assert_eq!(mixed_value(0.3, [(0.5, 0, 1.0)].into_iter()), 0.3);
        // (0.2 + 4 · (0.6·1 + 0.2·0) / 0.8) / 5
        let v = mixed_value(0.2, [(0.6, 3, 1.0), (0.2, 1, 0.0), (0.2, 0, -1.0)].into_iter());
        assert!((v - (0.2 + 4.0 * 0.75) / 5.0).abs() < 1e-6, "{v}");
    }

    /// The paper's policy-improvement property on a bandit with known
    /// values: with every considered arm's true Q, the improved policy's
    /// expected value is at least the prior's, for any prior and values.
    #[test]
    fn the_improved_policy_does_not_lose_value_on_a_bandit() {
        let params = GumbelParams::default();
        let mut rng = Rng::new(7);
        for _ in 0..2_000 {
            let arms = 2 + (rng.next_u64() % 30) as usize;
            let raw: Vec<f64> = (0..arms).map(|_| rng.gamma(0.3) + 1e-9).collect();
            let total: f64 = raw.iter().sum();
            let prior: Vec<f32> = raw.iter().map(|p| (p / total) as f32).collect();
            let q: Vec<f32> = (0..arms).map(|_| rng.uniform() as f32).collect();
            let max_visits = (rng.next_u64() % 100) as u32;
            let logits: Vec<f32> = prior.iter().map(|&p| logit(p)).collect();
            let improved = improved_policy(&logits, &q, max_visits, &params);
            let value = |policy: &[f32]| policy.iter().zip(&q).map(|(p, q)| f64::from(p * q)).sum::<f64>();
            assert!(
                value(&improved) >= value(&prior) - 1e-5,
                "improved {} < prior {}",
                value(&improved),
                value(&prior)
            );
        }
    }

    #[test]
    fn gumbel_top_k_keeps_m_moves_best_first() {
        let params = GumbelParams { considered: 3, ..GumbelParams::default() };
        let mut rng = Rng::new(1);
        let moves = [(0u16, 0.4f32), (1, 0.3), (2, 0.2), (3, 0.05), (4, 0.05)];
        let root = GumbelRoot::new(moves.into_iter(), 12, 0.0, &params, &mut rng);
        assert_eq!(root.candidates.len(), 3);
        let scores: Vec<f32> = root.candidates.iter().map(|c| c.gumbel + c.logit).collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
        // Without noise, the top priors.
        let plain = GumbelRoot::new(moves.into_iter(), 12, 0.0, &GumbelParams { scale: 0.0, ..params }, &mut rng);
        assert_eq!(plain.candidates.iter().map(|c| c.mv).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(plain.required_visits(), Some(0));
    }
}
