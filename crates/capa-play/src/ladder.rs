//! A ladder: fixed opponents of known strength on one Elo scale, from far
//! below an engine's weakest `UCI_Elo` level up through its levels. Each
//! rung is an engine with set options searching a fixed number of nodes
//! (`Threads` 1), so that it plays the same strength on any machine. The
//! rungs are calibrated once against each other (matches between
//! neighbours, every rating fitted at once by maximum likelihood, the
//! anchor rung held at its `UCI_Elo`), and the file keeps every calibration
//! match, so a fit can be checked and an interrupted calibration resumed.
//! [`place`] then puts a player on that scale with a few matches.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use capa_data::write_atomically;
use capa_rules::{Game, GameKind};
use serde::{Deserialize, Serialize};

use crate::elo::{Bisection, MatchScore, Pairing, fit_ratings};
use crate::matches::{GameEnd, MatchSettings, Openings, play_match};
use crate::player::Player;
use crate::uci_player::{MoveLimit, UciPlayer};

/// A ladder file (`configs/ladder-*.toml`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ladder {
    /// The game, as the engines' `UCI_Variant` names it (`capablanca`, `chess`).
    pub game: GameKind,
    /// The engine command of every rung that names none.
    pub engine: String,
    /// The rung whose Elo is fixed.
    pub anchor: String,
    /// Its Elo: the `UCI_Elo` it is set to.
    pub anchor_elo: f64,
    /// How the calibration matches are played.
    pub calibration: Calibration,
    /// The rungs, weakest first.
    #[serde(rename = "rung")]
    pub rungs: Vec<Rung>,
    /// The calibration matches played so far.
    #[serde(rename = "match", default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<RungMatch>,
}

/// How the calibration matches between rungs are played.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Games per pair of rungs (rounded up to an even number).
    pub games: u32,
    /// Each rung plays the next `reach` rungs up the list.
    pub reach: usize,
    /// Plies of uniformly random moves that open each pair of games.
    pub random_plies: u32,
    /// Plies after which a game is a draw; 0 leaves it to the rules.
    pub ply_cap: u32,
    /// Seeds the openings; pair of rungs `i` uses `seed + i`.
    pub seed: u64,
}

/// One rung: an engine, its options, its nodes per move, and once
/// calibrated its Elo with the 95% interval relative to the anchor.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rung {
    /// Its name, unique in the ladder.
    pub name: String,
    /// The engine command, if not the ladder's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// UCI options set after the engine starts, `NAME=VALUE`, in order.
    #[serde(default)]
    pub options: Vec<String>,
    /// Nodes per move (`go nodes`).
    pub nodes: u64,
    /// The calibrated Elo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elo: Option<f64>,
    /// The 95% interval's lower end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    /// The 95% interval's upper end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
}

/// A calibration match, from the first rung's side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RungMatch {
    /// The first rung's name.
    pub first: String,
    /// The second rung's name.
    pub second: String,
    /// The first rung's wins.
    pub wins: u32,
    /// Draws.
    pub draws: u32,
    /// The first rung's losses.
    pub losses: u32,
}

impl RungMatch {
    fn score(&self) -> MatchScore {
        MatchScore { wins: self.wins, draws: self.draws, losses: self.losses }
    }
}

