//! The reading side: V6 files and archives listed, read in place and
//! decoded into samples, streamed in epochs through a shuffle buffer; every
//! kind of damage skipped, counted and named.

use std::io::Write;
use std::path::{Path, PathBuf};

use capa_lc0::{
    Chunk, ConvertSettings, DataWarning, PgnReader, SampleError, SampleSettings, StreamSettings, V6_SIZE, V6Record,
    V6Sample, V6Stream, compress, convert_game, read_chunk, read_samples, v6_chunks,
};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn tempdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capa-lc0-stream-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The games of a sample PGN converted, as records.
fn records_of(pgn: &str, games: usize) -> Vec<Vec<V6Record>> {
    let text = std::fs::read_to_string(data(pgn)).unwrap();
    let mut reader = PgnReader::new(text.as_bytes());
    std::iter::from_fn(|| reader.next_game().unwrap())
        .take(games)
        .map(|game| convert_game(&game, &ConvertSettings::default(), None).unwrap().records)
        .collect()
}

fn bytes_of(record: &V6Record) -> Vec<u8> {
    let mut bytes = Vec::new();
    record.write_to(&mut bytes);
    bytes
}

fn sample_of(record: &V6Record) -> V6Sample {
    V6Sample::parse(bytes_of(record).as_slice().try_into().unwrap(), SampleSettings::default()).unwrap()
}

/// A sample's identity: its planes and policy (enough to tell positions apart).
fn key(sample: &V6Sample) -> String {
    format!("{:?}{:?}{}", sample.planes, sample.policy, sample.black_to_move)
}

#[test]
fn a_sample_holds_the_records_targets() {
    let games = records_of("sf_selfplay_played_out.pgn", 2);
    for record in games.iter().flatten() {
        let sample = sample_of(record);
        let legal: Vec<(u16, f32)> =
            record.probabilities.iter().enumerate().filter(|&(_, &p)| p >= 0.0).map(|(i, &p)| (i as u16, p)).collect();
        assert_eq!(sample.policy, legal);
        assert_eq!(sample.planes, record.planes);
        assert_eq!(sample.black_to_move, record.side_to_move_or_enpassant == 1);
        assert_eq!(sample.rule50, record.rule50_count);
        assert_eq!(sample.plies_left, record.plies_left);
        assert_eq!(sample.best_idx, record.best_idx);
        let [w, d, l] = sample.wdl;
        assert_eq!((w - l, d), (record.result_q, record.result_d), "the result as W, D, L");
    }
    // q_ratio mixes the best move's Q and D in.
    let mut record = games[0][3].clone();
    (record.result_q, record.result_d, record.best_q, record.best_d, record.root_q, record.root_d) =
        (1.0, 0.0, 0.2, 0.4, -0.6, 0.2);
    let bytes = bytes_of(&record);
    let bytes: &[u8; V6_SIZE] = bytes.as_slice().try_into().unwrap();
    let half = SampleSettings { q_ratio: 0.5, ..SampleSettings::default() };
    let best = V6Sample::parse(bytes, half).unwrap().wdl;
    let expected = [0.5 * 0.4 + 0.5, 0.5 * 0.4, 0.5 * 0.2];
    assert!(best.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-6), "{best:?} vs {expected:?}");
    let root = V6Sample::parse(bytes, SampleSettings { q_source: capa_lc0::QSource::Root, ..half }).unwrap().wdl;
    let expected = [0.5 * 0.1 + 0.5, 0.5 * 0.2, 0.5 * 0.7];
    assert!(root.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-6), "{root:?} vs {expected:?}");
}

