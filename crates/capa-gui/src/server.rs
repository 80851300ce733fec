//! The HTTP server: the page's three files, compiled in, and a JSON API.
//! Every handler answers a request it cannot serve with a 4xx and a
//! sentence; nothing on disk is served but through the API's own readers.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::Html;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::{get, post};
use axum::{Json, Router};
use capa_rules::{Game, GameKind, History, MoveList, for_game};
use capa_rundir::{CommitPoint, RunDir, keys, ledgers_back, read_metrics};
use futures::Stream;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::analysis::{self, Network, Settings};
use crate::archive::{self, GameMeta};
use crate::error::ApiError;
use crate::explorer::{Explorer, NO_MOVE};
use crate::games::{Evaluator, GuiGame};
use crate::position::{self, PositionQuery};

/// Analyses that may run at once, over all tabs.
pub const MAX_SEARCHES: usize = 4;
/// Playouts an analysis runs at most before it ends by itself.
const MAX_ANALYSIS_PLAYOUTS: u64 = 100_000_000;
/// The run's games the dashboard lists.
const RUN_GAMES_LISTED: usize = 30;

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const STYLE_CSS: &str = include_str!("../assets/style.css");

/// Everything the handlers share.
pub struct AppState {
    /// The network, when one was given.
    pub network: Option<Network>,
    /// Its file name, for the page.
    pub network_name: Option<String>,
    /// An explorer per game of the archive.
    pub explorers: Vec<Explorer>,
    /// The run, when one was given, and its game.
    pub run: Option<(Arc<RunDir>, GameKind)>,
    /// Analyses running now.
    pub searches: Arc<AtomicUsize>,
}

type Shared = Arc<AppState>;
type ApiResult<T> = Result<T, ApiError>;

/// The router of the page and the API.
pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/", get(|| async { Html(INDEX_HTML) }))
        .route("/app.js", get(|| async { ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], APP_JS) }))
        .route("/style.css", get(|| async { ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE_CSS) }))
        .route("/api/info", get(info))
        .route("/api/position", get(position))
        .route("/api/pgn", post(pgn))
        .route("/api/sgf", post(sgf))
        .route("/api/analyse", get(analyse))
        .route("/api/play", get(play))
        .route("/api/explorer", get(explorer))
        .route("/api/archive/game", get(archive_game))
        .route("/api/run/metrics", get(run_metrics))
        .route("/api/run/games", get(run_games))
        .route("/api/run/game", get(run_game))
        .fallback(|| async { ApiError::missing("no such page: the GUI serves /, its two files and /api/...") })
        .with_state(state)
}

/// A query's fields, or a 400 naming what is wrong with them.
fn query<T>(query: Result<Query<T>, QueryRejection>) -> ApiResult<T> {
    query.map(|Query(q)| q).map_err(|e| ApiError::bad(e.body_text()))
}

/// Runs blocking work (files, the search) off the server's threads.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> ApiResult<T> + Send + 'static) -> ApiResult<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::internal(&anyhow::anyhow!("the work stopped: {e}")))?
}

async fn info(State(state): State<Shared>) -> Json<Value> {
    let defaults = capa_mcts::SearchParams::default();
    let network = state.network.as_ref().map(|n| json!({ "game": n.game().name(), "name": state.network_name }));
    let explorers: Vec<Value> = state
        .explorers
        .iter()
        .map(|e| json!({ "game": e.game.name(), "games": e.games(), "positions": e.positions() }))
        .collect();
    let run = state.run.as_ref().map(|(run, game)| json!({ "location": run.location(), "game": *game.name() }));
    let game = state
        .network
        .as_ref()
        .map(Network::game)
        .or(state.run.as_ref().map(|(_, game)| *game))
        .or(state.explorers.first().map(|e| e.game))
        .unwrap_or(GameKind::Capablanca);
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "game": game.name(),
        "network": network,
        "explorers": explorers,
        "run": run,
        "searches": state.searches.load(Ordering::Relaxed),
        "max_searches": MAX_SEARCHES,
        "defaults": { "cpuct": defaults.cpuct, "contempt": defaults.contempt },
    }))
}

async fn position(q: Result<Query<PositionQuery>, QueryRejection>) -> ApiResult<Json<position::PositionView>> {
    Ok(Json(position::position(&query(q)?)?))
}

/// The first game of PGN text: its game, start and moves in UCI.
async fn pgn(text: String) -> ApiResult<Json<Value>> {
    let (kind, game) = archive::first_pgn_game(&text).map_err(ApiError::bad)?;
    let meta = GameMeta {
        white: game.tag("White").unwrap_or("?").to_string(),
        black: game.tag("Black").unwrap_or("?").to_string(),
        result: game.winner(),
        source: "pasted".to_string(),
    };
    let replayed = for_game!(kind, G => archive::replay::<G>(&game).map(|(start, moves)| archive::game_json::<G>(&start, &moves, &meta)));
    let mut answer = replayed.map_err(|why| ApiError::bad(format!("game {} of the PGN: {why}", game.number)))?;
    let tags: serde_json::Map<String, Value> =
        game.tags.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
    answer["tags"] = Value::Object(tags);
    Ok(Json(answer))
}

