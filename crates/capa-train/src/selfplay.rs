//! Self-play: many games at once through the grouped search, each finished
//! game handed back as a [`GameRecord`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Result, anyhow, bail};
use capa_data::{Ending, GameRecord, PlyRecord, Resignation, SearchValues};
use capa_mcts::{
    CachedEvaluator, DirichletNoise, EvalError, Evaluations, Evaluator, GumbelParams, KldStop, LeafRequest, Limits,
    PlayoutCap, SearchParams, SearchResult, StopReason, Temperature, Tree, search_many,
};
use capa_rules::{Color, Game, GameResult, History, Termination};
use capa_rules::{Rng, mix};
use capa_rundir::process_cpu_seconds;

use crate::config::{GameSection, RootSearch, SelfPlaySection};
use crate::curriculum::{Curriculum, engine_color};

/// How games are played, from the `[selfplay]` and `[game]` sections.
#[derive(Clone, Debug)]
pub struct SelfPlaySettings {
    /// The search's parameters (noise included).
    pub params: SearchParams,
    /// Full and fast searches.
    pub cap: PlayoutCap,
    /// How randomly moves are chosen.
    pub temperature: Temperature,
    /// Plies after which a game is adjudicated.
    pub ply_cap: u32,
    /// At the ply cap, a material lead of this many pawns wins (0: a draw).
    pub ply_cap_win_margin: u32,
    /// Resign at this loss probability or above (0: never).
    pub resign_loss: f32,
    /// Share of games never resigned.
    pub resign_disabled_fraction: f32,
    /// Games at once.
    pub concurrent: usize,
    /// Search groups.
    pub groups: usize,
    /// The text form of the position every game starts from, when it is
    /// not the game's own start (Go's komi and ko rule).
    pub start: Option<String>,
}

impl SelfPlaySettings {
    /// The settings the config's sections describe.
    ///
    /// # Errors
    /// A `[game]` start that does not fit the game (named by its key).
    pub fn new(section: &SelfPlaySection, game: &GameSection) -> Result<SelfPlaySettings> {
        let start = game.start_text().map_err(|(key, message)| anyhow!("{key}: {message}"))?;
        let noise = (section.dirichlet_epsilon > 0.0)
            .then_some(DirichletNoise { alpha: section.dirichlet_alpha, epsilon: section.dirichlet_epsilon });
        let params = SearchParams {
            cpuct: section.cpuct,
            parallel_sims: section.parallel_sims,
            max_collisions: section.parallel_sims,
            noise,
            contempt: section.contempt,
            prove_mate_in_one: section.prove_mate_in_one,
            kld_stop: (section.kld_min_gain_per_node > 0.0).then_some(KldStop {
                interval: section.kld_interval,
                min_gain_per_node: section.kld_min_gain_per_node,
            }),
            gumbel: (section.search == RootSearch::Gumbel).then_some(GumbelParams {
                considered: section.gumbel_considered,
                c_visit: section.gumbel_c_visit,
                c_scale: section.gumbel_c_scale,
                scale: section.temperature,
            }),
            ..SearchParams::default()
        };
        // Gumbel's schedule is over the simulations a search adds; PUCT
        // counts the root's visits, those kept from the last move included.
        let limits = |n: u32| match section.search {
            RootSearch::Gumbel => Limits::playouts(n),
            RootSearch::Puct => Limits::visits(n),
        };
        let full = limits(section.simulations);
        let cap =
            PlayoutCap { full, fast: limits(section.fast_simulations.max(1)), fast_fraction: section.fast_probability };
        let temperature = Temperature {
            initial: section.temperature,
            decay_moves: section.temperature_decay_moves,
            cutoff_move: section.temperature_cutoff_move,
            after_cutoff: section.temperature_after_cutoff,
        };
        let concurrent = if section.concurrent == 0 { section.games } else { section.concurrent.min(section.games) };
        Ok(SelfPlaySettings {
            params,
            cap,
            temperature,
            ply_cap: game.ply_cap,
            ply_cap_win_margin: game.ply_cap_win_margin,
            resign_loss: section.resign_loss,
            resign_disabled_fraction: section.resign_disabled_fraction,
            concurrent: concurrent as usize,
            groups: section.groups,
            start,
        })
    }
}

