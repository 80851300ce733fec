//! SGF records: hand-written fixtures (handicap, passes, variations,
//! several games, escapes, rectangles, a ko fight), every kind of bad
//! record, and games GNU Go wrote, replayed by us and loaded by GNU Go
//! (`loadsgf`) with the same stones at the end.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use capa_data::{SgfResult, read_sgf, read_sgf_file};
use capa_rules::go::{Cell, Go, Go9, GoMove, KoRule};
use capa_rules::{Color, Game};
use proptest::prelude::*;

const FIXTURES: &str = r"
junk before the first game is read past
(;GM[1]FF[4]SZ[9]KM[0.5]HA[2]RE[W+R]PB[Black \] player]PW[White]
 AB[cc][gg]PL[W]
 ;W[ee];B[ec]C[a comment with \] and [brackets\]];W[ce]
 (;B[eg];W[tt];B[])
 (;B[ge]C[a variation]))
(;SZ[9]KM[7.5]RE[B+3.5]
 ;B[de];W[ee];B[ed];W[fd];B[ef];W[ff];B[fe]
 ;W[ge]C[a comment]
 ;B[eg];W[ec];B[dd]
 ;W[ee]C[another];B[aa])
(;SZ[9]RE[0]AB[aa:bb]AW[ii]AE[bb];B[cc])
";

#[test]
fn fixtures_read_and_replay() {
    let games: Vec<_> = read_sgf(FIXTURES).into_iter().map(|g| g.unwrap()).collect();
    assert_eq!(games.len(), 3);
    let handicap = &games[0];
    assert_eq!((handicap.number, handicap.line, handicap.size, handicap.handicap), (1, 3, 9, 2));
    assert_eq!((handicap.komi, handicap.result), (0.5, Some(SgfResult::Won(Color::White))));
    assert_eq!(handicap.properties["PB"], "Black ] player");
    assert_eq!(handicap.moves.len(), 6, "the main line: 3 moves, then the first variation's 3");
    // The other variation leaves the main line in place of its fourth move.
    let [variation] = &handicap.variations[..] else { panic!("{:?}", handicap.variations) };
    assert_eq!((variation.at, variation.moves.len(), variation.variations.len()), (3, 1, 0));
    assert_eq!(variation.moves[0].point, GoMove::<9>::parse_vertex("G5").unwrap().point());
    let start = handicap.replay::<9>(KoRule::Simple).unwrap().positions[3].clone();
    let side = handicap.replay_line(start, &variation.moves).unwrap();
    assert_eq!(side.end.cell(variation.moves[0].point.unwrap()), Cell::Black);
    let replay = handicap.replay::<9>(KoRule::Simple).unwrap();
    assert_eq!(replay.positions[0].turn(), Color::White, "PL[W]: white moves first after the handicap");
    let vertices: Vec<String> = replay.moves.iter().map(ToString::to_string).collect();
    assert_eq!(vertices, ["E5", "E7", "C5", "E3", "pass", "pass"]);
    assert_eq!(replay.end.cell(GoMove::<9>::parse_vertex("C7").unwrap().point().unwrap()), Cell::Black);
    assert_eq!(replay.end.passes(), 2);

    let ko = games[1].replay::<9>(KoRule::Simple).unwrap();
    assert_eq!(ko.moves.len(), 13);
    assert_eq!(games[1].result, Some(SgfResult::Won(Color::Black)));

    let setup = games[2].replay::<9>(KoRule::Simple).unwrap();
    assert_eq!(games[2].result, Some(SgfResult::Draw));
    let stones = |go: &Go9, cell| (0..81).filter(|&p| go.cell(p) == cell).count();
    // AB[aa:bb] is A9 B9 A8 B8; AE[bb] empties B8; then C7.
    assert_eq!((stones(&setup.end, Cell::Black), stones(&setup.end, Cell::White)), (4, 1));
    assert_eq!(setup.end.cell(GoMove::<9>::parse_vertex("B8").unwrap().point().unwrap()), Cell::Empty);
}