/// The first game of SGF text (Go on 9x9, 13x13 or 19x19), its main line.
async fn sgf(text: String) -> ApiResult<Json<Value>> {
    let game = archive::first_sgf_game(&text).map_err(ApiError::bad)?;
    Ok(Json(game))
}

/// What `/api/analyse` takes: the position and the search's settings.
#[derive(Debug, Deserialize)]
struct AnalyseQuery {
    game: String,
    fen: Option<String>,
    moves: Option<String>,
    cpuct: Option<f32>,
    contempt: Option<f32>,
    multipv: Option<usize>,
    playouts: Option<u64>,
}

impl AnalyseQuery {
    fn position(&self) -> PositionQuery {
        PositionQuery { game: self.game.clone(), fen: self.fen.clone(), moves: self.moves.clone() }
    }

    fn settings(&self) -> ApiResult<Settings> {
        let defaults = capa_mcts::SearchParams::default();
        let cpuct = self.cpuct.unwrap_or(defaults.cpuct);
        if !(cpuct > 0.0 && cpuct <= 100.0) {
            return Err(ApiError::bad(format!("cpuct {cpuct} is not in (0, 100]")));
        }
        let contempt = self.contempt.unwrap_or(defaults.contempt);
        if !(-1.0..=1.0).contains(&contempt) {
            return Err(ApiError::bad(format!("contempt {contempt} is not in [-1, 1]")));
        }
        let multipv = self.multipv.unwrap_or(3);
        if !(1..=20).contains(&multipv) {
            return Err(ApiError::bad(format!("multipv {multipv} is not from 1 to 20")));
        }
        let playouts = self.playouts.unwrap_or(MAX_ANALYSIS_PLAYOUTS);
        if !(1..=MAX_ANALYSIS_PLAYOUTS).contains(&playouts) {
            return Err(ApiError::bad(format!("playouts {playouts} is not from 1 to {MAX_ANALYSIS_PLAYOUTS}")));
        }
        Ok(Settings { cpuct, contempt, multipv, playouts })
    }
}

/// The network for a request about `game`.
fn network_for(state: &AppState, game: GameKind) -> ApiResult<Network> {
    let network = state
        .network
        .clone()
        .ok_or_else(|| ApiError::missing("no network: start capa gui with --net NET to analyse and play"))?;
    if network.game() != game {
        return Err(ApiError::bad(format!(
            "the network plays {}, not {}: switch the board's game",
            network.game().name(),
            game.name()
        )));
    }
    Ok(network)
}

/// `network`'s evaluator for `G`, the game [`network_for`] checked.
fn evaluator<G: GuiGame>(network: &Network) -> ApiResult<Arc<Evaluator<G>>> {
    network
        .evaluator::<G>()
        .ok_or_else(|| ApiError::internal(&anyhow::anyhow!("the network does not play {}", G::NAME)))
}

/// Counts a running analysis until dropped.
struct SearchSlot(Arc<AtomicUsize>);

impl SearchSlot {
    fn take(searches: &Arc<AtomicUsize>) -> ApiResult<SearchSlot> {
        if searches.fetch_add(1, Ordering::SeqCst) >= MAX_SEARCHES {
            searches.fetch_sub(1, Ordering::SeqCst);
            return Err(ApiError::busy(format!(
                "{MAX_SEARCHES} analyses are running already: stop one (or close its tab) first"
            )));
        }
        Ok(SearchSlot(Arc::clone(searches)))
    }
}

impl Drop for SearchSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Live analysis as server-sent events: `snapshot` events (JSON), and a
/// `failure` event if the search fails. Closing the connection stops it.
async fn analyse(
    State(state): State<Shared>,
    q: Result<Query<AnalyseQuery>, QueryRejection>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let q = query(q)?;
    let settings = q.settings()?;
    let position = q.position();
    let game = position.game()?;
    let network = network_for(&state, game)?;
    let (sender, receiver) = tokio::sync::mpsc::channel::<Event>(2);
    for_game!(game, G => spawn_analysis(position.history::<G>()?, settings, evaluator::<G>(&network)?, sender, &state.searches)?);
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|event| (Ok(event), receiver))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

