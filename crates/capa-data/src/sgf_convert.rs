//! SGF game records to training examples: one example per move (the board
//! before it, the side to move, the move as the policy target, the game's
//! result and the move number), written as capa's game records so that a
//! Go network trains from them as from its own games.
//!
//! Each SGF game becomes one [`GameRecord`]; its plies that are examples are
//! full searches whose visits are the move played, the others (duplicates,
//! the loser's moves with `winner_only`, moves left out by `max_per_game`)
//! are kept as fast plies, which trainers skip by default, so the record
//! still replays whole (the network's recent-move planes need the moves).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use capa_rules::Game;
use capa_rules::Rng;
use capa_rules::go::{Cell, Go, GoMove, KoRule};

use crate::record::{Ending, GameRecord, PlyRecord, RECORD_EXTENSION, Resignation, SearchValues};
use crate::sgf::{SgfGame, SgfResult, read_sgf_file};

/// What makes a move tactical.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Tactics {
    /// It captures stones.
    pub capture: bool,
    /// It leaves an enemy group next to it with one liberty (without capturing).
    pub atari: bool,
    /// It gives a group of the mover's that was in atari two liberties or more.
    pub escape: bool,
}

impl Tactics {
    /// Whether any tag is set.
    pub fn any(self) -> bool {
        self.capture || self.atari || self.escape
    }

    /// The tags set, as words.
    pub fn names(self) -> Vec<&'static str> {
        [(self.capture, "capture"), (self.atari, "atari"), (self.escape, "escape")]
            .into_iter()
            .filter_map(|(set, name)| set.then_some(name))
            .collect()
    }

    /// The tags of legal move `m` in `position`.
    pub fn of<const N: usize>(position: &Go<N>, m: GoMove<N>) -> Tactics {
        let Some(point) = m.point() else { return Tactics::default() };
        let us = position.turn();
        let mut after = position.clone();
        after.play(m);
        let enemy = Cell::stone(!us);
        let captured = position.neighbours(point).any(|q| position.cell(q) == enemy && after.cell(q) == Cell::Empty);
        let atari = !captured && position.neighbours(point).any(|q| after.cell(q) == enemy && after.liberties(q) == 1);
        let escape = position
            .neighbours(point)
            .any(|q| position.cell(q) == Cell::stone(us) && position.liberties(q) == 1 && after.liberties(point) >= 2);
        Tactics { capture: captured, atari, escape }
    }
}

/// How `convert_sgf` chooses examples (by default: every move, simple ko).
#[derive(Clone, Debug)]
pub struct ConvertOptions {
    /// Only the winner's moves are examples.
    pub winner_only: bool,
    /// Only tactical moves are examples (`max_per_game` does not apply).
    pub tactics_only: bool,
    /// With `max_per_game`, up to half the game's examples are its tactical
    /// moves (chosen at random), the rest spread evenly over the game.
    pub tactical_bias: bool,
    /// At most this many examples a game, spread evenly; 0: every move.
    pub max_per_game: usize,
    /// The ko rule the games are replayed under.
    pub ko_rule: KoRule,
    /// Seeds the random choices.
    pub seed: u64,
}

impl Default for ConvertOptions {
    fn default() -> ConvertOptions {
        ConvertOptions {
            winner_only: false,
            tactics_only: false,
            tactical_bias: false,
            max_per_game: 0,
            ko_rule: KoRule::Simple,
            seed: 1,
        }
    }
}

/// What a conversion did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConvertSummary {
    /// Files read.
    pub files: usize,
    /// Games read (converted or skipped).
    pub games: usize,
    /// Games converted.
    pub converted: usize,
    /// Games skipped, by reason.
    pub skipped: BTreeMap<&'static str, usize>,
    /// Examples written.
    pub examples: u64,
    /// Positions left out because an earlier example had them.
    pub duplicates: u64,
    /// Examples that are tactical.
    pub tactical: u64,
    /// Games converted whose final position shows the recorded score:
    /// they carry Go's ownership and score targets.
    pub scored: usize,
}

