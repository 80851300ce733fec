//! Match scores and what they say about strength: the Elo difference with
//! its confidence interval, and a sequential probability ratio test that
//! stops a match once the answer is clear.

/// Wins, draws and losses, from one player's side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatchScore {
    /// Games won.
    pub wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// Games lost.
    pub losses: u32,
}

impl MatchScore {
    /// Games played.
    pub fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    /// Points per game, 0 to 1 (0.5 before any game).
    pub fn fraction(&self) -> f64 {
        if self.games() == 0 {
            return 0.5;
        }
        (f64::from(self.wins) + 0.5 * f64::from(self.draws)) / f64::from(self.games())
    }

    /// The variance of one game's points around the mean.
    fn variance(&self) -> f64 {
        let n = f64::from(self.games().max(1));
        let s = self.fraction();
        (f64::from(self.wins) * (1.0 - s).powi(2)
            + f64::from(self.draws) * (0.5 - s).powi(2)
            + f64::from(self.losses) * s.powi(2))
            / n
    }

    /// The Elo difference the score implies, with its 95% interval (from
    /// the per-game score's standard error), each clamped to +-1000.
    pub fn elo(&self) -> (f64, f64, f64) {
        let n = f64::from(self.games().max(1));
        let s = self.fraction();
        let margin = 1.96 * (self.variance() / n).sqrt();
        (elo_difference(s), elo_difference(s - margin), elo_difference(s + margin))
    }
}

/// The Elo difference at which the stronger side expects `score` points
/// per game: `-400 log10(1 / score - 1)`, clamped to +-1000 (a score of 0
/// or 1 says only "far apart").
pub fn elo_difference(score: f64) -> f64 {
    let s = score.clamp(1e-9, 1.0 - 1e-9);
    (-400.0 * (1.0 / s - 1.0).log10()).clamp(-1000.0, 1000.0)
}

/// The expected score per game of a player `elo` points stronger.
pub fn expected_score(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// A sequential probability ratio test between two hypotheses about the
/// Elo difference, H0: `elo0` and H1: `elo1`, with error rates `alpha`
/// (accepting H1 when H0 holds) and `beta` (the reverse).
///
/// The log-likelihood ratio is the generalised SPRT's normal approximation
/// on the logistic scale (as fishtest's trinomial test): with mean score
/// `s` and per-game variance `v` over `n` games,
/// `LLR = n (s1 - s0) (2 s - s0 - s1) / (2 v)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sprt {
    /// Elo difference under H0.
    pub elo0: f64,
    /// Elo difference under H1.
    pub elo1: f64,
    /// False-positive rate.
    pub alpha: f64,
    /// False-negative rate.
    pub beta: f64,
}

/// What an SPRT concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SprtVerdict {
    /// H1: the difference is at least about `elo1`.
    AcceptH1,
    /// H0: the difference is at most about `elo0`.
    AcceptH0,
}

impl Sprt {
    /// Checks the parameters: `elo0 < elo1`, both rates in (0, 0.5).
    ///
    /// # Errors
    /// A message naming the bad parameter.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.elo0.is_finite() && self.elo1.is_finite() && self.elo0 < self.elo1) {
            return Err(format!("elo0 ({}) must be below elo1 ({})", self.elo0, self.elo1));
        }
        for (name, rate) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(rate > 0.0 && rate < 0.5) {
                return Err(format!("{name} must be between 0 and 0.5, not {rate}"));
            }
        }
        Ok(())
    }

    /// The LLR below which H0 is accepted and above which H1 is.
    pub fn bounds(&self) -> (f64, f64) {
        ((self.beta / (1.0 - self.alpha)).ln(), ((1.0 - self.beta) / self.alpha).ln())
    }

    /// The log-likelihood ratio of H1 against H0 given `score`; 0 while
    /// the games show no spread (all results alike) to estimate it from.
    pub fn llr(&self, score: &MatchScore) -> f64 {
        let variance = score.variance();
        if score.games() == 0 || variance <= 0.0 {
            return 0.0;
        }
        let (s0, s1) = (expected_score(self.elo0), expected_score(self.elo1));
        let s = score.fraction();
        f64::from(score.games()) * (s1 - s0) * (2.0 * s - s0 - s1) / (2.0 * variance)
    }

    /// The verdict once the LLR leaves its bounds, `None` before.
    pub fn verdict(&self, score: &MatchScore) -> Option<SprtVerdict> {
        let llr = self.llr(score);
        let (lower, upper) = self.bounds();
        if llr >= upper {
            Some(SprtVerdict::AcceptH1)
        } else if llr <= lower {
            Some(SprtVerdict::AcceptH0)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elo_follows_the_score() {
        let even = MatchScore { wins: 10, draws: 10, losses: 10 };
        let (elo, low, high) = even.elo();
        assert!(elo.abs() < 1e-9 && low < 0.0 && high > 0.0);
        let (elo, low, _) = MatchScore { wins: 60, draws: 0, losses: 40 }.elo();
        assert!((elo - 70.4).abs() < 0.1 && low > 0.0, "{elo} {low}");
        assert_eq!(elo_difference(1.0), 1000.0);
        assert_eq!(elo_difference(0.0), -1000.0);
        for elo in [-400.0, -50.0, 0.0, 120.0, 700.0] {
            assert!((elo_difference(expected_score(elo)) - elo).abs() < 1e-9);
        }
        assert_eq!(MatchScore::default().fraction(), 0.5);
    }

    #[test]
    fn sprt_decides_in_the_right_direction() {
        let sprt = Sprt { elo0: 0.0, elo1: 10.0, alpha: 0.05, beta: 0.05 };
        sprt.validate().unwrap();
        let (lower, upper) = sprt.bounds();
        assert!((upper - 2.944).abs() < 1e-3 && (lower + 2.944).abs() < 1e-3);
        assert_eq!(sprt.verdict(&MatchScore { wins: 5, draws: 5, losses: 5 }), None);
        // 60% over a thousand games is far above 10 Elo; 40% far below 0.
        assert_eq!(sprt.verdict(&MatchScore { wins: 400, draws: 400, losses: 200 }), Some(SprtVerdict::AcceptH1));
        assert_eq!(sprt.verdict(&MatchScore { wins: 200, draws: 400, losses: 400 }), Some(SprtVerdict::AcceptH0));
        assert_eq!(sprt.llr(&MatchScore { wins: 0, draws: 7, losses: 0 }), 0.0);
        assert!(Sprt { elo0: 5.0, elo1: 5.0, ..sprt }.validate().is_err());
        assert!(Sprt { alpha: 0.0, ..sprt }.validate().is_err());
        assert!(Sprt { beta: f64::NAN, ..sprt }.validate().is_err());
    }
}