#[test]
fn records_of_another_version_format_or_range_are_refused_with_the_reason() {
    let record = records_of("sf_selfplay_played_out.pgn", 1)[0][0].clone();
    let parse =
        |record: &V6Record| V6Sample::parse(bytes_of(record).as_slice().try_into().unwrap(), SampleSettings::default());
    let mut bytes = bytes_of(&record);
    bytes[0] = 5;
    let refused = V6Sample::parse(bytes.as_slice().try_into().unwrap(), SampleSettings::default());
    assert_eq!(refused, Err(SampleError::Version(5)));
    let other = V6Record { input_format: 3, ..record.clone() };
    assert_eq!(parse(&other), Err(SampleError::InputFormat(3)));
    let mut no_moves = record.clone();
    no_moves.probabilities.fill(-1.0);
    assert!(parse(&no_moves).unwrap_err().to_string().contains("legal moves"));
    let mut nan = record.clone();
    let legal = nan.probabilities.iter().position(|&p| p >= 0.0).unwrap();
    nan.probabilities[legal] = f32::NAN;
    assert!(parse(&nan).unwrap_err().to_string().contains("policy"));
    let wild = V6Record { result_q: 3.0, ..record.clone() };
    assert!(parse(&wild).unwrap_err().to_string().contains("result_q"));
    let wild = V6Record { plies_left: f32::NAN, ..record.clone() };
    assert!(parse(&wild).unwrap_err().to_string().contains("plies_left"));
    let wild = V6Record { best_idx: u16::MAX, ..record.clone() };
    assert!(parse(&wild).unwrap_err().to_string().contains("best_idx"), "a best move past the policy");
    let wild = V6Record { result_q: 0.5, result_d: 0.9, ..record };
    assert!(parse(&wild).is_err(), "|q| + d above 1 leaves a negative win or loss");
}

/// Writes `games` as one V6 file each under `dir`; their paths.
fn write_games(dir: &Path, games: &[Vec<V6Record>]) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    games
        .iter()
        .enumerate()
        .map(|(n, records)| {
            let path = dir.join(format!("game_{n:06}.gz"));
            std::fs::write(&path, compress(records)).unwrap();
            path
        })
        .collect()
}

/// Every sample of `chunks`, and the warnings.
fn read_all(chunks: &[Chunk]) -> (Vec<V6Sample>, Vec<DataWarning>) {
    let mut warnings = Vec::new();
    let samples = read_samples(chunks, SampleSettings::default(), usize::MAX, |w| warnings.push(w));
    (samples, warnings)
}

