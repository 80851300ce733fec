//! `run.mode = "supervised"`: a chess network learns from Lc0 V6 training
//! data (`capa lc0 convert` output, or Lc0's own training runs), streamed
//! as lczero-training's chunk parser does (capa-lc0's `V6Stream`). Each
//! iteration is `train.steps` steps; after it the held-out chunks measure
//! the network (losses, and how often its first choice is the record's best
//! move), `[eval]` plays it when due, and the commit point records where
//! the stream stands, so a killed run goes on from the chunks it had not
//! read. Checkpoints and metrics are the other modes'.
//!
//! The records' planes are the network's input as they are: capa's chess
//! encoder draws the same 112 planes (a test holds them to it bit for bit).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use capa_lc0::{
    Chunk, DataWarning, INPUT_FLOATS, POLICY_SIZE, StreamCounts, StreamSettings, V6Sample, V6Stream, read_samples,
    v6_chunks,
};
use capa_net::{HostBatch, NetGame};
use capa_rundir::{Carried, DataCounts, MetricsLine, RunDir, SupervisedWork, Work};
use rayon::prelude::*;

use crate::commit::{commit, publish_net, start_trainer};
use crate::config::RunConfig;
use crate::distill::held_out;
use crate::evaluate::{self, Networks, evaluate_if_due};
use crate::finish::Finish;
use crate::progress::progress;
use crate::steps::{MEASURE_BATCH, mean_losses_of, train};

/// Warnings about skipped data printed in full; the rest are counted.
const WARNINGS_SHOWN: u64 = 50;

/// Samples as a batch on the host: the planes as the records hold them,
/// the policy normalised over the legal moves (a record whose legal
/// entries are all zero has no policy target), no future-move target (V6
/// records do not say which game they belong to).
pub(crate) fn host_batch(samples: &[V6Sample]) -> HostBatch {
    let size = samples.len();
    let mut batch = HostBatch {
        size,
        planes: vec![0.0; size * INPUT_FLOATS],
        policy: vec![0.0; size * POLICY_SIZE],
        legal: vec![false; size * POLICY_SIZE],
        wdl: samples.iter().flat_map(|s| s.wdl).collect(),
        moves_left: samples.iter().map(|s| s.plies_left).collect(),
        future: vec![0.0; size * POLICY_SIZE],
        best: samples.iter().map(|s| u32::from(s.best_idx)).collect(),
        ..HostBatch::default()
    };
    samples
        .par_iter()
        .zip(batch.planes.par_chunks_mut(INPUT_FLOATS))
        .zip(batch.policy.par_chunks_mut(POLICY_SIZE))
        .zip(batch.legal.par_chunks_mut(POLICY_SIZE))
        .for_each(|(((sample, planes), policy), legal)| {
            sample.write_input(planes);
            let total: f32 = sample.policy.iter().map(|&(_, p)| p).sum();
            for &(index, p) in &sample.policy {
                let index = usize::from(index);
                legal[index] = true;
                if total > 0.0 {
                    policy[index] = p / total;
                }
            }
        });
    batch
}

/// The next `size` samples of `stream` as a batch; `None` once it has nothing.
fn next_batch(stream: &mut V6Stream, size: usize) -> Option<HostBatch> {
    let samples: Vec<V6Sample> = (0..size).map_while(|_| stream.next_sample()).collect();
    (samples.len() == size).then(|| host_batch(&samples))
}

/// Logs the first warnings in full and counts the rest.
fn warner() -> impl Fn(DataWarning) + Send + Sync + Clone + 'static {
    let shown = Arc::new(AtomicU64::new(0));
    move |warning: DataWarning| {
        let n = shown.fetch_add(1, Ordering::Relaxed);
        if n < WARNINGS_SHOWN {
            tracing::warn!("supervised.data: {warning}");
        } else if n == WARNINGS_SHOWN {
            tracing::warn!("supervised.data: more data skipped; metrics.jsonl counts it");
        }
    }
}

