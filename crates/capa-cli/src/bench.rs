//! `capa bench`: measurements of capa's own components, for benches/.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capa_mcts::{
    EvalError, Evaluations, Evaluator, LeafRequest, Limits, RandomEvaluator, SearchParams, Tree, search_many,
};
use capa_rules::{Game, GameKind, History};
use capa_rundir::process_cpu_seconds;
use clap::Subcommand;

use crate::args::DeviceArgs;

/// Measure a component; benches/ compares the figures with real peers.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Search from the start position with a free evaluator (pseudo-random
    /// priors and values from the position's hash, as Lc0's `random` backend).
    ///
    /// Prints a summary line, then a last line
    /// `nodes N cpu_s S nodes_per_cpu_s R bytes_per_node B`
    /// (CPU time of all threads, the evaluator's included; bytes of the
    /// trees' nodes, edges and child slots per node).
    Search {
        /// The game: `capablanca` (10x8) or `chess`.
        #[arg(long, value_enum)]
        variant: GameKind,
        /// Playouts in all, split evenly over the games.
        #[arg(long, default_value_t = 200_000)]
        nodes: u32,
        /// Leaves each game gathers per round (its share of the network batch).
        #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u16).range(1..=i64::from(capa_mcts::MAX_PER_ROUND)))]
        batch: u16,
        /// Threads selecting and backing up (the evaluator has its own).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
        threads: u16,
        /// Games searched together; by default one per thread.
        #[arg(long)]
        games: Option<usize>,
        /// Pipelined groups: while the evaluator works on one group's batch
        /// the threads select and back up the others.
        #[arg(long, default_value_t = 1)]
        groups: usize,
        /// Nanoseconds the fake evaluator sleeps per leaf of each batch, to
        /// stand in for a network on a device (it uses no CPU meanwhile).
        #[arg(long, default_value_t = 0)]
        eval_ns_per_leaf: u64,
    },
    /// Self-play as a run config plays it (its `[selfplay]` and `[game]`),
    /// with a network file, nothing written: training positions per second
    /// and per CPU-second, network calls and evaluations per position,
    /// batch fill, cache hits and where the time went.
    ///
    /// Prints the figures, then a last line
    /// `positions N cpu_s S positions_per_cpu_s R positions_per_s W`.
    Selfplay {
        /// The run config (`configs/capablanca-cpu.toml`); `--set` changes keys.
        #[arg(long)]
        config: PathBuf,
        /// The network (`.safetensors`); by default the config's `run.init`.
        #[arg(long)]
        net: Option<PathBuf>,
        /// Games to play (by default the config's `selfplay.games`).
        #[arg(long)]
        games: Option<u32>,
        /// `KEY=VALUE`: a config key set for this bench (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
    },
    /// Time `capa lc0 convert` on PGN files: each stage on one thread
    /// (parsing, SAN to moves, conversion, gzip), then the whole
    /// conversion to files with 1 and 2 threads.
    ///
    /// Prints a line per stage, then a last line
    /// `parse P replay R convert C gzip G files_t1 F1 files_t2 F2` (positions per second).
    Lc0 {
        /// PGN files (plain, .gz, .zst), read into memory first.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Times the files are repeated, for a longer measurement.
        #[arg(long, default_value_t = 1)]
        repeat: usize,
    },
    /// Time the reading side of Lc0 V6 data, as `run.mode = "supervised"`
    /// streams it: chunks decompressed and decoded by 1 and 2 reader
    /// threads through the shuffle buffer (timed once it is full), then the
    /// same with every sample expanded into the network's 112 float planes.
    ///
    /// Prints a line per case, then a last line
    /// `stream_r1 A stream_r2 B inputs_r2 C` (positions per second, wall clock).
    V6 {
        /// V6 files (`.gz`), `.tar` and `.tar.gz` archives, or folders of them.
        #[arg(required = true)]
        data: Vec<PathBuf>,
        /// Positions taken per case (the stream starts over when the data ends).
        #[arg(long, default_value_t = 300_000)]
        positions: u64,
        /// Positions the shuffle buffer holds.
        #[arg(long, default_value_t = 100_000)]
        shuffle_buffer: usize,
    },
    /// Time the network: inference at batch 1, 32 and --batch, and training
    /// steps (forward, losses, backward, AdamW) at --batch, on fresh weights,
    /// each with its copies between host and device (as the search and the
    /// trainer make them).
    ///
    /// Prints a line per case, then a last line
    /// `infer_b1 X infer_b32 Y infer_bN Z train_bN W` (positions per second, wall clock; median call).
    Net {
        /// The architecture: `small` (64 channels, 4 blocks, 1 transformer
        /// block) or `typical` (256 channels, 15 blocks, 4 transformer blocks, 8 heads).
        #[arg(long, default_value = "small")]
        size: String,
        /// Channels, instead of the preset's.
        #[arg(long)]
        channels: Option<usize>,
        /// Residual blocks, instead of the preset's.
        #[arg(long)]
        blocks: Option<usize>,
        /// Transformer blocks, instead of the preset's.
        #[arg(long)]
        transformer_blocks: Option<usize>,
        /// The policy head: `dense` (the presets') or `conv` (see configs/README.md).
        #[arg(long, value_parser = parse_policy_head)]
        policy_head: Option<capa_net::PolicyHeadKind>,
        /// The transformer's feed-forward: `mish` (the presets') or `swiglu`.
        #[arg(long, value_parser = parse_ffn)]
        ffn: Option<capa_net::FfnKind>,
        /// The transformer's norm: `layer` (the presets') or `rms`.
        #[arg(long, value_parser = parse_norm)]
        norm: Option<capa_net::NormKind>,
        /// QK-norm in the transformer's attention.
        #[arg(long)]
        qk_norm: bool,
        /// No bias on the query, key and value projections.
        #[arg(long)]
        no_qkv_bias: bool,
        /// A learned position embedding added before the transformer.
        #[arg(long)]
        position_embedding: bool,
        /// Channels of the value head's convolution, instead of 32.
        #[arg(long)]
        value_channels: Option<usize>,
        /// Hidden width of the value head, instead of 128.
        #[arg(long)]
        value_hidden: Option<usize>,
        /// The game, which sets the input planes, board and policy width.
        #[arg(long, default_value = "capablanca")]
        variant: GameKind,
        #[command(flatten)]
        device: DeviceArgs,
        /// The large batch, for inference and training.
        #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65536))]
        batch: u32,
        /// Minimum seconds per measurement; each takes at least three calls after a warm-up call.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
    },
    /// lc0 itself as the oracle of an exported network (`capa net
    /// export-lc0`): positions from real games (every `--every`-th ply of
    /// the PGN files, each with its moves from the start) go to lc0 with the
    /// weights file and to `capa uci` with the network it came from, both at
    /// `go nodes 1` with VerboseMoveStats (lc0's policy temperature set to
    /// 1, as capa's); every legal move's prior and the network's value are
    /// compared. benches/lc0_interop.sh builds lc0 and runs it.
    ///
    /// Prints a last line `positions N moves M max_policy_pp P max_value V
    /// max_draw D` (the largest differences: prior in percentage points,
    /// win minus loss, draw probability).
    Lc0Agreement {
        /// The lc0 command, with its weights: `lc0 --weights=net.pb.gz --backend=blas`.
        #[arg(long)]
        lc0: String,
        /// The capa network the weights file was exported from.
        #[arg(long)]
        net: PathBuf,
        /// PGN files of chess games (`.pgn` or `.pgn.gz`).
        #[arg(long, required = true, num_args = 1..)]
        pgn: Vec<PathBuf>,
        /// Positions to compare.
        #[arg(long, default_value_t = 1000)]
        positions: usize,
        /// Take every this many plies of each game.
        #[arg(long, default_value_t = 7)]
        every: usize,
    },
    /// The opening explorer (`capa gui`): generates games (random moves,
    /// skewed towards the first ones generated so that some lines are
    /// popular), indexes them, then times lookups of positions from the
    /// games' first 40 plies, each with its first 50 games read, as the GUI
    /// answers them. Prints the index's size and the lookups' median, p90,
    /// p99 and max, and the start position's (every game passes it).
    Explorer {
        /// The game.
        #[arg(long, default_value = "capablanca")]
        variant: GameKind,
        /// Games to generate and index.
        #[arg(long, default_value_t = 1_000_000)]
        games: u64,
        /// Plies per game at most; each game's length is drawn between half of it and all of it.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(2..=2000))]
        max_plies: u32,
        /// Positions to look up.
        #[arg(long, default_value_t = 1000)]
        queries: usize,
        /// Where the index is written (it is large: about 16 bytes per position).
        #[arg(long)]
        dir: PathBuf,
        /// The memory the index build holds at most (`2G`, `512M`): the
        /// positions beyond it are sorted into runs in --dir and merged.
        #[arg(long, default_value = "1G", value_parser = crate::args::parse_size)]
        memory: u64,
        /// The seed of the games.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Reuse the index an earlier run with the same settings left in `--dir`
        /// (the games are generated again for the queries, not indexed): with
        /// the page cache dropped first, the lookups read from the disk.
        #[arg(long)]
        reuse: bool,
    },
}

