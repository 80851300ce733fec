//! `capa uci`: a UCI engine backed by a network and the search.
//!
//! The main thread reads commands; a search runs on a thread of its own, so
//! `stop` and `isready` are answered while it thinks. The search advances in
//! chunks of playouts sized to take about 50 ms each, and checks its limits
//! (nodes, time, `stop`) between chunks. The tree is kept from move to move
//! while the game continues. Nothing on the input ends the engine but
//! `quit` or the end of the input: a line it cannot use is answered with an
//! `info string` that says why.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capa_data::{centipawns, wdl_per_mille};
use capa_mcts::{
    CachedEvaluator, KldStop, Limits, MoveInfo, PLAY_PARALLEL_SIMS, Proof, SearchParams, SearchResult, StopReason, Tree,
};
use capa_net::{BackendKind, DeviceSpec, NetEvaluator, NetGame, Precision};
use capa_rules::GameKind;
use capa_rules::Rng;

use crate::args::DeviceArgs;
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, History};

/// Where the engine writes: stdout, shared with the search thread.
type Output = Arc<Mutex<dyn Write + Send>>;

/// Playouts of the first chunk; later ones are sized from the measured speed.
const FIRST_CHUNK: u32 = 32;
/// How long a chunk should take: the engine's reaction time to `stop` and
/// its precision on time limits.
const CHUNK_TIME: Duration = Duration::from_millis(50);
/// Time between `info` lines during a search.
const INFO_EVERY: Duration = Duration::from_millis(1000);
/// Evaluations the cache keeps by default (a few hundred bytes each).
const DEFAULT_CACHE: usize = 200_000;
/// Analysis mode's table is compacted to what the root reaches beyond this
/// many nodes (about 200 bytes each with their edges: 200 MB).
const DEFAULT_ANALYSIS_NODES: usize = 1_000_000;

/// The network behind its evaluation cache.
type Evaluator<G> = CachedEvaluator<NetEvaluator<G>>;
/// What `go depth N` searches, since an MCTS has no depth to stop at.
const DEPTH_FALLBACK_PLAYOUTS: u64 = 800;

