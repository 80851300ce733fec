//! Games for the board and the explorer: PGN files (plain or gzipped, chess
//! or Capablanca by their `Variant` tag), SGF files of Go (9x9, 13x13 and
//! 19x19, their main lines) and a run's game records. A game that cannot be
//! replayed is skipped with a warning naming its file, its number and the
//! move; a file never stops the rest.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{Context, Result};
use capa_data::{GameRecord, SgfGame, SgfResult};
use capa_lc0::{PgnReader, SourceGame};
use capa_rules::{Color, Game, GameKind, for_game};
use capa_rundir::{RunDir, keys};
use serde_json::{Value, json};

use crate::games::GuiGame;

/// Who played a game, how it ended and where it came from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GameMeta {
    /// The white player.
    pub white: String,
    /// The black player.
    pub black: String,
    /// `Some(Some(winner))`, `Some(None)` for a draw, `None` when unknown.
    pub result: Option<Option<Color>>,
    /// The file (and the game's number in it) or the run's key.
    pub source: String,
}

/// Where the games read go: one call per game that replays.
pub trait GameSink {
    /// A game: `moves` are legal from `start`.
    fn add<G: Game>(&mut self, start: &G, moves: &[G::Move], meta: GameMeta);
}

/// What reading some sources gave.
#[derive(Clone, Debug, Default)]
pub struct ReadReport {
    /// Games handed to the sink.
    pub games: u64,
    /// Games skipped, each with its reason.
    pub skipped: Vec<String>,
}

impl ReadReport {
    /// Counts a game read, saying so every 100,000 (a big archive takes a while).
    fn count_game(&mut self) {
        self.games += 1;
        if self.games.is_multiple_of(100_000) {
            tracing::info!("explorer: {} games read", self.games);
        }
    }

    fn skip(&mut self, why: String) {
        tracing::warn!("skipped {why}");
        self.skipped.push(why);
    }
}

/// Reads every game of `path` into `sink`: an SGF file (`.sgf`,
/// `.sgf.gz`) or a PGN file (any other name).
///
/// # Errors
/// Only when the file cannot be opened or read.
pub fn read_games_file(path: &Path, sink: &mut impl GameSink, report: &mut ReadReport) -> Result<()> {
    let name = path.to_string_lossy().to_ascii_lowercase();
    if name.ends_with(".sgf") || name.ends_with(".sgf.gz") {
        read_sgf_file(path, sink, report)
    } else {
        read_pgn_file(path, sink, report)
    }
}

/// Reads every game of the PGN file `path` (`.pgn` or `.pgn.gz`) into `sink`.
///
/// # Errors
/// Only when the file cannot be opened or read; a game that does not
/// replay is skipped and reported.
pub fn read_pgn_file(path: &Path, sink: &mut impl GameSink, report: &mut ReadReport) -> Result<()> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let input: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut reader = PgnReader::new(BufReader::new(input));
    let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    read_pgn(&mut reader, &name, sink, report)
}

/// Reads the games of PGN text (pasted on the page, or a file's bytes).
fn read_pgn<R: BufRead>(
    reader: &mut PgnReader<R>,
    name: &str,
    sink: &mut impl GameSink,
    report: &mut ReadReport,
) -> Result<()> {
    while let Some(game) = reader.next_game().with_context(|| format!("cannot read {name}"))? {
        let source = format!("{name} game {}", game.number);
        let meta = GameMeta {
            white: game.tag("White").unwrap_or("?").to_string(),
            black: game.tag("Black").unwrap_or("?").to_string(),
            result: game.winner(),
            source: source.clone(),
        };
        let replayed = pgn_game_kind(&game).and_then(
            |kind| for_game!(kind, G => replay::<G>(&game).map(|(start, moves)| sink.add::<G>(&start, &moves, meta))),
        );
        match replayed {
            Ok(()) => report.count_game(),
            Err(why) => report.skip(format!("{source} (line {}): {why}", game.line)),
        }
    }
    Ok(())
}

/// The game a PGN game is of, from its `Variant` tag (none: chess).
pub fn pgn_game_kind(game: &SourceGame) -> Result<GameKind, String> {
    let variant = game.tag("Variant").map(str::to_ascii_lowercase);
    match variant.as_deref() {
        // PGN's names for standard chess.
        None | Some("standard" | "normal") => Ok(GameKind::Chess),
        Some(name) => match name.parse::<GameKind>() {
            Ok(kind) if kind.is_chess() => Ok(kind),
            _ => Err(format!("variant '{name}' is not a chess game capa plays")),
        },
    }
}

/// The start position and the mainline moves of a PGN game, each checked.
pub fn replay<G: Game>(game: &SourceGame) -> Result<(G, Vec<G::Move>), String> {
    if let Some((line, problem)) = &game.syntax_error {
        return Err(format!("line {line}: {problem}"));
    }
    let start = match game.tag("FEN") {
        Some(fen) => G::from_fen(fen).map_err(|e| e.to_string())?,
        None => G::startpos(),
    };
    let mut position = start.clone();
    let mut moves = Vec::with_capacity(game.moves.len());
    for (ply, token) in game.moves.iter().enumerate() {
        let m = position.read_san(&token.san).map_err(|_| {
            format!("move {} '{}' (line {}) is not legal in {}", ply / 2 + 1, token.san, token.line, position.fen())
        })?;
        position.play(m);
        moves.push(m);
    }
    Ok((start, moves))
}