fn spawn_analysis<G: GuiGame>(
    history: History<G>,
    settings: Settings,
    evaluator: Arc<Evaluator<G>>,
    sender: tokio::sync::mpsc::Sender<Event>,
    searches: &Arc<AtomicUsize>,
) -> ApiResult<()> {
    let slot = SearchSlot::take(searches)?;
    std::thread::Builder::new()
        .name("capa-gui-analysis".to_string())
        .spawn(move || {
            let _slot = slot;
            let outcome = analysis::analyse(
                history,
                settings,
                &evaluator,
                || sender.is_closed(),
                |snapshot| {
                    let event = Event::default().event("snapshot").json_data(&snapshot).unwrap_or_default();
                    sender.blocking_send(event).is_ok()
                },
            );
            if let Err(e) = outcome {
                let _ = sender.blocking_send(Event::default().event("failure").data(format!("{e:#}")));
            }
        })
        .map_err(|e| ApiError::internal(&anyhow::anyhow!("cannot start the search thread: {e}")))?;
    Ok(())
}

#[derive(Debug, Deserialize)]
struct PlayQuery {
    game: String,
    fen: Option<String>,
    moves: Option<String>,
    playouts: Option<u32>,
}

/// The network's move: `{uci, san}`.
async fn play(State(state): State<Shared>, q: Result<Query<PlayQuery>, QueryRejection>) -> ApiResult<Json<Value>> {
    let q = query(q)?;
    let playouts = q.playouts.unwrap_or(200);
    if !(1..=1_000_000).contains(&playouts) {
        return Err(ApiError::bad(format!("playouts {playouts} is not from 1 to 1000000")));
    }
    let position = PositionQuery { game: q.game.clone(), fen: q.fen.clone(), moves: q.moves.clone() };
    let game = position.game()?;
    let network = network_for(&state, game)?;
    let chosen = for_game!(game, G => {
        let (history, evaluator) = (position.history::<G>()?, evaluator::<G>(&network)?);
        blocking(move || analysis::best_move(history, playouts, &evaluator).map_err(|e| ApiError::bad(format!("{e:#}"))))
            .await?
    });
    Ok(Json(json!({ "uci": chosen.0, "san": chosen.1 })))
}

fn explorer_for(state: &AppState, game: GameKind) -> ApiResult<usize> {
    state.explorers.iter().position(|e| e.game == game).ok_or_else(|| {
        ApiError::missing(format!(
            "no {} games to explore: start capa gui with --games FILES or --run DIR",
            game.name()
        ))
    })
}

/// `moves` unpacked from `start`; `None` if one is not legal there.
fn unpack<G: Game>(start: &G, packed: &[u16]) -> Option<Vec<G::Move>> {
    let mut position = start.clone();
    let mut legal = MoveList::new();
    packed
        .iter()
        .map(|&p| {
            position.legal_moves(&mut legal);
            let m = legal.iter().copied().find(|&m| G::pack_move(m) == p)?;
            position.play(m);
            Some(m)
        })
        .collect()
}

fn explore<G: GuiGame>(explorer: &Explorer, history: &History<G>) -> ApiResult<Value> {
    let started = Instant::now();
    let position = history.current();
    let lookup = explorer.lookup(position.hash()).map_err(|e| ApiError::internal(&e))?;
    let mut ended = 0;
    let mut moves = Vec::new();
    for counts in &lookup.moves {
        if counts.mv == NO_MOVE {
            ended = counts.games;
            continue;
        }
        let Some(m) = unpack(position, &[counts.mv]).and_then(|m| m.first().copied()) else { continue };
        let decided = counts.white + counts.draws + counts.black;
        let score = (decided > 0).then(|| (counts.white as f64 + 0.5 * counts.draws as f64) / decided as f64);
        moves.push(json!({
            "uci": m.to_string(), "san": position.san(m), "games": counts.games,
            "white": counts.white, "draws": counts.draws, "black": counts.black, "white_score": score,
        }));
    }
    let mut games = Vec::new();
    for &id in &lookup.games {
        let game = explorer.game(id).map_err(|e| ApiError::internal(&e))?;
        games.push(json!({
            "id": id, "white": game.meta.white, "black": game.meta.black,
            "result": G::result_text(game.meta.result), "plies": game.moves.len(), "source": game.meta.source,
        }));
    }
    Ok(json!({
        "total": lookup.total, "ended_here": ended, "moves": moves, "games": games,
        "ms": started.elapsed().as_secs_f64() * 1000.0,
    }))
}

/// The continuations of a position in the archive, and its first games.
async fn explorer(
    State(state): State<Shared>,
    q: Result<Query<PositionQuery>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    let q = query(q)?;
    let game = q.game()?;
    let index = explorer_for(&state, game)?;
    blocking(move || {
        let explorer = &state.explorers[index];
        for_game!(game, G => explore(explorer, &q.history::<G>()?))
    })
    .await
    .map(Json)
}