/// Run as a UCI engine on stdin and stdout: a network and the search.
///
/// The network decides the game (announced as `UCI_Variant`). Options:
/// Threads (sizes the thread pool when the network first loads), MultiPV,
/// UCI_ShowWDL, VerboseMoveStats (an `info string` per root move: prior,
/// visits, Q, D, M; then `node` with the root's visits, Q, D and M, which
/// after `go nodes 1` are the network's own), CPuct, Contempt (draw aversion, -1 to 1),
/// PolicyTemperature (Lc0's: the priors are the softmax of the logits over
/// it, 0.1 to 10; 1, the default, keeps the network's policy),
/// ProveMateInOne (a position where the side to move mates at once is
/// proven lost for the side that moved into it; on by default),
/// Temperature (0 plays the most visited move), MinibatchSize (leaves
/// per network batch, 8), NNCacheSize (evaluations kept so that a
/// position seen again costs no network call, 200000; 0 turns the cache
/// off), MoveOverhead (ms kept back from each move's
/// time), MinimumKLDGainPerNode and KLDGainAverageInterval (Lc0's KLD-gain
/// stop: a search with a limit ends once the root's visit distribution
/// changes by less than this many nats per visit over the interval; 0, the
/// default, turns it off), UCI_AnalyseMode (set by GUIs when they analyse:
/// the search pools transpositions in one table that persists across
/// positions until it holds AnalysisNodeLimit nodes), Backend, Device and
/// Precision (the network reloads on the next `isready` or `go`). Limits:
/// `go nodes`, `movetime`, `wtime/btime/winc/binc [movestogo]`, `infinite`;
/// `depth` and `mate` search 800 playouts.
/// Lines the engine cannot use are answered with `info string`.
#[derive(clap::Args, Debug)]
pub struct EngineArgs {
    /// The network file: a run's `nets/<hash>.safetensors`, any network or
    /// checkpoint capa wrote, or a shipped network's short name
    /// (`capablanca-cpu`, from the checkout's `nets/`).
    #[arg(long, value_parser = crate::args::network)]
    pub net: PathBuf,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// Runs the engine on stdin and stdout until `quit` or the end of the input.
///
/// # Errors
/// Only when the network file cannot be read at start (its game decides
/// which rules the engine plays) or stdout closes.
pub fn run(args: &EngineArgs) -> Result<()> {
    let game = capa_net::read_net_config(&args.net).context("cannot read the network")?.game;
    let output: Output = Arc::new(Mutex::new(std::io::stdout()));
    let input = std::io::stdin().lock();
    match game {
        GameKind::Capablanca => Engine::<Capablanca>::new(args, output).serve(input),
        GameKind::Chess => Engine::<Chess>::new(args, output).serve(input),
        go => anyhow::bail!(
            "{}: a {} network; UCI is for chess games (use `capa gtp` for Go)",
            args.net.display(),
            go.name()
        ),
    }
}

/// The options the engine declares, with their current values.
#[derive(Clone, Debug)]
struct Options {
    threads: usize,
    multipv: usize,
    show_wdl: bool,
    verbose_move_stats: bool,
    cpuct: f32,
    contempt: f32,
    policy_temperature: f32,
    prove_mate_in_one: bool,
    temperature: f32,
    minibatch: u16,
    cache: usize,
    move_overhead: Duration,
    kld_min_gain: f64,
    kld_interval: u32,
    analyse_mode: bool,
    analysis_nodes: usize,
    backend: BackendKind,
    device: usize,
    precision: Precision,
}

/// A search under way.
struct Running<G: Game> {
    stop: Arc<AtomicBool>,
    /// Raised just before `bestmove` is written: a client may send its next
    /// command the moment it reads it, before the thread has returned.
    answered: Arc<AtomicBool>,
    handle: JoinHandle<Tree<G>>,
}

/// When a search ends.
#[derive(Clone, Copy, Debug, Default)]
struct Plan {
    playouts: Option<u64>,
    time: Option<Duration>,
    /// `go infinite`: the limits above may end the search, but `bestmove`
    /// waits for `stop`, as the protocol asks.
    infinite: bool,
}

struct Engine<G: NetGame> {
    net: PathBuf,
    options: Options,
    evaluator: Option<Arc<Evaluator<G>>>,
    /// The backend and device the loaded network runs on.
    loaded_on: Option<DeviceSpec>,
    history: History<G>,
    tree: Option<Tree<G>>,
    running: Option<Running<G>>,
    searches: u64,
    output: Output,
}

impl<G: NetGame> Engine<G> {
    fn new(args: &EngineArgs, output: Output) -> Engine<G> {
        let defaults = SearchParams::default();
        Engine {
            net: args.net.clone(),
            options: Options {
                threads: std::thread::available_parallelism().map_or(1, usize::from),
                multipv: 1,
                show_wdl: false,
                verbose_move_stats: false,
                cpuct: defaults.cpuct,
                contempt: defaults.contempt,
                policy_temperature: defaults.policy_temperature,
                prove_mate_in_one: defaults.prove_mate_in_one,
                temperature: 0.0,
                minibatch: PLAY_PARALLEL_SIMS,
                cache: DEFAULT_CACHE,
                move_overhead: Duration::from_millis(30),
                kld_min_gain: 0.0,
                kld_interval: KldStop::default().interval,
                analyse_mode: false,
                analysis_nodes: DEFAULT_ANALYSIS_NODES,
                backend: args.device.backend,
                device: args.device.device,
                precision: args.device.precision,
            },
            evaluator: None,
            loaded_on: None,
            history: History::new(G::startpos()),
            tree: None,
            running: None,
            searches: 0,
            output,
        }
    }

    fn serve(mut self, input: impl BufRead) -> Result<()> {
        for line in input.lines() {
            let line = match line {
                Ok(line) => line,
                // Bytes that are not UTF-8: say so and read on.
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    self.say(&format!("info string ignored a line that is not UTF-8 text: {e}"))?;
                    continue;
                }
                Err(e) => return Err(e).context("cannot read stdin"),
            };
            if !self.command(&line)? {
                break;
            }
        }
        self.stop_search();
        Ok(())
    }

