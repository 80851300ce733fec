//! Training examples of Go game records drawn at random, to look at
//! (`capa sgf spot-check`): each with the position before the move, the
//! move to learn, its tactical tags recomputed, and the game's result.

use std::path::{Path, PathBuf};

use capa_rules::Color;
use capa_rules::Rng;
use capa_rules::go::{Go, GoMove};

use crate::frame::RecordError;
use crate::record::GameRecord;
use crate::sgf_convert::Tactics;

/// One example: a full-search ply of a record.
#[derive(Clone, Debug)]
pub struct SpotExample<const N: usize> {
    /// The record it comes from.
    pub file: PathBuf,
    /// Its ply in the game (0: the first move).
    pub ply: usize,
    /// The position before the move.
    pub position: Go<N>,
    /// The move to learn.
    pub target: GoMove<N>,
    /// The move's tags, as `capa sgf convert` computes them.
    pub tactics: Tactics,
    /// The game's winner; `None` for a draw.
    pub winner: Option<Color>,
}

/// What [`spot_check`] read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpotSummary {
    /// Records read.
    pub records: usize,
    /// Records skipped as unreadable (each reported).
    pub skipped: usize,
    /// Examples among them.
    pub examples: u64,
}

/// Up to `count` examples drawn uniformly (seeded) from the records
/// `files`, in file and ply order. A record that cannot be read (damaged,
/// another board size) is reported to `warn` and skipped.
pub fn spot_check<const N: usize>(
    files: &[PathBuf],
    count: usize,
    seed: u64,
    warn: &mut dyn FnMut(String),
) -> (Vec<SpotExample<N>>, SpotSummary) {
    let mut summary = SpotSummary::default();
    let mut rng = Rng::new(seed);
    // Reservoir sampling of (file, ply) over every example.
    let mut chosen: Vec<(usize, usize)> = Vec::with_capacity(count);
    for (index, path) in files.iter().enumerate() {
        let record = match read::<N>(path) {
            Ok(record) => record,
            Err(e) => {
                warn(e.to_string());
                summary.skipped += 1;
                continue;
            }
        };
        summary.records += 1;
        for (ply, _) in record.plies.iter().enumerate().filter(|(_, p)| p.full_search) {
            summary.examples += 1;
            if chosen.len() < count {
                chosen.push((index, ply));
            } else {
                let slot = (rng.next_u64() % summary.examples) as usize;
                if slot < count {
                    chosen[slot] = (index, ply);
                }
            }
        }
    }
    chosen.sort_unstable();
    let mut examples = Vec::with_capacity(chosen.len());
    let mut current: Option<(usize, Vec<Go<N>>, GameRecord<Go<N>>)> = None;
    for (index, ply) in chosen {
        if current.as_ref().is_none_or(|(i, _, _)| *i != index) {
            let record = match read::<N>(&files[index]) {
                Ok(record) => record,
                Err(e) => {
                    warn(format!("{e} (it changed while being read)"));
                    continue;
                }
            };
            let positions = record.history().positions().to_vec();
            current = Some((index, positions, record));
        }
        let (_, positions, record) = current.as_ref().expect("read above");
        let position = positions[ply].clone();
        let target = record.moves[ply];
        examples.push(SpotExample {
            file: files[index].clone(),
            ply,
            tactics: Tactics::of(&position, target),
            position,
            target,
            winner: record.winner,
        });
    }
    (examples, summary)
}

fn read<const N: usize>(path: &Path) -> Result<GameRecord<Go<N>>, RecordError> {
    GameRecord::<Go<N>>::read(path)
}
