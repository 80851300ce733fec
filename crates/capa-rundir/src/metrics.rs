//! `metrics.jsonl`: one [`MetricsLine`] per committed iteration, the same
//! type for every mode's writer and every reader (`capa-train check`, the
//! ladder's next placement, the dashboard, `capa plot`), so that a field
//! renamed is a compile error rather than an empty plot.
//!
//! A number that is not finite (a diverged loss) is written as JSON's
//! `null` and read back as NaN. A field added later must read as absent
//! from older lines (`#[serde(default)]`), so that a resumed run keeps its
//! history.

use anyhow::Result;
use serde::{Deserialize, Deserializer, Serialize};

use crate::dir::{RunDir, Traffic};
use crate::keys::METRICS;

/// One line of `metrics.jsonl`: an iteration of any mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricsLine {
    /// The iteration, from 1.
    pub iteration: u64,
    /// The hash of the network the iteration made.
    pub network: String,
    /// What the iteration trained on: its mode's own fields.
    #[serde(flatten)]
    pub work: Work,
    /// The training steps' means.
    pub train: TrainReport,
    /// The new network's losses on held-out positions (distillation and
    /// supervised runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out: Option<MeanLosses>,
    /// The evaluation, in the iterations `eval.every` picks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval: Option<Evaluation>,
    /// The gate's match (self-play with `[gate]`, in the iterations it
    /// runs): the new network against the one self-play plays with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateMatch>,
    /// The curriculum's games against an engine (self-play with `[curriculum]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curriculum: Option<CurriculumReport>,
    /// Seconds of training steps.
    #[serde(deserialize_with = "real")]
    pub seconds_train: f64,
    /// Seconds measuring the held-out positions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_held_out: Option<f64>,
    /// Seconds writing the network and the checkpoint.
    #[serde(deserialize_with = "real")]
    pub seconds_checkpoint: f64,
    /// What the trainer read and wrote in the run directory since the
    /// line before (so the commit before, and for the first line of a
    /// start, the start's reading, are in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<Traffic>,
}

/// A mode's own fields of a metrics line.
// One line per iteration: the self-play variant's size costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Work {
    /// `run.mode = "selfplay"`.
    SelfPlay(SelfPlayWork),
    /// `run.mode = "supervised"` (Lc0 V6 chunks).
    Supervised(SupervisedWork),
    /// `run.mode = "distill"` (a teacher's analysed games).
    Distill(DistillWork),
}

