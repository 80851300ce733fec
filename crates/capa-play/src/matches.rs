//! Matches between two UCI processes (`capa match`, `capa elo`): each
//! player a network (played through `capa uci`) or any UCI engine, with
//! the score and an optional SPRT that stops the match once it decides.
//!
//! Every player is a UCI process, so a network and Fairy-Stockfish are
//! driven the same way and time controls mean the same for both. Games
//! come in pairs from the same opening with the colours swapped; several
//! run at once, each worker with its own pair of processes. An engine that
//! crashes, hangs or answers an illegal move loses that game, and is
//! restarted for the next.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capa_data::{PgnTags, read_openings, write_atomically, write_pgn};
use capa_mcts::{Rng, random_opening};
use capa_net::{DeviceSpec, GameKind};
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Color, Game, GameResult, History};
use capa_uci::{Go, UciEngine, position_command};

use crate::elo::{MatchScore, Sprt};

/// How long each move may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveLimit {
    /// Playouts or nodes per move (`go nodes`).
    Nodes(u64),
    /// Milliseconds per move (`go movetime`).
    MoveTime(u64),
    /// A clock per game: base and increment, in milliseconds.
    Clock {
        /// Time at the start.
        base: u64,
        /// Time added after each move.
        increment: u64,
    },
}

/// Everything a match needs.
pub struct MatchArgs {
    /// The two players: network files or UCI engine commands.
    pub players: [String; 2],
    /// UCI options per player, `(name, value)`.
    pub options: [Vec<(String, String)>; 2],
    /// The game, when no player is a network to say.
    pub variant: Option<GameKind>,
    /// Games to play (rounded up to pairs).
    pub games: u32,
    /// The move limit.
    pub limit: MoveLimit,
    /// A file of openings; random ones when absent.
    pub openings: Option<PathBuf>,
    /// Plies of each random opening.
    pub random_plies: u32,
    /// Seeds the random openings.
    pub seed: u64,
    /// Games played at once.
    pub concurrency: usize,
    /// Where to write the games; rewritten after each game.
    pub pgn: Option<PathBuf>,
    /// Stop early once this test decides.
    pub sprt: Option<Sprt>,
    /// Plies after which a game is drawn (none if 0).
    pub ply_cap: u32,
    /// The longest any answer may take beyond the move's own time.
    pub timeout: Duration,
    /// Where network players run.
    pub device: DeviceSpec,
    /// The `capa` executable that runs network players (`capa uci`).
    pub capa: PathBuf,
}

/// What a match reports as it goes.
#[derive(Debug)]
pub enum MatchEvent<'a> {
    /// Before the first game.
    Started {
        /// The players' names, A then B.
        labels: [&'a str; 2],
        /// Games to play.
        games: u32,
        /// The game's name.
        variant: &'static str,
    },
    /// A game ended.
    Game {
        /// Its number, from 1.
        number: u32,
        /// The name of the player with white.
        white: &'a str,
        /// `1-0`, `0-1` or `1/2-1/2`.
        result: &'static str,
        /// How it ended.
        termination: &'a str,
        /// Its length.
        plies: usize,
        /// The match so far, from A's side.
        score: MatchScore,
    },
}

/// Plays the match: the score from A's side, and the players' names.
///
/// # Errors
/// Bad arguments, an unreadable openings file, a player that cannot be
/// started or set up, an unwritable PGN.
pub fn play(args: &MatchArgs, on_event: &(dyn Fn(MatchEvent) + Sync)) -> Result<(MatchScore, [String; 2])> {
    if args.games == 0 {
        bail!("--games must be at least 1");
    }
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    if let Some(sprt) = &args.sprt {
        sprt.validate().map_err(|e| anyhow::anyhow!("--sprt: {e}"))?;
    }
    let players = [player(args, 0)?, player(args, 1)?];
    let games: Vec<GameKind> = players.iter().filter_map(|p| p.network_game).collect();
    let game = match (games.as_slice(), args.variant) {
        ([], None) => bail!("neither player is a network: say which game with --variant"),
        ([], Some(v)) => v,
        ([first, rest @ ..], variant) => {
            if let Some(other) = rest.iter().chain(variant.as_ref()).find(|g| *g != first) {
                bail!("the players play different games: {} and {}", first.name(), other.name());
            }
            *first
        }
    };
    match game {
        GameKind::Capablanca => play_match::<Capablanca>(args, &players, on_event),
        GameKind::Chess => play_match::<Chess>(args, &players, on_event),
    }
}

/// A player: how to start it, and what to call it.
struct Player {
    program: PathBuf,
    args: Vec<String>,
    /// Its name in the PGN and the summary.
    label: String,
    /// The game its network plays, for network players.
    network_game: Option<GameKind>,
    options: Vec<(String, String)>,
}

