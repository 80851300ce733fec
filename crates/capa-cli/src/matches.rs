//! `capa match`: the arguments, and the lines it prints; the match is
//! capa-play's, every player a UCI process.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capa_data::read_openings;
use capa_play::{
    GameEnd, GtpPlayer, MatchSettings, MoveLimit, Openings, Player, Sprt, SprtVerdict, UciPlayer, play_match,
};
use capa_rules::Game;
use capa_rules::GameKind;
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::go::{Go9, Go13, Go19};

use crate::args::{DeviceArgs, LimitArgs, parse_option, parse_sprt, seconds};

/// Play games between two players and measure the Elo difference.
///
/// A player is a network file (`.safetensors`, played through `capa uci`)
/// or a UCI engine command (`fairy-stockfish`, `stockfish`, `sjaakii`...).
/// Games come in pairs from one opening with the colours swapped. Each
/// game's line goes to stderr; the last line on stdout is
/// `A vs B: +W =D -L of N games, score S%, Elo E (95%: LOW to HIGH), T s`
/// (from A's side), followed by the SPRT's line with --sprt.
#[derive(clap::Args, Debug)]
pub struct MatchCommand {
    /// Player A: a network file or a UCI engine command.
    pub a: String,
    /// Player B: a network file or a UCI engine command.
    pub b: String,
    /// Games to play (rounded up to an even number).
    #[arg(long, default_value_t = 100)]
    pub games: u32,
    #[command(flatten)]
    pub limit: LimitArgs,
    /// The game, needed when neither player is a network.
    #[arg(long, value_enum)]
    pub variant: Option<GameKind>,
    /// Openings, one per line: UCI moves from the start position, or a
    /// FEN optionally followed by `moves ...`; `#` starts a comment. They
    /// are used in turn, each for a pair of games.
    #[arg(long)]
    pub openings: Option<PathBuf>,
    /// Without --openings: plies of uniformly random moves that start each pair.
    #[arg(long, default_value_t = 6)]
    pub random_plies: u32,
    /// Seeds the random openings.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Games played at once, each with its own two engine processes.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Write the games here as PGN (rewritten after each game).
    #[arg(long)]
    pub pgn: Option<PathBuf>,
    /// Stop once a sequential probability ratio test decides:
    /// `ELO0,ELO1` or `ELO0,ELO1,ALPHA,BETA` (alpha and beta default to 0.05).
    #[arg(long, value_parser = parse_sprt, allow_hyphen_values = true)]
    pub sprt: Option<Sprt>,
    /// Plies after which a game is a draw; 0 leaves it to the rules.
    #[arg(long, default_value_t = 0)]
    pub ply_cap: u32,
    /// A UCI option for player A, `NAME=VALUE` (repeatable), e.g. `UCI_Elo=1500`.
    #[arg(long = "option-a", value_parser = parse_option)]
    pub option_a: Vec<(String, String)>,
    /// A UCI option for player B, `NAME=VALUE` (repeatable).
    #[arg(long = "option-b", value_parser = parse_option)]
    pub option_b: Vec<(String, String)>,
    /// Seconds an engine may take to answer, beyond a move's own time;
    /// one that takes longer loses the game.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    #[command(flatten)]
    pub device: DeviceArgs,
}

impl MatchCommand {
    /// Plays the match and prints its result.
    ///
    /// # Errors
    /// Bad arguments, an unreadable openings file, a player that cannot be
    /// started or set up, an unwritable PGN.
    pub fn run(self) -> Result<()> {
        if self.games == 0 {
            bail!("--games must be at least 1");
        }
        if self.concurrency == 0 {
            bail!("--concurrency must be at least 1");
        }
        let (limit, timeout) = (self.limit.limit()?, seconds(self.timeout)?);
        let capa = std::env::current_exe().context("cannot find the capa executable to run networks with")?;
        let game = self.game()?;
        match game {
            GameKind::Capablanca => self.play_uci::<Capablanca>(&capa, limit, timeout),
            GameKind::Chess => self.play_uci::<Chess>(&capa, limit, timeout),
            GameKind::Go9 => self.play_gtp::<Go9>(&capa, limit, timeout),
            GameKind::Go13 => self.play_gtp::<Go13>(&capa, limit, timeout),
            GameKind::Go19 => self.play_gtp::<Go19>(&capa, limit, timeout),
        }
    }

    /// A match between UCI engines (networks through `capa uci`).
    fn play_uci<G: Game>(&self, capa: &Path, limit: MoveLimit, timeout: Duration) -> Result<()> {
        let mut players = Vec::new();
        for (which, spec, options) in [("A", &self.a, &self.option_a), ("B", &self.b, &self.option_b)] {
            let player = match network_file(spec) {
                Some(path) => UciPlayer::network(capa, path, &self.device.child_args()),
                None => UciPlayer::command(spec).with_context(|| format!("player {which}: {spec}"))?,
            };
            players.push(
                player
                    .with_options(options.iter().cloned())
                    .with_limit(limit)
                    .with_timeout(timeout)
                    .with_processes(self.concurrency),
            );
        }
        let [mut a, mut b] = <[UciPlayer; 2]>::try_from(players).map_err(|_| anyhow::anyhow!("two players"))?;
        a.start::<G>()?;
        b.start::<G>()?;
        self.play::<G>(&mut a, &mut b, limit)
    }

