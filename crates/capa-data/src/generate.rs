//! Teacher data (`capa distill gen`): a UCI engine plays itself at a fixed depth and,
//! before every move, reports its best `multipv` moves with their scores:
//! the teacher data of distillation, one [`TeacherGame`] file per game.
//!
//! Game `i` of a generation always starts from the same opening (the
//! seed's random plies, or line `i` of the openings file, round robin), so
//! an interrupted generation resumes by playing the games whose files are
//! missing. The settings are saved in the output folder, and a resume
//! with other settings is refused rather than mixing two kinds of data.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capa_rules::{Game, History, MoveList};
use capa_rules::{Rng, mix, random_opening};
use capa_uci::{Go, Restarting, UciEngine, position_command};

use crate::{
    Candidate, Ending, TEACHER_EXTENSION, TeacherGame, read_openings, remove_stale_temporaries, write_atomically,
};

/// The settings file in the output folder.
const SETTINGS: &str = "generation.txt";
/// Spreads the games' opening seeds.
const GAME_SEED: u64 = 0x9e37_79b9_7f4a_7c15;
/// Keeps the exploration draws apart from the openings'.
const EXPLORE_SEED: u64 = 0x6a09_e667_f3bc_c908;
/// Failed games in a row, all workers together, before the generation stops.
const MAX_FAILURES_IN_A_ROW: usize = 3;

/// A generation of teacher games: what `capa distill gen` is asked for.
#[derive(Debug)]
pub struct Generation {
    /// The engine command.
    pub engine: String,
    /// Games the generation holds when done.
    pub games: usize,
    /// `go depth` per position.
    pub depth: u32,
    /// Candidates per position (`MultiPV`).
    pub multipv: u32,
    /// Engine processes at once.
    pub workers: usize,
    /// The output folder.
    pub out: PathBuf,
    /// Random plies opening each game (without `openings`).
    pub random_plies: u32,
    /// Openings, used in turn.
    pub openings: Option<PathBuf>,
    /// Seeds the random openings.
    pub seed: u64,
    /// Plies after which a game is drawn (none if 0).
    pub ply_cap: u32,
    /// The chance that a move after the opening is a uniformly random legal
    /// move rather than the engine's best (0 to 1).
    pub explore: f64,
    /// The engine's hash table, in MiB.
    pub hash: u32,
    /// More engine options.
    pub options: Vec<(String, String)>,
    /// Continue a generation in `out`.
    pub resume: bool,
    /// The longest any answer may take.
    pub timeout: Duration,
}

impl Generation {
    /// The settings that decide what the games are: a resume must match them.
    fn settings<G: Game>(&self) -> String {
        let options: Vec<String> = self.options.iter().map(|(name, value)| format!("{name}={value}")).collect();
        let openings = self.openings.as_ref().map_or_else(
            || format!("random plies {} seed {}", self.random_plies, self.seed),
            |path| format!("file {}", path.display()),
        );
        // Without exploration the settings read as before it existed, so that
        // older generations still resume.
        let explore = if self.explore > 0.0 { format!("explore {}\n", self.explore) } else { String::new() };
        format!(
            "engine {}\ngame {}\ndepth {}\nmultipv {}\nopenings {openings}\nply cap {}\nhash {}\noptions {}\n{explore}",
            self.engine,
            G::NAME,
            self.depth,
            self.multipv,
            self.ply_cap,
            self.hash,
            options.join(" ")
        )
    }
}

/// The file of game `index`.
fn game_file(out: &Path, index: usize) -> PathBuf {
    out.join(format!("{index:06}.{TEACHER_EXTENSION}"))
}

/// What a generation reports as it goes.
#[derive(Debug)]
pub enum GenerationEvent {
    /// The games left to play, before the first starts.
    Started {
        /// Games already in the folder.
        done: usize,
        /// Games to play now.
        to_play: usize,
        /// Engine processes at work.
        workers: usize,
    },
    /// A game was written.
    Game {
        /// Games written so far by this run.
        games: usize,
        /// Their positions.
        positions: usize,
        /// Positions per second so far.
        rate: f64,
    },
    /// A game failed; the engine is restarted and the game tried again.
    Retry {
        /// The game.
        index: usize,
        /// What went wrong.
        error: String,
    },
    /// Temporary files an interrupted generation left were removed.
    RemovedTemporaries(usize),
}

/// What a finished generation did.
#[derive(Clone, Copy, Debug)]
pub struct GenerationSummary {
    /// Games written by this run.
    pub games: usize,
    /// Their positions.
    pub positions: usize,
    /// Wall time.
    pub seconds: f64,
    /// Engine processes at work.
    pub workers: usize,
}

