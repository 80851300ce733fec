//! The network and the search behind the board: live analysis, streamed
//! as snapshots of the root, and the network's move in a game.
//!
//! Analysis runs Lc0-style analysis mode (`Tree::analysis`: transpositions
//! share one node) on a thread of its own, in chunks of about 50 ms; after
//! each, it hands a snapshot to whoever listens, and it stops as soon as
//! nobody does (the page closed, the connection dropped).

use std::any::Any;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use capa_mcts::{CachedEvaluator, Limits, MoveInfo, SearchParams, SearchResult, StopReason, Tree};
use capa_net::{DeviceSpec, NetEvaluator, NetGame, Territory};
use capa_rules::{Game, GameKind, History, for_game};
use serde::Serialize;

use crate::games::{Evaluator, GuiGame};
use crate::position::sans;

/// Evaluations the network's cache keeps.
const CACHE: usize = 200_000;
/// The analysis table is compacted to what the root reaches beyond this many nodes.
const ANALYSIS_NODES: usize = 1_000_000;
/// Go: the best moves (by visits) whose score lead the snapshots show.
const LEAD_MOVES: usize = 10;
/// Time between snapshots.
const SNAPSHOT_EVERY: Duration = Duration::from_millis(250);
/// The length a chunk of search aims at.
const CHUNK_TIME: Duration = Duration::from_millis(50);

/// The network, for the game it plays: its evaluator, whose type names the
/// game, behind `Any` so that one value holds any game's.
#[derive(Clone)]
pub struct Network {
    game: GameKind,
    evaluator: Arc<dyn Any + Send + Sync>,
}

impl Network {
    /// Loads the network file `path` onto `device`.
    ///
    /// # Errors
    /// A file that is not a network, or a device that cannot run it.
    pub fn load(path: &Path, device: DeviceSpec) -> Result<Network> {
        let what = "cannot load the network";
        let game = capa_net::read_net_config(path).context(what)?.game;
        let evaluator: Arc<dyn Any + Send + Sync> = for_game!(game, G => Arc::new(CachedEvaluator::new(
            NetEvaluator::<G>::from_file(path, device).context(what)?,
            CACHE,
        )));
        Ok(Network { game, evaluator })
    }

    /// The game the network plays.
    pub fn game(&self) -> GameKind {
        self.game
    }

    /// The evaluator, when the network plays `G`.
    pub fn evaluator<G: NetGame>(&self) -> Option<Arc<Evaluator<G>>> {
        Arc::clone(&self.evaluator).downcast::<Evaluator<G>>().ok()
    }
}

/// How to analyse.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// PUCT's exploration constant.
    pub cpuct: f32,
    /// Draw aversion, -1 to 1.
    pub contempt: f32,
    /// Principal variations sent.
    pub multipv: usize,
    /// Playouts after which the analysis ends by itself.
    pub playouts: u64,
}

/// One root move as the page shows it, for the side to move.
#[derive(Clone, Debug, Serialize)]
pub struct RootMove {
    /// UCI.
    pub uci: String,
    /// SAN.
    pub san: String,
    /// Visits.
    pub n: u32,
    /// The network's prior.
    pub p: f32,
    /// Mean value, win minus loss, -1 to 1.
    pub q: f32,
    /// Draw probability.
    pub d: f32,
    /// Expected plies left.
    pub m: f32,
    /// Moves to a proven mate (positive: the side to move mates).
    pub mate: Option<i32>,
    /// The move is proven a draw.
    pub proven_draw: bool,
    /// Its principal variation, in SAN, the move first; empty beyond MultiPV.
    pub pv: Vec<String>,
    /// The same in UCI.
    pub pv_uci: Vec<String>,
    /// Go, with the score head: the network's score lead after the move
    /// for the side to move, komi counted (shown moves only).
    pub score_lead: Option<f32>,
}

/// The search's state at one moment.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    /// Playouts so far.
    pub playouts: u64,
    /// Visits of the root (with those transpositions brought).
    pub visits: u32,
    /// Milliseconds searched.
    pub ms: u64,
    /// Playouts per second.
    pub nps: f64,
    /// The root's mean value for the side to move.
    pub q: f32,
    /// The root's draw probability.
    pub d: f32,
    /// The root's expected plies left.
    pub m: f32,
    /// Every legal root move, best first.
    pub moves: Vec<RootMove>,
    /// The search has ended (proven, its playouts spent); no more snapshots follow.
    pub done: bool,
    /// Go, with the score head: the network's score lead for the side to
    /// move, komi counted, and its standard deviation.
    pub score_lead: Option<f32>,
    /// The spread of [`Snapshot::score_lead`].
    pub score_stdev: Option<f32>,
    /// Go, with the ownership head: each point's ownership for the side to
    /// move, -1 (the opponent's) to 1, in point order (`row * N + column`
    /// from A1).
    pub ownership: Option<Vec<f32>>,
}

