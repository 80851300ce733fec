//! A UCI engine as a player: any engine command, or a network run as a
//! `capa uci` child process. One process per game slot (or fewer, shared
//! round robin), the processes of a batch answering at once on threads of
//! their own. A process that fails forfeits that game and is started again
//! for the next move it is asked.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capa_rules::{Game, GameKind, History};
use capa_uci::{DEFAULT_TIMEOUT, Go, OptionKind, Restarting, UciEngine, position_command};

use crate::player::{Answer, Player, Turn};

/// How long each move may take, when the match has no clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveLimit {
    /// Playouts or nodes per move (`go nodes`).
    Nodes(u64),
    /// Milliseconds per move (`go movetime`).
    MoveTime(u64),
    /// A clock per game: base and increment, in milliseconds (the match
    /// keeps the clocks; see [`crate::MatchSettings::clock`]).
    Clock {
        /// Time at the start.
        base: u64,
        /// Time added after each move.
        increment: u64,
    },
}

impl MoveLimit {
    /// The clock a match keeps, base and increment in ms, for a clock limit.
    pub fn clock(self) -> Option<(u64, u64)> {
        match self {
            MoveLimit::Clock { base, increment } => Some((base, increment)),
            MoveLimit::Nodes(_) | MoveLimit::MoveTime(_) => None,
        }
    }
}

/// How to start the engine, and how it is set up.
#[derive(Clone, Debug)]
struct Launch {
    program: PathBuf,
    args: Vec<String>,
    /// UCI options, in order, set after every start.
    options: Vec<(String, String)>,
    timeout: Duration,
}

impl Launch {
    fn start(&self, variant: GameKind) -> Result<UciEngine> {
        let mut engine = UciEngine::launch(&self.program, &self.args, self.timeout)?;
        engine.select_variant(variant)?;
        for (name, value) in &self.options {
            engine.set_option(name, value)?;
        }
        engine.ready()?;
        Ok(engine)
    }
}

/// A UCI engine playing one side of a match.
pub struct UciPlayer {
    name: String,
    launch: Launch,
    limit: MoveLimit,
    processes: Vec<Restarting<UciEngine>>,
    /// The `UCI_Elo` range, once [`UciPlayer::limit_strength`] was called.
    elo_range: Option<(i64, i64)>,
    elo: Option<i64>,
}

impl UciPlayer {
    /// The engine started by `command` (a program and its arguments, split
    /// at spaces), named by the command.
    ///
    /// # Errors
    /// An empty command.
    pub fn command(command: &str) -> Result<UciPlayer> {
        let command = command.trim();
        let mut words = command.split_whitespace();
        let program = words.next().context("the engine command is empty")?;
        Ok(UciPlayer::new(command.to_string(), PathBuf::from(program), words.map(String::from).collect()))
    }

    /// The network file `net` played by `capa uci` (`capa` is the
    /// executable; `device_args` are its flags for the device, such as
    /// `--backend cpu`), named by the file's stem.
    pub fn network(capa: &Path, net: &Path, device_args: &[String]) -> UciPlayer {
        let name = net.file_stem().map_or_else(|| net.display().to_string(), |s| s.to_string_lossy().into_owned());
        let args = ["uci".to_string(), "--net".to_string(), net.to_string_lossy().into_owned()]
            .into_iter()
            .chain(device_args.iter().cloned())
            .collect();
        UciPlayer::new(name, capa.to_path_buf(), args)
    }

    /// The engine `command` started for `G`, its strength limited (at its
    /// lowest `UCI_Elo` until [`UciPlayer::set_elo`]), searching `nodes` per
    /// move: the opponent of the trainer's `[eval]` and curriculum games.
    ///
    /// # Errors
    /// An engine that cannot start, play `G`, or limit its strength.
    pub fn strength_limited<G: Game>(command: &str, nodes: u64) -> Result<UciPlayer> {
        let mut engine = UciPlayer::command(command)?.with_limit(MoveLimit::Nodes(nodes));
        engine.start::<G>()?;
        engine.limit_strength()?;
        Ok(engine)
    }