/// Plays the generation's missing games with `workers` engines, writing each
/// game as it ends.
///
/// # Errors
/// Bad arguments, an output folder that holds another generation, an
/// engine that cannot start or play the game, an engine that fails
/// repeatedly, an unwritable file.
pub fn generate<G: Game>(args: &Generation, on_event: &(dyn Fn(GenerationEvent) + Sync)) -> Result<GenerationSummary> {
    if args.games == 0 || args.workers == 0 || args.depth == 0 || args.multipv == 0 {
        bail!("--games, --workers, --depth and --multipv must each be at least 1");
    }
    if !(0.0..=1.0).contains(&args.explore) {
        bail!("--explore is a probability: {} is not between 0 and 1", args.explore);
    }
    let openings: Vec<History<G>> = match &args.openings {
        Some(path) => read_openings(path)?,
        None => Vec::new(),
    };
    // An engine that cannot start or take the settings fails here, before
    // the output folder exists.
    drop(start_engine::<G>(args)?);
    let missing = prepare_output::<G>(args, on_event)?;
    let started = Instant::now();
    let workers = args.workers.min(missing.len()).max(1);
    on_event(GenerationEvent::Started { done: args.games - missing.len(), to_play: missing.len(), workers });
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let progress = Mutex::new(Progress::default());
    std::thread::scope(|scope| {
        for _ in 0..args.workers.min(missing.len()) {
            scope.spawn(|| {
                if let Err(e) = worker::<G>(args, &openings, &missing, &next, &stop, &progress, on_event, started) {
                    stop.store(true, Ordering::Relaxed);
                    progress.lock().expect("not poisoned").error.get_or_insert(e);
                }
            });
        }
    });
    let progress = progress.into_inner().expect("not poisoned");
    if let Some(e) = progress.error {
        return Err(e.context(format!(
            "{} games written to {}; run again with --resume to continue",
            progress.games,
            args.out.display()
        )));
    }
    Ok(GenerationSummary {
        games: progress.games,
        positions: progress.positions,
        seconds: started.elapsed().as_secs_f64(),
        workers,
    })
}

/// Creates the folder or checks it for a resume; the indices of the games to play.
fn prepare_output<G: Game>(args: &Generation, on_event: &dyn Fn(GenerationEvent)) -> Result<Vec<usize>> {
    let settings_path = args.out.join(SETTINGS);
    let settings = args.settings::<G>();
    if args.resume {
        let saved = std::fs::read_to_string(&settings_path).with_context(|| {
            format!("--resume: {} holds no generation to continue ({} is missing)", args.out.display(), SETTINGS)
        })?;
        if saved != settings {
            bail!(
                "--resume: {} was generated with other settings; resume with the same ones or use another --out\n\
                 saved:\n{saved}asked:\n{settings}",
                args.out.display()
            );
        }
        let removed = remove_stale_temporaries(&args.out)?;
        if removed > 0 {
            on_event(GenerationEvent::RemovedTemporaries(removed));
        }
    } else {
        if args.out.exists() && std::fs::read_dir(&args.out)?.next().is_some() {
            bail!(
                "{} is not empty: pass --resume to continue the generation in it, or choose an empty --out",
                args.out.display()
            );
        }
        std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
        write_atomically(&settings_path, settings.as_bytes())
            .with_context(|| format!("cannot write {}", settings_path.display()))?;
    }
    Ok((0..args.games).filter(|&i| !game_file(&args.out, i).exists()).collect())
}

/// What the workers share.
#[derive(Default)]
struct Progress {
    games: usize,
    positions: usize,
    failures_in_a_row: usize,
    error: Option<anyhow::Error>,
}