/// Reads every game of the SGF file `path` (`.sgf` or `.sgf.gz`) into
/// `sink`: each game's main line, on its board's size.
///
/// # Errors
/// Only when the file cannot be read; a game that does not replay is
/// skipped and reported.
pub fn read_sgf_file(path: &Path, sink: &mut impl GameSink, report: &mut ReadReport) -> Result<()> {
    let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    for game in capa_data::read_sgf_file(path)? {
        let replayed = game.map_err(|e| e.to_string()).and_then(|game| {
            let meta = sgf_meta(&game, format!("{name} game {}", game.number));
            for_game!(sgf_game_kind(&game)?, G => G::from_sgf(&game).map(|(start, moves, _)| sink.add::<G>(&start, &moves, meta)))
        });
        match replayed {
            Ok(()) => report.count_game(),
            Err(why) => report.skip(format!("{name}: {why}")),
        }
    }
    Ok(())
}

/// The Go game an SGF game is played in, by its board's size.
fn sgf_game_kind(game: &SgfGame) -> Result<GameKind, String> {
    match game.size {
        9 => Ok(GameKind::Go9),
        13 => Ok(GameKind::Go13),
        19 => Ok(GameKind::Go19),
        size => Err(format!(
            "game {} (line {}): capa plays Go on 9x9, 13x13 and 19x19, not {size}x{size}",
            game.number, game.line
        )),
    }
}

/// An SGF game's players, result and source.
fn sgf_meta(game: &SgfGame, source: String) -> GameMeta {
    let player = |key: &str| game.properties.get(key).cloned().unwrap_or_else(|| "?".to_string());
    GameMeta {
        white: player("PW"),
        black: player("PB"),
        result: game.result.map(|result| match result {
            SgfResult::Won(color) => Some(color),
            SgfResult::Draw => None,
        }),
        source,
    }
}

/// The first game of SGF text, for the board: its start (setup stones,
/// komi), its main line, its variations and its players.
///
/// # Errors
/// Text without a game, or a first game that does not replay.
pub fn first_sgf_game(text: &str) -> Result<Value, String> {
    let game = match capa_data::read_sgf(text).into_iter().next() {
        None => return Err("the text holds no SGF game (it starts with `(;`)".to_string()),
        Some(game) => game.map_err(|e| format!("cannot read the SGF: {e}"))?,
    };
    let meta = sgf_meta(&game, "pasted".to_string());
    let (mut answer, variations) = for_game!(sgf_game_kind(&game)?, G => G::from_sgf(&game)
        .map(|(start, moves, variations)| (game_json::<G>(&start, &moves, &meta), variations))?);
    answer["tags"] = json!(game.properties);
    answer["variations"] = json!(variations);
    Ok(answer)
}

/// The first game of PGN text, for the board.
///
/// # Errors
/// Text without a game, or a first game that does not replay.
pub fn first_pgn_game(text: &str) -> Result<(GameKind, SourceGame), String> {
    let mut reader = PgnReader::new(text.as_bytes());
    let game = match reader.next_game() {
        Ok(Some(game)) => game,
        Ok(None) => return Err("the text holds no PGN game".to_string()),
        Err(e) => return Err(format!("cannot read the PGN: {e}")),
    };
    if game.moves.is_empty() && game.tags.is_empty() {
        return Err("the text holds no PGN game".to_string());
    }
    let kind = pgn_game_kind(&game)?;
    Ok((kind, game))
}

/// Reads the game records of the run `run` (its `games/` folder) into `sink`.
///
/// # Errors
/// The failure to list the folder; a record that cannot be read is skipped.
pub fn read_run_games(run: &RunDir, game: GameKind, sink: &mut impl GameSink, report: &mut ReadReport) -> Result<()> {
    let mut entries = run.list(keys::GAMES)?;
    entries.retain(|e| keys::is_game(&e.key));
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    for entry in entries {
        let Some(bytes) = run.read(&entry.key)? else { continue };
        let read = for_game!(game, G => GameRecord::<G>::from_bytes(&bytes)
            .map(|record| sink.add::<G>(&record.start, &record.moves, record_meta(&record, &entry.key))));
        match read {
            Ok(()) => report.count_game(),
            Err(e) => report.skip(format!("{} in {}: {e}", entry.key, run.location())),
        }
    }
    Ok(())
}

/// A self-play record's players (its network, twice) and result.
pub fn record_meta<G: Game>(record: &GameRecord<G>, key: &str) -> GameMeta {
    GameMeta {
        white: record.network.clone(),
        black: record.network.clone(),
        result: Some(record.winner),
        source: key.to_string(),
    }
}

/// The network the run's `LATEST` names: its file name and a local copy;
/// `None` before the run's first network.
///
/// # Errors
/// The failure to read the run, or a `LATEST` naming a missing network.
pub fn latest_network(run: &RunDir) -> Result<Option<(String, std::path::PathBuf)>> {
    let Some(latest) = run.read(keys::LATEST)? else { return Ok(None) };
    let key = keys::network(String::from_utf8_lossy(&latest).trim());
    let path =
        run.local_copy(&key)?.with_context(|| format!("LATEST in {} names {key}, which is missing", run.location()))?;
    Ok(Some((keys::file_name(&key).to_string(), path)))
}

/// A game's start, moves and players, for the board.
pub fn game_json<G: GuiGame>(start: &G, moves: &[G::Move], meta: &GameMeta) -> Value {
    let moves_text: Vec<String> = moves.iter().map(ToString::to_string).collect();
    json!({
        "game": G::NAME, "fen": start.fen(), "moves": moves_text,
        "sans": crate::position::sans(start, moves), "white": meta.white, "black": meta.black,
        "result": G::result_text(meta.result), "source": meta.source,
    })
}
