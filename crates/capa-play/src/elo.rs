//! Match scores and what they say about strength: the Elo difference with
//! its confidence interval, a sequential probability ratio test that stops
//! a match once the answer is clear, and Elo by bisection against an
//! opponent of settable strength.

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

    /// The Elo difference the score implies, with its 95% interval, each
    /// clamped to +-1000.
    ///
    /// The interval is Wilson's score interval with the observed per-game
    /// variance in place of the binomial one (they agree when no game is
    /// drawn), so that a one-sided result such as 10-0 still gets an
    /// interval of honest width rather than none.
    pub fn elo(&self) -> (f64, f64, f64) {
        const Z: f64 = 1.96;
        let n = f64::from(self.games().max(1));
        let s = self.fraction();
        let shrink = 1.0 + Z * Z / n;
        let centre = (s + Z * Z / (2.0 * n)) / shrink;
        let margin = Z / shrink * (self.variance() / n + Z * Z / (4.0 * n * n)).sqrt();
        (elo_difference(s), elo_difference(centre - margin), elo_difference(centre + margin))
    }
}

/// The Elo difference at which the stronger side expects `score` points
/// per game: `-400 log10(1 / score - 1)`, clamped to +-1000 (a score of 0
/// or 1 says only "far apart").
pub fn elo_difference(score: f64) -> f64 {
    let s = score.clamp(1e-9, 1.0 - 1e-9);
    // + 0.0 turns the -0 of an even score into 0, which prints without a sign.
    (-400.0 * (1.0 / s - 1.0).log10()).clamp(-1000.0, 1000.0) + 0.0
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

/// Elo by bisection against an opponent whose strength can be set (an
/// engine's `UCI_Elo`): probe the middle of a bracket with a few games,
/// keep the half the score points to, stop when the bracket is narrow or a
/// probe comes out about even.
#[derive(Clone, Debug)]
pub struct Bisection {
    /// The bracket's lower end.
    pub low: f64,
    /// The bracket's upper end.
    pub high: f64,
    /// Stop once the bracket is at most this wide.
    pub tolerance: f64,
    /// Stop once a probe's score falls in this band (inclusive).
    pub even: (f64, f64),
    probes: Vec<(f64, MatchScore)>,
    done: bool,
}

impl Bisection {
    /// A bracket `[low, high]`, with the stop rules: `tolerance`
    /// wide, or a probe scoring 0.45 to 0.55.
    pub fn new(low: f64, high: f64, tolerance: f64) -> Bisection {
        Bisection { low, high, tolerance, even: (0.45, 0.55), probes: Vec::new(), done: false }
    }

    /// The opponent strength to probe next; `None` once a stop rule holds.
    pub fn next_probe(&self) -> Option<f64> {
        (!self.done && self.high - self.low > self.tolerance).then(|| ((self.low + self.high) / 2.0).round())
    }

    /// Records the score against an opponent of strength `opponent`, and
    /// moves the bracket towards where the player's strength is.
    pub fn record(&mut self, opponent: f64, score: MatchScore) {
        let s = score.fraction();
        self.probes.push((opponent, score));
        if (self.even.0..=self.even.1).contains(&s) {
            self.done = true;
        } else if s > 0.5 {
            self.low = opponent;
        } else {
            self.high = opponent;
        }
    }

    /// Plays probes until a stop rule holds or `max_probes` have been played
    /// (counting earlier ones). `play(level, probe)` plays the `probe`-th
    /// match (from 0) against the opponent set to `level`, and returns the
    /// level it was really played at (an engine may clamp it) with the
    /// score. With an `anchor`, the one probe is there instead: a quick
    /// check rather than a search.
    ///
    /// # Errors
    /// The first error of `play`.
    pub fn drive<E>(
        &mut self,
        max_probes: u32,
        anchor: Option<f64>,
        mut play: impl FnMut(f64, u32) -> Result<(f64, MatchScore), E>,
    ) -> Result<(), E> {
        loop {
            let played = self.probes.len() as u32;
            let level = match anchor {
                _ if played >= max_probes => return Ok(()),
                Some(anchor) if played == 0 => anchor,
                Some(_) => return Ok(()),
                None => match self.next_probe() {
                    Some(level) => level,
                    None => return Ok(()),
                },
            };
            let (level, score) = play(level, played)?;
            self.record(level, score);
        }
    }

    /// Every probe so far: the opponent's strength and the score against it.
    pub fn probes(&self) -> &[(f64, MatchScore)] {
        &self.probes
    }

    /// The estimate from all probes so far ([`estimate_strength`]).
    pub fn estimate(&self) -> Option<EloEstimate> {
        estimate_strength(&self.probes)
    }
}

/// A strength from probes against opponents of known strength (their
/// strength and the score against each): the strength that makes the
/// points scored most likely under the logistic model (draws count
/// half), with the 95% interval where the log-likelihood is within 1.92
/// of its best. For a single probe the estimate is
/// `opponent - 400 log10(1 / s - 1)`. Searched from 1,000 below the
/// lowest probe to 1,000 above the highest; an estimate at either end
/// is a bound, not a value ([`EloEstimate::kind`]).
fn estimate_strength(probes: &[(f64, MatchScore)]) -> Option<EloEstimate> {
    let lowest = probes.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let highest = probes.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    if probes.is_empty() {
        return None;
    }
    let log_likelihood = |elo: f64| -> f64 {
        probes
            .iter()
            .map(|(opponent, score)| {
                let games = f64::from(score.games());
                let points = score.fraction() * games;
                let p = expected_score(elo - opponent).clamp(1e-12, 1.0 - 1e-12);
                points * p.ln() + (games - points) * (1.0 - p).ln()
            })
            .sum()
    };
    let grid: Vec<f64> =
        ((lowest - 1000.0).round() as i64..=(highest + 1000.0).round() as i64).map(|e| e as f64).collect();
    let values: Vec<f64> = grid.iter().map(|&e| log_likelihood(e)).collect();
    let (best, &top) = values.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))?;
    let inside = |v: &f64| *v >= top - 1.92;
    let low = values.iter().position(inside).map_or(grid[0], |i| grid[i]);
    let high = values.iter().rposition(inside).map_or(grid[grid.len() - 1], |i| grid[i]);
    let kind = if best == 0 {
        EstimateKind::AtMost
    } else if best == grid.len() - 1 {
        EstimateKind::AtLeast
    } else {
        EstimateKind::Value
    };
    Some(EloEstimate { elo: grid[best], low, high, kind })
}