impl BenchCommand {
    /// Runs the measurement and prints its figures.
    ///
    /// # Errors
    /// Bad arguments, a failing search, network or file.
    pub fn run(self) -> Result<()> {
        match self {
            BenchCommand::Search { variant, nodes, batch, threads, games, groups, eval_ns_per_leaf } => {
                let threads = usize::from(threads);
                let args = SearchBench {
                    nodes,
                    batch,
                    threads,
                    games: games.unwrap_or(threads),
                    groups,
                    eval_per_leaf: Duration::from_nanos(eval_ns_per_leaf),
                };
                capa_rules::for_game!(variant, G => search::<G>(&args))
            }
            BenchCommand::Selfplay { config, net, games, sets } => selfplay(&config, net, games, &sets),
            BenchCommand::Lc0 { files, repeat } => lc0(&files, repeat),
            BenchCommand::V6 { data, positions, shuffle_buffer } => v6(&data, positions, shuffle_buffer),
            BenchCommand::Net {
                size,
                channels,
                blocks,
                transformer_blocks,
                policy_head,
                ffn,
                norm,
                qk_norm,
                no_qkv_bias,
                position_embedding,
                value_channels,
                value_hidden,
                variant,
                device,
                batch,
                seconds,
            } => {
                if !(seconds.is_finite() && seconds >= 0.0) {
                    bail!("--seconds must be a non-negative number, not {seconds}");
                }
                let mut config = capa_net::NetConfig::preset(&size, variant).context("--size")?;
                config.channels = channels.unwrap_or(config.channels);
                config.blocks = blocks.unwrap_or(config.blocks);
                config.transformer_blocks = transformer_blocks.unwrap_or(config.transformer_blocks);
                config.policy_head = policy_head.unwrap_or(config.policy_head);
                config.ffn = ffn.unwrap_or(config.ffn);
                config.norm = norm.unwrap_or(config.norm);
                config.qk_norm |= qk_norm;
                config.qkv_bias &= !no_qkv_bias;
                config.position_embedding |= position_embedding;
                config.value_channels = value_channels.unwrap_or(config.value_channels);
                config.value_hidden = value_hidden.unwrap_or(config.value_hidden);
                config.validate()?;
                println!("device {}", device.spec().describe());
                NetBench { config, batch: batch as usize, seconds, device: device.spec() }.run()
            }
            BenchCommand::Lc0Agreement { lc0, net, pgn, positions, every } => {
                let started = Instant::now();
                let a = crate::lc0_agreement::compare(&lc0, &net, &pgn, positions, every)?;
                eprintln!("{} positions compared in {:.0} s", a.positions, started.elapsed().as_secs_f64());
                eprintln!("largest policy difference at {}", a.policy_at);
                eprintln!("largest value difference at {}", a.value_at);
                println!(
                    "positions {} moves {} max_policy_pp {:.3} max_value {:.5} max_draw {:.5}",
                    a.positions, a.moves, a.policy_pp, a.value, a.draw
                );
                Ok(())
            }
            BenchCommand::Explorer { variant, games, max_plies, queries, dir, memory, seed, reuse } => {
                let bench =
                    crate::explorer_bench::ExplorerBench { games, max_plies, queries, dir: &dir, memory, seed, reuse };
                if !variant.is_chess() {
                    bail!("the opening explorer indexes chess games, not {variant}");
                }
                capa_rules::for_game!(variant, G => crate::explorer_bench::run::<G>(&bench, variant))
            }
        }
    }
}