#[test]
fn bad_records_are_refused_with_game_line_and_move() {
    let cases = [
        ("(;SZ[13];B[aa])", 9, "game 1 (line 1): a 13x13 board, not 9x9"),
        ("(;SZ[9]RE[B+lots];B[aa])", 9, "RE[B+lots] is not a result"),
        ("(;SZ[9];B[ee];W[ee])", 9, "move 2: E5 by White is occupied"),
        ("(;SZ[9];B[zz])", 9, "move 1: B[zz]: 'zz' is off the 9x9 board"),
        ("(;SZ[9];B[e])", 9, "'e' is not a point"),
        ("(;SZ[9]AB[ab][ba]AW[aa])", 9, "the setup leaves a group without liberties"),
        ("(;SZ[9]KM[6.3];B[aa])", 9, "komi 6.3 is not a multiple of 0.5"),
        ("(;SZ[9]KM[lots])", 9, "KM[lots] is not a number"),
        ("(;GM[2]SZ[8])", 9, "GM[2] is not Go"),
        ("(;SZ[9:13])", 9, "only square boards"),
        ("(;SZ[9];B[aa];AB[bb])", 9, "move 2: AB: setup after the start"),
        ("(;SZ[9];B[aa]", 9, "a `)` is missing"),
        ("(;SZ[9];B[aa)", 9, "a `]` is missing"),
        ("(;SZ[9];B)", 9, "property B has no value"),
        ("(SZ[9])", 9, "expected `;`"),
        ("(;SZ[9]PL[X])", 9, "PL[X] is not B or W"),
    ];
    for (text, size, expected) in cases {
        let games = read_sgf(text);
        assert_eq!(games.len(), 1, "{text}");
        let message = match &games[0] {
            Err(e) => e.to_string(),
            Ok(game) => match size {
                9 => game.replay::<9>(KoRule::Simple).map(drop).unwrap_err().to_string(),
                _ => unreachable!(),
            },
        };
        assert!(message.contains(expected), "{text}: {message}");
    }
    // A bad game does not stop the games after it; broken syntax ends the file.
    let games = read_sgf("(;SZ[9]RE[huh])(;SZ[9]RE[B+1];B[aa])(;SZ[9];B[aa]");
    assert_eq!(games.len(), 3);
    assert!(games[0].is_err() && games[1].is_ok() && games[2].is_err());
    assert!(read_sgf("no game here").is_empty());
}

/// A simple ko fight: take, a threat and its answer, retake.
#[test]
fn a_ko_fight_replays_under_simple_ko_and_not_an_immediate_retake() {
    // Black takes at E5; white retaking at D5 at once is refused.
    let ko = "(;SZ[9];B[dd];W[ed];B[ce];W[fe];B[df];W[ef];B[tt];W[de];B[ee];W[de])";
    let error = read_sgf(ko)[0].as_ref().unwrap().replay::<9>(KoRule::Simple).unwrap_err().to_string();
    assert!(error.contains("move 10: D5 by White is illegal (suicide or ko)"), "{error}");
    // With a threat in between it is legal.
    let fight = "(;SZ[9];B[dd];W[ed];B[ce];W[fe];B[df];W[ef];B[tt];W[de];B[ee];W[ia];B[ii];W[de])";
    let replay = read_sgf(fight)[0].as_ref().unwrap().replay::<9>(KoRule::Simple).unwrap();
    assert_eq!(replay.moves.len(), 12);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Any text: every game read or refused, never a panic.
    #[test]
    fn any_text_never_panics(text in "[();\\[\\]\\\\ABWSZKMHREPLtaebgi0-9:+ \n]{0,200}") {
        for game in read_sgf(&text).into_iter().flatten() {
            if game.size == 9 {
                let _ = game.replay::<9>(KoRule::PositionalSuperko);
            }
        }
    }
}