    /// Handles one line; `false` after `quit`.
    fn command(&mut self, line: &str) -> Result<bool> {
        let words: Vec<&str> = line.split_whitespace().collect();
        // Unknown words before a command are skipped, as the protocol asks.
        let Some(start) = words.iter().position(|w| COMMANDS.contains(w)) else {
            if !words.is_empty() {
                self.say(&format!("info string unknown command `{}`", line.trim()))?;
            }
            return Ok(true);
        };
        let (command, args) = (words[start], &words[start + 1..]);
        let over = |r: &Running<G>| r.answered.load(Ordering::Acquire) || r.handle.is_finished();
        if self.running.as_ref().is_some_and(over) && command != "stop" {
            self.stop_search();
        }
        let searching = self.running.is_some();
        match command {
            "quit" => return Ok(false),
            "uci" => self.identify()?,
            "isready" => {
                if !searching {
                    // Load now, so that the first `go` starts at once.
                    if let Err(e) = self.evaluator() {
                        self.say(&format!("info string error: {e:#}"))?;
                    }
                }
                self.say("readyok")?;
            }
            "stop" => self.stop_search(),
            "ponderhit" => self.say("info string pondering is not supported; ponderhit ignored")?,
            "debug" | "register" => {}
            _ if searching => {
                self.say(&format!("info string `{command}` ignored during a search: send `stop` first"))?;
            }
            "ucinewgame" => self.tree = None,
            "setoption" => {
                if let Err(e) = self.set_option(args) {
                    self.say(&format!("info string setoption: {e:#}"))?;
                }
            }
            "position" => match parse_position::<G>(args) {
                Ok(history) => self.history = history,
                Err(e) => self.say(&format!("info string position ignored: {e:#}"))?,
            },
            "go" => {
                if let Err(e) = self.go(args) {
                    // The GUI waits for a move: give it an answer it can act on.
                    self.say(&format!("info string go: {e:#}"))?;
                    self.say("bestmove 0000")?;
                }
            }
            _ => unreachable!("every command in COMMANDS is handled"),
        }
        Ok(true)
    }

    fn identify(&self) -> Result<()> {
        let o = &self.options;
        let game = G::NAME;
        let lines = [
            format!("id name capa {}", env!("CARGO_PKG_VERSION")),
            "id author the capa developers".to_string(),
            format!("option name UCI_Variant type combo default {game} var {game}"),
            format!("option name Threads type spin default {} min 1 max 1024", o.threads),
            format!("option name MultiPV type spin default {} min 1 max 500", o.multipv),
            format!("option name UCI_ShowWDL type check default {}", o.show_wdl),
            format!("option name VerboseMoveStats type check default {}", o.verbose_move_stats),
            format!("option name CPuct type string default {}", o.cpuct),
            format!("option name Contempt type string default {}", o.contempt),
            format!("option name PolicyTemperature type string default {}", o.policy_temperature),
            format!("option name ProveMateInOne type check default {}", o.prove_mate_in_one),
            format!("option name Temperature type string default {}", o.temperature),
            format!("option name MinibatchSize type spin default {} min 1 max 8192", o.minibatch),
            format!("option name NNCacheSize type spin default {} min 0 max 100000000", o.cache),
            format!("option name MoveOverhead type spin default {} min 0 max 10000", o.move_overhead.as_millis()),
            format!("option name MinimumKLDGainPerNode type string default {}", o.kld_min_gain),
            format!("option name KLDGainAverageInterval type spin default {} min 1 max 10000000", o.kld_interval),
            format!("option name UCI_AnalyseMode type check default {}", o.analyse_mode),
            format!("option name AnalysisNodeLimit type spin default {} min 1000 max 100000000", o.analysis_nodes),
            format!("option name Backend type combo default {} var cpu var wgpu var cuda", o.backend),
            format!("option name Device type spin default {} min 0 max 255", o.device),
            format!("option name Precision type combo default {} var f32 var f16 var bf16", o.precision),
            "uciok".to_string(),
        ];
        for line in lines {
            self.say(&line)?;
        }
        Ok(())
    }