/// What the stream read and skipped between `then` and `now`.
fn data_counts(then: StreamCounts, now: StreamCounts) -> DataCounts {
    DataCounts {
        chunks: now.chunks - then.chunks,
        samples: now.samples - then.samples,
        skipped_records: now.skipped_records - then.skipped_records,
        skipped_chunks: now.skipped_chunks - then.skipped_chunks,
    }
}

/// The training and held-out chunks of `supervised.data`.
fn split_chunks(config: &RunConfig, warn: &impl Fn(DataWarning)) -> Result<(Vec<Chunk>, Vec<Chunk>)> {
    let data = &config.supervised.data;
    let (chunks, warnings) = v6_chunks(data).context("supervised.data")?;
    warnings.into_iter().for_each(warn);
    let listed = || data.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    if chunks.is_empty() {
        bail!("supervised.data: no V6 data in {} (looked for .gz files, .tar and .tar.gz archives)", listed());
    }
    let (held, train): (Vec<Chunk>, Vec<Chunk>) =
        chunks.into_iter().partition(|chunk| held_out(&chunk.split_key(), config.supervised.holdout));
    if train.is_empty() {
        bail!("supervised.data: all {} chunks of {} are held out; lower supervised.holdout", held.len(), listed());
    }
    Ok((train, held))
}

/// The supervised loop: iterations until `last` or `stop`.
pub(crate) fn supervised<G: NetGame>(config: &RunConfig, dir: &RunDir, stop: &AtomicBool, last: u64) -> Result<Finish> {
    if G::INPUT_LEN != INPUT_FLOATS || G::policy_size() != POLICY_SIZE {
        bail!("run.mode = \"supervised\" reads Lc0's chess data: set game.name = \"chess\"");
    }
    let warn = warner();
    let (train_chunks, held_chunks) = split_chunks(config, &warn)?;
    let resumed = start_trainer(config, dir)?;
    if resumed.first_iteration > last {
        return Ok(Finish::Completed);
    }
    let settings = config.supervised.sample_settings();
    let held = read_samples(&held_chunks, settings, config.supervised.held_out_positions, &warn);
    let chunk_count = train_chunks.len();
    let position = resumed.carried.data_position.unwrap_or(0);
    let mut stream = V6Stream::start(
        train_chunks,
        position,
        StreamSettings {
            readers: config.supervised.readers,
            shuffle_buffer: config.supervised.shuffle_buffer,
            sample_rate: config.supervised.sample_rate,
            seed: config.run.seed,
            sample: settings,
        },
        warn,
    );
    let bar = progress(1, "filling the shuffle buffer");
    let filled = stream.fill();
    bar.finish_and_clear();
    if !filled {
        bail!(
            "supervised.data: nothing readable in {chunk_count} training chunks (the warnings above say why); \
             capa reads Lc0's V6 records in the classical input format, as `capa lc0 convert` writes them"
        );
    }
    tracing::info!(
        "supervised data: {chunk_count} training chunks{}, {} held-out chunks ({} positions measured)",
        if position == 0 { String::new() } else { format!(", resuming at epoch {:.3}", stream.epochs()) },
        held_chunks.len(),
        held.len()
    );
    let (mut trainer, mut network, resumed_carried) = (resumed.trainer, resumed.network, resumed.carried);
    let mut counted = stream.counts();
    for iteration in resumed.first_iteration..=last {
        let started = Instant::now();
        let batches = |_: &mut _| Ok(next_batch(&mut stream, config.train.batch));
        let Some(report) = train(config, &mut trainer, batches, config.train.steps, iteration, stop)? else {
            return Ok(Finish::Interrupted);
        };
        let seconds_train = started.elapsed().as_secs_f64();
        let measured = Instant::now();
        let mut batches = held.chunks(MEASURE_BATCH).map(host_batch);
        let held_out = mean_losses_of(&trainer.inference()?, &mut batches, &config.optimizer.loss_weights)?;
        let seconds_held_out = measured.elapsed().as_secs_f64();
        let saved = Instant::now();
        let previous = std::mem::replace(&mut network, publish_net(&trainer.inference()?, dir)?);
        let seconds_checkpoint = saved.elapsed().as_secs_f64();
        let networks = Networks { trainer: &trainer, weights: None, current: &network, previous: &previous };
        let seconds = seconds_train + seconds_held_out + seconds_checkpoint;
        let eval = evaluate_if_due::<G>(config, dir, networks, iteration, seconds)?;
        let saved = Instant::now();
        let carried = Carried { data_position: Some(stream.position()), ..resumed_carried.clone() };
        let now = stream.counts();
        let mut recorded = None;
        commit(config, dir, &trainer, iteration, &network, carried, || {
            let line = MetricsLine {
                iteration,
                network: network.clone(),
                work: Work::Supervised(SupervisedWork { epochs: stream.epochs(), data: data_counts(counted, now) }),
                train: report,
                held_out: Some(held_out),
                eval,
                gate: None,
                curriculum: None,
                seconds_train,
                seconds_held_out: Some(seconds_held_out),
                seconds_checkpoint: seconds_checkpoint + saved.elapsed().as_secs_f64(),
                store: Some(dir.take_traffic()),
            };
            line.append_to(dir)?;
            recorded = Some(line);
            Ok(())
        })?;
        let metrics = recorded.expect("recorded before the commit");
        counted = now;
        eprintln!(
            "iteration {iteration}: {} steps, loss {:.3} (policy {:.3}, wdl {:.3}), data wait {:.1}%; held out: \
             top-1 agreement with the best move {:.1}%, policy {:.3}, wdl {:.3} on {} positions; epoch {:.2}; \
             network {}{}",
            metrics.train.steps,
            metrics.train.loss,
            metrics.train.policy,
            metrics.train.wdl,
            100.0 * metrics.train.data_wait_share,
            100.0 * held_out.top1_agreement,
            held_out.policy,
            held_out.wdl,
            held_out.positions,
            stream.epochs(),
            metrics.network,
            metrics.eval.as_ref().map_or_else(String::new, |e| format!("; {}", evaluate::summary(e)))
        );
    }
    Ok(Finish::Completed)
}