fn stored_game<G: GuiGame>(explorer: &Explorer, id: u32) -> ApiResult<Value> {
    let stored = explorer.game(id).map_err(|e| ApiError::missing(format!("{e:#}")))?;
    let start = if stored.fen.is_empty() {
        G::startpos()
    } else {
        G::from_fen(&stored.fen).map_err(|e| ApiError::internal(&e.into()))?
    };
    let moves = unpack(&start, &stored.moves)
        .ok_or_else(|| ApiError::internal(&anyhow::anyhow!("game {id} of the index does not replay")))?;
    Ok(archive::game_json::<G>(&start, &moves, &stored.meta))
}

#[derive(Debug, Deserialize)]
struct ArchiveGameQuery {
    game: String,
    id: u32,
}

async fn archive_game(
    State(state): State<Shared>,
    q: Result<Query<ArchiveGameQuery>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    let q = query(q)?;
    let game = position::parse_game(&q.game)?;
    let index = explorer_for(&state, game)?;
    blocking(move || {
        let explorer = &state.explorers[index];
        for_game!(game, G => stored_game::<G>(explorer, q.id))
    })
    .await
    .map(Json)
}

fn the_run(state: &AppState) -> ApiResult<(Arc<RunDir>, GameKind)> {
    state.run.clone().ok_or_else(|| ApiError::missing("no run: start capa gui with --run DIR for the dashboard"))
}

/// Every line of the run's `metrics.jsonl` (a line that does not read,
/// such as one being written, is left out).
async fn run_metrics(State(state): State<Shared>) -> ApiResult<Json<Value>> {
    let (run, _) = the_run(&state)?;
    blocking(move || {
        let lines = read_metrics(&run).map_err(|e| ApiError::internal(&e))?;
        Ok(json!({ "location": run.location(), "lines": lines }))
    })
    .await
    .map(Json)
}

/// The run's latest games, newest first: the trainer's games of the
/// iteration in play, then those the committed iterations trained on, read
/// back from the newest ledger as far as the list needs (a worker's game
/// shows once an iteration took it).
async fn run_games(State(state): State<Shared>) -> ApiResult<Json<Value>> {
    let (run, game) = the_run(&state)?;
    blocking(move || {
        let internal = |e: anyhow::Error| ApiError::internal(&e);
        let committed = CommitPoint::read(&run).map_err(internal)?.map_or(0, |point| point.iteration);
        let in_play = keys::selfplay_games_from(committed + 1);
        let playing = run.list_after(&keys::game_folder(keys::TRAINER_GAMES), Some(&in_play)).map_err(internal)?;
        let mut newest: Vec<String> = playing.into_iter().rev().map(|entry| entry.key).collect();
        for ledger in ledgers_back(&run, committed) {
            if newest.len() >= RUN_GAMES_LISTED {
                break;
            }
            newest.extend(ledger.map_err(internal)?.1.into_iter().rev());
        }
        let mut games = Vec::new();
        for key in newest.iter().take(RUN_GAMES_LISTED) {
            let Ok(Some(bytes)) = run.read(key) else { continue };
            let summary = for_game!(game, G => record_summary::<G>(&bytes, key));
            games.extend(summary);
        }
        Ok(json!({ "games": games }))
    })
    .await
    .map(Json)
}

fn record_summary<G: GuiGame>(bytes: &[u8], key: &str) -> Option<Value> {
    let record = capa_data::GameRecord::<G>::from_bytes(bytes).ok()?;
    Some(json!({
        "key": key, "network": record.network, "result": G::result_text(Some(record.winner)),
        "plies": record.moves.len(), "ending": record.ending.to_string(),
    }))
}

#[derive(Debug, Deserialize)]
struct RunGameQuery {
    key: String,
}

/// One of the run's game records, for the board. Only `games/.../*.capa`
/// keys are served.
async fn run_game(
    State(state): State<Shared>,
    q: Result<Query<RunGameQuery>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    let q = query(q)?;
    let (run, game) = the_run(&state)?;
    let key = q.key;
    let inside = keys::is_game(&key)
        && key.split('/').all(|part| !part.is_empty() && part != "." && part != "..")
        && !key.contains('\\');
    if !inside {
        return Err(ApiError::bad(format!("'{key}' is not a game of the run (games/.../NAME.capa)")));
    }
    blocking(move || {
        let bytes = run
            .read(&key)
            .map_err(|e| ApiError::internal(&e))?
            .ok_or_else(|| ApiError::missing(format!("the run has no game {key}")))?;
        let bad = |e: capa_data::RecordError| ApiError::internal(&anyhow::anyhow!("{key}: {e}"));
        Ok(for_game!(game, G => {
            let record = capa_data::GameRecord::<G>::from_bytes(&bytes).map_err(bad)?;
            archive::game_json::<G>(&record.start, &record.moves, &archive::record_meta(&record, &key))
        }))
    })
    .await
    .map(Json)
}
