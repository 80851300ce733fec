//! `capa match`: games between two players, each a network (played through
//! `capa uci`) or any UCI engine, with the score, the Elo difference and an
//! optional SPRT.
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
use capa_data::{Go, MatchScore, PgnTags, Sprt, SprtVerdict, UciEngine, position_command, write_atomically, write_pgn};
use capa_mcts::{Rng, random_opening};
use capa_net::{DeviceSpec, GameKind};
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Color, Game, GameResult, History};

use crate::uci::play_uci_moves;

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
}

/// Runs the match and prints its result.
///
/// # Errors
/// As [`play`].
pub fn run(args: &MatchArgs) -> Result<()> {
    let started = Instant::now();
    let (score, labels) = play(args)?;
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
    if let Some(sprt) = &args.sprt {
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

/// Plays the match: the score from A's side, and the players' names.
///
/// # Errors
/// Bad arguments, an unreadable openings file, a player that cannot be
/// started or set up, an unwritable PGN.
pub fn play(args: &MatchArgs) -> Result<(MatchScore, [String; 2])> {
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
        GameKind::Capablanca => play_match::<Capablanca>(args, &players),
        GameKind::Chess => play_match::<Chess>(args, &players),
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
        let program = std::env::current_exe().context("cannot find the capa executable to run the network with")?;
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
    read_openings(path)
}

/// The openings of a file: one per line, UCI moves from the start position
/// or a FEN optionally followed by `moves ...`; `#` starts a comment.
///
/// # Errors
/// An unreadable file, a bad line (with its number), or no opening at all.
pub fn read_openings<G: Game>(path: &Path) -> Result<Vec<History<G>>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read the openings {}", path.display()))?;
    let mut openings = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let opening =
            parse_opening::<G>(line).with_context(|| format!("{} line {}: `{line}`", path.display(), number + 1))?;
        openings.push(opening);
    }
    if openings.is_empty() {
        bail!("{} holds no openings", path.display());
    }
    Ok(openings)
}