#[cfg(test)]
mod tests {
    use capa_lc0::{ConvertSettings, PgnReader, SampleSettings, V6Record, convert_game, policy_move};
    use capa_mcts::HISTORY_LEN;
    use capa_rules::chess::Chess;
    use capa_rules::{Game, History, MoveList};

    use super::*;

    /// `uci` played from `fen`, converted as `capa lc0 convert` does; the
    /// records, and every position with whether it occurred before.
    fn converted(fen: &str, uci: &[&str], result: &str) -> (Vec<V6Record>, Vec<Chess>, Vec<bool>) {
        let mut history = History::new(Chess::from_fen(fen).unwrap());
        let mut repeated = vec![false];
        let mut sans = Vec::new();
        for m in uci {
            let parsed = history.current().parse_move(m).unwrap();
            sans.push(history.current().san(parsed));
            history.play(parsed);
            repeated.push(history.repetitions() > 0);
        }
        let pgn = format!("[FEN \"{fen}\"]\n[SetUp \"1\"]\n[Result \"{result}\"]\n\n{} {result}\n", sans.join(" "));
        let game = PgnReader::new(pgn.as_bytes()).next_game().unwrap().unwrap();
        let records = convert_game(&game, &ConvertSettings::default(), None).unwrap().records;
        assert_eq!(records.len(), uci.len());
        (records, history.positions().to_vec(), repeated)
    }

    fn sample(record: &V6Record) -> V6Sample {
        let mut bytes = Vec::new();
        record.write_to(&mut bytes);
        V6Sample::parse(bytes.as_slice().try_into().unwrap(), SampleSettings::default()).unwrap()
    }

    /// The record's planes, as the network gets them, against capa's own
    /// encoder on the same history: bit for bit.
    fn assert_planes_match(records: &[V6Record], positions: &[Chess], repeated: &[bool]) {
        for (ply, record) in records.iter().enumerate() {
            let first = (ply + 1).saturating_sub(HISTORY_LEN);
            let mut ours = vec![0.0; Chess::INPUT_LEN];
            Chess::encode(&positions[first..=ply], &repeated[first..=ply], &mut ours);
            let batch = host_batch(&[sample(record)]);
            let differ = ours.iter().zip(&batch.planes).position(|(a, b)| a.to_bits() != b.to_bits());
            assert_eq!(differ, None, "ply {ply}: plane {} differs", differ.unwrap_or(0) / 64);
        }
    }