    /// A Go match between GTP engines (networks through `capa gtp`).
    fn play_gtp<G: Game>(&self, capa: &Path, limit: MoveLimit, timeout: Duration) -> Result<()>
    where
        GtpPlayer: Player<G>,
    {
        let MoveLimit::Nodes(playouts) = limit else {
            bail!("a Go match takes --nodes (the networks' playouts per move); GTP engines set their own strength")
        };
        if !(self.option_a.is_empty() && self.option_b.is_empty()) {
            bail!("--option-a and --option-b set UCI options; a GTP engine takes its settings on its command line");
        }
        let player = |spec: &str| -> Result<GtpPlayer> {
            let player = match network_file(spec) {
                Some(path) => GtpPlayer::network(capa, path, playouts, &self.device.child_args()),
                None => GtpPlayer::command(spec)?,
            };
            Ok(player.with_timeout(timeout))
        };
        let (mut a, mut b) = (player(&self.a)?, player(&self.b)?);
        self.play::<G>(&mut a, &mut b, limit)
    }

    /// The game: the networks' (which must agree) and --variant's.
    fn game(&self) -> Result<GameKind> {
        let mut games = Vec::new();
        for (which, spec) in [("A", &self.a), ("B", &self.b)] {
            if let Some(path) = network_file(spec) {
                let config = capa_net::read_net_config(path).with_context(|| format!("player {which}: {spec}"))?;
                games.push(config.game);
            }
        }
        Ok(match (games.as_slice(), self.variant) {
            ([], None) => bail!("neither player is a network: say which game with --variant"),
            ([], Some(variant)) => variant,
            ([first, rest @ ..], variant) => {
                if let Some(other) = rest.iter().chain(variant.as_ref()).find(|g| *g != first) {
                    bail!("the players play different games: {} and {}", first.name(), other.name());
                }
                *first
            }
        })
    }

    fn play<G: Game>(&self, a: &mut dyn Player<G>, b: &mut dyn Player<G>, limit: MoveLimit) -> Result<()> {
        let openings = match &self.openings {
            Some(path) => Openings::List(read_openings::<G>(path)?),
            None => Openings::Random { plies: self.random_plies, seed: self.seed },
        };
        let settings = MatchSettings {
            games: self.games,
            openings,
            ply_cap: self.ply_cap,
            concurrency: self.concurrency,
            clock: limit.clock(),
            seed: self.seed,
            sprt: self.sprt,
            pgn: self.pgn.clone(),
        };
        let labels = [a.name().to_string(), b.name().to_string()];
        eprintln!(
            "{} vs {}: {} games of {}, {} at a time, {limit:?} per move",
            labels[0],
            labels[1],
            self.games.div_ceil(2) * 2,
            G::NAME,
            self.concurrency
        );
        let started = Instant::now();
        let score = play_match::<G>(a, b, &settings, &mut print_game)?;
        let (elo, low, high) = score.elo();
        println!(
            "{} vs {}: +{} ={} -{} of {} games, score {:.1}%, Elo {elo:+.0} (95%: {low:+.0} to {high:+.0}), {:.0} s",
            labels[0],
            labels[1],
            score.wins,
            score.draws,
            score.losses,
            score.games(),
            100.0 * score.fraction(),
            started.elapsed().as_secs_f64()
        );
        if let Some(sprt) = &self.sprt {
            let (lower, upper) = sprt.bounds();
            let verdict = match sprt.verdict(&score) {
                Some(SprtVerdict::AcceptH1) => "H1 accepted",
                Some(SprtVerdict::AcceptH0) => "H0 accepted",
                None => "no decision",
            };
            println!(
                "SPRT elo0 {} elo1 {} alpha {} beta {}: LLR {:.2} ({lower:.2}, {upper:.2}), {verdict}",
                sprt.elo0,
                sprt.elo1,
                sprt.alpha,
                sprt.beta,
                sprt.llr(&score)
            );
        }
        Ok(())
    }
}

/// The network file a player spec names, if it names one.
fn network_file(spec: &str) -> Option<&Path> {
    let path = Path::new(spec);
    (path.is_file() && path.extension().is_some_and(|e| e == "safetensors")).then_some(path)
}

/// A game's line on stderr.
fn print_game(end: &GameEnd) {
    let GameEnd { number, white, result, termination, plies, score } = end;
    let (elo, low, high) = score.elo();
    eprintln!(
        "game {number} ({white} white): {result} by {termination} in {plies} plies | +{} ={} -{} {:.1}% \
         Elo {elo:+.0} ({low:+.0} to {high:+.0})",
        score.wins,
        score.draws,
        score.losses,
        100.0 * score.fraction()
    );
}