fn system_tar(dir: &Path, args: &[&str]) {
    let output = std::process::Command::new("tar").args(args).current_dir(dir).output().expect("the tar program");
    assert!(output.status.success(), "tar {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn files_plain_tars_and_tar_gz_archives_read_the_same_records() {
    let dir = tempdir("archives");
    let games = records_of("sf_selfplay_played_out.pgn", 6);
    write_games(&dir.join("run/part-0"), &games[..3]);
    write_games(&dir.join("run/part-1"), &games[3..]);
    let all: Vec<String> = games.iter().flatten().map(|r| key(&sample_of(r))).collect();

    let (chunks, warnings) = v6_chunks(&[dir.join("run")]).unwrap();
    assert!(warnings.is_empty() && chunks.len() == 6, "{chunks:?} {warnings:?}");
    let (samples, warnings) = read_all(&chunks);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(samples.iter().map(key).collect::<Vec<_>>(), all, "files in path order, records in order");

    // A plain tar (as Lc0 ships runs), read in place, and a tar.gz, read whole.
    system_tar(&dir, &["--sort=name", "-cf", "run.tar", "-C", "run", "part-0", "part-1"]);
    system_tar(&dir, &["--sort=name", "-czf", "run.tar.gz", "-C", "run", "part-0", "part-1"]);
    let (members, _) = v6_chunks(&[dir.join("run.tar")]).unwrap();
    assert_eq!(members.len(), 6);
    assert!(matches!(&members[4], Chunk::Member { name, .. } if name == "part-1/game_000001.gz"), "{members:?}");
    assert_eq!(members[4].split_key(), "run.tar/part-1/game_000001.gz");
    let (from_tar, warnings) = read_all(&members);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(from_tar.iter().map(key).collect::<Vec<_>>(), all);
    let (whole, _) = v6_chunks(&[dir.join("run.tar.gz")]).unwrap();
    assert_eq!(whole, vec![Chunk::Archive(dir.join("run.tar.gz"))]);
    let (from_tgz, warnings) = read_all(&whole);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(from_tgz.iter().map(key).collect::<Vec<_>>(), all);

    let missing = v6_chunks(&[dir.join("nowhere")]).unwrap_err();
    assert!(missing.to_string().contains("nowhere") && missing.to_string().contains("no such"), "{missing}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn damaged_data_is_skipped_counted_and_named() {
    let dir = tempdir("damaged");
    let games = records_of("sf_selfplay_played_out.pgn", 4);
    let paths = write_games(&dir.join("data"), &games);
    let good: usize = games[2].len() + games[3].len();
    // Truncated gzip, not gzip at all, a partial record at the end, another version.
    let gz = std::fs::read(&paths[0]).unwrap();
    std::fs::write(&paths[0], &gz[..gz.len() / 2]).unwrap();
    std::fs::write(dir.join("data/game_000100.gz"), b"not gzip at all").unwrap();
    let mut raw = Vec::new();
    for record in &games[1] {
        record.write_to(&mut raw);
    }
    raw[0] = 5;
    raw.truncate(raw.len() - 100);
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(&raw).unwrap();
    std::fs::write(&paths[1], encoder.finish().unwrap()).unwrap();
    // A tar whose end is cut inside a member.
    system_tar(&dir, &["cf", "cut.tar", "-C", "data", "game_000002.gz", "game_000003.gz"]);
    let tar = std::fs::read(dir.join("cut.tar")).unwrap();
    let second = tar.windows(14).position(|w| w == b"game_000003.gz").unwrap();
    std::fs::write(dir.join("cut.tar"), &tar[..second + 600]).unwrap();

    let (chunks, listing) = v6_chunks(&[dir.join("data"), dir.join("cut.tar")]).unwrap();
    let (samples, warnings) = read_all(&chunks);
    let text: Vec<String> = listing.iter().chain(&warnings).map(ToString::to_string).collect();
    let says = |what: &str, place: &str| text.iter().any(|w| w.contains(what) && w.contains(place));
    assert!(says("gzip", "game_000000.gz"), "{text:#?}");
    assert!(says("gzip", "game_000100.gz"), "{text:#?}");
    assert!(says("version 5", "game_000001.gz record 0"), "{text:#?}");
    assert!(says("left over", "game_000001.gz"), "{text:#?}");
    assert!(text.iter().any(|w| w.contains("cut.tar")), "{text:#?}");
    // Game 1 keeps all but its first (version 5) and last (partial) records;
    // games 2 and 3 as files, and game 2 from the tar.
    assert_eq!(samples.len(), games[1].len() - 2 + good + games[2].len(), "{text:#?}");
    std::fs::remove_dir_all(dir).unwrap();
}

fn settings(readers: usize, shuffle_buffer: usize) -> StreamSettings {
    StreamSettings { readers, shuffle_buffer, sample_rate: 1, seed: 7, sample: SampleSettings::default() }
}

#[test]
fn an_epoch_hands_out_every_record_once_and_a_resumed_stream_goes_on_in_order() {
    let dir = tempdir("epochs");
    let games = records_of("sf_selfplay_played_out.pgn", 8);
    write_games(&dir, &games);
    let (chunks, _) = v6_chunks(std::slice::from_ref(&dir)).unwrap();
    let total: usize = games.iter().map(Vec::len).sum();
    let mut all: Vec<String> = games.iter().flatten().map(|r| key(&sample_of(r))).collect();
    all.sort();

    // One reader and no shuffling: the chunks' epoch order, exactly.
    let mut stream = V6Stream::start(chunks.clone(), 0, settings(1, 1), |w| panic!("{w}"));
    let first: Vec<String> = (0..total).map(|_| key(&stream.next_sample().unwrap())).collect();
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(sorted, all, "an epoch is every record once");
    let second: Vec<String> = (0..total).map(|_| key(&stream.next_sample().unwrap())).collect();
    assert_ne!(first, second, "each epoch has its own order");
    let mut sorted = second.clone();
    sorted.sort();
    assert_eq!(sorted, all);
    drop(stream);

    // Started at chunk 3 of epoch 1, a stream goes on where the first was then.
    let start = chunks.len() as u64 + 3;
    let mut resumed = V6Stream::start(chunks.clone(), start, settings(1, 1), |w| panic!("{w}"));
    let rest: Vec<String> = (0..10).map(|_| key(&resumed.next_sample().unwrap())).collect();
    let at = second.windows(10).position(|w| w == rest.as_slice());
    assert!(at.is_some_and(|at| at > 0), "the resumed stream is not the epoch's continuation");

    // Several readers and a shuffle buffer: still every record, mixed.
    let mut stream = V6Stream::start(chunks, 0, settings(2, 64), |w| panic!("{w}"));
    let mixed: Vec<String> = (0..4 * total).map(|_| key(&stream.next_sample().unwrap())).collect();
    for record in &all {
        assert!(mixed.contains(record), "a record never came in four epochs");
    }
    assert!(stream.epochs() >= 3.0, "{}", stream.epochs());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn data_with_nothing_readable_ends_the_stream_instead_of_hanging() {
    let dir = tempdir("barren");
    for n in 0..3 {
        std::fs::write(dir.join(format!("game_{n}.gz")), b"garbage").unwrap();
    }
    let (chunks, _) = v6_chunks(std::slice::from_ref(&dir)).unwrap();
    let warnings = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let heard = std::sync::Arc::clone(&warnings);
    let mut stream = V6Stream::start(chunks, 0, settings(2, 16), move |w| heard.lock().unwrap().push(w));
    assert!(!stream.fill());
    assert!(stream.next_sample().is_none());
    assert_eq!(stream.counts().skipped_chunks, stream.counts().chunks);
    assert!(warnings.lock().unwrap().len() >= 3);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_chunk_reads_record_by_record_and_stops_when_asked() {
    let dir = tempdir("stop");
    let games = records_of("sf_selfplay_played_out.pgn", 1);
    let paths = write_games(&dir, &games);
    let mut seen = Vec::new();
    read_chunk(
        &Chunk::File(paths[0].clone()),
        &mut Vec::new(),
        |place, index, _| {
            seen.push(format!("{place} {index}"));
            index < 2
        },
        |w| panic!("{w}"),
    );
    assert_eq!(seen.len(), 3);
    assert!(seen[2].ends_with("game_000000.gz 2"), "{seen:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn data_smaller_than_the_shuffle_buffer_is_held_once() {
    let dir = tempdir("small");
    let games = records_of("sf_selfplay_played_out.pgn", 3);
    write_games(&dir, &games);
    let (chunks, _) = v6_chunks(std::slice::from_ref(&dir)).unwrap();
    let total: usize = games.iter().map(Vec::len).sum();
    let mut stream = V6Stream::start(chunks, 0, settings(1, 100_000), |w| panic!("{w}"));
    assert!(stream.fill());
    // The buffer stops at one epoch's samples (give or take a chunk read ahead).
    assert!(stream.epochs() < 3.0, "the buffer read {} epochs of {total} positions", stream.epochs());
    let mut first: Vec<String> = (0..total).map(|_| key(&stream.next_sample().unwrap())).collect();
    first.sort();
    first.dedup();
    assert!(first.len() > total / 2, "{} distinct of {total}", first.len());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_resumed_stream_over_bad_and_good_chunks_finds_the_good_ones_and_data_that_vanishes_ends_it() {
    let dir = tempdir("resume-bad");
    let games = records_of("sf_selfplay_played_out.pgn", 1);
    write_games(&dir, &games);
    std::fs::write(dir.join("game_000001.gz"), b"junk").unwrap();
    let (chunks, _) = v6_chunks(std::slice::from_ref(&dir)).unwrap();
    // From any position, whatever the epochs' orders, the good chunk is found.
    for from in 0..6 {
        let mut stream = V6Stream::start(chunks.clone(), from, settings(2, 8), |_| {});
        assert!(stream.fill(), "started at {from}");
    }
    // The data removed while the stream runs: it ends instead of spinning.
    let mut stream = V6Stream::start(chunks, 0, settings(1, 8), |_| {});
    assert!(stream.next_sample().is_some());
    std::fs::remove_dir_all(&dir).unwrap();
    let handed = (0..100_000).map_while(|_| stream.next_sample()).count();
    assert!(handed < 100_000, "the stream kept handing out samples from nothing");
}