/// A player's Elo from a joint fit, with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rating {
    /// The most likely Elo.
    pub elo: f64,
    /// The 95% interval's lower end.
    pub low: f64,
    /// The 95% interval's upper end.
    pub high: f64,
}

/// The result of a match between players `first` and `second` (indices),
/// from `first`'s side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pairing {
    /// The first player.
    pub first: usize,
    /// The second.
    pub second: usize,
    /// The first player's score.
    pub score: MatchScore,
}

/// Why [`fit_ratings`] cannot place every player.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FitError {
    /// A pairing names a player outside `0..players`, or a player itself.
    #[error("pairing {index} names player {first} against {second}, but there are {players} players")]
    BadPairing {
        /// The pairing's index.
        index: usize,
        /// Its first player.
        first: usize,
        /// Its second player.
        second: usize,
        /// Players in all.
        players: usize,
    },
    /// No chain of played games joins this player to the anchor.
    #[error("player {0} has played no games connecting it to the anchor")]
    Unconnected(usize),
}

/// The Elo of `players` players from the results of matches among them, all
/// at once: the ratings that make the points scored most likely under the
/// logistic model (draws count half), with `anchor` held at `anchor_elo`
/// (Bradley-Terry, as Ordo or BayesElo fit rating lists).
///
/// Every pairing also counts one drawn game (a weak prior, as BayesElo's),
/// so that a clean sweep gives a finite gap rather than none. The 95%
/// intervals come from the curvature of the likelihood at its best
/// (Fisher information): they are relative to the anchor, so they widen
/// with the number of links between a player and it.
///
/// # Errors
/// A pairing outside the players, or a player no games join to the anchor.
pub fn fit_ratings(
    players: usize,
    pairings: &[Pairing],
    anchor: usize,
    anchor_elo: f64,
) -> Result<Vec<Rating>, FitError> {
    for (index, p) in pairings.iter().enumerate() {
        if p.first >= players || p.second >= players || p.first == p.second {
            return Err(FitError::BadPairing { index, first: p.first, second: p.second, players });
        }
    }
    if anchor >= players {
        return Err(FitError::Unconnected(anchor));
    }
    // Games and points of each pairing, the prior's draw included.
    let games: Vec<(usize, usize, f64, f64)> = pairings
        .iter()
        .map(|p| {
            let n = f64::from(p.score.games());
            (p.first, p.second, n + 1.0, p.score.fraction() * n + 0.5)
        })
        .collect();
    let mut connected = vec![false; players];
    connected[anchor] = true;
    let mut grew = true;
    while grew {
        grew = false;
        for &(a, b, ..) in &games {
            if connected[a] != connected[b] {
                connected[a] = true;
                connected[b] = true;
                grew = true;
            }
        }
    }
    if let Some(lonely) = connected.iter().position(|c| !c) {
        return Err(FitError::Unconnected(lonely));
    }
    // The free ratings: every player but the anchor, in order.
    let free: Vec<usize> = (0..players).filter(|&i| i != anchor).collect();
    let slot = |player: usize| free.iter().position(|&f| f == player);
    let k = std::f64::consts::LN_10 / 400.0;
    let mut elo = vec![anchor_elo; players];
    let mut covariance = Vec::new();
    for _ in 0..200 {
        // Gradient and information (minus the Hessian) of the log-likelihood.
        let mut gradient = vec![0.0; free.len()];
        let mut information = vec![vec![0.0; free.len()]; free.len()];
        for &(a, b, n, points) in &games {
            let p = expected_score(elo[a] - elo[b]);
            let (g, w) = (k * (points - n * p), k * k * n * p * (1.0 - p));
            for (player, sign) in [(a, 1.0), (b, -1.0)] {
                if let Some(i) = slot(player) {
                    gradient[i] += sign * g;
                    information[i][i] += w;
                }
            }
            if let (Some(i), Some(j)) = (slot(a), slot(b)) {
                information[i][j] -= w;
                information[j][i] -= w;
            }
        }
        covariance = invert(information);
        let mut largest: f64 = 0.0;
        for (i, &player) in free.iter().enumerate() {
            let step: f64 = covariance[i].iter().zip(&gradient).map(|(c, g)| c * g).sum();
            let step = step.clamp(-400.0, 400.0);
            elo[player] += step;
            largest = largest.max(step.abs());
        }
        if largest < 1e-7 {
            break;
        }
    }
    Ok((0..players)
        .map(|player| {
            let margin = slot(player).map_or(0.0, |i| 1.96 * covariance[i][i].max(0.0).sqrt());
            Rating { elo: elo[player], low: elo[player] - margin, high: elo[player] + margin }
        })
        .collect())
}

