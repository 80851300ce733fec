//! Playing out adjudicated games with a UCI engine (`capa lc0
//! finish-games`), so that their moves-left targets count down to a real
//! end: checkmate, stalemate, or a rule draw.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use capa_rules::chess::Chess;
use capa_rules::{Color, Game, History};
use rayon::prelude::*;

use crate::convert::{play_moves, start_position};
use crate::engine::{EngineEvaluator, EnginePool, EngineSpec};
use crate::files::{open_pgn, partial_path};
use crate::pgn::{PgnReader, SourceGame};
use crate::wdl::WdlModel;
use capa_uci::{UciError, UciScore};

/// Which games are played out, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishSettings {
    /// The engine, its depth per move, threads and hash.
    pub engine: EngineSpec,
    /// The most plies added to one game; a game still going then keeps
    /// its original result.
    pub max_extra_plies: u32,
    /// `[Termination]` values (any case) whose games are played out.
    pub terminations: Vec<String>,
    /// Also play out games adjudicated as draws.
    pub include_draws: bool,
    /// Read at most this many games of each input.
    pub limit: Option<u64>,
}

/// What happened to one game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FinishOutcome {
    /// Copied as it was: not chosen (its termination, a draw, no result).
    NotChosen,
    /// Copied as it was: its last position already ends the game.
    AlreadyOver,
    /// Copied as it was: its moves cannot be replayed (the reason).
    Unplayable(String),
    /// Copied as it was: the engine failed (the reason).
    EngineFailed(String),
    /// Played out to a real end.
    Concluded {
        /// Plies added.
        plies: u32,
        /// The new result (`1-0`, `0-1`, `1/2-1/2`).
        result: &'static str,
        /// What ended it.
        reason: String,
    },
    /// Played out to the ply cap without an end; the result is kept.
    Capped {
        /// Plies added.
        plies: u32,
    },
}

/// What finishing did, over all inputs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FinishSummary {
    /// Games read.
    pub games: u64,
    /// Games played out to a real end.
    pub concluded: u64,
    /// Games that reached the ply cap.
    pub capped: u64,
    /// Games copied unchanged: not chosen or already over.
    pub unchanged: u64,
    /// Games copied unchanged because they could not be replayed or the
    /// engine failed on them.
    pub failed: u64,
    /// Plies added.
    pub plies_added: u64,
    /// Files written.
    pub files: u64,
    /// Wall seconds.
    pub seconds: f64,
}

impl FinishSummary {
    fn add(&mut self, outcome: &FinishOutcome) {
        self.games += 1;
        match outcome {
            FinishOutcome::NotChosen | FinishOutcome::AlreadyOver => self.unchanged += 1,
            FinishOutcome::Unplayable(_) | FinishOutcome::EngineFailed(_) => self.failed += 1,
            FinishOutcome::Concluded { plies, .. } => {
                self.concluded += 1;
                self.plies_added += u64::from(*plies);
            }
            FinishOutcome::Capped { plies } => {
                self.capped += 1;
                self.plies_added += u64::from(*plies);
            }
        }
    }
}

/// What [`finish_files`] reports as it goes.
pub enum FinishEvent<'a> {
    /// A game is done: its input, the game, what happened, and the totals
    /// so far.
    Game(&'a Path, &'a SourceGame, &'a FinishOutcome, &'a FinishSummary),
    /// An output file is complete (renamed from its `.partial`).
    FileDone(&'a Path),
}