/// Converts every game of `files` (`.sgf`, `.sgf.gz`) played on N x N into
/// game records in `out`, one per game (`<file stem>-<path hash>-<game>.capa`), written
/// atomically. A game that cannot be used is skipped, and `warn` hears which
/// (file, game, line, move) and why; a file that cannot be read is skipped
/// the same way. Duplicates are positions (stones, side to move, ko)
/// already an example in this conversion.
///
/// # Errors
/// Only an output folder that cannot be written.
pub fn convert_sgf<const N: usize>(
    files: &[PathBuf],
    out: &Path,
    options: &ConvertOptions,
    warn: &mut dyn FnMut(String),
) -> Result<ConvertSummary> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut summary = ConvertSummary { files: files.len(), ..ConvertSummary::default() };
    let mut seen = HashSet::new();
    let mut rng = Rng::new(options.seed);
    let mut listed = HashSet::new();
    for file in files {
        if !listed.insert(file) {
            *summary.skipped.entry("file listed twice").or_default() += 1;
            continue;
        }
        let games = match read_sgf_file(file) {
            Ok(games) => games,
            Err(e) => {
                warn(format!("{e:#}"));
                *summary.skipped.entry("unreadable file").or_default() += 1;
                continue;
            }
        };
        let stem = file.file_name().map_or_else(|| "games".into(), |n| n.to_string_lossy().into_owned());
        // The path's hash keeps apart files of one name in different folders.
        let path_hash = capa_rules::fnv1a(file.to_string_lossy().as_bytes()) as u32;
        let stem = format!("{}-{path_hash:08x}", stem.trim_end_matches(".gz").trim_end_matches(".sgf"));
        for game in games {
            summary.games += 1;
            let (reason, why) = match game.as_ref().map_err(ToString::to_string).and_then(|g| usable::<N>(g, options)) {
                Ok(()) => {
                    let game = game.as_ref().expect("usable");
                    match examples::<N>(game, options, &mut seen, &mut rng, &mut summary) {
                        Ok(record) => {
                            let path = out.join(format!("{stem}-{:05}.{RECORD_EXTENSION}", game.number));
                            record.write(&path).with_context(|| format!("cannot write {}", path.display()))?;
                            summary.converted += 1;
                            continue;
                        }
                        Err(e) => ("illegal move", e.to_string()),
                    }
                }
                Err(why) => (reason_of(&why), why),
            };
            warn(format!("{}: {why}", file.display()));
            *summary.skipped.entry(reason).or_default() += 1;
        }
    }
    Ok(summary)
}

/// Why a game is not converted, before its moves are replayed.
fn usable<const N: usize>(game: &SgfGame, options: &ConvertOptions) -> Result<(), String> {
    let error = |message: String| format!("game {} (line {}): {message}", game.number, game.line);
    if game.size != N {
        return Err(error(format!("a {0}x{0} board, not {N}x{N}", game.size)));
    }
    if game.result.is_none() {
        return Err(error(format!("no result (RE[{}])", game.result_text)));
    }
    if let Some((i, m)) = game.moves.iter().enumerate().skip(1).find(|(i, m)| m.color == game.moves[i - 1].color) {
        return Err(error(format!("move {} (line {}): a second move in a row by {:?}", i + 1, m.line, m.color)));
    }
    if options.winner_only && game.result == Some(SgfResult::Draw) {
        return Err(error("a draw, and only the winner's moves are wanted".to_string()));
    }
    Ok(())
}

/// The summary's reason for a skip message.
fn reason_of(message: &str) -> &'static str {
    [
        ("board, not", "wrong board size"),
        ("no result", "no result"),
        ("is not a result", "unknown result"),
        ("in a row", "moves out of turn"),
        ("a draw", "draw (winner only)"),
        ("is occupied", "illegal move"),
        ("is illegal", "illegal move"),
        ("setup", "bad setup"),
    ]
    .into_iter()
    .find(|(part, _)| message.contains(part))
    .map_or("bad record", |(_, reason)| reason)
}