/// The inverse of a symmetric positive-definite matrix, by Gauss-Jordan
/// elimination with partial pivoting (the fits here have a few dozen rows).
fn invert(mut matrix: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
    let n = matrix.len();
    let mut inverse: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect()).collect();
    for column in 0..n {
        let pivot = (column..n).max_by(|&a, &b| matrix[a][column].abs().total_cmp(&matrix[b][column].abs()));
        let pivot = pivot.expect("a row");
        matrix.swap(column, pivot);
        inverse.swap(column, pivot);
        let scale = matrix[column][column];
        for j in 0..n {
            matrix[column][j] /= scale;
            inverse[column][j] /= scale;
        }
        for row in 0..n {
            let factor = matrix[row][column];
            if row != column && factor != 0.0 {
                for j in 0..n {
                    matrix[row][j] -= factor * matrix[column][j];
                    inverse[row][j] -= factor * inverse[column][j];
                }
            }
        }
    }
    inverse
}

/// A strength estimated from probes against opponents of known strength.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EloEstimate {
    /// The most likely strength.
    pub elo: f64,
    /// The 95% interval's lower end.
    pub low: f64,
    /// The 95% interval's upper end.
    pub high: f64,
    /// Whether the probes pin the strength down or only bound it.
    pub kind: EstimateKind,
}