impl Ladder {
    /// Reads and checks a ladder file.
    ///
    /// # Errors
    /// An unreadable file, bad TOML, or a ladder that does not hold
    /// together (each error names the file and what to fix).
    pub fn read(path: &Path) -> Result<Ladder> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read the ladder {}", path.display()))?;
        let ladder: Ladder = toml::from_str(&text).with_context(|| format!("{} is no ladder", path.display()))?;
        ladder.check().with_context(|| format!("the ladder {}", path.display()))?;
        Ok(ladder)
    }

    /// Whether the rungs, anchor and matches hold together.
    fn check(&self) -> Result<()> {
        if !self.game.is_chess() {
            bail!("a ladder of UCI engines rates chess games, not {}", self.game);
        }
        if self.rungs.len() < 2 {
            bail!("a ladder needs at least two rungs, not {}", self.rungs.len());
        }
        for (i, rung) in self.rungs.iter().enumerate() {
            if self.rungs[..i].iter().any(|r| r.name == rung.name) {
                bail!("two rungs are named `{}`", rung.name);
            }
            if rung.nodes == 0 {
                bail!("rung `{}`: nodes must be at least 1", rung.name);
            }
            if let Some(option) = rung.options.iter().find(|o| !o.contains('=')) {
                bail!("rung `{}`: the option `{option}` is not NAME=VALUE", rung.name);
            }
            if rung.engine.as_deref().unwrap_or(&self.engine).trim().is_empty() {
                bail!("rung `{}` has no engine command", rung.name);
            }
        }
        self.rung(&self.anchor).with_context(|| "anchor".to_string())?;
        if !self.anchor_elo.is_finite() {
            bail!("anchor_elo must be a number");
        }
        if self.calibration.games == 0 || self.calibration.reach == 0 {
            bail!("calibration.games and calibration.reach must be at least 1");
        }
        for m in &self.matches {
            self.rung(&m.first)?;
            self.rung(&m.second)?;
        }
        Ok(())
    }

    /// The index of the rung named `name`.
    fn rung(&self, name: &str) -> Result<usize> {
        self.rungs.iter().position(|r| r.name == name).with_context(|| format!("no rung is named `{name}`"))
    }

    /// The ladder as its file holds it, with a header saying how it was made.
    pub fn to_toml(&self) -> Result<String> {
        let body = toml::to_string(self).context("cannot write the ladder as TOML")?;
        Ok(format!(
            "# A capa ladder: opponents of fixed strength on one Elo scale (ARCHITECTURE.md, capa-play).\n\
             # Rungs list weakest first; elo/low/high and the [[match]] tables are written by\n\
             #   capa ladder THIS-FILE\n\
             # which plays the missing calibration matches and refits (--fresh replays them all).\n\n{body}"
        ))
    }

    /// Writes the ladder to `path` atomically.
    ///
    /// # Errors
    /// An unwritable path.
    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomically(path, self.to_toml()?.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
    }

    /// The calibration pairs, in the order they are played: each rung and
    /// the next `reach` above it.
    pub fn pairs(&self) -> Vec<(usize, usize)> {
        let n = self.rungs.len();
        (0..n).flat_map(|i| (i + 1..=(i + self.calibration.reach).min(n - 1)).map(move |j| (i, j))).collect()
    }

    /// Fits every rung's Elo to the matches played, anchored.
    ///
    /// # Errors
    /// A rung no played match joins to the anchor.
    pub fn fit(&mut self) -> Result<()> {
        let pairings: Vec<Pairing> = self
            .matches
            .iter()
            .map(|m| Ok(Pairing { first: self.rung(&m.first)?, second: self.rung(&m.second)?, score: m.score() }))
            .collect::<Result<_>>()?;
        let anchor = self.rung(&self.anchor)?;
        let ratings =
            fit_ratings(self.rungs.len(), &pairings, anchor, self.anchor_elo).map_err(|error| match error {
                crate::elo::FitError::Unconnected(i) => {
                    anyhow::anyhow!("rung `{}` has no calibration games joining it to the anchor", self.rungs[i].name)
                }
                other => other.into(),
            })?;
        for (rung, rating) in self.rungs.iter_mut().zip(ratings) {
            (rung.elo, rung.low, rung.high) =
                (Some(rating.elo.round()), Some(rating.low.round()), Some(rating.high.round()));
        }
        Ok(())
    }

    /// The calibrated Elo of every rung.
    ///
    /// # Errors
    /// A rung not yet calibrated: run `capa ladder` on the file.
    pub fn elos(&self) -> Result<Vec<f64>> {
        self.rungs
            .iter()
            .map(|r| {
                r.elo.with_context(|| format!("rung `{}` is not calibrated: run `capa ladder` on the file", r.name))
            })
            .collect()
    }

    /// Rung `index` as a player: its engine, options and nodes, named by
    /// the rung, with `processes` processes.
    ///
    /// # Errors
    /// An empty engine command.
    pub fn player(&self, index: usize, processes: usize, timeout: Duration) -> Result<UciPlayer> {
        let rung = &self.rungs[index];
        let options = rung.options.iter().map(|o| {
            let (name, value) = o.split_once('=').expect("checked");
            (name.trim().to_string(), value.trim().to_string())
        });
        Ok(UciPlayer::command(rung.engine.as_deref().unwrap_or(&self.engine))?
            .with_name(&rung.name)
            .with_options(options)
            .with_limit(MoveLimit::Nodes(rung.nodes))
            .with_timeout(timeout)
            .with_processes(processes))
    }

    /// Whether the ladder is for `G`.
    ///
    /// # Errors
    /// A ladder for another game.
    pub fn check_game<G: Game>(&self) -> Result<()> {
        if self.game.name() != G::NAME {
            bail!("the ladder is for {}, not {}", self.game, G::NAME);
        }
        Ok(())
    }
}

