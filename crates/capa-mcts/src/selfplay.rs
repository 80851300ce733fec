//! Self-play policy around the search: how much to search each move, and
//! how randomly to play the result.

use capa_rules::Rng;

use crate::tree::Limits;

/// Temperature by move number: `initial`, decaying linearly to 0 over
/// `decay_moves` (0: no decay), and `after_cutoff` from `cutoff_move` on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Temperature {
    /// Temperature at the first move.
    pub initial: f32,
    /// Moves over which it decays to 0; 0 keeps it at `initial`.
    pub decay_moves: u32,
    /// The move (counted from 0, both sides) at which `after_cutoff` takes over.
    pub cutoff_move: u32,
    /// Temperature from the cutoff on (0 plays the best move).
    pub after_cutoff: f32,
}

impl Default for Temperature {
    fn default() -> Temperature {
        Temperature { initial: 1.0, decay_moves: 0, cutoff_move: 30, after_cutoff: 0.0 }
    }
}

impl Temperature {
    /// The temperature for the `ply`-th move of the game.
    pub fn at(&self, ply: u32) -> f32 {
        if ply >= self.cutoff_move {
            return self.after_cutoff;
        }
        if self.decay_moves == 0 {
            return self.initial;
        }
        self.initial * (1.0 - ply as f32 / self.decay_moves as f32).max(0.0)
    }
}

/// KataGo's playout cap randomization: most moves get a fast search (not
/// recorded, no noise), a `1 - fast_fraction` share a full one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlayoutCap {
    /// Limits of a full search.
    pub full: Limits,
    /// Limits of a fast search.
    pub fast: Limits,
    /// Share of moves searched fast; 0 searches every move fully.
    pub fast_fraction: f32,
}

impl PlayoutCap {
    /// Every move searched fully with `full`.
    pub fn always(full: Limits) -> PlayoutCap {
        PlayoutCap { full, fast: full, fast_fraction: 0.0 }
    }

    /// This move's limits, and whether its search is a full one.
    pub fn draw(&self, rng: &mut Rng) -> (Limits, bool) {
        if self.fast_fraction > 0.0 && rng.uniform() < f64::from(self.fast_fraction) {
            (self.fast, false)
        } else {
            (self.full, true)
        }
    }
}

#[cfg(test)]
mod tests {
    use capa_rules::Rng;

    use super::{PlayoutCap, Temperature};
    use crate::tree::Limits;

    #[test]
    fn temperature_decays_and_cuts_off() {
        let t = Temperature { initial: 1.2, decay_moves: 40, cutoff_move: 30, after_cutoff: 0.1 };
        assert_eq!(t.at(0), 1.2);
        assert!((t.at(20) - 0.6).abs() < 1e-6);
        assert_eq!(t.at(30), 0.1);
        let flat = Temperature { decay_moves: 0, ..t };
        assert_eq!(flat.at(29), 1.2);
    }

    #[test]
    fn playout_cap_draws_fast_searches_at_the_given_rate() {
        let cap = PlayoutCap { full: Limits::visits(800), fast: Limits::visits(100), fast_fraction: 0.75 };
        let mut rng = Rng::new(3);
        let draws: Vec<_> = (0..10_000).map(|_| cap.draw(&mut rng)).collect();
        let fast = draws.iter().filter(|(_, full)| !full).count();
        assert!((7_200..7_800).contains(&fast), "{fast} fast searches in 10000");
        assert!(draws.iter().all(|&(limits, full)| limits == if full { cap.full } else { cap.fast }));
        assert!(PlayoutCap::always(cap.full).draw(&mut rng).1);
    }
}
