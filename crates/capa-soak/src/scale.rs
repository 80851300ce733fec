//! `capa-scale`: the tools of the scale harness (`scripts/scale.sh`), which
//! measures what a run costs the trainer as it grows, on a store or a disk.
//!
//! - `capa-scale populate RUN --from SEED --games N --iterations M --workers K`
//!   builds a synthetic run of N games by K workers over M committed
//!   iterations, from a real run SEED (its config, network and checkpoint):
//!   valid game records (random legal games, made in microseconds, no
//!   search), the ledgers, the metrics lines and the commit point, as a
//!   trainer and its workers would have left them.
//! - `capa-scale workers RUN --workers W ...` runs W lightweight fake
//!   workers, each holding its name's lock as a worker does and writing
//!   valid records into its folder at a set rate, numbered as a worker
//!   numbers them.
//! - `capa-scale delay --listen ADDR --to ADDR --ms D` forwards TCP
//!   connections with D milliseconds added to each request: a store on
//!   loopback answers in a millisecond or two, one across a network in
//!   tens, and a reader that waits on each answer in turn pays it per request.
//!
//! RUN is a local path or a store URL, opened as the trainer opens it
//! (`AWS_*` and the like from the environment).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capa_data::{Ending, GameRecord, PlyRecord, Resignation, SearchValues};
use capa_rules::{Game, History, MoveList, Rng, for_game};
use capa_rundir::keys::{self, LATEST, METRICS};
use capa_rundir::{Carried, CommitPoint, RunDir};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(name = "capa-scale", about = "The scale harness's tools: a synthetic run, and fake workers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Builds a synthetic run of committed iterations from a real one's network and checkpoint.
    Populate(Populate),
    /// Runs fake workers that write valid games into a run, as workers do.
    Workers(Workers),
    /// Forwards TCP connections to a server with a delay: a store's latency on loopback.
    Delay(Delay),
}

#[derive(Args)]
struct Populate {
    /// The run to build: a local path or a store URL (empty, or one this command built).
    run: PathBuf,
    /// A real run (local) whose config, latest network and checkpoint the synthetic run takes.
    #[arg(long)]
    from: PathBuf,
    /// Game files in the run (rounded down to a multiple of workers x iterations).
    #[arg(long)]
    games: u64,
    /// Committed iterations, each taking the same number of each worker's games.
    #[arg(long)]
    iterations: u64,
    /// Workers that wrote them (`w000`, `w001`, ...).
    #[arg(long, default_value_t = 10)]
    workers: u32,
    /// Writers at once.
    #[arg(long, default_value_t = 16)]
    threads: usize,
}

#[derive(Args)]
struct Workers {
    /// The run: a local path or a store URL, with a network (`LATEST`).
    run: PathBuf,
    /// Fake workers, each a thread holding its own name's lock.
    #[arg(long)]
    workers: u32,
    /// Their names' prefix (`<prefix>000`, ...).
    #[arg(long, default_value = "fake")]
    prefix: String,
    /// Games each worker writes a second.
    #[arg(long, default_value_t = 1.0)]
    rate: f64,
    /// Stop after this many seconds.
    #[arg(long)]
    seconds: Option<f64>,
    /// Stop after this many games each.
    #[arg(long)]
    games: Option<u64>,
}

#[derive(Args)]
struct Delay {
    /// The address to listen on (`127.0.0.1:9001`).
    #[arg(long)]
    listen: String,
    /// The server to forward each connection to (`127.0.0.1:9000`).
    #[arg(long)]
    to: String,
    /// Milliseconds each piece of a request waits before it goes on (a small request is one piece).
    #[arg(long)]
    ms: u64,
}