/// A calibration match finished.
#[derive(Debug)]
pub struct PairPlayed<'a> {
    /// The pair's number, from 1, and the pairs in all.
    pub number: (usize, usize),
    /// The match, from the weaker rung's side.
    pub result: &'a RungMatch,
}

/// Plays every calibration match `ladder` lacks, `concurrency` games at a
/// time, calls `save` after each (so that an interrupted calibration
/// resumes where it stopped), then fits the ratings.
///
/// # Errors
/// A rung that cannot start or play `G`, a failed match, a failed save, or
/// a fit that cannot place every rung.
pub fn calibrate<G: Game>(
    ladder: &mut Ladder,
    concurrency: usize,
    timeout: Duration,
    save: &mut dyn FnMut(&Ladder) -> Result<()>,
    on_game: &mut dyn FnMut(&str, &str, &GameEnd),
    on_pair: &mut dyn FnMut(PairPlayed),
) -> Result<()> {
    ladder.check_game::<G>()?;
    let pairs = ladder.pairs();
    for (number, &(i, j)) in pairs.iter().enumerate() {
        let (first, second) = (ladder.rungs[i].name.clone(), ladder.rungs[j].name.clone());
        let played =
            |m: &RungMatch| (m.first == first && m.second == second) || (m.first == second && m.second == first);
        if ladder.matches.iter().any(played) {
            continue;
        }
        let mut weaker = ladder.player(i, concurrency, timeout)?;
        let mut stronger = ladder.player(j, concurrency, timeout)?;
        weaker.start::<G>()?;
        stronger.start::<G>()?;
        let calibration = &ladder.calibration;
        let seed = calibration.seed + number as u64;
        let settings = MatchSettings::<G> {
            games: calibration.games,
            openings: Openings::Random { plies: calibration.random_plies, seed },
            ply_cap: calibration.ply_cap,
            concurrency,
            clock: None,
            seed,
            sprt: None,
            pgn: None,
        };
        let score = play_match(&mut weaker, &mut stronger, &settings, &mut |end| on_game(&first, &second, end))
            .with_context(|| format!("the calibration match {first} - {second}"))?;
        let result = RungMatch { first, second, wins: score.wins, draws: score.draws, losses: score.losses };
        ladder.matches.push(result.clone());
        save(ladder)?;
        on_pair(PairPlayed { number: (number + 1, pairs.len()), result: &result });
    }
    ladder.fit()?;
    save(ladder)
}

/// One probe of a placement: the rung played and the score against it.
#[derive(Clone, Debug)]
pub struct LadderProbe {
    /// The probe's number, from 1.
    pub number: u32,
    /// The rung's name.
    pub rung: String,
    /// Its calibrated Elo.
    pub elo: f64,
    /// The player's score against it.
    pub score: MatchScore,
}

/// How [`place`] plays its probes.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    /// Probes at most.
    pub max_probes: u32,
    /// Engine processes per rung (the games played at once).
    pub processes: usize,
    /// How long a rung may take over a move before it forfeits.
    pub timeout: Duration,
    /// Where the player is thought to be (an earlier placement): the first
    /// probe plays the rung nearest it rather than the ladder's middle.
    pub guess: Option<f64>,
}