/// What a round of self-play did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SelfPlayStats {
    /// Games finished.
    pub games: u64,
    /// Moves played.
    pub plies: u64,
    /// Moves searched fully (training positions).
    pub full_plies: u64,
    /// Searches run (moves searched).
    pub searches: u64,
    /// Playouts in all searches.
    pub playouts: u64,
    /// Searches the KLD-gain stop ended before their limit.
    pub kld_stopped: u64,
    /// Games that ended by resignation.
    pub resigned: u64,
    /// Games played out that would have been resigned.
    pub resign_checked: u64,
    /// Of those, games the would-be resigner did not lose.
    pub resign_wrong: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// CPU seconds of the whole process meanwhile (every thread's).
    pub cpu_seconds: f64,
    /// Seconds the network spent evaluating (on its own thread).
    pub inference_seconds: f64,
    /// Seconds the search thread waited for the network with nothing to do.
    pub waited_seconds: f64,
    /// Seconds spent on finished searches: recording plies, playing moves,
    /// finishing games and handing them on.
    pub bookkeeping_seconds: f64,
    /// Batches sent to the evaluator (network calls, the cache's answers included).
    pub batches: u64,
    /// Positions in those batches.
    pub leaves: u64,
    /// Of those, positions the evaluation cache answered.
    pub cache_hits: u64,
    /// The most positions one batch can hold: games at once times leaves
    /// per game per round, over the groups.
    pub batch_capacity: u64,
    /// Games won by white, drawn, won by black.
    pub results: [u64; 3],
}

/// One game in progress.
struct Slot {
    index: u32,
    rng: Rng,
    plies: Vec<PlyRecord>,
    resignation: Resignation,
    /// The curriculum engine's colour, in a game against it.
    engine: Option<Color>,
}

/// How a game ended: the winner (`None`: a draw) and how.
type Ended = (Option<Color>, Ending);