    /// Its name: the command, or the network file's stem.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `UCI_Elo` range, once the strength is limited.
    pub fn elo_range(&self) -> Option<(i64, i64)> {
        self.elo_range
    }

    fn new(name: String, program: PathBuf, args: Vec<String>) -> UciPlayer {
        UciPlayer {
            name,
            launch: Launch { program, args, options: Vec::new(), timeout: DEFAULT_TIMEOUT },
            limit: MoveLimit::Nodes(800),
            processes: vec![Restarting::default()],
            elo_range: None,
            elo: None,
        }
    }

    /// Names it (in PGN and logs) other than by its command.
    pub fn with_name(mut self, name: &str) -> UciPlayer {
        self.name = name.to_string();
        self
    }

    /// Sets UCI options after every start, in order.
    pub fn with_options(mut self, options: impl IntoIterator<Item = (String, String)>) -> UciPlayer {
        self.launch.options.extend(options);
        self
    }

    /// The limit of each move without a clock (800 nodes by default).
    pub fn with_limit(mut self, limit: MoveLimit) -> UciPlayer {
        self.limit = limit;
        self
    }

    /// The longest any answer may take beyond the move's own time.
    pub fn with_timeout(mut self, timeout: Duration) -> UciPlayer {
        self.launch.timeout = timeout;
        self
    }

    /// Engine processes: one per game slot of the match for games of their
    /// own, fewer to share them (1 by default).
    pub fn with_processes(mut self, processes: usize) -> UciPlayer {
        self.processes.resize_with(processes.max(1), Restarting::default);
        self
    }

    /// Starts the first process for `G`, so that an engine that cannot
    /// start or play `G` is an error before any game.
    ///
    /// # Errors
    /// The engine cannot start, play `G` or take its options.
    pub fn start<G: Game>(&mut self) -> Result<()> {
        let (launch, name) = (&self.launch, &self.name);
        self.processes[0].get_or_start(|| launch.start(G::KIND).with_context(|| format!("cannot start {name}")))?;
        Ok(())
    }

    /// Limits the engine's strength (`UCI_LimitStrength`) at the lowest
    /// `UCI_Elo` it advertises until [`UciPlayer::set_elo`]; returns that
    /// range. Call after [`UciPlayer::start`].
    ///
    /// # Errors
    /// An engine without `UCI_LimitStrength` and a `UCI_Elo` range.
    pub fn limit_strength(&mut self) -> Result<(i64, i64)> {
        let engine = self.processes[0].running().context("limit_strength before start")?;
        if engine.option("UCI_LimitStrength").is_none() {
            bail!("`{}` has no UCI_LimitStrength option: its strength cannot be set", self.name);
        }
        let range = match engine.option("UCI_Elo").map(|o| &o.kind) {
            Some(&OptionKind::Spin { min, max }) if min < max => (min, max),
            _ => bail!("`{}` has no UCI_Elo option with a range", self.name),
        };
        self.elo_range = Some(range);
        self.set_option("UCI_LimitStrength", "true")?;
        self.set_elo(range.0)?;
        Ok(range)
    }

    /// Sets `UCI_Elo`, clamped to the engine's range, on every process now
    /// and after every restart; returns the value set.
    ///
    /// # Errors
    /// Strength not limited, or a process that no longer takes options.
    pub fn set_elo(&mut self, elo: i64) -> Result<i64> {
        let (min, max) = self.elo_range.context("set_elo before limit_strength")?;
        let elo = elo.clamp(min, max);
        self.set_option("UCI_Elo", &elo.to_string())?;
        self.elo = Some(elo);
        Ok(elo)
    }

    /// The `UCI_Elo` set last.
    pub fn elo(&self) -> Option<i64> {
        self.elo
    }

    /// Sets an option on every live process, and for every later start.
    fn set_option(&mut self, name: &str, value: &str) -> Result<()> {
        self.launch.options.retain(|(n, _)| n != name);
        self.launch.options.push((name.to_string(), value.to_string()));
        for engine in self.processes.iter_mut().filter_map(Restarting::running) {
            engine.set_option(name, value).with_context(|| self.name.clone())?;
        }
        Ok(())
    }