/// Places `player` on a calibrated ladder: a bisection over the rungs'
/// Elo, each probe a match (`settings(probe)`, from 0) against the
/// untried rung nearest the middle of the bracket (the first nearest the
/// guess, if any), until the bracket holds no untried rung, a probe scores
/// 45% to 55%, or `max_probes`. The returned bisection's estimate is the
/// player's Elo on the ladder's scale (an upper bound if it lost
/// everything to the bottom rung).
///
/// # Errors
/// An uncalibrated ladder or one for another game, a rung that cannot
/// start, and whatever stops a match.
pub fn place<G: Game>(
    player: &mut dyn Player<G>,
    ladder: &Ladder,
    placement: Placement,
    settings: impl Fn(u32) -> MatchSettings<G>,
    on_game: &mut dyn FnMut(&str, &GameEnd),
    on_probe: &mut dyn FnMut(&LadderProbe),
) -> Result<Bisection> {
    ladder.check_game::<G>()?;
    let elos = ladder.elos()?;
    let lowest = elos.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = elos.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut bisection = Bisection::new(lowest, highest, 0.0);
    let mut tried = vec![false; elos.len()];
    for probe in 0..placement.max_probes {
        let Some(middle) = bisection.next_probe() else { break };
        let target = if probe == 0 { placement.guess.unwrap_or(middle) } else { middle };
        let nearest = (0..elos.len())
            .filter(|&i| !tried[i] && bisection.low <= elos[i] && elos[i] <= bisection.high)
            .min_by(|&a, &b| (elos[a] - target).abs().total_cmp(&(elos[b] - target).abs()));
        let Some(index) = nearest else { break };
        tried[index] = true;
        let rung = &ladder.rungs[index].name;
        let mut opponent = ladder.player(index, placement.processes, placement.timeout)?;
        opponent.start::<G>()?;
        let score = play_match(player, &mut opponent, &settings(probe), &mut |end| on_game(rung, end))?;
        bisection.record(elos[index], score);
        on_probe(&LadderProbe { number: probe + 1, rung: rung.clone(), elo: elos[index], score });
    }
    Ok(bisection)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LADDER: &str = r#"
game = "capablanca"
engine = "fairy-stockfish"
anchor = "elo-1350"
anchor_elo = 1350

[calibration]
games = 10
reach = 2
random_plies = 4
ply_cap = 0
seed = 1

[[rung]]
name = "skill-20"
options = ["Skill Level=-20"]
nodes = 2000

[[rung]]
name = "skill-10"
options = ["Skill Level=-10"]
nodes = 2000

[[rung]]
name = "elo-1350"
options = ["UCI_LimitStrength=true", "UCI_Elo=1350"]
nodes = 2000
"#;

    fn parse(text: &str) -> Result<Ladder> {
        let ladder: Ladder = toml::from_str(text)?;
        ladder.check()?;
        Ok(ladder)
    }

    #[test]
    fn a_ladder_round_trips_and_fits() {
        let mut ladder = parse(LADDER).unwrap();
        assert_eq!(ladder.pairs(), [(0, 1), (0, 2), (1, 2)]);
        assert!(ladder.elos().unwrap_err().to_string().contains("capa ladder"));
        let result = |first: &str, second: &str, wins, losses| RungMatch {
            first: first.into(),
            second: second.into(),
            wins,
            draws: 0,
            losses,
        };
        ladder.matches = vec![
            result("skill-20", "skill-10", 3, 7),
            result("skill-20", "elo-1350", 1, 9),
            result("skill-10", "elo-1350", 3, 7),
        ];
        ladder.fit().unwrap();
        let elos = ladder.elos().unwrap();
        assert_eq!(elos[2], 1350.0);
        assert!(elos[0] < elos[1] && elos[1] < elos[2], "{elos:?}");
        let again = parse(&ladder.to_toml().unwrap()).unwrap();
        assert_eq!(again.elos().unwrap(), elos);
        assert_eq!(again.matches, ladder.matches);
    }

    #[test]
    fn a_bad_ladder_says_what_is_wrong() {
        for (from, to, message) in [
            ("anchor = \"elo-1350\"", "anchor = \"elo-1500\"", "no rung is named `elo-1500`"),
            ("\"Skill Level=-10\"", "\"Skill Level\"", "is not NAME=VALUE"),
            ("name = \"skill-10\"", "name = \"skill-20\"", "two rungs are named `skill-20`"),
            (
                "nodes = 2000\n\n[[rung]]\nname = \"elo",
                "nodes = 0\n\n[[rung]]\nname = \"elo",
                "nodes must be at least 1",
            ),
            ("games = 10", "games = 0", "must be at least 1"),
            ("seed = 1", "seed = 1\nspeed = 2", "unknown field"),
        ] {
            assert!(LADDER.contains(from), "{from}");
            let error = parse(&LADDER.replace(from, to)).unwrap_err();
            assert!(format!("{error:#}").contains(message), "{from}: {error:#}");
        }
        let mut unconnected = parse(LADDER).unwrap();
        unconnected.matches =
            vec![RungMatch { first: "skill-20".into(), second: "skill-10".into(), wins: 1, draws: 0, losses: 1 }];
        let error = unconnected.fit().unwrap_err();
        assert!(error.to_string().contains("rung `skill-20` has no calibration games"), "{error}");
    }
}
