//! `capa elo`: the arguments, and the lines it prints; the bisection is
//! capa-play's, the network a `capa uci` process so that the move limit
//! means the same for both players.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use capa_play::{
    Bracket, EloProbe, Ladder, MatchScore, MatchSettings, MoveLimit, Openings, Placement, UciPlayer, place, rate,
};
use capa_rules::Game;

use crate::args::{DeviceArgs, LimitArgs, parse_option, seconds};

/// A network's Elo on a UCI engine's `UCI_Elo` scale, by bisection.
///
/// Sets the engine (with UCI_LimitStrength) to the middle of a bracket,
/// its advertised UCI_Elo range by default, plays --games games, keeps
/// the half the score points to, and stops once the bracket is narrower
/// than --tolerance, a probe scores 45% to 55%, or after --max-probes.
/// Prints `probe N: UCI_Elo E: +W =D -L, score S%, estimate X` per probe
/// (X = E - 400 log10(1/S - 1)), then `Elo X (95%: LOW to HIGH) ...`: the
/// strength that makes all probes' results most likely; `Elo at most
/// HIGH (95%)` when every game was lost (`at least LOW` when every game
/// was won). The network decides the game.
///
/// With --ladder FILE the scale is a calibrated ladder's instead (see
/// `capa ladder`): each probe plays the untried rung nearest the middle
/// of the bracket, and the estimate is on the ladder's scale, which
/// reaches below the engine's weakest UCI_Elo.
#[derive(clap::Args, Debug)]
pub struct EloCommand {
    /// The network file, or a shipped network's short name (`capablanca-cpu`).
    #[arg(long, value_parser = crate::args::network)]
    pub net: PathBuf,
    /// The engine command; it needs UCI_LimitStrength and UCI_Elo.
    #[arg(long, default_value = "fairy-stockfish")]
    pub engine: String,
    /// Place the network on this calibrated ladder instead of the
    /// engine's UCI_Elo scale (configs/ladder-capablanca.toml).
    #[arg(long, conflicts_with_all = ["engine", "low", "high", "tolerance", "options"])]
    pub ladder: Option<PathBuf>,
    /// Games per probe (rounded up to an even number).
    #[arg(long, default_value_t = 20)]
    pub games: u32,
    #[command(flatten)]
    pub limit: LimitArgs,
    /// The bracket's lower end (default: the engine's UCI_Elo minimum).
    #[arg(long)]
    pub low: Option<f64>,
    /// The bracket's upper end (default: the engine's UCI_Elo maximum).
    #[arg(long)]
    pub high: Option<f64>,
    /// Stop once the bracket is at most this many Elo wide.
    #[arg(long, default_value_t = 50.0)]
    pub tolerance: f64,
    /// Probes at most.
    #[arg(long, default_value_t = 8)]
    pub max_probes: u32,
    /// A further UCI option for the engine, `NAME=VALUE` (repeatable).
    #[arg(long = "option", value_parser = parse_option)]
    pub options: Vec<(String, String)>,
    /// Plies of uniformly random moves that start each pair of games.
    #[arg(long, default_value_t = 6)]
    pub random_plies: u32,
    /// Seeds the openings (probe i uses SEED + i).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Games played at once.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Seconds an engine may take to answer beyond the move's own time.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    #[command(flatten)]
    pub device: DeviceArgs,
}

impl EloCommand {
    /// Runs the bisection, printing every probe and then the estimate.
    ///
    /// # Errors
    /// An engine without `UCI_Elo`, a bracket outside its range, and
    /// whatever stops a match.
    pub fn run(self) -> Result<()> {
        if self.max_probes == 0 || self.games == 0 {
            bail!("--max-probes and --games must be at least 1");
        }
        if !(self.tolerance.is_finite() && self.tolerance > 0.0) {
            bail!("--tolerance must be a positive number of Elo, not {}", self.tolerance);
        }
        let (limit, timeout) = (self.limit.limit()?, seconds(self.timeout)?);
        let capa = std::env::current_exe().context("cannot find the capa executable to run the network with")?;
        let game = capa_net::read_net_config(&self.net).with_context(|| self.net.display().to_string())?.game;
        let network = UciPlayer::network(&capa, &self.net, &self.device.child_args());
        let setup = |player: UciPlayer| player.with_limit(limit).with_timeout(timeout).with_processes(self.concurrency);
        let network = setup(network);
        if let Some(path) = &self.ladder {
            let ladder = Ladder::read(path)?;
            return capa_rules::for_game!(game, G => self.place::<G>(network, &ladder, limit, timeout));
        }
        if !game.is_chess() {
            bail!("capa elo rates against UCI engines (chess games), and the network plays {game}");
        }
        let engine = setup(UciPlayer::command(&self.engine)?.with_options(self.options.iter().cloned()));
        capa_rules::for_game!(game, G => self.rate::<G>(network, engine, limit))
    }