    fn set_option(&mut self, args: &[&str]) -> Result<()> {
        let (name, value) = parse_setoption(args)?;
        let number = |what: &str| -> Result<f32> {
            value
                .parse::<f32>()
                .ok()
                .filter(|v| v.is_finite())
                .with_context(|| format!("{what} takes a number, not `{value}`"))
        };
        let integer = |what: &str, range: std::ops::RangeInclusive<usize>| -> Result<usize> {
            value.parse::<usize>().ok().filter(|v| range.contains(v)).with_context(|| {
                format!("{what} takes a whole number from {} to {}, not `{value}`", range.start(), range.end())
            })
        };
        let check = |what: &str| -> Result<bool> {
            match value.to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => bail!("{what} is true or false, not `{value}`"),
            }
        };
        let before = self.options.clone();
        let o = &mut self.options;
        match name.to_ascii_lowercase().as_str() {
            "uci_variant" => {
                if !value.eq_ignore_ascii_case(G::NAME) {
                    bail!("this network plays {}; start the engine with a {value} network to play {value}", G::NAME);
                }
            }
            "threads" => {
                o.threads = integer("Threads", 1..=1024)?;
                if self.evaluator.is_some() && o.threads != rayon::current_num_threads() {
                    bail!(
                        "Threads takes effect when the engine restarts (it runs {} now)",
                        rayon::current_num_threads()
                    );
                }
            }
            "multipv" => o.multipv = integer("MultiPV", 1..=500)?,
            "uci_showwdl" => o.show_wdl = check("UCI_ShowWDL")?,
            "verbosemovestats" => o.verbose_move_stats = check("VerboseMoveStats")?,
            "cpuct" => {
                o.cpuct = number("CPuct")?;
                self.tree = None;
            }
            "contempt" => {
                o.contempt = number("Contempt")?;
                self.tree = None;
            }
            "policytemperature" => {
                o.policy_temperature = number("PolicyTemperature")?;
                self.tree = None;
            }
            "provemateinone" => {
                o.prove_mate_in_one = check("ProveMateInOne")?;
                self.tree = None;
            }
            "temperature" => {
                o.temperature = number("Temperature")?;
                if o.temperature < 0.0 {
                    bail!("Temperature cannot be negative");
                }
            }
            "minibatchsize" => {
                o.minibatch = integer("MinibatchSize", 1..=8192)? as u16;
                self.tree = None;
            }
            "nncachesize" => {
                o.cache = integer("NNCacheSize", 0..=100_000_000)?;
                // The next search loads the network behind a cache of the new size.
                self.evaluator = None;
            }
            "moveoverhead" => o.move_overhead = Duration::from_millis(integer("MoveOverhead", 0..=10_000)? as u64),
            "minimumkldgainpernode" => {
                let gain = number("MinimumKLDGainPerNode")?;
                if gain < 0.0 {
                    bail!("MinimumKLDGainPerNode cannot be negative (0 turns the stop off)");
                }
                o.kld_min_gain = f64::from(gain);
                self.tree = None;
            }
            "kldgainaverageinterval" => {
                o.kld_interval = integer("KLDGainAverageInterval", 1..=10_000_000)? as u32;
                self.tree = None;
            }
            "uci_analysemode" => {
                o.analyse_mode = check("UCI_AnalyseMode")?;
                self.tree = None;
            }
            "analysisnodelimit" => {
                o.analysis_nodes = integer("AnalysisNodeLimit", 1000..=100_000_000)?;
                self.tree = None;
            }
            "backend" => o.backend = value.parse().map_err(|e| anyhow::anyhow!("Backend: {e}"))?,
            "device" => o.device = integer("Device", 0..=255)?,
            "precision" => o.precision = value.parse().map_err(|e| anyhow::anyhow!("Precision: {e}"))?,
            _ => bail!("no option `{name}`"),
        }
        // Checked here, so the next `go` does not trip on them.
        if let Err(e) = self.params().validate() {
            self.options = before;
            bail!("{e}");
        }
        Ok(())
    }

    fn params(&self) -> SearchParams {
        let o = &self.options;
        SearchParams {
            cpuct: o.cpuct,
            contempt: o.contempt,
            policy_temperature: o.policy_temperature,
            parallel_sims: o.minibatch,
            prove_mate_in_one: o.prove_mate_in_one,
            kld_stop: (o.kld_min_gain > 0.0)
                .then_some(KldStop { interval: o.kld_interval, min_gain_per_node: o.kld_min_gain }),
            ..SearchParams::default()
        }
    }

    /// The network, loaded on first use and again after a backend, device or precision change.
    fn evaluator(&mut self) -> Result<Arc<Evaluator<G>>> {
        let o = &self.options;
        let wanted = DeviceSpec { backend: o.backend, index: o.device, precision: o.precision };
        if let (Some(evaluator), Some(on)) = (&self.evaluator, self.loaded_on)
            && on == wanted
        {
            return Ok(Arc::clone(evaluator));
        }
        if self.evaluator.is_none() {
            // The first load sizes the thread pool that every later search uses.
            let _ = rayon::ThreadPoolBuilder::new().num_threads(self.options.threads).build_global();
        }
        self.evaluator = None;
        let network = NetEvaluator::<G>::from_file(&self.net, wanted).context("cannot load the network")?;
        let evaluator = Arc::new(CachedEvaluator::new(network, self.options.cache));
        self.evaluator = Some(Arc::clone(&evaluator));
        self.loaded_on = Some(wanted);
        Ok(evaluator)
    }

    fn go(&mut self, args: &[&str]) -> Result<()> {
        let (plan, notes) = parse_go(args, self.history.current().turn(), self.options.move_overhead)?;
        for note in notes {
            self.say(&format!("info string {note}"))?;
        }
        if let Some(outcome) = self.history.outcome() {
            self.say(&format!("info string the game is over ({})", outcome.reason))?;
            self.say("info depth 0 score cp 0")?;
            self.say("bestmove (none)")?;
            return Ok(());
        }
        let evaluator = self.evaluator()?;
        let params = self.params();
        let reused = self.tree.take().and_then(|mut tree| tree.set_history(self.history.clone()).ok().map(|()| tree));
        let kld_interval = params.kld_stop.map(|kld| kld.interval);
        let tree = match reused {
            Some(tree) => tree,
            None if self.options.analyse_mode => {
                Tree::analysis(self.history.clone(), params, 0, self.options.analysis_nodes)
                    .map_err(|e| anyhow::anyhow!("{e}"))?
            }
            None => Tree::new(self.history.clone(), params, 0).map_err(|e| anyhow::anyhow!("{e}"))?,
        };
        self.searches += 1;
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicBool::new(false));
        let search = Search {
            plan,
            stop: Arc::clone(&stop),
            answered: Arc::clone(&answered),
            output: Arc::clone(&self.output),
            multipv: self.options.multipv,
            show_wdl: self.options.show_wdl,
            verbose_move_stats: self.options.verbose_move_stats,
            temperature: self.options.temperature,
            kld_interval,
            seed: self.searches,
        };
        let handle = std::thread::Builder::new()
            .name("capa-search".to_string())
            .spawn(move || search.run(tree, &*evaluator))
            .context("cannot start the search thread")?;
        self.running = Some(Running { stop, answered, handle });
        Ok(())
    }

    /// Stops the search, if one runs, and waits for its `bestmove`.
    fn stop_search(&mut self) {
        if let Some(running) = self.running.take() {
            running.stop.store(true, Ordering::Relaxed);
            // A search thread that panicked loses its tree; the next `go` builds one.
            self.tree = running.handle.join().ok();
        }
    }

    fn say(&self, line: &str) -> Result<()> {
        say(&self.output, line)
    }
}