fn player(args: &MatchArgs, index: usize) -> Result<Player> {
    let spec = &args.players[index];
    let which = ["A", "B"][index];
    let path = Path::new(spec);
    let options = args.options[index].clone();
    if path.is_file() && path.extension().is_some_and(|e| e == "safetensors") {
        let config = capa_net::read_net_config(path).with_context(|| format!("player {which}: {spec}"))?;
        let program = args.capa.clone();
        let label = path.file_stem().map_or_else(|| spec.clone(), |s| s.to_string_lossy().into_owned());
        let net = path.to_string_lossy().into_owned();
        let (backend, device) = (args.device.backend.to_string(), args.device.index.to_string());
        let engine_args = ["uci", "--net", &net, "--backend", &backend, "--device", &device];
        return Ok(Player {
            program,
            args: engine_args.map(String::from).to_vec(),
            label,
            network_game: Some(config.game),
            options,
        });
    }
    let mut words = spec.split_whitespace();
    let program = words.next().with_context(|| format!("player {which} is empty"))?;
    Ok(Player {
        program: PathBuf::from(program),
        args: words.map(String::from).collect(),
        label: spec.clone(),
        network_game: None,
        options,
    })
}

impl Player {
    /// Starts the process and sets it up for `G`.
    fn start<G: Game>(&self, timeout: Duration) -> Result<UciEngine> {
        let mut engine = UciEngine::launch(&self.program, &self.args, timeout)?;
        engine.select_variant(G::NAME)?;
        for (name, value) in &self.options {
            engine.set_option(name, value)?;
        }
        engine.ready()?;
        Ok(engine)
    }
}

/// Spreads the pairs' opening seeds.
const PAIR_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// The openings: from the file, or random plies from the start.
fn openings<G: Game>(args: &MatchArgs) -> Result<Vec<History<G>>> {
    let Some(path) = &args.openings else {
        let pairs = args.games.div_ceil(2);
        return Ok((0..pairs)
            .map(|pair| {
                random_opening(args.random_plies, &mut Rng::new(args.seed ^ u64::from(pair).wrapping_mul(PAIR_SEED)))
            })
            .collect());
    };
    Ok(read_openings(path)?)
}

/// How one game ended.
struct Finished<G: Game> {
    history: History<G>,
    winner: Option<Color>,
    termination: String,
}

/// What the workers share.
struct Shared {
    score: MatchScore,
    /// Finished games' PGN, by game index.
    pgn: std::collections::BTreeMap<u32, String>,
    error: Option<anyhow::Error>,
}

fn play_match<G: Game>(
    args: &MatchArgs,
    players: &[Player; 2],
    on_event: &(dyn Fn(MatchEvent) + Sync),
) -> Result<(MatchScore, [String; 2])> {
    let openings = openings::<G>(args)?;
    let total = args.games.div_ceil(2) * 2;
    let next = AtomicU32::new(0);
    let stop = AtomicBool::new(false);
    let shared = Mutex::new(Shared { score: MatchScore::default(), pgn: Default::default(), error: None });
    on_event(MatchEvent::Started { labels: [&players[0].label, &players[1].label], games: total, variant: G::NAME });
    std::thread::scope(|scope| {
        for _ in 0..args.concurrency.min(total as usize) {
            scope.spawn(|| {
                if let Err(e) = worker::<G>(args, players, &openings, &next, &stop, &shared, total, on_event) {
                    stop.store(true, Ordering::Relaxed);
                    shared.lock().expect("not poisoned").error.get_or_insert(e);
                }
            });
        }
    });
    let shared = shared.into_inner().expect("not poisoned");
    if let Some(e) = shared.error {
        return Err(e);
    }
    Ok((shared.score, [players[0].label.clone(), players[1].label.clone()]))
}

