//! `capa judge`: how good networks' moves are by a UCI engine's judgement,
//! their policy's first choice and their search's, on positions of the
//! first network's own games.

use std::collections::hash_map::{Entry, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use capa_data::{MATE_CENTIPAWNS, score_centipawns};
use capa_mcts::LeafRequest;
use capa_net::{DeviceSpec, NetGame};
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, GameKind, GameResult, History, Rng, random_opening};
use capa_uci::{Go, UciEngine, position_command};

use crate::args::DeviceArgs;
use crate::diagnostics::for_each_policy;

/// A loss counts as at most this much in the means, so that one mate
/// missed does not outweigh a hundred positions.
const LOSS_CAP: i32 = 1000;
/// A move within this many centipawns of the judge's best is one of its best.
const BEST_MARGIN: i32 = 10;
/// The positions' games end here at the latest.
const MAX_GAME_PLIES: usize = 300;
/// The longest any engine may take over one answer.
const TIMEOUT: Duration = Duration::from_secs(600);

/// How good networks' moves are, judged by a UCI engine.
/// On positions of
/// the first network's own games (each opened by random plies), the engine
/// scores the move each network's policy ranks first and the move its
/// search plays at each --nodes: a move's score is the position after it,
/// searched to --depth less one. One line per network: the mean loss
/// against the judge's best in centipawns (each loss counted up to 1000),
/// the share of moves within 10 centipawns of the best, and of blunders;
/// every network after the first also gets its paired difference to the
/// first (mean and standard error over the same positions). A network whose
/// search loses less plays better at that many playouts; its prior's line
/// says how much of that is the policy's own.
#[derive(clap::Args, Debug)]
pub struct JudgeCommand {
    /// Network files (or shipped short names) of one game, chess or
    /// Capablanca. The first plays the games the positions come from.
    #[arg(required = true, value_parser = crate::args::network)]
    pub nets: Vec<PathBuf>,
    /// The judge: a UCI engine command that plays the game (`fairy-stockfish`, `stockfish`).
    #[arg(long)]
    pub engine: String,
    /// The judge's depth: each move is scored by the position after it, searched one ply less.
    #[arg(long, default_value_t = 11)]
    pub depth: u32,
    /// Playouts of each network's search (comma-separated; each limit is judged).
    #[arg(long, value_delimiter = ',', default_value = "200")]
    pub nodes: Vec<u64>,
    /// Positions to judge.
    #[arg(long, default_value_t = 200)]
    pub positions: usize,
    /// Random plies that open each game.
    #[arg(long, default_value_t = 8)]
    pub random_plies: u32,
    /// Playouts a move of the first network in the games.
    #[arg(long, default_value_t = 64)]
    pub play_nodes: u64,
    /// A move that loses at least this many centipawns is a blunder.
    #[arg(long, default_value_t = 200)]
    pub blunder: i32,
    /// Seeds the openings and which positions of the games are taken.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub device: DeviceArgs,
}

impl JudgeCommand {
    /// Prints a line per network.
    ///
    /// # Errors
    /// Bad arguments, networks of different games or of Go, a network or
    /// an engine that cannot be started or that fails.
    pub fn run(self) -> Result<()> {
        if self.positions == 0 {
            bail!("--positions must be at least 1");
        }
        if self.depth < 2 {
            bail!("--depth must be at least 2 (a move is judged by the position after it, one ply less)");
        }
        if self.nodes.is_empty() || self.nodes.contains(&0) || self.play_nodes == 0 {
            bail!("--nodes and --play-nodes must each be at least 1");
        }
        let mut games = Vec::with_capacity(self.nets.len());
        for net in &self.nets {
            let config = capa_net::read_net_config(net).with_context(|| format!("cannot read {}", net.display()))?;
            games.push(config.game);
        }
        if let Some(other) = games.iter().position(|game| *game != games[0]) {
            bail!(
                "{} plays {} and {} plays {}: judge networks of one game together",
                self.nets[0].display(),
                games[0],
                self.nets[other].display(),
                games[other]
            );
        }
        match games[0] {
            GameKind::Capablanca => self.judge::<Capablanca>(),
            GameKind::Chess => self.judge::<Chess>(),
            go => bail!("capa judge takes chess and Capablanca networks; {go} has no UCI engine to judge it"),
        }
    }

