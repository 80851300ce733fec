//! `capa lc0 rescore` against real Syzygy tables (six small ones in
//! tests/data/syzygy), and the decoding of a record's planes back into the
//! position it encodes.

use std::path::{Path, PathBuf};

use capa_lc0::{ConvertSettings, PgnReader, RescoreEvent, RescoreOptions, SourceGame, Tables};
use capa_rules::chess::Chess;
use capa_rules::{Game, History};
use shakmaty::EnPassantMode;
use shakmaty::fen::Fen;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn tables() -> Tables {
    Tables::open(&[data("syzygy")]).unwrap()
}

fn games(text: &str) -> Vec<SourceGame> {
    let mut reader = PgnReader::new(text.as_bytes());
    std::iter::from_fn(|| reader.next_game().unwrap()).collect()
}

fn records(pgn: &str) -> Vec<capa_lc0::V6Record> {
    capa_lc0::convert_game(&games(pgn)[0], &ConvertSettings::default(), None).unwrap().records
}

/// A FEN without its move number, en passant written only when legal.
fn fen_fields(position: &shakmaty::Chess) -> String {
    let fen = Fen::from_position(position, EnPassantMode::Legal).to_string();
    fen.rsplit_once(' ').unwrap().0.to_string()
}

#[test]
fn records_decode_to_the_positions_they_encode() {
    let mut checked = 0;
    let mut en_passant = 0;
    for file in ["sf_selfplay_a.pgn", "2008_SCT_LadiesOpen.pgn"] {
        let mut reader = PgnReader::new(capa_lc0::open_pgn(&data(file)).unwrap());
        while let Some(game) = reader.next_game().unwrap() {
            let Ok(converted) = capa_lc0::convert_game(&game, &ConvertSettings::default(), None) else { continue };
            let start = game.tag("FEN").map_or_else(Chess::startpos, |fen| Chess::from_fen(fen).unwrap());
            let mut history = History::new(start);
            for (record, source) in converted.records.iter().zip(&game.moves) {
                let expected = fen_fields(history.current().position());
                let decoded = capa_lc0::decode_position(record).expect("a legal position");
                assert_eq!(fen_fields(&decoded), expected, "{file}: game {}", game.number);
                en_passant += usize::from(expected.split(' ').nth(3) != Some("-"));
                checked += 1;
                let san = shakmaty::san::SanPlus::from_ascii(source.san.as_bytes()).unwrap();
                let m = history.current().parse_san(&san.san).unwrap();
                history.play(m);
            }
        }
    }
    assert!(checked > 10_000 && en_passant > 0, "{checked} positions, {en_passant} with en passant");
}

#[test]
fn a_rook_ending_recorded_as_a_draw_is_a_win_with_its_distance_to_mate() {
    let mut game = records("[FEN \"8/8/8/4k3/8/8/8/R3K3 w - - 0 1\"]\n1. Ra2 Kd4 2. Ra3 Kc4 1/2-1/2\n");
    assert!(game.iter().all(|r| r.result_q == 0.0));
    let (results, plies) = capa_lc0::rescore_game(&mut game, &tables());
    assert_eq!((results, plies), (4, 4));
    for (i, record) in game.iter().enumerate() {
        let white = i % 2 == 0;
        assert_eq!((record.result_q, record.result_d), (if white { 1.0 } else { -1.0 }, 0.0), "ply {i}");
        // The winner moves on odd plies to mate, the loser on even.
        assert_eq!(record.plies_left as u32 % 2, u32::from(white), "ply {i}: {}", record.plies_left);
    }
    // KRK is mate within 16 moves from anywhere; the tables' line is no shorter than the mate.
    assert!((3.0..=40.0).contains(&game[0].plies_left), "{}", game[0].plies_left);
    assert!(capa_lc0::game_problems(&game).iter().all(|(_, p)| p.contains("plies_left")));
}

#[test]
fn the_fifty_move_rule_makes_a_late_win_a_draw() {
    let mut game = records("[FEN \"7k/8/8/8/8/8/8/R6K w - - 95 50\"]\n50. Kg2 Kg7 1-0\n");
    capa_lc0::rescore_game(&mut game, &tables());
    for record in &game {
        assert_eq!((record.result_q, record.result_d), (0.0, 1.0));
    }
}

#[test]
fn castling_rights_are_not_probed_and_earlier_positions_take_the_first_verdict() {
    let mut game = records("[FEN \"4k3/8/8/8/8/8/8/R3K3 w Q - 0 1\"]\n1. Ke2 Kd7 2. Kd3 0-1\n");
    let tables = tables();
    assert!(tables.probe(&capa_lc0::decode_position(&game[0]).unwrap()).is_none(), "castling rights");
    let verdict = tables.probe(&capa_lc0::decode_position(&game[1]).unwrap()).unwrap();
    assert_eq!(verdict.result, -1, "black to move in KRK loses");
    capa_lc0::rescore_game(&mut game, &tables);
    assert_eq!(game.iter().map(|r| r.result_q).collect::<Vec<_>>(), [1.0, -1.0, 1.0]);
    assert_eq!(game[0].plies_left, game[1].plies_left + 1.0);
}