#[test]
fn games_gnu_go_wrote_replay_to_the_stones_gnu_go_loads() {
    let Some(gnugo) = capa_uci::engine_for_test("gnugo") else { return };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capa-sgf-gnugo");
    std::fs::create_dir_all(&dir).unwrap();
    for (seed, size, moves) in [(1, 9, 200), (2, 9, 200), (3, 9, 120), (4, 13, 250)] {
        let path = dir.join(format!("gnugo-{seed}.sgf"));
        let status = Command::new(&gnugo)
            .args(["--benchmark", &moves.to_string(), "--level", "0", "--boardsize", &size.to_string()])
            .args(["--seed", &seed.to_string(), "-o", path.to_str().unwrap()])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        // Read it gzipped too.
        let gz = dir.join(format!("gnugo-{seed}.sgf.gz"));
        let mut encoder =
            flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
        encoder.write_all(&std::fs::read(&path).unwrap()).unwrap();
        encoder.finish().unwrap();
        let games = read_sgf_file(&gz).unwrap();
        assert_eq!(games, read_sgf_file(&path).unwrap());
        let game = games.into_iter().next().unwrap().unwrap();
        assert!(game.moves.len() > 10, "{}", path.display());
        let ours: Vec<(String, String)> = match size {
            9 => stones(&game.replay::<9>(KoRule::Simple).unwrap().end),
            _ => stones(&game.replay::<13>(KoRule::Simple).unwrap().end),
        };
        let mut child =
            Command::new(&gnugo).args(["--mode", "gtp"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "loadsgf {}\nlist_stones black\nlist_stones white\nquit", path.display()).unwrap();
        drop(stdin);
        let answers: Vec<String> = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .map(Result::unwrap)
            .filter(|l| !l.trim().is_empty())
            .collect();
        child.wait().unwrap();
        let sorted = |text: &str| {
            let mut v: Vec<&str> = text.trim_start_matches('=').split_whitespace().collect();
            v.sort_unstable();
            v.join(" ")
        };
        assert_eq!(
            vec![(sorted(&answers[1]), sorted(&answers[2]))],
            ours,
            "{}: our stones (black, white) after replaying differ from GNU Go's",
            path.display()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The stones of each color, sorted vertices joined by spaces.
fn stones<const N: usize>(go: &Go<N>) -> Vec<(String, String)> {
    let list = |cell| {
        let mut v: Vec<String> =
            (0..N * N).filter(|&p| go.cell(p) == cell).map(|p| GoMove::<N>::at(p).to_string()).collect();
        v.sort_unstable();
        v.join(" ")
    };
    vec![(list(Cell::Black), list(Cell::White))]
}

mod convert {
    use capa_data::{ConvertOptions, Ending, GameRecord, Tactics, convert_sgf};
    use capa_rules::Game;
    use capa_rules::go::Go9;

    use super::FIXTURES;
    use std::path::Path;

    fn options() -> ConvertOptions {
        ConvertOptions::default()
    }

    /// Converts `files` into a fresh folder; the summary, the warnings and
    /// each record's example count.
    fn run(
        name: &str,
        files: &[std::path::PathBuf],
        options: &ConvertOptions,
    ) -> (capa_data::ConvertSummary, Vec<String>, Vec<usize>) {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capa-sgf-convert-{name}"));
        let _ = std::fs::remove_dir_all(&out);
        let mut warnings = Vec::new();
        let summary = convert_sgf::<9>(files, &out, options, &mut |w| warnings.push(w)).unwrap();
        let mut paths: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        let examples = paths
            .iter()
            .map(|path| {
                let record = GameRecord::<Go9>::read(path).unwrap();
                let history = record.history();
                assert_eq!(history.moves().len(), record.plies.len());
                for (ply, (position, &m)) in record.plies.iter().zip(history.positions().iter().zip(history.moves())) {
                    assert_eq!(ply.visits, [(position.policy_index(m) as u16, 1.0)], "the target is the move played");
                }
                record.plies.iter().filter(|p| p.full_search).count()
            })
            .collect();
        std::fs::remove_dir_all(&out).unwrap();
        (summary, warnings, examples)
    }

    fn fixture_file(name: &str, text: &str) -> std::path::PathBuf {
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capa-sgf-{name}.sgf"));
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn every_move_is_an_example_once() {
        let file = fixture_file("fixtures", FIXTURES);
        let (summary, warnings, examples) = run("all", std::slice::from_ref(&file), &options());
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!((summary.games, summary.converted, summary.examples, summary.duplicates), (3, 3, 20, 0));
        assert_eq!(examples, [6, 13, 1]);
        // A copy of the file: its games are all duplicates; the same path twice is read once.
        let copy = fixture_file("copy", FIXTURES);
        let (summary, _, examples) = run("twice", &[file.clone(), copy.clone(), file.clone()], &options());
        assert_eq!((summary.converted, summary.examples, summary.duplicates), (6, 20, 20));
        assert_eq!(summary.skipped.get("file listed twice"), Some(&1));
        assert_eq!(examples.iter().sum::<usize>(), 20);
        std::fs::remove_file(copy).unwrap();
        // Only the winners' moves: white's 3 in the first, black's 7 in the second; the draw is skipped.
        let (summary, warnings, examples) =
            run("winner", std::slice::from_ref(&file), &ConvertOptions { winner_only: true, ..options() });
        assert_eq!((summary.converted, summary.examples), (2, 10));
        assert_eq!(summary.skipped.get("draw (winner only)"), Some(&1), "{warnings:?}");
        assert_eq!(examples, [3, 7]);
        // At most two a game.
        let (summary, _, examples) =
            run("cap", std::slice::from_ref(&file), &ConvertOptions { max_per_game: 2, ..options() });
        assert_eq!((summary.examples, examples), (5, vec![2, 2, 1]));
        std::fs::remove_file(file).unwrap();
    }

    /// A game is scored, and carries the ownership and score targets, only
    /// where its final position shows the recorded margin.
    #[test]
    fn games_are_scored_where_the_final_position_shows_the_result() {
        let text = "(;SZ[9]KM[7.5]RE[W+7.5];B[];W[])(;SZ[9]KM[7.5]RE[B+73.5];B[ee];W[];B[])\
                    (;SZ[9]KM[7.5]RE[B+5.5];B[ee];W[];B[])(;SZ[9]KM[7.5]RE[B+R];B[ee])(;SZ[9]KM[7.5]RE[W+T];B[ee])";
        let file = fixture_file("scored", text);
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capa-sgf-convert-scored");
        let _ = std::fs::remove_dir_all(&out);
        let summary = convert_sgf::<9>(std::slice::from_ref(&file), &out, &options(), &mut |_| {}).unwrap();
        assert_eq!((summary.converted, summary.scored), (5, 2));
        let mut paths: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        let endings: Vec<Ending> = paths.iter().map(|path| GameRecord::<Go9>::read(path).unwrap().ending).collect();
        let scored = Ending::Rules(capa_rules::Termination::Scored);
        assert_eq!(endings, [scored, scored, Ending::Adjudication, Ending::Resignation, Ending::Adjudication]);
        std::fs::remove_dir_all(&out).unwrap();
        std::fs::remove_file(file).unwrap();
    }

    #[test]
    fn bad_games_and_files_are_skipped_by_reason() {
        let text = "(;SZ[13]RE[B+1];B[aa])(;SZ[9];B[aa])(;SZ[9]RE[B+huh];B[aa])(;SZ[9]RE[W+1];B[aa];W[aa])\
                    (;SZ[9]RE[B+1];B[aa];B[bb])(;SZ[9]RE[B+1];B[cc];W[dd])(;SZ[9]";
        let file = fixture_file("bad", text);
        let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capa-no-such-file.sgf");
        let (summary, warnings, examples) = run("bad", &[file.clone(), missing], &options());
        let skipped: Vec<(&str, usize)> = summary.skipped.iter().map(|(r, n)| (*r, *n)).collect();
        assert_eq!(
            skipped,
            [
                ("bad record", 1),
                ("illegal move", 1),
                ("moves out of turn", 1),
                ("no result", 1),
                ("unknown result", 1),
                ("unreadable file", 1),
                ("wrong board size", 1)
            ],
            "{warnings:#?}"
        );
        assert_eq!((summary.games, summary.converted, examples), (7, 1, vec![2]));
        assert!(
            warnings.iter().any(|w| w.contains("game 4 (line 1), move 2: A9 by White is occupied")),
            "{warnings:#?}"
        );
        std::fs::remove_file(file).unwrap();
    }

    #[test]
    fn tactics_are_tagged() {
        let mut go = Go9::startpos();
        for vertex in "E5 D5 pass F5 pass".split_whitespace() {
            go.play(go.parse_move(vertex).unwrap());
        }
        let e6 = go.parse_move("E6").unwrap();
        assert_eq!(Tactics::of(&go, e6).names(), ["atari"], "E5 is left with E4 alone");
        go.play(e6);
        let e4 = go.parse_move("E4").unwrap();
        assert_eq!(Tactics::of(&go, e4).names(), ["escape"], "E5 E4 breathe at E3, D4, F4");
        let quiet = go.parse_move("A1").unwrap();
        assert!(!Tactics::of(&go, quiet).any());
        // Black takes at E5 in the ko: a capture.
        let mut go = Go9::startpos();
        for vertex in "D6 E6 C5 F5 D4 E4 pass D5".split_whitespace() {
            go.play(go.parse_move(vertex).unwrap());
        }
        assert_eq!(Tactics::of(&go, go.parse_move("E5").unwrap()).names(), ["capture"]);
    }
}