/// Every command the engine knows.
const COMMANDS: [&str; 11] =
    ["uci", "debug", "isready", "setoption", "register", "ucinewgame", "position", "go", "stop", "ponderhit", "quit"];

fn say(output: &Output, line: &str) -> Result<()> {
    let mut out = output.lock().unwrap_or_else(PoisonError::into_inner);
    writeln!(out, "{line}").and_then(|()| out.flush()).context("cannot write to stdout")
}

/// One search, run on its own thread.
struct Search {
    plan: Plan,
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicBool>,
    output: Output,
    multipv: usize,
    show_wdl: bool,
    verbose_move_stats: bool,
    temperature: f32,
    /// The KLD-gain stop's interval, when it is on: a chunk of the search
    /// runs at least this long, so that the stop gets to compare.
    kld_interval: Option<u32>,
    seed: u64,
}

impl Search {
    fn run<G: NetGame>(self, mut tree: Tree<G>, evaluator: &Evaluator<G>) -> Tree<G> {
        let started = Instant::now();
        let mut chunk = FIRST_CHUNK;
        let mut playouts = 0u64;
        let mut last_info = started;
        let mut last: Option<SearchResult<G>> = None;
        loop {
            let span = chunk.max(self.kld_interval.map_or(0, |interval| interval.saturating_add(1)));
            let want = match self.plan.playouts {
                Some(limit) => u64::from(span).min(limit - playouts) as u32,
                None => span,
            };
            let result = match tree.search(evaluator, Limits::playouts(want)) {
                Ok(result) => result,
                Err(e) => {
                    let _ = say(&self.output, &format!("info string search failed: {e}"));
                    break;
                }
            };
            playouts += u64::from(result.playouts);
            let elapsed = started.elapsed();
            let per_second = playouts as f64 / elapsed.as_secs_f64().max(1e-6);
            chunk = (per_second * CHUNK_TIME.as_secs_f64()).clamp(16.0, 1e6) as u32;
            let stalled = result.playouts == 0 || result.stop == StopReason::Proven;
            // A settled search ends, except where only `stop` may end it.
            let settled = result.stop == StopReason::KldGain && !self.plan.infinite;
            let done = stalled
                || settled
                || self.stop.load(Ordering::Relaxed)
                || self.plan.playouts.is_some_and(|limit| playouts >= limit)
                || self.plan.time.is_some_and(|time| elapsed + CHUNK_TIME / 2 >= time);
            if done || last_info.elapsed() >= INFO_EVERY {
                self.info(&result, playouts, elapsed);
                last_info = Instant::now();
            }
            last = Some(result);
            if done {
                break;
            }
        }
        if self.plan.infinite {
            while !self.stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        if self.verbose_move_stats
            && let Some(result) = &last
        {
            for line in move_stats(result) {
                let _ = say(&self.output, &line);
            }
        }
        let mut rng = Rng::new(self.seed);
        let chosen = last.as_ref().and_then(|r| r.choose(self.temperature, &mut rng));
        let line = match (chosen, &last) {
            (Some(m), Some(result)) => {
                let ponder = result.moves.iter().find(|i| i.mv == m).and_then(|i| i.pv.get(1));
                match ponder {
                    Some(reply) => format!("bestmove {m} ponder {reply}"),
                    None => format!("bestmove {m}"),
                }
            }
            _ => "bestmove 0000".to_string(),
        };
        self.answered.store(true, Ordering::Release);
        let _ = say(&self.output, &line);
        tree
    }

    fn info<G: Game>(&self, result: &SearchResult<G>, playouts: u64, elapsed: Duration) {
        let ms = elapsed.as_millis();
        let nps = (playouts as f64 / elapsed.as_secs_f64().max(1e-6)).round();
        // A mate found as its node was expanded is proven without a visit.
        let visited: Vec<&MoveInfo<G>> =
            result.moves.iter().filter(|m| m.visits > 0 || m.proof != Proof::Unknown).take(self.multipv).collect();
        if visited.is_empty() {
            // A search of one node: the root's own value, so a client
            // always gets a score before `bestmove`.
            if let Some(first) = result.moves.first() {
                let cp = centipawns(result.q).round() as i64;
                let mut line =
                    format!("info depth 1 seldepth 1 time {ms} nodes {} nps {nps} score cp {cp}", result.visits);
                if self.show_wdl {
                    let [w, d, l] = wdl_per_mille(result.q, result.d);
                    line.push_str(&format!(" wdl {w} {d} {l}"));
                }
                line.push_str(&format!(" pv {}", first.mv));
                let _ = say(&self.output, &line);
            }
            return;
        }
        let seldepth = visited.iter().map(|m| m.pv.len()).max().unwrap_or(0);
        for (slot, m) in visited.iter().enumerate() {
            let pv: Vec<String> = m.pv.iter().map(ToString::to_string).collect();
            let mut line = format!(
                "info depth {} seldepth {seldepth} time {ms} nodes {} nps {nps} multipv {} score {}",
                m.pv.len(),
                result.visits,
                slot + 1,
                score(m)
            );
            if self.show_wdl {
                let [w, d, l] = wdl_per_mille(m.q, m.d);
                line.push_str(&format!(" wdl {w} {d} {l}"));
            }
            line.push_str(&format!(" pv {}", pv.join(" ")));
            let _ = say(&self.output, &line);
        }
    }
}

/// One `info string` line per legal root move, in the result's order (best
/// first), with what the search knows of it: the network's prior (after any
/// root noise), the visits, and the mean values after it for the side to
/// move. It shows why a move was searched or left alone.
fn move_stats<G: Game>(result: &SearchResult<G>) -> Vec<String> {
    let node =
        format!("info string node visits {} q {:.5} d {:.5} m {:.1}", result.visits, result.q, result.d, result.m);
    result
        .moves
        .iter()
        .map(|m| {
            let proof = match m.proof {
                Proof::Unknown => String::new(),
                _ => format!(" proven {}", score(m)),
            };
            format!(
                "info string {} visits {} prior {:.2}% q {:.3} d {:.3} m {:.1}{proof}",
                m.mv,
                m.visits,
                100.0 * m.prior,
                m.q,
                m.d,
                m.m
            )
        })
        .chain([node])
        .collect()
}

/// A move's score in UCI terms: mate when proven, centipawns from Q otherwise.
fn score<G: Game>(m: &MoveInfo<G>) -> String {
    match (m.proof.mate_in(), m.proof) {
        (Some(moves), _) => format!("mate {moves}"),
        (None, Proof::Draw) => "cp 0".to_string(),
        (None, _) => format!("cp {}", centipawns(m.q).round() as i64),
    }
}

/// Splits `setoption name N [value V]`; names and values may hold spaces.
fn parse_setoption(args: &[&str]) -> Result<(String, String)> {
    if args.first() != Some(&"name") {
        bail!("expected `setoption name <name> [value <value>]`");
    }
    let value_at = args.iter().position(|&w| w == "value").unwrap_or(args.len());
    let name = args[1..value_at].join(" ");
    if name.is_empty() {
        bail!("the option has no name");
    }
    let value = args.get(value_at + 1..).map(|v| v.join(" ")).unwrap_or_default();
    Ok((name, value))
}

/// Parses `position (startpos | fen <fen>) [moves <m>...]` into a game.
fn parse_position<G: Game>(args: &[&str]) -> Result<History<G>> {
    let moves_at = args.iter().position(|&w| w == "moves").unwrap_or(args.len());
    let start = match args.first() {
        Some(&"startpos") if moves_at == 1 => G::startpos(),
        Some(&"fen") if moves_at > 1 => {
            let fen = args[1..moves_at].join(" ");
            G::from_fen(&fen).with_context(|| format!("bad FEN `{fen}`"))?
        }
        _ => bail!("expected `position startpos` or `position fen <fen>`, then optionally `moves ...`"),
    };
    let mut history = History::new(start);
    history.play_moves(args.get(moves_at + 1..).unwrap_or_default().iter().copied())?;
    Ok(history)
}

/// Parses `go`'s limits into a plan, with notes on what was not understood.
fn parse_go(args: &[&str], turn: capa_rules::Color, overhead: Duration) -> Result<(Plan, Vec<String>)> {
    let mut notes = Vec::new();
    let mut numbers = std::collections::HashMap::new();
    let mut plan = Plan::default();
    let mut words = args.iter().peekable();
    while let Some(&word) = words.next() {
        match word {
            "infinite" => plan.infinite = true,
            "ponder" => notes.push("pondering is not supported; searching as a normal `go`".to_string()),
            "searchmoves" => {
                notes.push("searchmoves is not supported; searching every move".to_string());
                while words.peek().is_some_and(|w| !GO_KEYWORDS.contains(w)) {
                    words.next();
                }
            }
            "wtime" | "btime" | "winc" | "binc" | "movestogo" | "depth" | "nodes" | "mate" | "movetime" => {
                match words.next().map(|v| v.parse::<i64>()) {
                    // Clocks can run negative in some GUIs: no time left.
                    Some(Ok(v)) => {
                        numbers.insert(word, v.max(0) as u64);
                    }
                    _ => notes.push(format!("`{word}` needs a number; ignored")),
                }
            }
            other => notes.push(format!("unknown go parameter `{other}` ignored")),
        }
    }
    plan.playouts = numbers.get("nodes").copied();
    if numbers.contains_key("depth") || numbers.contains_key("mate") {
        notes.push(format!(
            "depth and mate limits do not apply to this search; it stops at {DEPTH_FALLBACK_PLAYOUTS} playouts"
        ));
        plan.playouts = Some(plan.playouts.unwrap_or(DEPTH_FALLBACK_PLAYOUTS).min(DEPTH_FALLBACK_PLAYOUTS));
    }
    let (time, increment) = match turn {
        capa_rules::Color::White => ("wtime", "winc"),
        capa_rules::Color::Black => ("btime", "binc"),
    };
    if let Some(&ms) = numbers.get("movetime") {
        plan.time = Some(Duration::from_millis(ms).saturating_sub(overhead));
    } else if let Some(&left) = numbers.get(time) {
        let left = Duration::from_millis(left);
        let increment = Duration::from_millis(numbers.get(increment).copied().unwrap_or(0));
        // A share of what is left until the time control (or of a
        // horizon of 30 moves), plus most of the increment, never more than
        // half of what is left.
        let moves = numbers.get("movestogo").copied().unwrap_or(30).clamp(1, 30) as u32;
        let budget = (left / moves + increment * 3 / 4).min(left / 2);
        plan.time = Some(budget.saturating_sub(overhead).max(Duration::from_millis(1)));
    }
    if plan.playouts.is_none() && plan.time.is_none() && !plan.infinite {
        // A bare `go` searches until `stop`.
        plan.infinite = true;
    }
    if plan.playouts == Some(0) {
        bail!("`nodes 0` leaves nothing to search");
    }
    Ok((plan, notes))
}

/// The words that start a `go` parameter.
const GO_KEYWORDS: [&str; 12] = [
    "searchmoves",
    "ponder",
    "wtime",
    "btime",
    "winc",
    "binc",
    "movestogo",
    "depth",
    "nodes",
    "mate",
    "movetime",
    "infinite",
];

#[cfg(test)]
mod tests {
    use capa_rules::Color;

