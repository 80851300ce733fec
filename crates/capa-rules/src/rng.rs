//! Seeded randomness for every crate: a small generator for noise, move
//! sampling and data splits, reproducible from a seed, with no dependency
//! for three distributions; and random openings.

use crate::{Game, History, MoveList};

/// SplitMix64's increment, the golden ratio in 64 bits.
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's finaliser: every bit of `z` reaches every bit of the result.
fn splitmix_finalise(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seed for item `index` of a stream seeded with `seed`: games, probes
/// and iterations each get their own generator, and a resumed run draws
/// the same ones again.
pub fn mix(seed: u64, index: u64) -> u64 {
    splitmix_finalise(seed ^ index.wrapping_mul(GOLDEN_GAMMA))
}

/// xoshiro256++ seeded through SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng {
    state: [u64; 4],
}

impl Rng {
    /// A generator whose whole sequence follows from `seed`.
    pub fn new(seed: u64) -> Rng {
        let mut sm = seed;
        let mut next = || {
            sm = sm.wrapping_add(GOLDEN_GAMMA);
            splitmix_finalise(sm)
        };
        Rng { state: [next(), next(), next(), next()] }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = (s[0].wrapping_add(s[3])).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = 1.0 - self.uniform();
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// Gamma(`shape`, 1) by Marsaglia and Tsang; shapes below 1 through the
    /// `U^(1/shape)` boost.
    pub fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let boost = (1.0 - self.uniform()).powf(1.0 / shape);
            return self.gamma(shape + 1.0) * boost;
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = 1.0 - self.uniform();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }

    /// A sample of the symmetric Dirichlet distribution over `out.len()` categories.
    pub fn dirichlet(&mut self, alpha: f64, out: &mut [f64]) {
        for x in out.iter_mut() {
            *x = self.gamma(alpha);
        }
        let sum: f64 = out.iter().sum();
        if sum > 0.0 {
            out.iter_mut().for_each(|x| *x /= sum);
        } else {
            out.fill(1.0 / out.len() as f64);
        }
    }
}

/// A game of `plies` uniformly random legal moves from the start position,
/// to vary the openings of matches and evaluations. It stops a move short
/// of any move that would end the game, so the result is always playable.
pub fn random_opening<G: Game>(plies: u32, rng: &mut Rng) -> History<G> {
    let mut history = History::new(G::startpos());
    let mut legal = MoveList::new();
    for _ in 0..plies {
        history.current().legal_moves(&mut legal);
        if legal.is_empty() {
            break;
        }
        history.play(legal[(rng.next_u64() % legal.len() as u64) as usize]);
        if history.outcome().is_some() {
            history.undo();
            break;
        }
    }
    history
}

#[cfg(test)]
mod tests {
    use super::{Rng, random_opening};
    use crate::capablanca::Capablanca;
    use crate::chess::Chess;

    #[test]
    fn random_openings_are_seeded_and_never_over() {
        let opening = random_opening::<Capablanca>(8, &mut Rng::new(3));
        assert_eq!(opening.moves().len(), 8);
        assert_eq!(opening.moves(), random_opening::<Capablanca>(8, &mut Rng::new(3)).moves());
        assert_ne!(opening.moves(), random_opening::<Capablanca>(8, &mut Rng::new(4)).moves());
        for seed in 0..200 {
            assert!(random_opening::<Chess>(40, &mut Rng::new(seed)).outcome().is_none());
        }
    }

    #[test]
    fn gamma_has_the_right_mean() {
        let mut rng = Rng::new(7);
        for shape in [0.03, 0.3, 1.0, 4.5] {
            let n = 200_000;
            let mean: f64 = (0..n).map(|_| rng.gamma(shape)).sum::<f64>() / n as f64;
            assert!((mean - shape).abs() < 0.03 * shape.max(0.3), "Gamma({shape}) mean {mean}");
        }
    }

    #[test]
    fn dirichlet_sums_to_one() {
        let mut rng = Rng::new(1);
        let mut x = [0.0; 37];
        rng.dirichlet(0.3, &mut x);
        assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(x.iter().all(|&p| p >= 0.0));
    }
}