    fn place<G: Game>(
        &self,
        mut network: UciPlayer,
        ladder: &Ladder,
        limit: MoveLimit,
        timeout: Duration,
    ) -> Result<()> {
        network.start::<G>()?;
        let placement = Placement { max_probes: self.max_probes, processes: self.concurrency, timeout, guess: None };
        let bisection = place::<G>(
            &mut network,
            ladder,
            placement,
            |probe| self.settings(probe, limit),
            &mut |_, _| {},
            &mut |probe| print_probe(probe.number, &probe.rung, probe.elo, probe.score),
        )?;
        let estimate = bisection.estimate().context("no probe was played")?;
        println!(
            "Elo {estimate} on the ladder {}, from {} probes of {} games",
            self.ladder.as_deref().unwrap_or(Path::new("")).display(),
            bisection.probes().len(),
            self.games.div_ceil(2) * 2
        );
        Ok(())
    }

    /// Probe `probe`'s match.
    fn settings<G: Game>(&self, probe: u32, limit: MoveLimit) -> MatchSettings<G> {
        MatchSettings::<G> {
            games: self.games,
            openings: Openings::Random { plies: self.random_plies, seed: self.seed + u64::from(probe) },
            ply_cap: 0,
            concurrency: self.concurrency,
            clock: limit.clock(),
            seed: self.seed + u64::from(probe),
            sprt: None,
            pgn: None,
        }
    }

    fn rate<G: Game>(&self, mut network: UciPlayer, mut engine: UciPlayer, limit: MoveLimit) -> Result<()> {
        network.start::<G>()?;
        engine.start::<G>()?;
        let (min, max) = engine.limit_strength()?;
        let low = self.low.unwrap_or(min as f64);
        let high = self.high.unwrap_or(max as f64);
        if !(min as f64 <= low && low < high && high <= max as f64) {
            bail!("the bracket {low} to {high} must lie within {}'s UCI_Elo range, {min} to {max}", self.engine);
        }
        let bracket = Bracket {
            low: low as i64,
            high: high as i64,
            tolerance: self.tolerance,
            max_probes: self.max_probes,
            anchor: None,
        };
        let settings = |probe: u32| self.settings(probe, limit);
        let print = &mut |probe: EloProbe| print_probe(probe.number, "UCI_Elo", probe.uci_elo as f64, probe.score);
        let bisection = rate::<G>(&mut network, &mut engine, &bracket, settings, &mut |_, _| {}, print)?;
        let probes = bisection.probes().len();
        if probes as u32 == self.max_probes && bisection.next_probe().is_some() {
            eprintln!("stopping after --max-probes {probes} probes");
        }
        let estimate = bisection.estimate().context("no probe was played")?;
        println!(
            "Elo {estimate} on {}'s UCI_Elo scale, from {probes} probes of {} games",
            self.engine,
            self.games.div_ceil(2) * 2
        );
        Ok(())
    }
}

/// A probe's line: its opponent (`UCI_Elo` or a rung) and that
/// opponent's Elo, the result, and the Elo it alone implies.
fn print_probe(number: u32, opponent: &str, elo: f64, score: MatchScore) {
    // A probe without a point (or without a lost point) bounds the
    // strength on one side only.
    let estimate = if score.wins + score.draws == 0 {
        format!("far below {elo}")
    } else if score.losses + score.draws == 0 {
        format!("far above {elo}")
    } else {
        format!("{:.0}", elo + capa_play::elo_difference(score.fraction()))
    };
    println!(
        "probe {number}: {opponent} {elo:.0}: +{} ={} -{}, score {:.1}%, estimate {estimate}",
        score.wins,
        score.draws,
        score.losses,
        100.0 * score.fraction()
    );
}
