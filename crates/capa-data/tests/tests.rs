//! Game records against real games: round trips, damaged files, and random
//! bytes, which must give an error and never a panic.

use std::io::{Read, Write};
use std::path::Path;

mod sgf;

use capa_data::{
    Candidate, Ending, GameRecord, PlyRecord, RecordError, Resignation, SearchValues, TeacherGame,
    remove_stale_temporaries, write_new_atomically,
};
use capa_rules::Rng;
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, History, MoveList, Termination};
use capa_uci::UciScore;
use proptest::prelude::*;

/// A random game of `G` from its start, with made-up search data on every ply.
fn random_game<G: Game>(seed: u64, max_plies: usize) -> GameRecord<G> {
    let mut rng = Rng::new(seed);
    let mut history = History::new(G::startpos());
    let (mut moves, mut plies) = (Vec::new(), Vec::new());
    let mut legal = MoveList::new();
    while moves.len() < max_plies && history.outcome().is_none() {
        let position = history.current().clone();
        position.legal_moves(&mut legal);
        let m = legal[(rng.next_u64() % legal.len() as u64) as usize];
        let visited: Vec<_> = legal.iter().take(5).collect();
        let visits = visited.iter().map(|&&m| (position.policy_index(m) as u16, 1.0 / visited.len() as f32)).collect();
        let value = |scale: f32| SearchValues { q: scale * 0.1, d: 0.3, m: 40.0 - scale };
        plies.push(PlyRecord { full_search: rng.uniform() < 0.25, root: value(1.0), best: value(2.0), visits });
        history.play(m);
        moves.push(m);
    }
    let ending = history.outcome().map_or(Ending::Rules(Termination::PlyCap), |o| Ending::Rules(o.reason));
    GameRecord {
        start: G::startpos(),
        network: format!("net-{seed}"),
        moves,
        plies,
        winner: None,
        ending,
        resignation: Resignation { enabled: false, would_have_resigned: Some(7) },
    }
}

/// A random teacher game of `G`: random moves, and up to 8 of the legal
/// moves as candidates with random centipawn and mate scores.
fn random_teacher_game<G: Game>(seed: u64, max_plies: usize) -> TeacherGame<G> {
    let mut rng = Rng::new(seed);
    let mut history = History::new(G::startpos());
    let mut candidates = Vec::new();
    let mut legal = MoveList::new();
    while history.moves().len() < max_plies && history.outcome().is_none() {
        history.current().legal_moves(&mut legal);
        let listed = legal
            .iter()
            .take(1 + (rng.next_u64() % 8) as usize)
            .map(|&mv| {
                let value = (rng.next_u64() % 2001) as i32 - 1000;
                let score = if rng.uniform() < 0.1 { UciScore::Mate(value / 50) } else { UciScore::Cp(value) };
                Candidate { mv, score }
            })
            .collect();
        candidates.push(listed);
        history.play(legal[(rng.next_u64() % legal.len() as u64) as usize]);
    }
    let ending = history.outcome().map_or(Ending::Rules(Termination::PlyCap), |o| Ending::Rules(o.reason));
    TeacherGame {
        start: G::startpos(),
        teacher: format!("teacher-{seed}"),
        moves: history.moves().to_vec(),
        candidates,
        winner: None,
        ending,
    }
}

/// `bytes` (a capa data file) with byte `at` of its inflated body set to
/// `byte`, sealed again with a valid checksum: damage the checksum cannot
/// catch, for the body's own checks.
fn with_body_byte(bytes: &[u8], at: prop::sample::Index, byte: u8) -> Vec<u8> {
    let mut body = Vec::new();
    flate2::read::DeflateDecoder::new(&bytes[13..]).read_to_end(&mut body).unwrap();
    let i = at.index(body.len());
    body[i] = byte;
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(&body).unwrap();
    let payload = encoder.finish().unwrap();
    let mut sealed = bytes[..9].to_vec();
    sealed.extend_from_slice(&crc32fast_hash(&payload).to_le_bytes());
    sealed.extend_from_slice(&payload);
    sealed
}