/// What an [`EloEstimate`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EstimateKind {
    /// A strength within the probes' reach.
    Value,
    /// Every probe was lost by far: the strength is at most `high`.
    AtMost,
    /// Every probe was won by far: the strength is at least `low`.
    AtLeast,
}

impl std::fmt::Display for EloEstimate {
    /// `1520 (95%: 1460 to 1580)`, or `at most 1210 (95%)` for a bound.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            EstimateKind::Value => write!(f, "{:.0} (95%: {:.0} to {:.0})", self.elo, self.low, self.high),
            EstimateKind::AtMost => write!(f, "at most {:.0} (95%)", self.high),
            EstimateKind::AtLeast => write!(f, "at least {:.0} (95%)", self.low),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elo_follows_the_score() {
        assert_eq!(format!("{:+.0}", elo_difference(0.5)), "+0");
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
        // A clean sweep is not proof of infinite strength: Wilson's lower
        // bound for 10 of 10 is 10 / (10 + 1.96^2) = 0.7224, +166 Elo.
        let (elo, low, high) = MatchScore { wins: 10, draws: 0, losses: 0 }.elo();
        assert_eq!((elo, high), (1000.0, 1000.0));
        assert!((low - 166.0).abs() < 1.0, "{low}");
        let (_, low, high) = MatchScore { wins: 0, draws: 4, losses: 0 }.elo();
        assert!(low < -100.0 && high > 100.0, "{low} {high}");
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

    /// Seeded uniform numbers in [0, 1).
    fn uniform(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// `games` simulated games of a player `gap` Elo stronger than its
    /// opponent: each a win with probability E(gap) less a draw share.
    fn simulated_match(gap: f64, games: u32, uniform: &mut impl FnMut() -> f64) -> MatchScore {
        let expected = expected_score(gap);
        let draw = 0.2 * (1.0 - (2.0 * expected - 1.0).abs());
        let mut score = MatchScore::default();
        for _ in 0..games {
            let u = uniform();
            if u < expected - draw / 2.0 {
                score.wins += 1;
            } else if u < expected + draw / 2.0 {
                score.draws += 1;
            } else {
                score.losses += 1;
            }
        }
        score
    }

    /// A simulated player of strength `elo` placed by bisection against
    /// opponents of set strength, seeded.
    fn simulate(elo: f64, games: u32, seed: u64) -> (f64, f64, f64, usize) {
        let mut uniform = uniform(seed);
        let mut bisection = Bisection::new(1350.0, 2850.0, 50.0);
        while let Some(opponent) = bisection.next_probe() {
            bisection.record(opponent, simulated_match(elo - opponent, games, &mut uniform));
        }
        let estimate = bisection.estimate().unwrap();
        (estimate.elo, estimate.low, estimate.high, bisection.probes().len())
    }

    #[test]
    fn bisection_converges_on_simulated_players() {
        let mut covered = 0;
        for truth in [1400.0, 1800.0, 2400.0] {
            for seed in 1..=5 {
                let (estimate, low, high, probes) = simulate(truth, 200, seed);
                assert!((estimate - truth).abs() < 100.0, "{truth} seed {seed}: {estimate} ({low} to {high})");
                assert!(probes <= 5, "{probes} probes");
                covered += usize::from(low <= truth && truth <= high);
            }
        }
        // A 95% interval misses now and then, not often.
        assert!(covered >= 13, "the interval held the truth {covered} times in 15");
        // Below the whole range: the estimate says "well under the bottom".
        let (estimate, _, high, _) = simulate(600.0, 100, 1);
        assert!(estimate < 1000.0 && high < 1350.0, "{estimate} {high}");
    }

    #[test]
    fn bisection_moves_and_stops_by_the_rules() {
        let mut b = Bisection::new(1000.0, 2000.0, 100.0);
        assert_eq!(b.next_probe(), Some(1500.0));
        b.record(1500.0, MatchScore { wins: 8, draws: 0, losses: 2 });
        assert_eq!((b.low, b.high), (1500.0, 2000.0));
        assert_eq!(b.next_probe(), Some(1750.0));
        b.record(1750.0, MatchScore { wins: 1, draws: 0, losses: 9 });
        assert_eq!((b.low, b.high), (1500.0, 1750.0));
        // An even probe stops at once.
        b.record(1625.0, MatchScore { wins: 5, draws: 0, losses: 5 });
        assert_eq!(b.next_probe(), None);
        // A narrow bracket stops too.
        let narrow = Bisection::new(1000.0, 1050.0, 100.0);
        assert_eq!(narrow.next_probe(), None);
        assert_eq!(narrow.estimate(), None);
        // One probe: the estimate is the formula.
        let mut one = Bisection::new(1000.0, 2000.0, 10.0);
        one.record(1500.0, MatchScore { wins: 3, draws: 0, losses: 1 });
        let estimate = one.estimate().unwrap();
        assert!((estimate.elo - (1500.0 + elo_difference(0.75))).abs() <= 0.5, "{estimate}");
        assert_eq!(estimate.kind, EstimateKind::Value);
        // Every game lost: a bound, printed as one.
        let mut lost = Bisection::new(1000.0, 2000.0, 10.0);
        lost.record(1500.0, MatchScore { wins: 0, draws: 0, losses: 10 });
        let estimate = lost.estimate().unwrap();
        assert_eq!(estimate.kind, EstimateKind::AtMost);
        assert!(estimate.to_string().starts_with("at most ") && estimate.high < 1500.0, "{estimate}");
    }

    #[test]
    fn a_joint_fit_recovers_simulated_ladders() {
        // Rungs of known strength, unevenly spaced, anchored on the fifth;
        // each plays its neighbours (and the one after) 100 games.
        let truth = [250.0, 520.0, 700.0, 980.0, 1350.0, 1500.0, 1830.0, 2100.0];
        let anchor = 4;
        let (mut covered, mut total) = (0, 0);
        for seed in 1..=10 {
            let mut uniform = uniform(seed);
            let mut pairings = Vec::new();
            for first in 0..truth.len() {
                for second in [first + 1, first + 2].into_iter().filter(|&s| s < truth.len()) {
                    let score = simulated_match(truth[first] - truth[second], 100, &mut uniform);
                    pairings.push(Pairing { first, second, score });
                }
            }
            let ratings = fit_ratings(truth.len(), &pairings, anchor, truth[anchor]).unwrap();
            assert_eq!(ratings[anchor], Rating { elo: 1350.0, low: 1350.0, high: 1350.0 });
            for (rating, &elo) in ratings.iter().zip(&truth) {
                assert!((rating.elo - elo).abs() < 150.0, "seed {seed}: {rating:?} for {elo}");
                assert!(rating.low < rating.elo && rating.elo < rating.high || elo == 1350.0);
                covered += usize::from(rating.low <= elo && elo <= rating.high);
                total += 1;
            }
        }
        // 95% intervals: about 67 of the 70 free rungs' should hold the truth.
        assert!(covered >= total - 10, "the intervals held the truth {covered} times in {total}");
    }

    #[test]
    fn a_joint_fit_matches_the_formula_and_refuses_what_it_cannot_place() {
        // Two players: the gap is the one-match formula's, with the prior's draw.
        let score = MatchScore { wins: 30, draws: 10, losses: 10 };
        let ratings = fit_ratings(2, &[Pairing { first: 1, second: 0, score }], 0, 1000.0).unwrap();
        let expected = 1000.0 + elo_difference((35.0 + 0.5) / 51.0);
        assert!((ratings[1].elo - expected).abs() < 1e-6, "{:?} vs {expected}", ratings[1]);
        // A clean sweep is a finite gap.
        let sweep = MatchScore { wins: 20, draws: 0, losses: 0 };
        let ratings = fit_ratings(2, &[Pairing { first: 0, second: 1, score: sweep }], 1, 0.0).unwrap();
        assert!(ratings[0].elo > 400.0 && ratings[0].elo < 1000.0, "{:?}", ratings[0]);
        let pairings = [Pairing { first: 0, second: 1, score }];
        assert_eq!(fit_ratings(3, &pairings, 0, 0.0), Err(FitError::Unconnected(2)));
        let bad = [Pairing { first: 0, second: 3, score }];
        assert!(matches!(fit_ratings(3, &bad, 0, 0.0), Err(FitError::BadPairing { index: 0, .. })));
    }
}