/// The games a self-play iteration played, and how fast.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SelfPlayWork {
    /// Games finished.
    pub games: u64,
    /// Their plies.
    pub plies: u64,
    /// New training positions.
    pub new_positions: usize,
    /// Positions in the replay buffer after them.
    pub buffer_positions: usize,
    /// Games won by White, drawn, won by Black.
    pub white_draw_black: [u64; 3],
    /// Plies per game.
    #[serde(deserialize_with = "real")]
    pub mean_game_length: f64,
    /// Games ended by resignation.
    pub resigned: u64,
    /// Games played on past a resignation, to check it.
    pub resign_checked: u64,
    /// Of those, games the side that would have resigned did not lose.
    pub resign_wrong: u64,
    /// Plies per second of self-play.
    #[serde(deserialize_with = "real")]
    pub selfplay_plies_per_second: f64,
    /// Playouts per second of self-play.
    #[serde(deserialize_with = "real")]
    pub selfplay_playouts_per_second: f64,
    /// Playouts per search.
    #[serde(deserialize_with = "real")]
    pub mean_playouts_per_search: f64,
    /// Share of searches the KLD-gain stop ended early.
    #[serde(deserialize_with = "real")]
    pub kld_stopped_share: f64,
    /// Training samples per new position (steps x batch / new positions).
    #[serde(deserialize_with = "real")]
    pub passes_per_position: f64,
    /// Seconds of self-play.
    #[serde(deserialize_with = "real")]
    pub seconds_selfplay: f64,
    /// Share of self-play's wall time the network was computing (on its own thread).
    #[serde(deserialize_with = "real")]
    pub inference_share_of_selfplay: f64,
    /// Training positions per second of self-play.
    #[serde(default, deserialize_with = "real")]
    pub positions_per_second: f64,
    /// CPU seconds of self-play (every thread's).
    #[serde(default, deserialize_with = "real")]
    pub seconds_cpu_selfplay: f64,
    /// Training positions per CPU-second of self-play (every thread's).
    #[serde(default, deserialize_with = "real")]
    pub positions_per_cpu_second: f64,
    /// Network calls (batches, cache hits included) per training position.
    #[serde(default, deserialize_with = "real")]
    pub network_calls_per_position: f64,
    /// Positions the network evaluated (cache misses) per training position.
    #[serde(default, deserialize_with = "real")]
    pub evaluations_per_position: f64,
    /// Mean positions per batch over the most one batch can hold.
    #[serde(default, deserialize_with = "real")]
    pub mean_batch_fill: f64,
    /// Share of positions the evaluation cache answered.
    #[serde(default, deserialize_with = "real")]
    pub cache_hit_rate: f64,
    /// Shares of self-play's wall time on the search thread: selecting and
    /// backing up, waiting for the network, and bookkeeping (recording
    /// plies, playing moves, writing games).
    #[serde(default)]
    pub time_shares: TimeShares,
    /// Training samples so far per position in the window, as counted
    /// (every draw of a position counted), over the whole window.
    #[serde(default, deserialize_with = "real")]
    pub passes_mean: f64,
    /// The same over the oldest 5% of the window: nearly what a position
    /// gets in its lifetime.
    #[serde(default, deserialize_with = "real")]
    pub passes_oldest: f64,
    /// The replay window's size this iteration (it grows with the run).
    #[serde(default)]
    pub window: usize,
}

/// Where self-play's wall time went on the search thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeShares {
    /// Selecting leaves and backing up values.
    pub search: f64,
    /// Waiting for the network, with nothing to select.
    pub network_wait: f64,
    /// Recording plies, playing moves, finishing and writing games.
    pub bookkeeping: f64,
}

/// CPU seconds used by this process so far, all threads (NaN where the
/// clock cannot be read).
pub fn process_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// What a supervised iteration read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SupervisedWork {
    /// Passes over the training chunks so far.
    #[serde(deserialize_with = "real")]
    pub epochs: f64,
    /// What the stream read and skipped during this iteration.
    pub data: DataCounts,
}

/// What the chunk stream read and skipped during an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataCounts {
    /// Chunks read.
    pub chunks: u64,
    /// Training samples read.
    pub samples: u64,
    /// Records skipped as damaged.
    pub skipped_records: u64,
    /// Chunks skipped as damaged.
    pub skipped_chunks: u64,
}

/// What a distillation epoch trained on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DistillWork {
    /// Training positions (the held-out ones excluded).
    pub train_positions: usize,
}

/// Averages over an iteration's training steps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainReport {
    /// Steps taken.
    pub steps: u64,
    /// Steps skipped for a gradient that was not finite.
    pub skipped: u64,
    /// The weighted total loss.
    #[serde(deserialize_with = "real")]
    pub loss: f64,
    /// Policy cross-entropy.
    #[serde(deserialize_with = "real")]
    pub policy: f64,
    /// WDL cross-entropy.
    #[serde(deserialize_with = "real")]
    pub wdl: f64,
    /// Moves-left loss.
    #[serde(deserialize_with = "real")]
    pub moves_left: f64,
    /// Future-move loss.
    #[serde(deserialize_with = "real")]
    pub future: f64,
    /// Go: ownership loss (binary cross-entropy per point).
    #[serde(default, deserialize_with = "real", skip_serializing_if = "is_zero")]
    pub ownership: f64,
    /// Go: score loss (cross-entropy over area differences).
    #[serde(default, deserialize_with = "real", skip_serializing_if = "is_zero")]
    pub score: f64,
    /// Gradient norm before clipping, over the steps not skipped.
    #[serde(deserialize_with = "real")]
    pub grad_norm: f64,
    /// The learning rate of the last step.
    #[serde(deserialize_with = "real")]
    pub learning_rate: f64,
    /// Share of the training time spent waiting for batches.
    #[serde(deserialize_with = "real")]
    pub data_wait_share: f64,
}