#[test]
fn teacher_games_round_trip_for_both_games() {
    for seed in 0..20 {
        let game = random_teacher_game::<Capablanca>(seed, 80);
        let read = TeacherGame::<Capablanca>::from_bytes(&game.to_bytes()).unwrap();
        assert_eq!((read.moves, read.candidates, read.ending), (game.moves, game.candidates, game.ending));
        let game = random_teacher_game::<Chess>(seed, 80);
        let read = TeacherGame::<Chess>::from_bytes(&game.to_bytes()).unwrap();
        assert_eq!((read.moves, read.candidates, read.teacher), (game.moves, game.candidates, game.teacher));
    }
    let chess = random_teacher_game::<Chess>(1, 10).to_bytes();
    let error = TeacherGame::<Capablanca>::from_bytes(&chess).unwrap_err().to_string();
    assert!(error.contains("a chess game, not capablanca"), "{error}");
    let record = random_game::<Chess>(1, 10).to_bytes();
    let error = TeacherGame::<Chess>::from_bytes(&record).unwrap_err().to_string();
    assert!(error.contains("not a capa teacher game"), "{error}");
}

fn assert_same<G: Game>(a: &GameRecord<G>, b: &GameRecord<G>) {
    assert_eq!(a.start.fen(), b.start.fen());
    assert_eq!(
        (&a.network, &a.moves, a.winner, a.ending, a.resignation),
        (&b.network, &b.moves, b.winner, b.ending, b.resignation)
    );
    assert_eq!(a.plies.len(), b.plies.len());
    for (x, y) in a.plies.iter().zip(&b.plies) {
        assert_eq!((x.full_search, x.root, x.best), (y.full_search, y.root, y.best));
        for (&(i, p), &(j, q)) in x.visits.iter().zip(&y.visits) {
            assert_eq!(i, j);
            assert!((p - q).abs() <= 1.0 / 65535.0, "{p} vs {q}");
        }
    }
}

#[test]
fn records_round_trip_for_both_games() {
    for seed in 0..4 {
        let game = random_game::<Capablanca>(seed, 200);
        let bytes = game.to_bytes();
        assert!(bytes.len() < game.moves.len() * 60 + 200, "{} bytes for {} plies", bytes.len(), game.moves.len());
        assert_same(&game, &GameRecord::from_bytes(&bytes).unwrap());
        let game = random_game::<Chess>(seed, 200);
        assert_same(&game, &GameRecord::from_bytes(&game.to_bytes()).unwrap());
    }
}

#[test]
fn files_round_trip_and_errors_name_the_file() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capa-data-test");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("game.capa");
    let game = random_game::<Chess>(9, 80);
    game.write(&path).unwrap();
    assert_same(&game, &GameRecord::read(&path).unwrap());

    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let err = GameRecord::<Chess>::read(&path).unwrap_err().to_string();
    assert!(err.contains("game.capa") && err.contains("checksum"), "{err}");

    // A killed writer's temporary file is found and removed; records and a
    // live writer's temporary file (this process's) stay.
    std::fs::write(dir.join(".other.capa.tmp-99999999-0"), b"half").unwrap();
    let live = dir.join(format!(".live.capa.tmp-{}-0", std::process::id()));
    std::fs::write(&live, b"being written").unwrap();
    assert_eq!(remove_stale_temporaries(&dir).unwrap(), 1);
    assert!(path.exists() && live.exists());
    std::fs::remove_file(&live).unwrap();

    // A file that must not replace another: written once, then refused, the first kept.
    let new = dir.join("new.capa");
    let _ = std::fs::remove_file(&new);
    write_new_atomically(&new, b"first").unwrap();
    let err = write_new_atomically(&new, b"second").unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(std::fs::read(&new).unwrap(), b"first");
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(names.iter().all(|n| !n.to_string_lossy().contains(capa_data::TEMPORARY_MARK)), "{names:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_is_an_error_that_says_what() {
    let game = random_game::<Capablanca>(3, 60);
    let bytes = game.to_bytes();
    let message = |bytes: &[u8]| match GameRecord::<Capablanca>::from_bytes(bytes) {
        Err(RecordError::Format(message)) => message,
        other => panic!("expected a format error, got {other:?}"),
    };
    assert!(message(b"PGN 1. e4").contains("not a capa game record"));
    assert!(message(&bytes[..bytes.len() / 2]).contains("checksum"));
    let mut future = bytes.clone();
    future[8] = 99;
    assert!(message(&future).contains("version 99"));
    // A chess record is not a Capablanca one.
    let chess = random_game::<Chess>(3, 10).to_bytes();
    assert!(message(&chess).contains("a chess game, not capablanca"), "{}", message(&chess));
}