#[test]
fn too_many_pieces_change_nothing() {
    let pgn = "1. e4 e5 2. Nf3 1-0\n";
    let mut game = records(pgn);
    assert_eq!(capa_lc0::rescore_game(&mut game, &tables()), (0, 0));
}

fn tempdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capa-lc0-rescore-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn files_get_a_twin_originals_are_replaced_only_when_asked_and_failures_keep_them() {
    let dir = tempdir("files");
    let game = records("[FEN \"8/8/8/4k3/8/8/8/R3K3 w - - 0 1\"]\n1. Ra2 Kd4 2. Ra3 Kc4 1/2-1/2\n");
    let original = dir.join("game_000000.gz");
    std::fs::write(&original, capa_lc0::compress(&game)).unwrap();
    let broken = dir.join("game_000001.gz");
    let bytes = capa_lc0::compress(&game);
    std::fs::write(&broken, &bytes[..bytes.len() / 2]).unwrap();
    let before = std::fs::read(&original).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let tables = tables();
    let files = [original.clone(), broken.clone()];
    let mut failures = Vec::new();
    let summary = capa_lc0::rescore_files(&files, &tables, RescoreOptions::default(), &pool, |event| {
        if let RescoreEvent::Failed(path, reason) = event {
            failures.push(format!("{}: {reason}", path.display()));
        }
    });
    assert_eq!((summary.files, summary.records, summary.results_changed), (1, 4, 4));
    assert_eq!(failures.len(), 1);
    assert!(failures[0].contains("game_000001.gz"), "{failures:?}");
    assert!(!capa_lc0::rescored_path(&broken).exists());
    assert_eq!(std::fs::read(&original).unwrap(), before, "the original is untouched");
    let twin = capa_lc0::read_game_file(&capa_lc0::rescored_path(&original)).unwrap();
    assert_eq!(twin[0].result_q, 1.0);

    // --resume skips what has a twin; --replace moves the twin over the original.
    let resume = RescoreOptions { resume: true, replace: false };
    assert_eq!(capa_lc0::rescore_files(&files[..1], &tables, resume, &pool, |_| {}).skipped, 1);
    let replace = RescoreOptions { resume: false, replace: true };
    assert_eq!(capa_lc0::rescore_files(&files[..1], &tables, replace, &pool, |_| {}).files, 1);
    assert!(!capa_lc0::rescored_path(&original).exists());
    assert_eq!(capa_lc0::read_game_file(&original).unwrap()[0].result_q, 1.0);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_folder_without_tables_is_an_error_naming_it() {
    let dir = tempdir("empty");
    let error = Tables::open(std::slice::from_ref(&dir)).err().unwrap();
    assert!(error.contains("no Syzygy table") && error.contains(&*dir.to_string_lossy()), "{error}");
    let missing = Tables::open(&[dir.join("nope")]).err().unwrap();
    assert!(missing.contains("nope"), "{missing}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn wdl_tables_without_their_dtz_tables_are_refused() {
    let dir = tempdir("wdl-only");
    std::fs::copy(data("syzygy/KQvK.rtbw"), dir.join("KQvK.rtbw")).unwrap();
    let error = Tables::open(std::slice::from_ref(&dir)).err().unwrap();
    assert!(error.contains("1 WDL tables") && error.contains("KQvK") && error.contains(".rtbz"), "{error}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn after_a_rescore_dedup_and_pack_read_the_twins_not_the_originals() {
    let dir = tempdir("twins");
    let chunks = dir.join("chunks/supervised-0");
    std::fs::create_dir_all(&chunks).unwrap();
    let game = records("[FEN \"8/8/8/4k3/8/8/8/R3K3 w - - 0 1\"]\n1. Ra2 Kd4 2. Ra3 Kc4 1/2-1/2\n");
    let original = chunks.join("game_000000.gz");
    std::fs::write(&original, capa_lc0::compress(&game)).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    capa_lc0::rescore_files(std::slice::from_ref(&original), &tables(), RescoreOptions::default(), &pool, |_| {});
    let found = capa_lc0::v6_files(&[dir.join("chunks")]).unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(capa_lc0::prefer_rescored(found), [capa_lc0::rescored_path(&original)]);
    // An original given alone, without its twin beside it in the list, stays.
    assert_eq!(capa_lc0::prefer_rescored(vec![original.clone()]), std::slice::from_ref(&original));

    let job = capa_lc0::DedupJob { output_dir: dir.join("deduped"), ..capa_lc0::DedupJob::default() };
    let summary = capa_lc0::dedup_files(&[dir.join("chunks")], &job, |_| {}).unwrap();
    assert_eq!((summary.records_read, summary.records_written), (4, 4));
    let deduped = capa_lc0::read_game_file(&job.chunk_path(0)).unwrap();
    assert_eq!(deduped[0].result_q, 1.0, "the rescored result");

    let pack = capa_lc0::PackJob::new(dir.join("chunks"), dir.join("archives"));
    capa_lc0::pack_chunks(&pack, |_| {}).unwrap();
    let listing = std::process::Command::new("tar").arg("-tf").arg(dir.join("archives/supervised-0.tar")).output();
    let listing = String::from_utf8(listing.unwrap().stdout).unwrap();
    assert_eq!(listing.trim(), "supervised-0/game_000000_rescored.gz");
    std::fs::remove_dir_all(dir).unwrap();
}