/// What `capa bench search` was asked to do.
struct SearchBench {
    /// Playouts in all, split evenly over the games.
    pub nodes: u32,
    /// Leaves gathered per game per round.
    pub batch: u16,
    /// Rayon threads.
    pub threads: usize,
    /// Games searched together.
    pub games: usize,
    /// Pipelined groups.
    pub groups: usize,
    /// Time the fake network spends per leaf of a batch.
    pub eval_per_leaf: Duration,
}

/// The free evaluator, optionally as slow as a network on a device: it
/// sleeps (using no CPU) for a time proportional to the batch.
struct DelayedEvaluator(Duration);

impl<G: Game> Evaluator<G> for DelayedEvaluator {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        if !self.0.is_zero() {
            std::thread::sleep(self.0 * batch.len() as u32);
        }
        RandomEvaluator.evaluate(batch, out)
    }
}

/// Searches `games` trees from the start position with the free evaluator
/// and prints the figures; the last line is the one benches/ reads.
fn search<G: Game>(bench: &SearchBench) -> Result<()> {
    if bench.games == 0 || bench.nodes == 0 {
        bail!("--games and --nodes must be at least 1");
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(bench.threads)
        .build()
        .context("cannot start the search threads (--threads)")?;
    let params = SearchParams { parallel_sims: bench.batch, max_collisions: bench.batch, ..SearchParams::default() };
    let per_game = bench.nodes.div_ceil(bench.games as u32);
    let mut trees = (0..bench.games)
        .map(|seed| Tree::new(History::new(G::startpos()), params.clone(), seed as u64))
        .collect::<Result<Vec<_>, _>>()?;
    for tree in &mut trees {
        tree.start(Limits::playouts(per_game), true)?;
    }
    let evaluator = DelayedEvaluator(bench.eval_per_leaf);
    let (cpu_start, wall_start) = (process_cpu_seconds(), Instant::now());
    let (mut nodes, mut bytes, mut tree_nodes) = (0u64, 0usize, 0usize);
    pool.install(|| {
        search_many(&mut trees, &evaluator, bench.groups, |_, _, result| {
            nodes += u64::from(result.playouts);
            bytes += result.bytes;
            tree_nodes += result.nodes;
        })
    })?;
    let cpu = process_cpu_seconds() - cpu_start;
    let wall = wall_start.elapsed().as_secs_f64();
    println!(
        "variant {} games {} batch {} threads {} groups {} eval_ns_per_leaf {} wall_s {wall:.3} nodes_per_s {:.0}",
        G::NAME,
        bench.games,
        bench.batch,
        bench.threads,
        bench.groups,
        bench.eval_per_leaf.as_nanos(),
        nodes as f64 / wall
    );
    println!(
        "nodes {nodes} cpu_s {cpu:.3} nodes_per_cpu_s {:.0} bytes_per_node {:.1}",
        nodes as f64 / cpu,
        bytes as f64 / tree_nodes.max(1) as f64
    );
    Ok(())
}

/// Runs `capa bench selfplay` and prints its figures.
fn selfplay(config: &std::path::Path, net: Option<PathBuf>, games: Option<u32>, sets: &[String]) -> Result<()> {
    let config = capa_train::RunConfig::load(config, sets)?;
    let Some(net) = net.or_else(|| config.run.init.clone()) else {
        bail!("no network: give --net, or a config with run.init");
    };
    let games = games.unwrap_or(config.selfplay.games);
    if games == 0 {
        bail!("--games must be at least 1");
    }
    let w = capa_train::bench_selfplay(&config, &net, games)?;
    println!(
        "games {} (white/draw/black {:?}, {} resigned, {:.0} plies each) positions {} wall_s {:.1} cpu_s {:.1}",
        w.games,
        w.white_draw_black,
        w.resigned,
        w.mean_game_length,
        w.new_positions,
        w.seconds_selfplay,
        w.seconds_cpu_selfplay
    );
    println!(
        "network_calls_per_position {:.2} evaluations_per_position {:.1} mean_batch_fill {:.2} cache_hit_rate {:.3}",
        w.network_calls_per_position, w.evaluations_per_position, w.mean_batch_fill, w.cache_hit_rate
    );
    let shares = w.time_shares;
    println!(
        "shares: search {:.2} network_wait {:.2} bookkeeping {:.2}; network busy {:.2}; playouts_per_search {:.1}",
        shares.search,
        shares.network_wait,
        shares.bookkeeping,
        w.inference_share_of_selfplay,
        w.mean_playouts_per_search
    );
    println!(
        "positions {} cpu_s {:.1} positions_per_cpu_s {:.2} positions_per_s {:.2}",
        w.new_positions, w.seconds_cpu_selfplay, w.positions_per_cpu_second, w.positions_per_second
    );
    Ok(())
}

/// What `capa bench net` was asked to do.
pub struct NetBench {
    /// The architecture.
    pub config: capa_net::NetConfig,
    /// The large batch (inference and training); inference also runs at 1 and 32.
    pub batch: usize,
    /// Minimum seconds per measurement (at least three calls each).
    pub seconds: f64,
    /// The device, and the float type of the arithmetic.
    pub device: capa_net::DeviceSpec,
}

/// Median wall seconds per call of `work` (after one warm-up call), and CPU
/// seconds per call.
fn time_calls<E>(seconds: f64, mut work: impl FnMut() -> Result<(), E>) -> Result<(f64, f64), E> {
    work()?;
    let (start, cpu_start) = (Instant::now(), process_cpu_seconds());
    let mut samples = Vec::new();
    while samples.len() < 3 || start.elapsed().as_secs_f64() < seconds {
        let call = Instant::now();
        work()?;
        samples.push(call.elapsed().as_secs_f64());
    }
    let cpu = (process_cpu_seconds() - cpu_start) / samples.len() as f64;
    samples.sort_by(f64::total_cmp);
    Ok((samples[samples.len() / 2], cpu))
}

/// Positions from seeded random games, encoded without history, and training
/// targets for them (a legal move, a result).
fn net_inputs<G: capa_net::NetGame>(count: usize) -> (Vec<f32>, Vec<f32>, Vec<bool>) {
    let (mut planes, mut policy, mut legal) = (Vec::new(), Vec::new(), Vec::new());
    let mut position = G::startpos();
    let mut moves = capa_rules::MoveList::new();
    let mut rng = capa_rules::Rng::new(0x2545_F491_4F6C_DD1D);
    let mut input = vec![0.0; G::INPUT_LEN];
    while planes.len() < count * G::INPUT_LEN {
        position.legal_moves(&mut moves);
        if moves.is_empty() {
            position = G::startpos();
            continue;
        }
        G::encode(std::slice::from_ref(&position), &[false], &mut input);
        planes.extend_from_slice(&input);
        let (mut target, mut mask) = (vec![0.0; G::policy_size()], vec![false; G::policy_size()]);
        for &m in moves.iter() {
            mask[position.policy_index(m)] = true;
        }
        let chosen = moves[(rng.next_u64() % moves.len() as u64) as usize];
        target[position.policy_index(chosen)] = 1.0;
        policy.extend(target);
        legal.extend(mask);
        position.play(chosen);
    }
    (planes, policy, legal)
}

impl NetBench {
    /// Times inference at batch 1, 32 and [`NetBench::batch`], then
    /// training steps at [`NetBench::batch`], each with the copies to the
    /// device and back that the search's evaluator and the trainer make.
    fn run(&self) -> Result<()> {
        use capa_net::{HostBatch, Start, TrainConfig, Training};
        let game = self.config.game;
        let input_len = capa_net::input_planes(game) * game.ranks() * game.files();
        let (planes, policy, legal) = capa_rules::for_game!(game, G => net_inputs::<G>(self.batch));
        let start = Start::Fresh { config: &self.config, seed: 0, init: None };
        let mut trainer = Training::start(self.device, &[], start, TrainConfig::default())?;
        let net = trainer.inference()?;
        let flops = self.config.forward_flops();
        println!("precision {} gflop_per_position {:.4}", self.device.precision, flops * 1e-9);
        let mut line = Vec::new();
        for rows in [1, 32, self.batch] {
            let (wall, cpu) = time_calls(self.seconds, || {
                net.forward(planes[..rows * input_len].to_vec(), rows, capa_net::Heads::SEARCH).map(drop)
            })?;
            println!(
                "infer batch {rows} ms_per_batch {:.2} positions_per_s {:.1} positions_per_cpu_s {:.1} tflop_per_s {:.3}",
                wall * 1e3,
                rows as f64 / wall,
                rows as f64 / cpu,
                rows as f64 * flops / wall * 1e-12
            );
            line.push(format!("infer_b{rows} {:.1}", rows as f64 / wall));
        }
        let rows = self.batch;
        let batch = HostBatch {
            size: rows,
            planes,
            wdl: (0..rows).flat_map(|i| (0..3).map(move |k| f32::from(u8::from(i % 3 == k)))).collect(),
            moves_left: vec![40.0; rows],
            future: policy.clone(),
            policy,
            legal,
            ..HostBatch::default()
        };
        let (wall, cpu) = time_calls(self.seconds, || trainer.step(batch.clone()).map(drop))?;
        // Forward, and backward at twice its cost.
        println!(
            "train batch {rows} ms_per_step {:.1} positions_per_s {:.1} positions_per_cpu_s {:.1} tflop_per_s {:.3} \
             params {}",
            wall * 1e3,
            rows as f64 / wall,
            rows as f64 / cpu,
            3.0 * rows as f64 * flops / wall * 1e-12,
            self.config.parameter_count()
        );
        line.push(format!("train_b{rows} {:.1}", rows as f64 / wall));
        println!("{}", line.join(" "));
        Ok(())
    }
}

/// Times `capa lc0 convert`'s stages on `files` (read into memory first,
/// `repeat` times over), one thread each: PGN parsing, SAN to moves,
/// whole-game conversion (moves, static eval, planes, policy), gzip; then
/// the whole conversion to files with 1 and 2 threads. The last line is
/// `parse P replay R convert C gzip G files_t1 F1 files_t2 F2` in
/// positions per second.
fn lc0(files: &[PathBuf], repeat: usize) -> Result<()> {
    use capa_lc0::{self as lc0, ConvertJob, ConvertSettings, PgnReader};
    let mut text = Vec::new();
    for file in files {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut lc0::open_pgn(file)?, &mut bytes)
            .with_context(|| format!("cannot read {}", file.display()))?;
        for _ in 0..repeat.max(1) {
            text.extend_from_slice(&bytes);
            text.push(b'\n');
        }
    }
    let timed = |work: &mut dyn FnMut()| {
        let started = Instant::now();
        work();
        started.elapsed().as_secs_f64()
    };
    let mut games = Vec::new();
    let parse = timed(&mut || {
        let mut reader = PgnReader::new(text.as_slice());
        while let Ok(Some(game)) = reader.next_game() {
            games.push(game);
        }
    });
    let settings = ConvertSettings::default();
    let mut positions = 0usize;
    let replay = timed(&mut || {
        for game in &games {
            let start = match game.tag("FEN") {
                Some(fen) => capa_rules::chess::Chess::from_fen(fen).ok(),
                None => Some(capa_rules::chess::Chess::startpos()),
            };
            let Some(start) = start else { continue };
            let mut history = History::new(start);
            for source in &game.moves {
                let Ok(san) = shakmaty::san::SanPlus::from_ascii(source.san.as_bytes()) else { break };
                let Ok(m) = history.current().parse_san(&san.san) else { break };
                history.play(m);
            }
        }
    });
    let mut converted = Vec::new();
    let convert = timed(&mut || {
        converted = games.iter().filter_map(|g| lc0::convert_game(g, &settings, None).ok()).collect();
    });
    positions += converted.iter().map(|c| c.records.len()).sum::<usize>();
    let mut bytes = 0;
    let gzip = timed(&mut || bytes = converted.iter().map(|c| lc0::compress(&c.records).len()).sum::<usize>());
    let rate = |seconds: f64| positions as f64 / seconds.max(1e-9);
    println!(
        "{} games, {positions} positions, {:.1} MB of PGN, {:.1} MB gzipped",
        games.len(),
        text.len() as f64 / 1e6,
        bytes as f64 / 1e6
    );
    println!("parse    {:>9.0} positions/s  {:.2} s", rate(parse), parse);
    println!("replay   {:>9.0} positions/s  {:.2} s (SAN to moves, played)", rate(replay), replay);
    println!("convert  {:>9.0} positions/s  {:.2} s (moves, static eval, planes, policy)", rate(convert), convert);
    println!("gzip     {:>9.0} positions/s  {:.2} s", rate(gzip), gzip);
    let input = std::env::temp_dir().join(format!("capa-bench-lc0-{}.pgn", std::process::id()));
    std::fs::write(&input, &text).context("writing the benchmark's PGN")?;
    let mut whole = Vec::new();
    for threads in [1, 2] {
        let out = std::env::temp_dir().join(format!("capa-bench-lc0-{}-{threads}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let job = ConvertJob {
            output_dir: out.clone(),
            name: "bench".into(),
            files_per_dir: 10_000,
            max_games: None,
            settings,
            engine: None,
        };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
        let (cpu, started) = (process_cpu_seconds(), Instant::now());
        let summary = lc0::convert_files(std::slice::from_ref(&input), &job, &pool, |_| {})?;
        let (wall, cpu) = (started.elapsed().as_secs_f64(), process_cpu_seconds() - cpu);
        std::fs::remove_dir_all(&out)?;
        println!(
            "files, {threads} thread{}: {:>9.0} positions/s, {:.0} per CPU-second, {:.1} MB/s written",
            if threads == 1 { "" } else { "s" },
            summary.positions as f64 / wall,
            summary.positions as f64 / cpu,
            summary.bytes_written as f64 / wall / 1e6
        );
        whole.push(summary.positions as f64 / wall);
    }
    std::fs::remove_file(&input)?;
    println!(
        "parse {:.0} replay {:.0} convert {:.0} gzip {:.0} files_t1 {:.0} files_t2 {:.0}",
        rate(parse),
        rate(replay),
        rate(convert),
        rate(gzip),
        whole[0],
        whole[1]
    );
    Ok(())
}

/// Streams `data` as supervised training does; the last line is
/// `stream_r1 A stream_r2 B inputs_r2 C` in positions per second.
fn v6(data: &[PathBuf], positions: u64, shuffle_buffer: usize) -> Result<()> {
    use capa_lc0::{INPUT_FLOATS, SampleSettings, StreamSettings, V6Stream, v6_chunks};
    if positions == 0 || shuffle_buffer == 0 {
        bail!("--positions and --shuffle-buffer must be at least 1");
    }
    let (chunks, warnings) = v6_chunks(data)?;
    if chunks.is_empty() {
        bail!("no V6 data in the files given (looked for .gz files, .tar and .tar.gz archives)");
    }
    println!("{} chunks, {} warnings while listing", chunks.len(), warnings.len());
    let mut rates = Vec::new();
    for (readers, expand) in [(1, false), (2, false), (2, true)] {
        let settings =
            StreamSettings { readers, shuffle_buffer, sample_rate: 1, seed: 1, sample: SampleSettings::default() };
        let mut stream = V6Stream::start(chunks.clone(), 0, settings, |_| {});
        // Steady state: the buffer full, each sample out replaced by one read.
        if !stream.fill() {
            bail!("nothing readable in the data");
        }
        let (cpu, started) = (process_cpu_seconds(), Instant::now());
        let mut input = vec![0.0f32; INPUT_FLOATS];
        for _ in 0..positions {
            let sample = stream.next_sample().context("nothing readable in the data")?;
            if expand {
                sample.write_input(&mut input);
            }
        }
        let (wall, cpu) = (started.elapsed().as_secs_f64(), process_cpu_seconds() - cpu);
        let counts = stream.counts();
        drop(stream);
        println!(
            "{} reader{}{}: {:>8.0} positions/s, {:.0} per CPU-second, {:.2} epochs, {} records skipped",
            readers,
            if readers == 1 { "" } else { "s" },
            if expand { ", expanded to float planes" } else { "" },
            positions as f64 / wall,
            positions as f64 / cpu,
            counts.chunks as f64 / chunks.len() as f64,
            counts.skipped_records
        );
        rates.push(positions as f64 / wall);
    }
    println!("stream_r1 {:.0} stream_r2 {:.0} inputs_r2 {:.0}", rates[0], rates[1], rates[2]);
    Ok(())
}

/// `dense` or `conv`.
fn parse_ffn(text: &str) -> Result<capa_net::FfnKind, String> {
    match text {
        "mish" => Ok(capa_net::FfnKind::Mish),
        "swiglu" => Ok(capa_net::FfnKind::Swiglu),
        other => Err(format!("`{other}` is no feed-forward: use mish or swiglu")),
    }
}

fn parse_norm(text: &str) -> Result<capa_net::NormKind, String> {
    match text {
        "layer" => Ok(capa_net::NormKind::Layer),
        "rms" => Ok(capa_net::NormKind::Rms),
        other => Err(format!("`{other}` is no norm: use layer or rms")),
    }
}

fn parse_policy_head(text: &str) -> Result<capa_net::PolicyHeadKind, String> {
    match text {
        "dense" => Ok(capa_net::PolicyHeadKind::Dense),
        "conv" => Ok(capa_net::PolicyHeadKind::Conv),
        other => Err(format!("`{other}` is no policy head: use dense or conv")),
    }
}