#[allow(clippy::too_many_arguments)]
fn worker<G: Game>(
    args: &Generation,
    openings: &[History<G>],
    missing: &[usize],
    next: &AtomicUsize,
    stop: &AtomicBool,
    progress: &Mutex<Progress>,
    on_event: &(dyn Fn(GenerationEvent) + Sync),
    started: Instant,
) -> Result<()> {
    let mut engine: Restarting<(UciEngine, String)> = Restarting::default();
    while !stop.load(Ordering::Relaxed) {
        let Some(&index) = missing.get(next.fetch_add(1, Ordering::Relaxed)) else { return Ok(()) };
        let opening = match openings {
            [] => random_opening(args.random_plies, &mut Rng::new(args.seed ^ (index as u64).wrapping_mul(GAME_SEED))),
            _ => openings[index % openings.len()].clone(),
        };
        let mut result = Err(anyhow::anyhow!("not played"));
        for _attempt in 0..2 {
            let (uci, teacher) = engine.get_or_start(|| start_engine::<G>(args))?;
            let explore = Rng::new(mix(args.seed ^ EXPLORE_SEED, index as u64));
            result = play_game(uci, teacher, &opening, explore, args);
            match &result {
                Ok(_) => break,
                Err(e) => {
                    on_event(GenerationEvent::Retry { index, error: format!("{e:#}") });
                    engine.failed();
                }
            }
        }
        let mut shared = progress.lock().expect("not poisoned");
        match result {
            Ok(game) => {
                let path = game_file(&args.out, index);
                game.write(&path)?;
                shared.games += 1;
                shared.positions += game.moves.len();
                shared.failures_in_a_row = 0;
                let rate = shared.positions as f64 / started.elapsed().as_secs_f64().max(1e-9);
                on_event(GenerationEvent::Game { games: shared.games, positions: shared.positions, rate });
            }
            Err(e) => {
                shared.failures_in_a_row += 1;
                if shared.failures_in_a_row >= MAX_FAILURES_IN_A_ROW {
                    return Err(e.context(format!("{MAX_FAILURES_IN_A_ROW} games in a row failed")));
                }
            }
        }
    }
    Ok(())
}

/// Starts the engine, set up for `G` and the generation; also its description.
fn start_engine<G: Game>(args: &Generation) -> Result<(UciEngine, String)> {
    let mut engine = UciEngine::start_with_timeout(&args.engine, args.timeout)?;
    engine.select_variant(G::KIND)?;
    for (name, value) in [("Threads", "1".to_string()), ("Hash", args.hash.to_string())] {
        if engine.option(name).is_some() {
            engine.set_option(name, &value)?;
        }
    }
    engine.set_option("MultiPV", &args.multipv.to_string())?;
    for (name, value) in &args.options {
        engine.set_option(name, value)?;
    }
    engine.ready()?;
    let teacher = format!("{} depth {} multipv {}", engine.name(), args.depth, args.multipv);
    Ok((engine, teacher))
}

/// Plays one game from `opening`: every position analysed, the opening's
/// moves played as they are, then the engine's best moves, each replaced by
/// a random legal move with the chance `args.explore` (drawn from `explore`).
fn play_game<G: Game>(
    engine: &mut UciEngine,
    teacher: &str,
    opening: &History<G>,
    mut explore: Rng,
    args: &Generation,
) -> Result<TeacherGame<G>> {
    let mut legal = MoveList::new();
    engine.new_game()?;
    let mut history = History::new(opening.start().clone());
    if args.ply_cap > 0 {
        history = history.with_ply_cap(args.ply_cap);
    }
    let mut candidates = Vec::new();
    let outcome = loop {
        if let Some(outcome) = history.outcome() {
            break outcome;
        }
        let output = engine.go(&position_command(&history), Go::Depth(args.depth))?;
        let position = history.current();
        let mut listed: Vec<Candidate<G::Move>> = Vec::with_capacity(output.lines.len());
        for line in &output.lines {
            let Some(first) = line.pv.first() else { continue };
            let mv = position
                .parse_move(first)
                .with_context(|| format!("`{}` gave the line {first} in {}", args.engine, position.fen()))?;
            if !listed.iter().any(|c| c.mv == mv) {
                listed.push(Candidate { mv, score: line.score });
            }
        }
        let best = output.best.with_context(|| format!("`{}` found no move in {}", args.engine, position.fen()))?;
        let best = position
            .parse_move(&best)
            .with_context(|| format!("`{}` played {best} in {}", args.engine, position.fen()))?;
        if listed.is_empty() {
            bail!("`{}` sent no scored line before its move in {}", args.engine, position.fen());
        }
        let played = match opening.moves().get(history.moves().len()) {
            Some(&mv) => mv,
            None if args.explore > 0.0 && explore.uniform() < args.explore => {
                position.legal_moves(&mut legal);
                legal[(explore.next_u64() % legal.len() as u64) as usize]
            }
            None => best,
        };
        candidates.push(listed);
        history.play(played);
    };
    Ok(TeacherGame {
        start: history.start().clone(),
        teacher: teacher.to_string(),
        moves: history.moves().to_vec(),
        candidates,
        winner: outcome.winner(history.current().turn()),
        ending: Ending::Rules(outcome.reason),
    })
}