/// The game's record, its examples chosen.
fn examples<const N: usize>(
    game: &SgfGame,
    options: &ConvertOptions,
    seen: &mut HashSet<u64>,
    rng: &mut Rng,
    summary: &mut ConvertSummary,
) -> Result<GameRecord<Go<N>>, crate::SgfError> {
    let replay = game.replay::<N>(options.ko_rule)?;
    let winner = match game.result {
        Some(SgfResult::Won(color)) => Some(color),
        _ => None,
    };
    let tags: Vec<Tactics> = replay.positions.iter().zip(&replay.moves).map(|(p, &m)| Tactics::of(p, m)).collect();
    // Candidates: the moves that may be examples, before the per-game cap.
    let candidates: Vec<usize> = (0..replay.moves.len())
        .filter(|&i| !options.winner_only || Some(replay.positions[i].turn()) == winner)
        .filter(|&i| !options.tactics_only || tags[i].any())
        .collect();
    let chosen = cap(&candidates, &tags, options, rng);
    let total = replay.moves.len();
    let mut plies = Vec::with_capacity(total);
    for (i, (position, &m)) in replay.positions.iter().zip(&replay.moves).enumerate() {
        let mover = position.turn();
        let q = match winner {
            Some(color) if color == mover => 1.0,
            Some(_) => -1.0,
            None => 0.0,
        };
        let values = SearchValues { q, d: if winner.is_none() { 1.0 } else { 0.0 }, m: (total - i) as f32 };
        let mut example = chosen.binary_search(&i).is_ok();
        if example && !seen.insert(position.hash()) {
            summary.duplicates += 1;
            example = false;
        }
        if example {
            summary.examples += 1;
            summary.tactical += u64::from(tags[i].any());
        }
        plies.push(PlyRecord {
            full_search: example,
            root: values,
            best: values,
            visits: vec![(u16::try_from(position.policy_index(m)).expect("a Go policy index fits"), 1.0)],
        });
    }
    let ending = ending_of(game, &replay.end);
    summary.scored += usize::from(ending == Ending::Rules(capa_rules::Termination::Scored));
    Ok(GameRecord {
        start: replay.positions.first().unwrap_or(&replay.end).clone(),
        network: format!("sgf:{}", game.properties.get("GN").map_or("", String::as_str)),
        moves: replay.moves,
        plies,
        winner,
        ending,
        resignation: Resignation::default(),
    })
}

/// How a game ended: scored where its final position, counted by area with
/// its komi, shows the margin its result records (the stones on the board
/// are the ones that count: the final owners of its points, the ownership
/// target, are known); resigned; otherwise decided outside the rules (a
/// count with dead stones left on the board, time, forfeit).
fn ending_of<const N: usize>(game: &SgfGame, end: &Go<N>) -> Ending {
    let margin = match game.result {
        Some(SgfResult::Draw) => Some(0.0),
        _ => game.result_text.split_once('+').and_then(|(color, points)| {
            let points = points.trim().parse::<f32>().ok()?;
            Some(if color.trim().eq_ignore_ascii_case("w") { -points } else { points })
        }),
    };
    match margin {
        Some(margin) if (end.score() - margin).abs() < 0.25 => Ending::Rules(capa_rules::Termination::Scored),
        None if game.result_text.contains("+R") => Ending::Resignation,
        _ => Ending::Adjudication,
    }
}

/// The candidates kept under `max_per_game`: every one when they fit;
/// otherwise evenly spread, or with `tactical_bias` up to half of them
/// tactical (at random) and the rest evenly spread. Sorted.
fn cap(candidates: &[usize], tags: &[Tactics], options: &ConvertOptions, rng: &mut Rng) -> Vec<usize> {
    let max = options.max_per_game;
    if max == 0 || options.tactics_only || candidates.len() <= max {
        return candidates.to_vec();
    }
    let mut chosen = Vec::with_capacity(max);
    if options.tactical_bias {
        let mut tactical: Vec<usize> = candidates.iter().copied().filter(|&i| tags[i].any()).collect();
        // Fisher-Yates with the conversion's seed.
        for k in (1..tactical.len()).rev() {
            tactical.swap(k, (rng.next_u64() % (k as u64 + 1)) as usize);
        }
        chosen.extend(tactical.into_iter().take(max / 2));
    }
    let rest: Vec<usize> = candidates.iter().copied().filter(|i| !chosen.contains(i)).collect();
    let need = max - chosen.len();
    chosen.extend((0..need).map(|k| rest[k * rest.len() / need]));
    chosen.sort_unstable();
    chosen.dedup();
    chosen
}
