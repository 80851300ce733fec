//! The commit point, `checkpoints/latest.json`: the last iteration a run
//! completed, its checkpoint and network, and what it hands on to the next.
//! The trainer writes it last in each iteration; everything that reads a
//! run's state (the resume, `capa-train check`, the GUI) starts from it.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::RunDir;
use crate::keys::COMMIT;

/// How a run files its game files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "u32", into = "u32")]
pub enum GamesLayout {
    /// By the network that played them (`games/<hash>/`): runs from before.
    /// Written as 1; a commit point without the field is of this layout.
    ByNetwork,
    /// By writer ([`crate::keys::game_folder`]), each worker's taken up to
    /// a number ([`Carried::workers_taken`]). Written as 2.
    ByWriter,
}

impl From<u32> for GamesLayout {
    fn from(number: u32) -> GamesLayout {
        if number < 2 { GamesLayout::ByNetwork } else { GamesLayout::ByWriter }
    }
}

impl From<GamesLayout> for u32 {
    fn from(layout: GamesLayout) -> u32 {
        match layout {
            GamesLayout::ByNetwork => 1,
            GamesLayout::ByWriter => 2,
        }
    }
}

/// The commit point of an iteration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CommitPoint {
    /// The iteration committed.
    pub iteration: u64,
    /// Its checkpoint's file name in `checkpoints/`.
    pub checkpoint: String,
    /// Its network's hash.
    pub network: String,
    /// What the iteration hands on.
    #[serde(flatten)]
    pub carried: Carried,
}

fn layout_before() -> GamesLayout {
    GamesLayout::ByNetwork
}

/// What an iteration hands on to the next besides the weights.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Carried {
    /// The curriculum engine's `UCI_Elo` for the next iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curriculum_elo: Option<i64>,
    /// Where the supervised data stream goes on (`V6Stream::position`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_position: Option<u64>,
    /// Self-play training positions the run has made so far (the replay
    /// window grows with them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub positions_made: Option<u64>,
    /// For each worker, how many of its games (numbers 0 to n - 1) the
    /// committed iterations took: a worker writes its games in number
    /// order, so what the run has not taken is what its folder holds past
    /// that number.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workers_taken: BTreeMap<String, u64>,
    /// How the run's games are filed. A run of the layout before moves to
    /// [`GamesLayout::ByWriter`] at its first self-play iteration, which
    /// takes its games by a full listing, once.
    #[serde(default = "layout_before")]
    pub games_layout: GamesLayout,
    /// Under `[gate]`, the network self-play plays with (`LATEST` names
    /// it): the newest that beat the one before. Absent without a gate,
    /// where self-play plays the newest network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player: Option<String>,
}

impl Default for Carried {
    fn default() -> Carried {
        Carried {
            curriculum_elo: None,
            data_position: None,
            positions_made: None,
            workers_taken: BTreeMap::new(),
            games_layout: GamesLayout::ByWriter,
            player: None,
        }
    }
}

impl CommitPoint {
    /// The commit point of the run in `dir`, if it has one.
    ///
    /// # Errors
    /// The failure to read it, or a damaged file.
    pub fn read(dir: &RunDir) -> Result<Option<CommitPoint>> {
        let Some(bytes) = dir.read(COMMIT)? else { return Ok(None) };
        let point =
            serde_json::from_slice(&bytes).with_context(|| format!("{COMMIT} in {} is damaged", dir.location()))?;
        Ok(Some(point))
    }

    /// Writes it: the iteration is committed.
    ///
    /// # Errors
    /// The failure to write.
    pub fn write(&self, dir: &RunDir) -> Result<()> {
        dir.write(COMMIT, serde_json::to_string_pretty(self)?.as_bytes())
    }
}

/// The game files the committed iterations up to `committed` trained on,
/// newest iteration first, each as its ledger's key and the files in the
/// order taken: `ledger/iter-N.txt` for N from `committed` down, ending
/// with the baseline of a run from before ledgers where they began
/// (iterations that distilled have none and are passed). Read one ledger
/// at a time, so a reader that wants the newest games pays for those, not
/// for the run's history.
pub fn ledgers_back(dir: &RunDir, committed: u64) -> impl Iterator<Item = Result<(String, Vec<String>)>> + '_ {
    let mut iteration = committed;
    std::iter::from_fn(move || {
        while iteration > 0 {
            let (key, baseline) = (crate::keys::ledger(iteration), crate::keys::ledger_baseline(iteration));
            iteration -= 1;
            let read = |key: &str| -> Result<Option<Vec<String>>> {
                let lines = dir.read(key)?.map(|bytes| {
                    String::from_utf8_lossy(&bytes).lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
                });
                Ok(lines)
            };
            match read(&key) {
                Ok(Some(games)) => return Some(Ok((key, games))),
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
            // No ledger (an iteration that distilled): the baseline, if
            // ledgers began here, and nothing older; else on down.
            match read(&baseline) {
                Ok(Some(games)) => {
                    iteration = 0;
                    return Some(Ok((baseline, games)));
                }
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_point_from_before_reads_in_the_layout_by_network() {
        let before =
            r#"{"iteration": 3, "checkpoint": "iter-000003.safetensors", "network": "ab", "positions_made": 9}"#;
        let mut point: CommitPoint = serde_json::from_str(before).unwrap();
        assert_eq!((point.carried.games_layout, point.carried.positions_made), (GamesLayout::ByNetwork, Some(9)));
        point.carried.games_layout = GamesLayout::ByWriter;
        point.carried.workers_taken.insert("w".into(), 4);
        let text = serde_json::to_string(&point).unwrap();
        assert!(text.contains(r#""games_layout":2"#), "{text}");
        let back: CommitPoint = serde_json::from_str(&text).unwrap();
        assert_eq!(back.carried, point.carried);
        assert_eq!(Carried::default().games_layout, GamesLayout::ByWriter);
    }

    #[test]
    fn ledgers_are_read_back_newest_first_to_the_baseline() {
        let root = std::env::temp_dir().join(format!("capa-ledgers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = RunDir::open(&root).unwrap();
        dir.write(&crate::keys::ledger_baseline(2), b"a\nb").unwrap();
        dir.write(&crate::keys::ledger(3), b"c").unwrap();
        dir.write(&crate::keys::ledger(4), b"d\ne\n").unwrap();
        let back: Vec<(String, Vec<String>)> = ledgers_back(&dir, 4).collect::<Result<_>>().unwrap();
        let games: Vec<Vec<&str>> = back.iter().map(|(_, g)| g.iter().map(String::as_str).collect()).collect();
        assert_eq!(games, [vec!["d", "e"], vec!["c"], vec!["a", "b"]]);
        assert_eq!(back[2].0, "ledger/before-000002.txt");
        assert_eq!(ledgers_back(&dir, 0).count(), 0);
        let _ = std::fs::remove_dir_all(&root);
    }
}