    fn judge<G: NetGame>(&self) -> Result<()> {
        let capa = std::env::current_exe().context("cannot find the capa executable to run networks with")?;
        let mut searchers = Vec::with_capacity(self.nets.len());
        for net in &self.nets {
            searchers.push(self.network_engine::<G>(&capa, net)?);
        }
        let mut judge = UciEngine::start_with_timeout(&self.engine, TIMEOUT)
            .with_context(|| format!("cannot start the judge `{}`", self.engine))?;
        judge.select_variant(G::KIND)?;
        judge.ready()?;
        let positions = self.positions_of_games::<G>(&mut searchers[0])?;
        eprintln!("{} positions from {}'s games; the networks search them", positions.len(), label(&self.nets[0]));

        // Per network, the moves it would play: its prior's first, then its
        // search's at each limit.
        let mut picks: Vec<Vec<Vec<G::Move>>> = Vec::with_capacity(self.nets.len());
        for (net, searcher) in self.nets.iter().zip(&mut searchers) {
            let mut columns = vec![prior_firsts::<G>(net, &positions, self.device.spec())?];
            for &nodes in &self.nodes {
                let mut moves = Vec::with_capacity(positions.len());
                for history in &positions {
                    searcher.new_game()?;
                    let out = searcher.go(&position_command(history), Go::Nodes(nodes))?;
                    moves.push(legal_answer(history, out.best, searcher.name())?);
                }
                columns.push(moves);
            }
            picks.push(columns);
            eprintln!("{} searched", label(net));
        }

        // Each distinct move scored once; losses against the best scored.
        let columns = self.nodes.len() + 1;
        let mut losses = vec![vec![Vec::with_capacity(positions.len()); columns]; self.nets.len()];
        for (index, history) in positions.iter().enumerate() {
            let out = judge.go(&position_command(history), Go::Depth(self.depth))?;
            let best = legal_answer(history, out.best, judge.name())?;
            let mut scores = HashMap::new();
            for m in std::iter::once(best).chain(picks.iter().flatten().map(|column| column[index])) {
                if let Entry::Vacant(slot) = scores.entry(m.to_string()) {
                    slot.insert(score_move(&mut judge, history, m, self.depth - 1)?);
                }
            }
            let top = scores.values().copied().max().unwrap_or(0);
            for (net, columns) in picks.iter().enumerate() {
                for (column, moves) in columns.iter().enumerate() {
                    let score = scores[&moves[index].to_string()];
                    losses[net][column].push((top - score).min(LOSS_CAP));
                }
            }
            if (index + 1) % 20 == 0 {
                eprintln!("judged {}/{} positions", index + 1, positions.len());
            }
        }

        println!(
            "judge: {} at depth {} on {} positions of {}'s games ({} playouts a move, {} random plies, seed {})",
            judge.name(),
            self.depth,
            positions.len(),
            label(&self.nets[0]),
            self.play_nodes,
            self.random_plies,
            self.seed
        );
        let names: Vec<String> =
            std::iter::once("prior".to_string()).chain(self.nodes.iter().map(|n| format!("{n} playouts"))).collect();
        for (net, columns) in losses.iter().enumerate() {
            let line: Vec<String> = columns
                .iter()
                .enumerate()
                .map(|(column, loss)| {
                    let mut text = format!(
                        "{}: loss {:.0} cp, best {:.0}%, blunders {:.1}%",
                        names[column],
                        mean(loss),
                        share(loss, |l| l <= BEST_MARGIN),
                        share(loss, |l| l >= self.blunder)
                    );
                    if net > 0 {
                        let (difference, error) = paired(loss, &losses[0][column]);
                        text.push_str(&format!(" ({difference:+.0} ± {error:.0} against the first)"));
                    }
                    text
                })
                .collect();
            println!("{}: {}", label(&self.nets[net]), line.join(" | "));
        }
        Ok(())
    }

    /// `capa uci` on `net`, one thread, as `capa match --option-a Threads=1` plays it.
    fn network_engine<G: Game>(&self, capa: &Path, net: &Path) -> Result<UciEngine> {
        let args: Vec<String> = ["uci".to_string(), "--net".to_string(), net.to_string_lossy().into_owned()]
            .into_iter()
            .chain(self.device.child_args())
            .collect();
        let mut engine = UciEngine::launch(capa, &args, TIMEOUT)
            .with_context(|| format!("cannot start `capa uci` on {}", net.display()))?;
        engine.set_option("Threads", "1")?;
        engine.select_variant(G::KIND)?;
        engine.ready()?;
        Ok(engine)
    }