    #[test]
    fn castling_rights_repetitions_and_a_rule50_clock_near_100_read_as_capas_encoder_draws_them() {
        let moves = ["h1h2", "e8d8", "h2h1", "d8e8", "h1h2", "e8d8", "h2h1", "d8e8"];
        let (records, positions, repeated) = converted("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 90 60", &moves, "1/2-1/2");
        assert_eq!(repeated, [false, false, false, false, false, false, true, true, true], "from 3... Kd8 on");
        assert_planes_match(&records, &positions, &repeated);
        let batch = host_batch(&records.iter().map(sample).collect::<Vec<_>>());
        let plane = |row: usize, plane: usize| &batch.planes[row * INPUT_FLOATS + plane * 64..][..64];
        // Ply 1, black to move: white has lost king-side castling; black has both.
        assert_eq!(plane(1, 104), &[1.0; 64], "ours (black) queen side");
        assert_eq!(plane(1, 105), &[1.0; 64], "ours (black) king side");
        assert_eq!(plane(1, 106), &[1.0; 64], "theirs (white) queen side");
        assert_eq!(plane(1, 107), &[0.0; 64], "theirs (white) king side: the rook moved");
        assert_eq!(plane(1, 108), &[1.0; 64], "black to move");
        assert_eq!(plane(1, 109), &[91.0 / 99.0; 64], "the clock after one quiet move");
        assert_eq!(plane(7, 109), &[97.0 / 99.0; 64]);
        assert_eq!(plane(5, 12), &[0.0; 64], "ply 5 is no repeat: black could still castle at ply 1");
        assert_eq!(plane(6, 12), &[1.0; 64], "ply 6 repeats ply 2");
        assert_eq!(plane(6, 13 + 12), &[0.0; 64], "history slot 1 (ply 5) is no repeat");
        // A draw: every value target is all draw, the policy one-hot on the move played.
        for (row, (record, played)) in records.iter().zip(moves).enumerate() {
            assert_eq!(&batch.wdl[3 * row..3 * row + 3], &[0.0, 1.0, 0.0]);
            let row_policy = &batch.policy[row * POLICY_SIZE..][..POLICY_SIZE];
            assert_eq!(row_policy[usize::from(record.played_idx)], 1.0);
            assert_eq!(policy_move(record.played_idx, row % 2 == 1), played);
            // The count self-play uses: plies to the end, this one's move included.
            assert_eq!(batch.moves_left[row], (moves.len() - row) as f32);
        }
    }

    #[test]
    fn a_promotion_into_mate_with_black_to_move_first() {
        let (records, positions, repeated) =
            converted("6k1/1P3ppp/8/8/8/p7/5PPP/6K1 b - - 0 1", &["a3a2", "b7b8q"], "1-0");
        assert!(positions[2].outcome().is_some(), "b8=Q is mate");
        assert_planes_match(&records, &positions, &repeated);
        let batch = host_batch(&records.iter().map(sample).collect::<Vec<_>>());
        assert_eq!(&batch.wdl[..3], &[0.0, 0.0, 1.0], "black, to move first, loses");
        assert_eq!(&batch.wdl[3..], &[1.0, 0.0, 0.0]);
        assert_eq!(batch.moves_left, [2.0, 1.0], "plies_left as the record has it: 1 before the mating move");
        assert_eq!(policy_move(records[1].played_idx, false), "b7b8q");
        // Every legal move has its entry, the four promotions included.
        for (row, position) in positions[..2].iter().enumerate() {
            let mut moves = MoveList::new();
            position.legal_moves(&mut moves);
            let legal = batch.legal[row * POLICY_SIZE..][..POLICY_SIZE].iter().filter(|&&l| l).count();
            assert_eq!(legal, moves.len(), "row {row}");
        }
        assert_eq!(batch.best, [u32::from(records[0].best_idx), u32::from(records[1].best_idx)]);
        assert!(batch.future.iter().all(|&f| f == 0.0), "V6 has no future-move target");
    }
}