    use super::*;

    #[test]
    fn go_parses_clocks_into_a_budget() {
        let overhead = Duration::from_millis(30);
        let (plan, notes) =
            parse_go(&["wtime", "60000", "btime", "1000", "winc", "1000"], Color::White, overhead).unwrap();
        assert_eq!(plan.time, Some(Duration::from_millis(2000 + 750 - 30)));
        assert!(notes.is_empty() && !plan.infinite);
        let (plan, _) = parse_go(&["wtime", "60000", "btime", "1000"], Color::Black, overhead).unwrap();
        assert_eq!(plan.time, Some(Duration::from_millis(1000) / 30 - overhead));
        let (plan, _) = parse_go(&["movetime", "500"], Color::White, overhead).unwrap();
        assert_eq!(plan.time, Some(Duration::from_millis(470)));
        let (plan, _) = parse_go(&["nodes", "100"], Color::White, overhead).unwrap();
        assert_eq!((plan.playouts, plan.time, plan.infinite), (Some(100), None, false));
        let (plan, _) = parse_go(&[], Color::White, overhead).unwrap();
        assert!(plan.infinite);
        let (plan, notes) = parse_go(&["depth", "x", "bogus", "nodes", "50"], Color::White, overhead).unwrap();
        assert_eq!((plan.playouts, notes.len()), (Some(50), 2));
        assert!(parse_go(&["nodes", "0"], Color::White, overhead).is_err());
    }