    /// Positions of `player`'s games against itself, each opened by
    /// --random-plies random plies: about one position in five from four
    /// plies after the opening on, until there are --positions.
    fn positions_of_games<G: Game>(&self, player: &mut UciEngine) -> Result<Vec<History<G>>> {
        let mut rng = Rng::new(self.seed);
        let mut found = Vec::with_capacity(self.positions);
        let first = self.random_plies as usize + 4;
        let mut games = 0;
        while found.len() < self.positions {
            games += 1;
            if games > 50 * self.positions {
                bail!(
                    "the games gave {} positions of the {} asked for: fewer --random-plies",
                    found.len(),
                    self.positions
                );
            }
            let mut history = random_opening::<G>(self.random_plies, &mut rng);
            player.new_game()?;
            while history.outcome().is_none() && history.moves().len() < MAX_GAME_PLIES && found.len() < self.positions
            {
                if history.moves().len() >= first && rng.next_u64().is_multiple_of(5) {
                    found.push(history.clone());
                }
                let out = player.go(&position_command(&history), Go::Nodes(self.play_nodes))?;
                let m = legal_answer(&history, out.best, player.name())?;
                history.play(m);
            }
        }
        Ok(found)
    }
}

/// The move an engine answered, checked legal.
fn legal_answer<G: Game>(history: &History<G>, best: Option<String>, engine: &str) -> Result<G::Move> {
    let text = best.with_context(|| format!("`{engine}` found no move at {}", position_command(history)))?;
    history
        .current()
        .parse_move(&text)
        .with_context(|| format!("`{engine}` answered `{text}` at {}", position_command(history)))
}

/// The judge's score of `m` for the side that plays it, in centipawns:
/// the game's end, or the position after it searched to `depth`.
fn score_move<G: Game>(judge: &mut UciEngine, history: &History<G>, m: G::Move, depth: u32) -> Result<i32> {
    let mut after = history.clone();
    after.play(m);
    // The outcome speaks for the side to move after `m`.
    if let Some(outcome) = after.outcome() {
        return Ok(match outcome.result {
            GameResult::Win => -MATE_CENTIPAWNS,
            GameResult::Draw => 0,
            GameResult::Loss => MATE_CENTIPAWNS,
        });
    }
    let out = judge.go(&position_command(&after), Go::Depth(depth))?;
    let line = out
        .lines
        .first()
        .with_context(|| format!("`{}` gave no score at {}", judge.name(), position_command(&after)))?;
    Ok(-score_centipawns(line.score))
}

/// The move each position's policy ranks first.
fn prior_firsts<G: NetGame>(net: &Path, positions: &[History<G>], device: DeviceSpec) -> Result<Vec<G::Move>> {
    let requests: Vec<LeafRequest<G>> = positions.iter().map(LeafRequest::from_history).collect();
    let mut firsts = Vec::with_capacity(positions.len());
    for_each_policy(net, &requests, device, |request, priors| {
        // Positions of unfinished games: each has a legal move.
        let first = (0..priors.len()).max_by(|&a, &b| priors[a].total_cmp(&priors[b])).unwrap_or(0);
        firsts.push(request.legal_moves()[first]);
    })?;
    Ok(firsts)
}

/// A network's name in the report: its file's stem.
fn label(net: &Path) -> String {
    net.file_stem().map_or_else(|| net.display().to_string(), |s| s.to_string_lossy().into_owned())
}

fn mean(values: &[i32]) -> f64 {
    values.iter().map(|&v| f64::from(v)).sum::<f64>() / values.len().max(1) as f64
}

fn share(values: &[i32], counts: impl Fn(i32) -> bool) -> f64 {
    100.0 * values.iter().filter(|&&v| counts(v)).count() as f64 / values.len().max(1) as f64
}

/// The mean of `a - b` over the same positions, and its standard error.
fn paired(a: &[i32], b: &[i32]) -> (f64, f64) {
    let differences: Vec<f64> = a.iter().zip(b).map(|(&x, &y)| f64::from(x - y)).collect();
    let n = differences.len() as f64;
    let mean = differences.iter().sum::<f64>() / n;
    if differences.len() < 2 {
        return (mean, 0.0);
    }
    let variance = differences.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (variance / n).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_differences_have_their_standard_error() {
        let (mean, error) = paired(&[10, 20, 30, 40], &[0, 10, 30, 20]);
        assert_eq!(mean, 10.0);
        // Differences 10, 10, 0, 20: sample variance 200/3 over 4.
        assert!((error - (200.0f64 / 3.0 / 4.0).sqrt()).abs() < 1e-12);
        assert_eq!(paired(&[5], &[2]), (3.0, 0.0));
    }
}