/// Plays `games` games (numbered from 0) with `evaluator` (behind its
/// cache, whose hits the stats count); each finished
/// game goes to `on_game(number, record)` as soon as it ends. With a
/// `curriculum`, a share of the games is played against its engine. When
/// `stop` is raised no new game or move starts; the games in progress are
/// dropped.
///
/// # Errors
/// The search's, the evaluator's or the curriculum engine's failure, or `on_game`'s.
#[allow(clippy::too_many_arguments)]
pub fn play<G, E>(
    evaluator: &CachedEvaluator<E>,
    settings: &SelfPlaySettings,
    games: u32,
    seed: u64,
    network: &str,
    stop: &AtomicBool,
    mut curriculum: Option<&mut Curriculum>,
    mut on_game: impl FnMut(u32, GameRecord<G>) -> Result<()>,
) -> Result<SelfPlayStats>
where
    G: Game,
    E: Evaluator<G>,
{
    let (started, cpu_started, (hits_before, _)) = (Instant::now(), process_cpu_seconds(), evaluator.hits());
    let timed = Timed { inner: evaluator, nanos: AtomicU64::new(0) };
    let mut stats = SelfPlayStats::default();
    let concurrent = settings.concurrent.clamp(1, games.max(1) as usize);
    let groups = settings.groups.clamp(1, concurrent);
    stats.batch_capacity = (concurrent.div_ceil(groups) * usize::from(settings.params.parallel_sims)) as u64;
    let mut bookkeeping = std::time::Duration::ZERO;
    let start = match &settings.start {
        Some(text) => G::from_fen(text).map_err(|e| anyhow!("the start position {text}: {e}"))?,
        None => G::startpos(),
    };
    let new_history = || History::new(start.clone()).with_ply_cap(settings.ply_cap);
    let fraction = curriculum.as_ref().map_or(0.0, |c| c.fraction);
    let mut next_game = 0u32;
    let mut slots = Vec::with_capacity(concurrent);
    let mut trees = Vec::with_capacity(concurrent);
    let mut start_game = |tree: Option<&mut Tree<G>>| -> Result<Option<(Slot, Option<Tree<G>>)>> {
        if next_game >= games || stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let index = next_game;
        next_game += 1;
        let game_seed = mix(seed, u64::from(index));
        let mut rng = Rng::new(game_seed);
        let enabled = settings.resign_loss > 0.0 && rng.uniform() >= f64::from(settings.resign_disabled_fraction);
        let engine = if fraction > 0.0 { engine_color(fraction, rng.uniform(), index) } else { None };
        let resignation = Resignation { enabled, would_have_resigned: None };
        let slot = Slot { index, rng, plies: Vec::new(), resignation, engine };
        let fresh = match tree {
            Some(tree) => {
                tree.set_history(new_history()).map_err(|e| anyhow!("{e}"))?;
                None
            }
            None => Some(Tree::new(new_history(), settings.params.clone(), game_seed).map_err(|e| anyhow!("{e}"))?),
        };
        Ok(Some((slot, fresh)))
    };
    while trees.len() < concurrent {
        match start_game(None)? {
            Some((slot, tree)) => {
                slots.push(Some(slot));
                trees.push(tree.expect("a fresh tree"));
            }
            None => break,
        }
    }
    for (tree, slot) in trees.iter_mut().zip(&mut slots) {
        let slot = slot.as_mut().expect("just started");
        if engine_moves(tree, slot, curriculum.as_deref_mut(), settings.ply_cap_win_margin)?.is_some() {
            bail!("a game ended before the network's first move");
        }
        start_search(tree, slot, settings)?;
    }

    let mut failure: Option<anyhow::Error> = None;
    let searched = search_many(&mut trees, &timed, settings.groups, |i, tree, result| {
        if failure.is_some() {
            return;
        }
        let finished = Instant::now();
        let mut step = || -> Result<()> {
            let Some(slot) = slots[i].as_mut() else { return Ok(()) };
            stats.searches += 1;
            stats.playouts += u64::from(result.playouts);
            stats.kld_stopped += u64::from(result.stop == StopReason::KldGain);
            let mut ended = match advance(tree, slot, &result, settings)? {
                Some(ended) => Some(ended),
                None => engine_moves(tree, slot, curriculum.as_deref_mut(), settings.ply_cap_win_margin)?,
            };
            // A finished game makes room for the next, which may open with
            // the engine's move (and, in principle, end there).
            while let Some((winner, ending)) = ended.take() {
                let slot = slots[i].take().expect("in progress");
                if let (Some(engine), Some(curriculum)) = (slot.engine, curriculum.as_deref_mut()) {
                    curriculum.count(match winner {
                        None => GameResult::Draw,
                        Some(winner) if winner == engine => GameResult::Loss,
                        Some(_) => GameResult::Win,
                    });
                }
                let (index, record) = finish(tree, slot, winner, ending, network);
                stats.count(&record);
                on_game(index, record)?;
                if let Some((slot, _)) = start_game(Some(tree))? {
                    let slot = slots[i].insert(slot);
                    ended = engine_moves(tree, slot, curriculum.as_deref_mut(), settings.ply_cap_win_margin)?;
                }
            }
            if stop.load(Ordering::Relaxed) {
                slots[i] = None;
            }
            if let Some(slot) = slots[i].as_mut() {
                start_search(tree, slot, settings)?;
            }
            Ok(())
        };
        if let Err(e) = step() {
            failure = Some(e);
        }
        bookkeeping += finished.elapsed();
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let pipeline = searched.map_err(|e| anyhow!("self-play search failed: {e}"))?;
    stats.seconds = started.elapsed().as_secs_f64();
    stats.cpu_seconds = process_cpu_seconds() - cpu_started;
    stats.inference_seconds = timed.nanos.load(Ordering::Relaxed) as f64 * 1e-9;
    stats.waited_seconds = pipeline.waited.as_secs_f64();
    stats.bookkeeping_seconds = bookkeeping.as_secs_f64();
    stats.batches = pipeline.batches;
    stats.leaves = pipeline.leaves;
    stats.cache_hits = evaluator.hits().0 - hits_before;
    Ok(stats)
}

/// Starts the search of the game's next move: full or fast, and for a
/// Gumbel root, its noise scaled by the temperature of the move.
fn start_search<G: Game>(tree: &mut Tree<G>, slot: &mut Slot, settings: &SelfPlaySettings) -> Result<()> {
    let (limits, full) = settings.cap.draw(&mut slot.rng);
    tree.set_gumbel_scale(settings.temperature.at(slot.plies.len() as u32));
    tree.start(limits, full).map_err(|e| anyhow!("{e}"))
}

/// Plays the curriculum engine's moves while it is its turn; how the game
/// ended if it did (`win_margin` as in [`outcome`]).
fn engine_moves<G: Game>(
    tree: &mut Tree<G>,
    slot: &mut Slot,
    mut curriculum: Option<&mut Curriculum>,
    win_margin: u32,
) -> Result<Option<Ended>> {
    let Some(color) = slot.engine else { return Ok(None) };
    while tree.history().current().turn() == color && tree.history().outcome().is_none() {
        let curriculum = curriculum.as_deref_mut().ok_or_else(|| anyhow!("a curriculum game without an engine"))?;
        let (m, ply) = curriculum.reply(tree.history())?;
        slot.plies.push(ply);
        tree.advance(m).map_err(|e| anyhow!("{e}"))?;
    }
    Ok(outcome(tree.history(), win_margin))
}

/// How the game ended, if it did. At the ply cap, a lead of `win_margin`
/// or more (pawns of material; Go: points, komi counted) wins (when the
/// margin is not 0).
fn outcome<G: Game>(history: &History<G>, win_margin: u32) -> Option<Ended> {
    let outcome = history.outcome()?;
    let position = history.current();
    if outcome.reason == Termination::PlyCap && win_margin > 0 {
        let lead = position.adjudication_lead();
        if lead.abs() >= win_margin as f32 {
            return Some((Some(if lead > 0.0 { Color::White } else { Color::Black }), Ending::Adjudication));
        }
    }
    Some((outcome.winner(position.turn()), Ending::Rules(outcome.reason)))
}

/// Records the search of this ply, plays the chosen move, and says whether
/// (and how) the game ended: the winner and the ending.
fn advance<G: Game>(
    tree: &mut Tree<G>,
    slot: &mut Slot,
    result: &SearchResult<G>,
    settings: &SelfPlaySettings,
) -> Result<Option<Ended>> {
    let position = tree.history().current().clone();
    let best = result.best().ok_or_else(|| anyhow!("a search at a position with no legal move"))?;
    let values = |q, d, m| SearchValues { q, d, m };
    // A move played without a search (Gumbel's forced moves) trains nothing.
    let searched = result.playouts > 0 || result.visits > 0;
    slot.plies.push(PlyRecord {
        full_search: result.full_search && searched,
        root: values(result.q, result.d, result.m),
        best: values(best.q, best.d, best.m),
        visits: if searched {
            result
                .policy_target()
                .filter(|&(_, share)| share > 0.0)
                .map(|(m, share)| (position.policy_index(m) as u16, share))
                .collect()
        } else {
            Vec::new()
        },
    });
    let ply = slot.plies.len() as u32 - 1;
    // Seed 004's rule: the loss probability decides, not Q (with few draws
    // a Q threshold resigns far later than it seems to).
    let loss = (1.0 - best.d - best.q) / 2.0;
    if searched && settings.resign_loss > 0.0 && loss >= settings.resign_loss {
        slot.resignation.would_have_resigned.get_or_insert(ply);
        if slot.resignation.enabled {
            slot.plies.pop();
            return Ok(Some((Some(!position.turn()), Ending::Resignation)));
        }
    }
    let temperature = settings.temperature.at(ply);
    let m = result.choose(temperature, &mut slot.rng).expect("a best move exists");
    tree.advance(m).map_err(|e| anyhow!("{e}"))?;
    Ok(outcome(tree.history(), settings.ply_cap_win_margin))
}

/// The finished game's record.
fn finish<G: Game>(
    tree: &Tree<G>,
    slot: Slot,
    winner: Option<Color>,
    ending: Ending,
    network: &str,
) -> (u32, GameRecord<G>) {
    let history = tree.history();
    let record = GameRecord {
        start: history.start().clone(),
        network: network.to_string(),
        moves: history.moves()[..slot.plies.len()].to_vec(),
        plies: slot.plies,
        winner,
        ending,
        resignation: slot.resignation,
    };
    (slot.index, record)
}

impl SelfPlayStats {
    /// Counts a finished game.
    pub fn count<G: Game>(&mut self, record: &GameRecord<G>) {
        self.games += 1;
        self.plies += record.plies.len() as u64;
        self.full_plies += record.plies.iter().filter(|p| p.full_search).count() as u64;
        self.results[match record.winner {
            Some(Color::White) => 0,
            None => 1,
            Some(Color::Black) => 2,
        }] += 1;
        if record.ending == Ending::Resignation {
            self.resigned += 1;
        }
        if let (false, Some(ply)) = (record.resignation.enabled, record.resignation.would_have_resigned) {
            self.resign_checked += 1;
            let resigner = if ply % 2 == 0 { record.start.turn() } else { !record.start.turn() };
            if record.winner != Some(!resigner) {
                self.resign_wrong += 1;
            }
        }
    }
}

/// An evaluator that counts the time spent in it.
struct Timed<'a, E> {
    inner: &'a E,
    nanos: AtomicU64,
}

impl<G: Game, E: Evaluator<G>> Evaluator<G> for Timed<'_, E> {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        let started = Instant::now();
        let result = self.inner.evaluate(batch, out);
        self.nanos.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        result
    }
}