proptest! {
    /// Any change to a record's bytes gives an error or (for a change the
    /// checksum cannot see, i.e. none) the same game, never a panic.
    #[test]
    fn mutated_records_never_panic(seed in 0u64..1000, at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut bytes = random_game::<Chess>(seed, 30).to_bytes();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        let _ = GameRecord::<Chess>::from_bytes(&bytes);
    }

    /// Damage inside the body, past the checksum: an error or a game, never a panic.
    #[test]
    fn damaged_bodies_never_panic(seed in 0u64..1000, at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let record = with_body_byte(&random_game::<Capablanca>(seed, 30).to_bytes(), at, byte);
        let _ = GameRecord::<Capablanca>::from_bytes(&record);
        let teacher = with_body_byte(&random_teacher_game::<Capablanca>(seed, 30).to_bytes(), at, byte);
        let _ = TeacherGame::<Capablanca>::from_bytes(&teacher);
    }

    /// Random bytes after a valid header.
    #[test]
    fn random_bodies_never_panic(body in prop::collection::vec(any::<u8>(), 0..400)) {
        let mut bytes = b"CAPAGAME\x01".to_vec();
        bytes.extend_from_slice(&crc32fast_hash(&body).to_le_bytes());
        bytes.extend_from_slice(&body);
        let _ = GameRecord::<Capablanca>::from_bytes(&bytes);
        let mut bytes = b"CAPATEAC\x01".to_vec();
        bytes.extend_from_slice(&crc32fast_hash(&body).to_le_bytes());
        bytes.extend_from_slice(&body);
        let _ = TeacherGame::<Capablanca>::from_bytes(&bytes);
    }
}

/// CRC-32 (IEEE), bit by bit: the tests' own, independent of the crate's.
fn crc32fast_hash(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// Folders are searched in a fixed order, hidden entries and unwanted
/// names skipped; files named are taken as they are; a missing path is an
/// error naming it.
#[test]
fn input_files_searches_folders_in_a_fixed_order() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capa-data-inputs");
    let _ = std::fs::remove_dir_all(&dir);
    for folder in ["b", "a/z", ".hidden"] {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
    }
    for file in ["b/2.sgf", "b/1.sgf", "a/z/3.sgf", "a.sgf", ".hidden/4.sgf", ".5.sgf", "b/notes.txt"] {
        std::fs::write(dir.join(file), "").unwrap();
    }
    let named = dir.join("b/notes.txt");
    let files = capa_data::input_files(&[dir.clone(), named], |name| name.ends_with(".sgf")).unwrap();
    let relative: Vec<String> =
        files.iter().map(|f| f.strip_prefix(&dir).unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(relative, ["a/z/3.sgf", "a.sgf", "b/1.sgf", "b/2.sgf", "b/notes.txt"]);
    let missing = dir.join("missing");
    let error = capa_data::input_files(std::slice::from_ref(&missing), |_| true).unwrap_err().to_string();
    assert_eq!(error, format!("{}: no such file or folder", missing.display()));
}