/// A network's mean losses over positions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MeanLosses {
    /// Positions measured.
    pub positions: usize,
    /// Share of the positions where the network's most likely legal move is
    /// one the target ranks first.
    #[serde(deserialize_with = "real")]
    pub top1_agreement: f64,
    /// Policy cross-entropy.
    #[serde(deserialize_with = "real")]
    pub policy: f64,
    /// WDL cross-entropy.
    #[serde(deserialize_with = "real")]
    pub wdl: f64,
    /// The weighted total; not written (0 when read back).
    #[serde(skip)]
    pub total: f64,
}

/// One iteration's evaluation, from the new network's side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// The opponent: the previous network's name, the engine's command, or
    /// the ladder file.
    pub opponent: String,
    /// The matches played: one against a network or at the anchor, one
    /// per probe of a bisection.
    pub probes: Vec<Probe>,
    /// Against a network, the Elo difference; against the engine, the Elo
    /// on its `UCI_Elo` scale; on a ladder, the Elo on the ladder's scale.
    #[serde(deserialize_with = "real")]
    pub elo: f64,
    /// The 95% interval's lower end.
    #[serde(deserialize_with = "real")]
    pub elo_low: f64,
    /// The 95% interval's upper end.
    #[serde(deserialize_with = "real")]
    pub elo_high: f64,
    /// What `elo` is.
    pub elo_kind: EloKind,
    /// Seconds the evaluation took.
    #[serde(deserialize_with = "real")]
    pub seconds: f64,
    /// With a ladder and an engine: the one match against the engine at
    /// `eval.anchor` after the placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<AnchorMatch>,
}

/// A match against an engine at a fixed `UCI_Elo`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnchorMatch {
    /// The engine's command.
    pub engine: String,
    /// Milliseconds per move for both sides; 0: the network's playouts
    /// and the engine's nodes.
    pub movetime: u64,
    /// The match, `uci_elo` set.
    pub probe: Probe,
    /// The network's Elo on the engine's `UCI_Elo` scale from this match, and its 95% interval.
    #[serde(deserialize_with = "real")]
    pub elo: f64,
    /// The interval's lower end.
    #[serde(deserialize_with = "real")]
    pub elo_low: f64,
    /// The interval's upper end.
    #[serde(deserialize_with = "real")]
    pub elo_high: f64,
}

impl Evaluation {
    /// Whether it placed the network on a ladder.
    pub fn on_ladder(&self) -> bool {
        self.probes.iter().any(|probe| probe.rung.is_some())
    }
}

/// What an evaluation's Elo is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EloKind {
    /// An estimate, within its interval.
    Value,
    /// The network lost every probe by too far for a value: the interval's
    /// upper end is a bound.
    AtMost,
    /// It won every probe by too far for a value: the lower end is a bound.
    AtLeast,
}

/// The gate's match: the iteration's network against self-play's player.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateMatch {
    /// The new network (the iteration's).
    pub challenger: String,
    /// The network self-play played with until then.
    pub player: String,
    /// The challenger's games won.
    pub wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// The challenger's games lost.
    pub losses: u32,
    /// The challenger's points per game.
    #[serde(deserialize_with = "real")]
    pub score: f64,
    /// Whether the challenger scored `gate.threshold` and plays from now on.
    pub promoted: bool,
    /// Seconds of the match.
    #[serde(deserialize_with = "real")]
    pub seconds: f64,
}