/// One opening: a FEN, optionally followed by `moves ...`, or UCI moves
/// from the start position.
fn parse_opening<G: Game>(line: &str) -> Result<History<G>> {
    let (start, moves) = if line.contains('/') {
        let (fen, moves) = line.split_once(" moves ").unwrap_or((line, ""));
        (G::from_fen(fen.trim()).context("bad FEN")?, moves)
    } else {
        (G::startpos(), line.strip_prefix("moves ").unwrap_or(line))
    };
    let mut history = History::new(start);
    play_uci_moves(&mut history, moves.split_whitespace())?;
    if let Some(outcome) = history.outcome() {
        bail!("the game is already over ({})", outcome.reason);
    }
    Ok(history)
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

fn play_match<G: Game>(args: &MatchArgs, players: &[Player; 2]) -> Result<(MatchScore, [String; 2])> {
    let openings = openings::<G>(args)?;
    let total = args.games.div_ceil(2) * 2;
    let next = AtomicU32::new(0);
    let stop = AtomicBool::new(false);
    let shared = Mutex::new(Shared { score: MatchScore::default(), pgn: Default::default(), error: None });
    eprintln!(
        "{} vs {}: {total} games of {}, {} at a time, {:?} per move",
        players[0].label,
        players[1].label,
        G::NAME,
        args.concurrency,
        args.limit
    );
    std::thread::scope(|scope| {
        for _ in 0..args.concurrency.min(total as usize) {
            scope.spawn(|| {
                if let Err(e) = worker::<G>(args, players, &openings, &next, &stop, &shared, total) {
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

fn worker<G: Game>(
    args: &MatchArgs,
    players: &[Player; 2],
    openings: &[History<G>],
    next: &AtomicU32,
    stop: &AtomicBool,
    shared: &Mutex<Shared>,
    total: u32,
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
        let (elo, low, high) = score.elo();
        eprintln!(
            "game {} ({} white): {} by {} in {} plies | +{} ={} -{} {:.1}% Elo {elo:+.0} ({low:+.0} to {high:+.0})",
            index + 1,
            players[white].label,
            match finished.winner {
                Some(Color::White) => "1-0",
                Some(Color::Black) => "0-1",
                None => "1/2-1/2",
            },
            finished.termination,
            finished.history.moves().len(),
            score.wins,
            score.draws,
            score.losses,
            100.0 * score.fraction()
        );
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
            eprintln!("{}: {e}", players[i].label);
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
            eprintln!("{} loses the game: {why}", players[who].label);
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

/// Parses `--sprt elo0,elo1[,alpha,beta]`.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_sprt(text: &str) -> Result<Sprt, String> {
    let numbers: Vec<f64> = text
        .split(',')
        .map(|n| n.trim().parse::<f64>().map_err(|_| format!("`{n}` is not a number")))
        .collect::<Result<_, _>>()?;
    let sprt = match numbers[..] {
        [elo0, elo1] => Sprt { elo0, elo1, alpha: 0.05, beta: 0.05 },
        [elo0, elo1, alpha, beta] => Sprt { elo0, elo1, alpha, beta },
        _ => return Err("expected elo0,elo1 or elo0,elo1,alpha,beta".to_string()),
    };
    sprt.validate()?;
    Ok(sprt)
}

/// Parses `--tc BASE+INC` in seconds (e.g. `10+0.1`) into a clock.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_clock(text: &str) -> Result<MoveLimit, String> {
    let (base, increment) = text.split_once('+').unwrap_or((text, "0"));
    let seconds = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e7)
            .map(|v| (v * 1000.0).round() as u64)
            .ok_or_else(|| format!("`{s}` is not a number of seconds"))
    };
    let (base, increment) = (seconds(base)?, seconds(increment)?);
    if base == 0 {
        return Err("the base time must be above 0".to_string());
    }
    Ok(MoveLimit::Clock { base, increment })
}

/// Parses `NAME=VALUE` for `--option-a` and `--option-b`.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_option(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_string(), value.trim().to_string())),
        _ => Err(format!("`{text}`: expected NAME=VALUE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openings_parse_and_bad_ones_say_why() {
        let h = parse_opening::<Chess>("e2e4 e7e5").unwrap();
        assert_eq!(h.moves().len(), 2);
        let h = parse_opening::<Chess>("moves d2d4").unwrap();
        assert_eq!(h.moves().len(), 1);
        let h = parse_opening::<Chess>("4k3/8/8/8/8/8/8/4K2R w K - 0 1 moves e1g1").unwrap();
        assert_eq!(h.moves().len(), 1);
        let err = parse_opening::<Chess>("e2e4 e2e4").unwrap_err();
        assert!(format!("{err:#}").contains("move 2"), "{err:#}");
        assert!(parse_opening::<Chess>("8/8/8 w - - 0 1").is_err());
        assert!(parse_opening::<Chess>("f2f3 e7e5 g2g4 d8h4").is_err(), "a finished game is no opening");
    }

    #[test]
    fn flags_parse() {
        assert_eq!(parse_clock("10+0.1"), Ok(MoveLimit::Clock { base: 10_000, increment: 100 }));
        assert_eq!(parse_clock("60"), Ok(MoveLimit::Clock { base: 60_000, increment: 0 }));
        assert!(parse_clock("0+1").is_err() && parse_clock("x+1").is_err() && parse_clock("-5").is_err());
        assert_eq!(parse_sprt("0,10").unwrap().alpha, 0.05);
        assert_eq!(parse_sprt("-5, 5, 0.1, 0.2").unwrap().beta, 0.2);
        assert!(parse_sprt("10,0").is_err() && parse_sprt("1").is_err() && parse_sprt("a,b").is_err());
        assert_eq!(parse_option("UCI_Elo=1500"), Ok(("UCI_Elo".into(), "1500".into())));
        assert!(parse_option("=3").is_err() && parse_option("Threads").is_err());
    }
}