impl Snapshot {
    fn build<G: Game>(
        root: &G,
        result: &SearchResult<G>,
        multipv: usize,
        playouts: u64,
        elapsed: Duration,
    ) -> Snapshot {
        let moves = result
            .moves
            .iter()
            .enumerate()
            .map(|(rank, m): (usize, &MoveInfo<G>)| {
                let pv = if rank < multipv { m.pv.clone() } else { Vec::new() };
                RootMove {
                    uci: m.mv.to_string(),
                    san: root.san(m.mv),
                    n: m.visits,
                    p: m.prior,
                    q: m.q,
                    d: m.d,
                    m: m.m,
                    mate: m.proof.mate_in(),
                    proven_draw: m.proof == capa_mcts::Proof::Draw,
                    pv: sans(root, &pv),
                    pv_uci: pv.iter().map(ToString::to_string).collect(),
                    score_lead: None,
                }
            })
            .collect();
        Snapshot {
            playouts,
            visits: result.visits,
            ms: elapsed.as_millis() as u64,
            nps: playouts as f64 / elapsed.as_secs_f64().max(1e-6),
            q: result.q,
            d: result.d,
            m: result.m,
            moves,
            done: false,
            score_lead: None,
            score_stdev: None,
            ownership: None,
        }
    }
}

fn params(settings: &Settings) -> SearchParams {
    SearchParams { cpuct: settings.cpuct, contempt: settings.contempt, ..SearchParams::default() }
}

/// Analyses the position at the end of `history` until nobody listens
/// (`send` refuses a snapshot, or `gone` says so between chunks), the root
/// is proven or the playouts are spent. In Go, the snapshots carry what the
/// ownership and score heads say of the root and of its best moves.
///
/// # Errors
/// The search's failure (the network's).
pub fn analyse<G: GuiGame>(
    history: History<G>,
    settings: Settings,
    evaluator: &Evaluator<G>,
    gone: impl Fn() -> bool,
    mut send: impl FnMut(Snapshot) -> bool,
) -> Result<()> {
    let root = history.current().clone();
    let mut territory = Leads::new(&history, evaluator)?;
    let mut tree = Tree::analysis(history, params(&settings), 0, ANALYSIS_NODES).map_err(|e| anyhow::anyhow!("{e}"))?;
    let started = Instant::now();
    let mut last_sent = started;
    let mut chunk = 32u32;
    let mut playouts = 0u64;
    while !gone() {
        let want = u64::from(chunk).min(settings.playouts - playouts) as u32;
        let result = tree.search(evaluator, Limits::playouts(want)).map_err(|e| anyhow::anyhow!("{e}"))?;
        playouts += u64::from(result.playouts);
        let elapsed = started.elapsed();
        chunk =
            ((playouts as f64 / elapsed.as_secs_f64().max(1e-6)) * CHUNK_TIME.as_secs_f64()).clamp(16.0, 1e6) as u32;
        let done = result.playouts == 0 || result.stop == StopReason::Proven || playouts >= settings.playouts;
        if done || last_sent.elapsed() >= SNAPSHOT_EVERY || playouts == u64::from(result.playouts) {
            let mut snapshot = Snapshot::build(&root, &result, settings.multipv, playouts, elapsed);
            snapshot.done = done;
            if let Some(leads) = &mut territory {
                leads.annotate(evaluator, &result, &mut snapshot)?;
            }
            if !send(snapshot) || done {
                return Ok(());
            }
            last_sent = Instant::now();
        }
    }
    Ok(())
}

/// Go's heads during an analysis: the root's ownership and score lead,
/// asked once, and each shown move's lead, asked when it is first shown.
struct Leads<G: GuiGame> {
    history: History<G>,
    root: Territory,
    after: HashMap<G::Move, f32>,
}

impl<G: GuiGame> Leads<G> {
    /// `None` for chess, and for a network without Go's heads.
    fn new(history: &History<G>, evaluator: &Evaluator<G>) -> Result<Option<Leads<G>>> {
        Ok(G::territory(evaluator, history, &[], true)?.map(|root| Leads {
            history: history.clone(),
            root,
            after: HashMap::new(),
        }))
    }

    fn annotate(&mut self, evaluator: &Evaluator<G>, result: &SearchResult<G>, snapshot: &mut Snapshot) -> Result<()> {
        snapshot.score_lead = self.root.leads.first().map(|&(lead, _)| lead);
        snapshot.score_stdev = self.root.leads.first().map(|&(_, spread)| spread);
        snapshot.ownership = (!self.root.ownership.is_empty()).then(|| self.root.ownership.clone());
        if self.root.leads.is_empty() {
            return Ok(());
        }
        let shown = result.moves.iter().filter(|m| m.visits > 0).take(LEAD_MOVES);
        let new: Vec<G::Move> = shown.map(|m| m.mv).filter(|m| !self.after.contains_key(m)).collect();
        if !new.is_empty()
            && let Some(territory) = G::territory(evaluator, &self.history, &new, false)?
        {
            self.after.extend(new.into_iter().zip(territory.leads.iter().skip(1).map(|&(lead, _)| lead)));
        }
        for (shown, info) in snapshot.moves.iter_mut().zip(&result.moves) {
            shown.score_lead = self.after.get(&info.mv).copied();
        }
        Ok(())
    }
}

/// The network's move after `playouts` playouts: its UCI and SAN.
///
/// # Errors
/// A finished game, or the search's failure.
pub fn best_move<G: NetGame>(history: History<G>, playouts: u32, evaluator: &Evaluator<G>) -> Result<(String, String)> {
    let root = history.current().clone();
    let mut tree = Tree::new(history, SearchParams::default(), 0).map_err(|e| anyhow::anyhow!("{e}"))?;
    let result = tree.search(evaluator, Limits::playouts(playouts)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let best = result.best().context("the game is over: there is no move to play")?;
    Ok((best.mv.to_string(), root.san(best.mv)))
}