#[cfg(test)]
mod tests {
    use capa_rules::capablanca::Capablanca;

    use super::*;

    /// With the KLD-gain stop on, full searches of 4,000 visits end early
    /// once the root's visit distribution settles; off, none does.
    #[test]
    fn the_kld_stop_fires_in_self_play_on_a_settled_tree() {
        let game = GameSection {
            name: capa_rules::GameKind::Chess,
            ply_cap: 6,
            ply_cap_win_margin: 0,
            ..GameSection::default()
        };
        let section = SelfPlaySection {
            games: 2,
            simulations: 4_000,
            parallel_sims: 8,
            groups: 1,
            kld_min_gain_per_node: 1e-4,
            ..SelfPlaySection::default()
        };
        let run = |section: &SelfPlaySection| {
            let settings = SelfPlaySettings::new(section, &game).unwrap();
            let stop = AtomicBool::new(false);
            let evaluator = CachedEvaluator::new(capa_mcts::RandomEvaluator, 0);
            play::<capa_rules::chess::Chess, _>(&evaluator, &settings, 2, 1, "net", &stop, None, |_, _| Ok(())).unwrap()
        };
        let with = run(&section);
        assert_eq!(with.searches, 12, "{with:?}");
        assert!(with.kld_stopped >= 10, "{with:?}");
        assert!(with.playouts < with.searches * 2_000, "{with:?}");
        let without = run(&SelfPlaySection { kld_min_gain_per_node: 0.0, ..section });
        assert_eq!(without.kld_stopped, 0);
        // Tree reuse makes a search's playouts its limit less the visits it inherits.
        assert!(without.playouts > 4 * with.playouts, "{without:?} against {with:?}");
    }

    #[test]
    fn the_ply_cap_adjudicates_by_material_margin() {
        // White has a chancellor (8 pawns) against a bare king; one ply reaches the cap.
        let start = Capablanca::from_fen("k9/10/10/10/10/10/10/1C7K w - - 0 1").unwrap();
        let mut history = History::new(start).with_ply_cap(1);
        history.play(start.parse_move("j1i1").unwrap());
        let capped = Some((None, Ending::Rules(Termination::PlyCap)));
        assert_eq!(outcome(&history, 0), capped);
        assert_eq!(outcome(&history, 9), capped);
        assert_eq!(outcome(&history, 8), Some((Some(Color::White), Ending::Adjudication)));
        // Any other ending stands as the rules say.
        let mate = Capablanca::from_fen("k1C7/10/1K8/10/10/10/10/10 b - - 0 1").unwrap();
        let history = History::new(mate).with_ply_cap(1);
        assert_eq!(outcome(&history, 1), Some((Some(Color::White), Ending::Rules(Termination::Checkmate))));
    }
}