/// A finishing run that stopped.
#[derive(Debug, thiserror::Error)]
pub enum FinishError {
    /// An input could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The input.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An output could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The engine cannot be started or set up.
    #[error("{0}")]
    Engine(#[from] UciError),
}

/// Games finished together: enough to keep every worker busy while games
/// differ in length.
const GAMES_PER_WORKER: usize = 8;

/// Plays out the chosen games of each `(input, output)` pair with one
/// engine per thread of `pool`, writing every game (finished or copied as
/// it was) in input order to `output`. Each output is written to
/// `output.partial` and renamed once complete, so a killed run never
/// leaves a truncated file under the real name.
///
/// # Errors
/// See [`FinishError`]; a game the engine fails on is copied unchanged
/// and reported instead.
pub fn finish_files(
    files: &[(PathBuf, PathBuf)],
    settings: &FinishSettings,
    pool: &rayon::ThreadPool,
    mut report: impl FnMut(FinishEvent<'_>),
) -> Result<FinishSummary, FinishError> {
    let engines = EnginePool::start(&settings.engine)?;
    let started = Instant::now();
    let mut summary = FinishSummary::default();
    let batch_size = pool.current_num_threads().max(1) * GAMES_PER_WORKER;
    for (input, output) in files {
        let read_error = |source| FinishError::Read { path: input.clone(), source };
        let mut reader = PgnReader::new(open_pgn(input).map_err(read_error)?).keeping_text();
        let partial = partial_path(output);
        let write_error = |source| FinishError::Write { path: partial.clone(), source };
        let mut out = BufWriter::new(File::create(&partial).map_err(write_error)?);
        let mut read = 0;
        loop {
            let wanted = settings.limit.map_or(batch_size as u64, |limit| (limit - read).min(batch_size as u64));
            let batch = reader.next_games(wanted).map_err(read_error)?;
            if batch.is_empty() {
                break;
            }
            read += batch.len() as u64;
            let finished: Vec<(Vec<u8>, FinishOutcome)> =
                pool.install(|| batch.par_iter().map(|game| finish_game(game, settings, &engines)).collect());
            for (game, (text, outcome)) in batch.iter().zip(finished) {
                out.write_all(&text).map_err(write_error)?;
                summary.add(&outcome);
                report(FinishEvent::Game(input, game, &outcome, &summary));
            }
        }
        let file = out.into_inner().map_err(|e| write_error(e.into_error()))?;
        file.sync_all().map_err(write_error)?;
        drop(file);
        capa_data::rename_durably(&partial, output)
            .map_err(|source| FinishError::Write { path: output.clone(), source })?;
        summary.files += 1;
        report(FinishEvent::FileDone(output));
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The game's text in the output and what happened to it.
fn finish_game(game: &SourceGame, settings: &FinishSettings, engines: &EnginePool<'_>) -> (Vec<u8>, FinishOutcome) {
    let unchanged = |outcome| {
        let end = game.text.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(0, |i| i + 1);
        ([&game.text[..end], b"\n\n"].concat(), outcome)
    };
    let chosen = game
        .tag("Termination")
        .is_some_and(|t| settings.terminations.iter().any(|wanted| wanted.trim().eq_ignore_ascii_case(t.trim())));
    let decisive = match game.winner() {
        Some(winner) => winner.is_some() || settings.include_draws,
        None => false,
    };
    if !chosen || !decisive || game.syntax_error.is_some() {
        return unchanged(FinishOutcome::NotChosen);
    }
    let history = match start_position(game).and_then(|start| play_moves(start, game)) {
        Ok((history, _)) => history,
        Err(reason) => return unchanged(FinishOutcome::Unplayable(reason.to_string())),
    };
    if history.outcome().is_some() {
        return unchanged(FinishOutcome::AlreadyOver);
    }
    // Every error of a play-out is the engine's: it is replaced.
    match engines.run(|engine| play_out(history, settings, engine), |_| true, |e| e.to_string()) {
        Ok((history, added)) => finished_text(game, &history, added, settings),
        Err(reason) => unchanged(FinishOutcome::EngineFailed(reason)),
    }
}

/// One added move: its SAN and its cutechess comment.
struct AddedMove {
    san: String,
    comment: String,
}

/// Plays engine moves from the end of `history` until the game ends or
/// the cap is reached.
fn play_out(
    mut history: History<Chess>,
    settings: &FinishSettings,
    engine: &mut EngineEvaluator,
) -> Result<(History<Chess>, Vec<AddedMove>), String> {
    engine.new_game().map_err(|e| e.to_string())?;
    let mut added = Vec::new();
    while history.outcome().is_none() && added.len() < settings.max_extra_plies as usize {
        let started = Instant::now();
        let verdict = engine.evaluate(&history, &WdlModel::default())?;
        let seconds = started.elapsed().as_secs_f64();
        let san = history.current().san(verdict.best);
        added.push(AddedMove { san, comment: cutechess_comment(verdict.score, verdict.depth, seconds) });
        history.play(verdict.best);
    }
    Ok((history, added))
}

/// `+0.76/18 1.813s` or `-M5/12 0.100s`: the mover's score, as cutechess
/// and Fishtest write it (and `convert --pgn-eval-mode` reads it).
pub fn cutechess_comment(score: UciScore, depth: u32, seconds: f64) -> String {
    let score = match score {
        UciScore::Cp(0) => "0.00".to_string(),
        UciScore::Cp(cp) => format!("{:+.2}", f64::from(cp) / 100.0),
        UciScore::Mate(n) if n > 0 => format!("+M{n}"),
        UciScore::Mate(n) => format!("-M{}", n.unsigned_abs()),
    };
    format!("{score}/{depth} {seconds:.3}s")
}

/// The game with its added moves, new result and tags.
fn finished_text(
    game: &SourceGame,
    history: &History<Chess>,
    added: Vec<AddedMove>,
    settings: &FinishSettings,
) -> (Vec<u8>, FinishOutcome) {
    let plies = added.len() as u32;
    let ended = history.outcome().map(|outcome| {
        let result = match outcome.winner(history.current().turn()) {
            Some(Color::White) => "1-0",
            Some(Color::Black) => "0-1",
            None => "1/2-1/2",
        };
        (result, outcome.reason.to_string())
    });
    let original_result = game.result_token.as_deref().or(game.tag("Result")).unwrap_or("*");
    let result = ended.as_ref().map_or(original_result, |(result, _)| result);

    // The tags, rewritten where they change; the movetext up to its result.
    // A finished game is rewritten as UTF-8 (bytes that are not become U+FFFD).
    let text = String::from_utf8_lossy(&game.text);
    let text = text.trim_end();
    let movetext_end = match &game.result_token {
        Some(token) => text.rfind(token.as_str()).unwrap_or(text.len()),
        None => text.len(),
    };
    let mut out = String::with_capacity(text.len() + added.len() * 32);
    let total_plies = history.moves().len();
    let engine = settings.engine.program.file_name().unwrap_or_default().to_string_lossy();
    let provenance = format!(
        "[FinishedBy \"capa lc0 finish-games: {engine} depth {}, {plies} plies added\"]\n",
        settings.engine.depth
    );
    let mut in_tags = true;
    let mut has_movetext = false;
    for line in text[..movetext_end].lines() {
        let trimmed = line.trim_start();
        if in_tags && !trimmed.starts_with('[') {
            in_tags = false;
            out.push_str(&provenance);
        }
        has_movetext |= !in_tags && !trimmed.is_empty();
        let tag = |name: &str| in_tags && trimmed.starts_with(&format!("[{name} "));
        if tag("Result") {
            let _ = writeln!(out, "[Result \"{result}\"]");
        } else if tag("Termination") && ended.is_some() {
            out.push_str("[Termination \"normal\"]\n");
        } else if tag("PlyCount") {
            let _ = writeln!(out, "[PlyCount \"{total_plies}\"]");
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if in_tags {
        out.push_str(&provenance);
    }
    while out.ends_with(['\n', ' ']) {
        out.pop();
    }
    if !has_movetext {
        // The moves start after a blank line, not on the last tag's.
        out.push_str("\n\n");
    }

    // The added moves, numbered from the game's own ply.
    let mut line_length = out.len() - out.rfind('\n').map_or(0, |i| i + 1);
    let first_added = history.moves().len() - added.len();
    let start_ply = history.positions()[first_added].ply();
    let mut push = |token: &str, out: &mut String| {
        if line_length > 0 && line_length + 1 + token.len() > 79 {
            out.push('\n');
            line_length = 0;
        } else if line_length > 0 {
            out.push(' ');
            line_length += 1;
        }
        out.push_str(token);
        line_length += token.len();
    };
    for (i, added) in added.iter().enumerate() {
        let ply = start_ply + i as u32;
        let number = ply / 2 + 1;
        if ply.is_multiple_of(2) {
            push(&format!("{number}."), &mut out);
        } else if i == 0 {
            push(&format!("{number}..."), &mut out);
        }
        push(&added.san, &mut out);
        push(&format!("{{{}}}", added.comment), &mut out);
    }
    push(result, &mut out);
    out.push_str("\n\n");
    let outcome = match ended {
        Some((result, reason)) => FinishOutcome::Concluded { plies, result, reason },
        None => FinishOutcome::Capped { plies },
    };
    (out.into_bytes(), outcome)
}
