//! `capa bench`: measurements of capa's own components, for benches/.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capa_mcts::{
    EvalError, Evaluations, Evaluator, LeafRequest, Limits, RandomEvaluator, SearchParams, Tree, search_many,
};
use capa_rules::{Game, History};

/// What `capa bench search` was asked to do.
pub struct SearchBench {
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

/// CPU seconds used by this process so far, all threads.
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Searches `games` trees from the start position with the free evaluator
/// and prints the figures; the last line is the one benches/ reads.
pub fn search<G: Game>(bench: &SearchBench) -> Result<()> {
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
    let (cpu_start, wall_start) = (cpu_seconds(), Instant::now());
    let (mut nodes, mut bytes, mut tree_nodes) = (0u64, 0usize, 0usize);
    pool.install(|| {
        search_many(&mut trees, &evaluator, bench.groups, |_, _, result| {
            nodes += u64::from(result.playouts);
            bytes += result.bytes;
            tree_nodes += result.nodes;
        })
    })?;
    let cpu = cpu_seconds() - cpu_start;
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