/// One match of an evaluation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// The engine's `UCI_Elo`; absent against a network or a ladder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uci_elo: Option<i64>,
    /// The ladder rung played; absent against a network or the engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rung: Option<String>,
    /// The rung's calibrated Elo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rung_elo: Option<f64>,
    /// Games won.
    pub wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// Games lost.
    pub losses: u32,
    /// Points per game.
    #[serde(deserialize_with = "real")]
    pub score: f64,
}

/// One iteration's curriculum games, from the network's side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurriculumReport {
    /// The engine's `UCI_Elo` during the iteration, or its ladder rung's Elo.
    pub elo: i64,
    /// The ladder rung played (`curriculum.ladder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rung: Option<String>,
    /// Games the network won against it.
    pub wins: u32,
    /// Draws.
    pub draws: u32,
    /// Losses.
    pub losses: u32,
    /// The `UCI_Elo` (or rung Elo) for the next iteration.
    pub next_elo: i64,
}

impl MetricsLine {
    /// Reads one line.
    ///
    /// # Errors
    /// A line that is not a whole metrics line, saying what is wrong.
    pub fn parse(line: &str) -> Result<MetricsLine, serde_json::Error> {
        serde_json::from_str(line)
    }

    /// The seconds the iteration took: self-play, training, the held-out
    /// measure, the checkpoint and the gate's match (the evaluation's
    /// seconds are apart: a run's cost of learning, not of measuring).
    pub fn seconds(&self) -> f64 {
        let selfplay = match &self.work {
            Work::SelfPlay(work) => work.seconds_selfplay,
            Work::Supervised(_) | Work::Distill(_) => 0.0,
        };
        let gate = self.gate.as_ref().map_or(0.0, |gate| gate.seconds);
        selfplay + self.seconds_train + self.seconds_held_out.unwrap_or(0.0) + self.seconds_checkpoint + gate
    }

    /// Appends the line to the run's `metrics.jsonl`.
    ///
    /// # Errors
    /// The failure to write it.
    pub fn append_to(&self, dir: &RunDir) -> Result<()> {
        dir.append_line(METRICS, &serde_json::to_string(self)?)
    }
}

/// The lines of the run's `metrics.jsonl` as written, each with what it
/// reads as (a line being written, or cut short by a crash, does not
/// read); none before the first iteration.
///
/// # Errors
/// The failure to read the file.
pub fn read_lines(dir: &RunDir) -> Result<Vec<(String, Result<MetricsLine, serde_json::Error>)>> {
    let bytes = dir.read(METRICS)?.unwrap_or_default();
    Ok(String::from_utf8_lossy(&bytes).lines().map(|line| (line.to_string(), MetricsLine::parse(line))).collect())
}

/// The run's metrics lines that read, in order.
///
/// # Errors
/// The failure to read the file.
pub fn read_metrics(dir: &RunDir) -> Result<Vec<MetricsLine>> {
    Ok(read_lines(dir)?.into_iter().filter_map(|(_, line)| line.ok()).collect())
}

/// Keeps the metrics lines of iterations up to `completed` (a killed run
/// may have left a partial line, or the line of an iteration that never
/// committed).
///
/// # Errors
/// The failure to read or rewrite the file.
pub fn truncate_metrics(dir: &RunDir, completed: u64) -> Result<()> {
    let lines = read_lines(dir)?;
    let kept: Vec<&str> = lines
        .iter()
        .filter(|(_, line)| line.as_ref().is_ok_and(|line| line.iteration <= completed))
        .map(|(text, _)| text.as_str())
        .collect();
    if kept.len() != lines.len() {
        let text: String = kept.iter().map(|line| format!("{line}\n")).collect();
        dir.write(METRICS, text.as_bytes())?;
    }
    Ok(())
}

/// Whether a loss is zero: a head the network lacks, left out of the line.
fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