fn main() -> std::process::ExitCode {
    let result = match Cli::parse().command {
        Command::Populate(args) => populate(&args),
        Command::Workers(args) => workers(&args),
        Command::Delay(args) => delay(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("capa-scale: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Distinct records kept and written over and over: what is measured is
/// the run's files, not their variety.
const DISTINCT_RECORDS: u64 = 64;

/// `DISTINCT_RECORDS` valid records of the run's game played by `network`:
/// random legal games of up to 40 plies, each ply a full search's target
/// on the move played, stopped before any move that ends the game.
fn records(dir: &RunDir, network: &str) -> Result<Vec<Vec<u8>>> {
    let kind = dir.game()?;
    Ok((0..DISTINCT_RECORDS).map(|seed| for_game!(kind, G => random_record::<G>(network, seed))).collect())
}

fn random_record<G: Game>(network: &str, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut history = History::new(G::startpos());
    let mut plies = Vec::new();
    let mut moves = MoveList::new();
    while history.moves().len() < 40 {
        let current = history.current().clone();
        current.legal_moves(&mut moves);
        if moves.is_empty() {
            break;
        }
        let m = moves[(rng.next_u64() % moves.len() as u64) as usize];
        history.play(m);
        if history.outcome().is_some() {
            history.undo();
            break;
        }
        let values = SearchValues { q: 0.0, d: 0.5, m: 40.0 };
        let visits = vec![(u16::try_from(current.policy_index(m)).expect("a policy index fits u16"), 1.0)];
        plies.push(PlyRecord { full_search: true, root: values, best: values, visits });
    }
    let record = GameRecord {
        start: G::startpos(),
        network: network.to_string(),
        moves: history.moves().to_vec(),
        plies,
        winner: None,
        ending: Ending::Adjudication,
        resignation: Resignation::default(),
    };
    record.to_bytes()
}

fn worker_name(prefix: &str, index: u32) -> String {
    format!("{prefix}{index:03}")
}

fn populate(args: &Populate) -> Result<()> {
    let started = Instant::now();
    let per = args.games / (u64::from(args.workers) * args.iterations).max(1);
    if per == 0 {
        bail!("--games {} is fewer than one game per worker and iteration", args.games);
    }
    let seed = RunDir::open(&args.from)?;
    let run = RunDir::open(&args.run)?;
    let read = |key: &str| -> Result<Vec<u8>> {
        seed.read(key)?.with_context(|| format!("{} has no {key}: is it a run with an iteration?", args.from.display()))
    };
    let network = String::from_utf8(read(LATEST)?)?.trim().to_string();
    let point = CommitPoint::read(&seed)?.context("the seed run has no committed iteration")?;
    let template: serde_json::Value =
        serde_json::from_slice(read(METRICS)?.split(|&b| b == b'\n').next().unwrap_or_default())
            .context("the seed run's first metrics line")?;
    run.write(keys::CONFIG, &read(keys::CONFIG)?)?;
    run.write(&keys::network(&network), &read(&keys::network(&network))?)?;
    run.write(LATEST, network.as_bytes())?;
    let checkpoint = keys::checkpoint_name(args.iterations);
    run.write(&keys::checkpoint(&checkpoint), &read(&keys::checkpoint(&point.checkpoint))?)?;

    // The games, each worker's numbered from 0, by many writers at once.
    let records = records(&seed, &network)?;
    let each = per * args.iterations;
    let total = each * u64::from(args.workers);
    let next = AtomicU64::new(0);
    let written = AtomicU64::new(0);
    std::thread::scope(|scope| -> Result<()> {
        let writers: Vec<_> = (0..args.threads.max(1))
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let dir = RunDir::open(&args.run)?;
                    loop {
                        let job = next.fetch_add(1, Ordering::Relaxed);
                        if job >= total {
                            return Ok(());
                        }
                        let (worker, number) = ((job / each) as u32, job % each);
                        let bytes = &records[(job % DISTINCT_RECORDS) as usize];
                        dir.write(&keys::worker_game_file(&worker_name("w", worker), number), bytes)?;
                        let done = written.fetch_add(1, Ordering::Relaxed) + 1;
                        if done.is_multiple_of((total / 10).max(1)) {
                            eprintln!("  {done} of {total} games written, {:.0} s", started.elapsed().as_secs_f64());
                        }
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().expect("a writer thread panicked")?;
        }
        Ok(())
    })?;

    // What the committed iterations took: `per` of each worker's games each.
    let mut metrics = String::new();
    for iteration in 1..=args.iterations {
        let numbers = (iteration - 1) * per..iteration * per;
        let ledger: Vec<String> = (0..args.workers)
            .flat_map(|w| numbers.clone().map(move |n| keys::worker_game_file(&worker_name("w", w), n)))
            .collect();
        run.write(&keys::ledger(iteration), ledger.join("\n").as_bytes())?;
        let mut line = template.clone();
        line["iteration"] = iteration.into();
        line["games"] = (per * u64::from(args.workers)).into();
        line["network"] = network.clone().into();
        if let Some(fields) = line.as_object_mut() {
            fields.remove("eval");
            fields.remove("store");
        }
        metrics.push_str(&serde_json::to_string(&line)?);
        metrics.push('\n');
    }
    run.write(METRICS, metrics.as_bytes())?;
    let workers_taken: BTreeMap<String, u64> = (0..args.workers).map(|w| (worker_name("w", w), each)).collect();
    let carried = Carried { workers_taken, positions_made: Some(total * 40), ..Carried::default() };
    CommitPoint { iteration: args.iterations, checkpoint, network, carried }.write(&run)?;
    eprintln!(
        "populated {}: {total} games of {} workers over {} iterations in {:.1} s",
        run.location(),
        args.workers,
        args.iterations,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn workers(args: &Workers) -> Result<()> {
    if args.seconds.is_none() && args.games.is_none() {
        bail!("say when the workers stop: --seconds or --games");
    }
    if !args.rate.is_finite() || args.rate <= 0.0 {
        bail!("--rate {}: games a second must be above 0", args.rate);
    }
    let started = Instant::now();
    let run = RunDir::open(&args.run)?;
    let network = run.read(LATEST)?.context("the run has no network yet (LATEST)")?;
    let records = records(&run, String::from_utf8_lossy(&network).trim())?;
    let written = AtomicU64::new(0);
    std::thread::scope(|scope| -> Result<()> {
        let threads: Vec<_> = (0..args.workers)
            .map(|index| {
                let (records, written) = (&records, &written);
                scope.spawn(move || -> Result<()> {
                    let name = worker_name(&args.prefix, index);
                    let dir = RunDir::open(&args.run)?;
                    let _only_worker_of_this_name = dir.lock_worker_name(&name)?;
                    let listed = dir.list_after(&keys::game_folder(&name), None)?;
                    let mut number =
                        listed.iter().filter_map(|e| keys::worker_game(&e.key)).map(|(_, n)| n + 1).max().unwrap_or(0);
                    let first = number;
                    let period = Duration::from_secs_f64(1.0 / args.rate);
                    // Spread the workers' first writes over one period.
                    std::thread::sleep(period.mul_f64(f64::from(index) / f64::from(args.workers.max(1))));
                    let begun = Instant::now();
                    loop {
                        let elapsed = begun.elapsed().as_secs_f64();
                        if args.seconds.is_some_and(|s| elapsed >= s) || args.games.is_some_and(|g| number - first >= g)
                        {
                            return Ok(());
                        }
                        let bytes = &records[(number % DISTINCT_RECORDS) as usize];
                        if !dir.create_new(&keys::worker_game_file(&name, number), bytes)? {
                            bail!("worker {name}: game {number} was written by another process");
                        }
                        number += 1;
                        written.fetch_add(1, Ordering::Relaxed);
                        let due = period.mul_f64((number - first) as f64);
                        if let Some(wait) = due.checked_sub(begun.elapsed()) {
                            std::thread::sleep(wait);
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("a worker thread panicked")?;
        }
        Ok(())
    })?;
    let seconds = started.elapsed().as_secs_f64();
    let games = written.load(Ordering::Relaxed);
    println!(
        "fake workers: {} wrote {games} games in {seconds:.1} s ({:.1} games/s)",
        args.workers,
        games as f64 / seconds
    );
    Ok(())
}

/// Forwards each connection to `args.to`, the client's bytes each `args.ms`
/// late, the server's at once, until either side closes.
fn delay(args: &Delay) -> Result<()> {
    use std::net::{TcpListener, TcpStream};
    let listener = TcpListener::bind(&args.listen).with_context(|| format!("cannot listen on {}", args.listen))?;
    let wait = Duration::from_millis(args.ms);
    for client in listener.incoming() {
        let client = client.context("cannot accept a connection")?;
        let server = TcpStream::connect(&args.to).with_context(|| format!("cannot connect to {}", args.to))?;
        for stream in [&client, &server] {
            stream.set_nodelay(true).context("cannot set TCP_NODELAY")?;
        }
        let (client_back, server_back) = (client.try_clone()?, server.try_clone()?);
        std::thread::spawn(move || forward(client, server, wait));
        std::thread::spawn(move || forward(server_back, client_back, Duration::ZERO));
    }
    Ok(())
}

/// Copies `from` to `to`, each piece read `wait` late, until `from` ends.
fn forward(mut from: std::net::TcpStream, mut to: std::net::TcpStream, wait: Duration) {
    use std::io::{Read, Write};
    let mut buffer = vec![0; 64 << 10];
    while let Ok(read @ 1..) = from.read(&mut buffer) {
        std::thread::sleep(wait);
        if to.write_all(&buffer[..read]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}