#[allow(clippy::too_many_arguments)]
fn worker<G: Game>(
    args: &MatchArgs,
    players: &[Player; 2],
    openings: &[History<G>],
    next: &AtomicU32,
    stop: &AtomicBool,
    shared: &Mutex<Shared>,
    total: u32,
    on_event: &(dyn Fn(MatchEvent) + Sync),
) -> Result<()> {
    let start =
        |i: usize| players[i].start::<G>(args.timeout).with_context(|| format!("cannot start {}", players[i].label));
    let mut engines = [Some(start(0)?), Some(start(1)?)];
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let index = next.fetch_add(1, Ordering::Relaxed);
        if index >= total {
            return Ok(());
        }
        // Even games: A has white. Each pair shares an opening.
        let a_color = if index.is_multiple_of(2) { Color::White } else { Color::Black };
        let opening = openings[(index / 2) as usize % openings.len()].clone();
        for (i, engine) in engines.iter_mut().enumerate() {
            if engine.is_none() {
                *engine = Some(start(i)?);
            }
        }
        let finished = play_game(args, players, &mut engines, opening, a_color);
        let a_result = match finished.winner {
            None => GameResult::Draw,
            Some(winner) if winner == a_color => GameResult::Win,
            Some(_) => GameResult::Loss,
        };
        let (white, black) = if a_color == Color::White { (0, 1) } else { (1, 0) };
        let round = (index + 1).to_string();
        let tags = PgnTags {
            event: "capa match",
            site: "capa",
            round: &round,
            white: &players[white].label,
            black: &players[black].label,
        };
        let pgn = write_pgn(
            &tags,
            finished.history.start(),
            finished.history.moves(),
            &[],
            finished.winner,
            &finished.termination,
        );
        let mut shared = shared.lock().expect("not poisoned");
        match a_result {
            GameResult::Win => shared.score.wins += 1,
            GameResult::Draw => shared.score.draws += 1,
            GameResult::Loss => shared.score.losses += 1,
        }
        shared.pgn.insert(index, pgn);
        let score = shared.score;
        on_event(MatchEvent::Game {
            number: index + 1,
            white: &players[white].label,
            result: match finished.winner {
                Some(Color::White) => "1-0",
                Some(Color::Black) => "0-1",
                None => "1/2-1/2",
            },
            termination: &finished.termination,
            plies: finished.history.moves().len(),
            score,
        });
        if let Some(path) = &args.pgn {
            let text: String = shared.pgn.values().map(String::as_str).collect();
            write_atomically(path, text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
        }
        if args.sprt.as_ref().is_some_and(|sprt| sprt.verdict(&score).is_some()) {
            stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Plays one game; `engines[0]` is A, whose colour is `a_color`. A player
/// whose engine fails loses, and its engine is dropped to be restarted.
fn play_game<G: Game>(
    args: &MatchArgs,
    players: &[Player; 2],
    engines: &mut [Option<UciEngine>; 2],
    opening: History<G>,
    a_color: Color,
) -> Finished<G> {
    let mut history = if args.ply_cap > 0 { opening.with_ply_cap(args.ply_cap) } else { opening };
    let mut clocks = match args.limit {
        MoveLimit::Clock { base, .. } => [base as i64; 2],
        _ => [0; 2],
    };
    for (i, slot) in engines.iter_mut().enumerate() {
        if let Some(engine) = slot
            && let Err(e) = engine.new_game()
        {
            tracing::warn!("{}: {e}", players[i].label);
            *slot = None;
        }
    }
    loop {
        if let Some(outcome) = history.outcome() {
            let winner = outcome.winner(history.current().turn());
            return Finished { history, winner, termination: outcome.reason.to_string() };
        }
        let mover = history.current().turn();
        let who = if mover == a_color { 0 } else { 1 };
        let forfeit = |history: History<G>, why: String| {
            tracing::warn!("{} loses the game: {why}", players[who].label);
            Finished { history, winner: Some(!mover), termination: format!("forfeit: {why}") }
        };
        let Some(engine) = engines[who].as_mut() else {
            return forfeit(history, "its engine could not start a new game".to_string());
        };
        let position = position_command(&history);
        let side = mover.index();
        let go = match args.limit {
            MoveLimit::Nodes(n) => Go::Nodes(n),
            MoveLimit::MoveTime(ms) => Go::MoveTime(ms),
            MoveLimit::Clock { increment, .. } => Go::Clock {
                wtime: clocks[0].max(0) as u64,
                btime: clocks[1].max(0) as u64,
                winc: increment,
                binc: increment,
                moves_to_go: None,
            },
        };
        let thinking = Instant::now();
        let answer = engine.go(&position, go);
        if let MoveLimit::Clock { increment, .. } = args.limit {
            clocks[side] -= thinking.elapsed().as_millis() as i64;
            if clocks[side] < 0 {
                return forfeit(history, "out of time".to_string());
            }
            clocks[side] += increment as i64;
        }
        let best = match answer {
            Ok(output) => output.best,
            Err(e) => {
                engines[who] = None;
                return forfeit(history, e.to_string());
            }
        };
        let Some(best) = best else {
            return forfeit(history, "it gave no move in a position with legal moves".to_string());
        };
        match history.current().parse_uci(&best) {
            Ok(m) => history.play(m),
            Err(e) => return forfeit(history, format!("illegal move: {e}")),
        }
    }
}