    #[test]
    fn positions_parse_and_bad_ones_say_why() {
        let h = parse_position::<Chess>(&["startpos", "moves", "e2e4", "e7e5"]).unwrap();
        assert_eq!(h.moves().len(), 2);
        let fen = "4k3/8/8/8/8/8/8/4K2R w K - 0 1".split(' ').collect::<Vec<_>>();
        let h = parse_position::<Chess>(&[&["fen"], &fen[..], &["moves", "e1g1"]].concat()).unwrap();
        assert_eq!(h.moves().len(), 1);
        let err = parse_position::<Chess>(&["startpos", "moves", "e2e4", "e2e4"]).unwrap_err();
        assert!(format!("{err:#}").contains("move 2"), "{err:#}");
        assert!(parse_position::<Chess>(&["fen", "not", "a", "fen"]).is_err());
        assert!(parse_position::<Chess>(&["startpos", "e2e4"]).is_err());
        assert!(parse_position::<Chess>(&[]).is_err());
        assert!(parse_position::<Capablanca>(&["startpos", "moves", "e2e4", "e7e5", "i1h3"]).is_ok());
    }

    #[test]
    fn scores_and_wdl_follow_the_protocol() {
        let info = |proof| MoveInfo::<Chess> {
            mv: Chess::startpos().parse_move("e2e4").unwrap(),
            visits: 1,
            prior: 1.0,
            q: 0.5,
            d: 0.0,
            m: 0.0,
            proof,
            pv: Vec::new(),
        };
        assert_eq!(score(&info(Proof::Win { plies: 0 })), "mate 1");
        assert_eq!(score(&info(Proof::Win { plies: 2 })), "mate 2");
        assert_eq!(score(&info(Proof::Loss { plies: 1 })), "mate -1");
        assert_eq!(score(&info(Proof::Loss { plies: 3 })), "mate -2");
        assert_eq!(score(&info(Proof::Draw)), "cp 0");
        assert_eq!(score(&info(Proof::Unknown)), "cp 111");
    }

    #[test]
    fn setoption_splits_names_and_values() {
        assert_eq!(parse_setoption(&["name", "Clear", "Hash"]).unwrap(), ("Clear Hash".into(), String::new()));
        assert_eq!(parse_setoption(&["name", "CPuct", "value", "2.5"]).unwrap(), ("CPuct".into(), "2.5".into()));
        assert!(parse_setoption(&["CPuct", "2"]).is_err());
        assert!(parse_setoption(&["name", "value", "2"]).is_err());
    }
}