/// A number as written: JSON's `null` (how a NaN or an infinity is written) reads as NaN.
fn real<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selfplay_line() -> MetricsLine {
        MetricsLine {
            iteration: 3,
            network: "0123abcd".into(),
            work: Work::SelfPlay(SelfPlayWork {
                games: 8,
                plies: 400,
                new_positions: 380,
                buffer_positions: 1200,
                white_draw_black: [3, 2, 3],
                mean_game_length: 50.0,
                resigned: 1,
                resign_checked: 0,
                resign_wrong: 0,
                selfplay_plies_per_second: 20.0,
                selfplay_playouts_per_second: 900.0,
                mean_playouts_per_search: 45.0,
                kld_stopped_share: 0.25,
                passes_per_position: 4.0,
                seconds_selfplay: 20.0,
                inference_share_of_selfplay: 0.7,
                positions_per_cpu_second: 4.5,
                time_shares: TimeShares { search: 0.5, network_wait: 0.3, bookkeeping: 0.2 },
                ..SelfPlayWork::default()
            }),
            train: TrainReport { steps: 10, loss: f64::NAN, ..TrainReport::default() },
            held_out: None,
            eval: Some(Evaluation {
                anchor: None,
                opponent: "ladder.toml".into(),
                probes: vec![Probe {
                    uci_elo: None,
                    rung: Some("sf-1".into()),
                    rung_elo: Some(1200.0),
                    wins: 1,
                    draws: 0,
                    losses: 1,
                    score: 0.5,
                }],
                elo: 1200.0,
                elo_low: 1000.0,
                elo_high: 1400.0,
                elo_kind: EloKind::AtLeast,
                seconds: 30.0,
            }),
            gate: Some(GateMatch {
                challenger: "0123abcd".into(),
                player: "4567cdef".into(),
                wins: 3,
                draws: 0,
                losses: 1,
                score: 0.75,
                promoted: true,
                seconds: 4.0,
            }),
            curriculum: None,
            seconds_train: 5.0,
            seconds_held_out: None,
            seconds_checkpoint: 1.0,
            store: Some(Traffic { requests: 30, bytes_read: 4000, bytes_written: 9000 }),
        }
    }

    #[test]
    fn a_line_reads_back_as_written_each_mode_by_its_fields() {
        let selfplay = selfplay_line();
        let text = serde_json::to_string(&selfplay).unwrap();
        assert!(text.contains(r#""loss":null"#) && text.contains(r#""elo_kind":"at_least""#), "{text}");
        let read = MetricsLine::parse(&text).unwrap();
        assert!(read.train.loss.is_nan());
        assert_eq!(serde_json::to_string(&read).unwrap(), text);
        assert_eq!(read.seconds(), 30.0, "the gate's match is part of the iteration's cost");
        assert!(read.eval.as_ref().is_some_and(Evaluation::on_ladder));

        let distill = MetricsLine {
            work: Work::Distill(DistillWork { train_positions: 5000 }),
            held_out: Some(MeanLosses { positions: 100, top1_agreement: 0.5, policy: 2.0, wdl: 1.0, total: 0.0 }),
            seconds_held_out: Some(2.0),
            eval: None,
            gate: None,
            ..selfplay_line()
        };
        let supervised = MetricsLine {
            work: Work::Supervised(SupervisedWork {
                epochs: 0.5,
                data: DataCounts { chunks: 3, samples: 900, skipped_records: 1, skipped_chunks: 0 },
            }),
            ..distill.clone()
        };
        for line in [distill, supervised] {
            let read = MetricsLine::parse(&serde_json::to_string(&line).unwrap()).unwrap();
            assert_eq!(read.work, line.work);
        }
        let cut = &text[..text.len() / 2];
        assert!(MetricsLine::parse(cut).is_err());
        assert!(MetricsLine::parse(r#"{"iteration": 1, "network": "x"}"#).is_err());
    }
}