    /// The engine's move at the end of `history`, on the first process.
    ///
    /// # Errors
    /// An engine that fails, finds no move, or answers an illegal one.
    pub fn best_move<G: Game>(&mut self, history: &History<G>) -> Result<G::Move> {
        let turn = Turn { slot: 0, history, seed: 0, clock: None };
        let answer = self.moves(&[turn])?.pop().context("no answer")?;
        answer.played.map_err(|why| anyhow::anyhow!("engine `{}`: {why}", self.name))
    }
}

impl<G: Game> Player<G> for UciPlayer {
    fn name(&self) -> &str {
        &self.name
    }

    fn new_game(&mut self, slot: usize) {
        // Slot i's own process is process i; a process shared with other
        // slots (fewer processes than slots) hears it too, which only
        // clears its hash table.
        if let Some(process) = self.processes.get_mut(slot)
            && let Some(engine) = process.running()
            && let Err(e) = engine.new_game()
        {
            tracing::warn!("{}: {e}; starting it again", self.name);
            process.failed();
        }
    }

    fn moves(&mut self, turns: &[Turn<'_, G>]) -> Result<Vec<Answer<G::Move>>> {
        let count = self.processes.len();
        let (launch, limit, name) = (&self.launch, self.limit, self.name.as_str());
        let mut answers: Vec<Option<Answer<G::Move>>> = vec![None; turns.len()];
        std::thread::scope(|scope| -> Result<()> {
            let mut handles = Vec::new();
            for (index, process) in self.processes.iter_mut().enumerate() {
                let mine: Vec<usize> = (0..turns.len()).filter(|&t| turns[t].slot % count == index).collect();
                if mine.is_empty() {
                    continue;
                }
                handles.push(scope.spawn(move || -> Result<Vec<(usize, Answer<G::Move>)>> {
                    mine.into_iter()
                        .map(|t| {
                            let engine = process.get_or_start(|| {
                                launch.start(G::KIND).with_context(|| format!("cannot start {name}"))
                            })?;
                            let (answer, failed) = answer(engine, &turns[t], limit);
                            if failed {
                                process.failed();
                            }
                            Ok((t, answer))
                        })
                        .collect()
                }));
            }
            for handle in handles {
                for (t, answer) in handle.join().expect("an engine thread panicked")? {
                    answers[t] = Some(answer);
                }
            }
            Ok(())
        })?;
        Ok(answers.into_iter().map(|a| a.expect("every turn answered")).collect())
    }
}

/// One move of `engine` at `turn`, and whether the engine failed (rather
/// than answering badly): a failed one is started again for the next move.
fn answer<G: Game>(engine: &mut UciEngine, turn: &Turn<'_, G>, limit: MoveLimit) -> (Answer<G::Move>, bool) {
    let go = match (turn.clock, limit) {
        (Some(clock), _) => Go::Clock {
            wtime: clock.white,
            btime: clock.black,
            winc: clock.increment,
            binc: clock.increment,
            moves_to_go: None,
        },
        (None, MoveLimit::Nodes(n)) => Go::Nodes(n),
        (None, MoveLimit::MoveTime(ms)) => Go::MoveTime(ms),
        (None, MoveLimit::Clock { base, increment }) => {
            Go::Clock { wtime: base, btime: base, winc: increment, binc: increment, moves_to_go: None }
        }
    };
    let started = Instant::now();
    let output = engine.go(&position_command(turn.history), go);
    let thinking = started.elapsed();
    let failed = output.is_err();
    let played = match output {
        Err(e) => Err(e.to_string()),
        Ok(output) => match output.best {
            None => Err("it gave no move in a position with legal moves".to_string()),
            Some(best) => turn.history.current().parse_move(&best).map_err(|e| format!("illegal move: {e}")),
        },
    };
    (Answer { played, thinking }, failed)
}
