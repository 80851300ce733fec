//! Go: the rules on fixed positions, and against GNU Go (Debian `gnugo`,
//! driven over GTP) on random games: after every move the legal points equal
//! GNU Go's `all_legal`, the stones on the board equal its `list_stones`
//! (so every capture matches), and at the end of a game played out the score
//! equals its `final_score` under Chinese rules with the same komi.
//! Override the binary with `CAPA_GNUGO=/path`.

use std::collections::BTreeSet;

use capa_rules::go::{Cell, Go, Go9, Go13, Go19, GoMove, KoRule};
use capa_rules::{Color, Game, GameResult, History, MoveList, Termination, perft};

use crate::common::Rng;
use crate::engines::{Engine, engine_for_test};

/// Plays space-separated vertices, each checked for legality.
fn played<const N: usize>(mut go: Go<N>, vertices: &str) -> Go<N> {
    for vertex in vertices.split_whitespace() {
        let m = go.parse_move(vertex).unwrap_or_else(|e| panic!("{vertex} in {}: {e}", go.fen()));
        go.play(m);
    }
    go
}

fn legal<const N: usize>(go: &Go<N>, vertex: &str) -> bool {
    go.parse_move(vertex).is_ok()
}

#[test]
fn a_group_without_liberties_is_captured() {
    // White A1 B1 in the corner, black closes their last liberty at C1.
    let go = played(Go9::startpos(), "A2 A1 B2 B1 C2 pass");
    assert_eq!(go.liberties(0), 1);
    let go = played(go, "C1");
    assert_eq!((go.cell(0), go.cell(1)), (Cell::Empty, Cell::Empty));
    assert_eq!(go.fen(), "9/9/9/9/9/9/9/XXX6/2X6 w - 0 7.5 simple 7");
    // Black's area: its five stones and the two points taken, which reach only black.
    assert_eq!(go.area(), (81, 0));
}

#[test]
fn suicide_is_forbidden_unless_it_captures() {
    // White A2 and B1 surround A1: black may not play there.
    let go = played(Go9::startpos(), "pass A2 pass B1");
    assert!(!legal(&go, "A1"), "{}", go.fen());
    // Black A2 breathes at A1 only; black A1 would leave both stones
    // without a liberty, capturing nothing: a suicide of two stones.
    let go = played(Go9::startpos(), "pass A3 pass B2 pass C1 A2 B1");
    assert!(!legal(&go, "A1"), "{}", go.fen());
    // White A1 takes the same last liberty and captures A2 instead.
    let go = played(go, "pass A1");
    assert_eq!(go.cell(9), Cell::Empty, "{}", go.fen());
    assert_eq!(go.cell(0), Cell::White);
}

#[test]
fn simple_ko_forbids_only_the_immediate_retake() {
    // A ko on D5/E5: black takes at E5, white may not retake at D5 at once.
    let go = played(Go9::startpos(), "D6 E6 C5 F5 D4 E4 pass D5 E5");
    assert_eq!(go.ko_point(), Some(GoMove::<9>::parse_vertex("D5").unwrap().point().unwrap()));
    assert!(!legal(&go, "D5"), "{}", go.fen());
    let go = played(go, "J9 J1");
    assert!(legal(&go, "D5"), "after a move elsewhere the retake is legal");
    let back = played(go, "D5");
    assert_eq!(back.cell(4 * 9 + 4), Cell::Empty, "the retake captured E5");
}

/// Under positional superko a move is legal exactly when simple ko allows
/// it and the stones after it are those of no earlier position: checked
/// against that definition on random 5x5 games, where long cycles are common.
#[test]
fn positional_superko_forbids_exactly_the_repetitions() {
    let mut rng = Rng::new(5);
    let (mut moves, mut simple_moves) = (MoveList::new(), MoveList::new());
    let mut forbidden_by_superko_only = 0;
    for _ in 0..200 {
        let mut go = Go::<5>::empty(0.5, KoRule::PositionalSuperko);
        let mut seen = vec![stones_field(&go)];
        while go.outcome().is_none() && seen.len() < 150 {
            go.legal_moves(&mut moves);
            go.clone().with_ko_rule(KoRule::Simple).legal_moves(&mut simple_moves);
            for &m in simple_moves.iter() {
                let mut next = go.clone();
                next.play(m);
                let repeats = !m.is_pass() && seen.contains(&stones_field(&next));
                assert_eq!(moves.contains(&m), !repeats, "{m} in {} after {seen:?}", go.fen());
                forbidden_by_superko_only += usize::from(repeats && go.ko_point() != m.point());
            }
            assert!(moves.iter().all(|m| simple_moves.contains(m)));
            let m = moves[rng.below(moves.len())];
            go.play(m);
            seen.push(stones_field(&go));
        }
    }
    assert!(forbidden_by_superko_only > 0, "no random game reached a superko-only repetition");
    eprintln!("{forbidden_by_superko_only} moves forbidden by superko alone");
}

/// The stones of a position: the first field of its text form.
fn stones_field<const N: usize>(go: &Go<N>) -> String {
    go.fen().split(' ').next().unwrap_or_default().to_string()
}

#[test]
fn two_passes_end_the_game_scored_by_area_with_komi() {
    let mut history = History::new(Go9::startpos());
    history.play(GoMove::PASS);
    assert_eq!(history.outcome(), None);
    history.play(GoMove::PASS);
    let outcome = history.outcome().expect("two passes end the game");
    assert_eq!(outcome.reason, Termination::Scored);
    // Nobody has area; white wins by the komi, and black is to move.
    assert_eq!(history.current().turn(), Color::Black);
    assert_eq!(outcome.result, GameResult::Loss);
    assert_eq!(history.current().score_text(), "W+7.5");
    // A lone black stone owns the board: B+73.5.
    let go = played(Go9::startpos(), "E5 pass pass");
    assert_eq!(go.score_text(), "B+73.5");
    assert_eq!(go.outcome().map(|o| o.result), Some(GameResult::Loss), "white is to move and lost");
    // Integer komi can tie.
    let even = played(Go9::startpos().with_komi(0.0).unwrap(), "pass pass");
    assert_eq!(even.outcome().map(|o| o.result), Some(GameResult::Draw));
}

#[test]
fn owners_are_stones_and_the_regions_that_reach_one_color() {
    // Black walls off the left three columns, white the right two; the
    // columns between reach both colors (dame).
    let moves = "C1 G1 C2 G2 C3 G3 C4 G4 C5 G5 C6 G6 C7 G7 C8 G8 C9 G9";
    let go = played(Go9::startpos(), moves);
    let mut owners = [None; 81];
    go.owners(&mut owners);
    let owner = |vertex: &str| owners[GoMove::<9>::parse_vertex(vertex).unwrap().point().unwrap()];
    for (vertex, expected) in [
        ("A1", Some(Color::Black)),
        ("C5", Some(Color::Black)),
        ("E5", None),
        ("D9", None),
        ("G5", Some(Color::White)),
        ("J9", Some(Color::White)),
    ] {
        assert_eq!(owner(vertex), expected, "{vertex}");
    }
    let count = |color| owners.iter().filter(|&&o| o == Some(color)).count() as u32;
    assert_eq!(go.area(), (count(Color::Black), count(Color::White)));
    assert_eq!(go.area(), (27, 27));
    // At the ply cap the score decides, komi counted: white leads by it.
    assert_eq!(go.adjudication_lead(), 7.5);
    assert_eq!(Go9::startpos().adjudication_lead(), 7.5, "the empty board is white's by komi");
}

#[test]
fn text_form_round_trips_and_hash_follows_ko_and_passes() {
    let mut rng = Rng::new(31);
    for (komi, rule) in [(7.5, KoRule::Simple), (6.5, KoRule::PositionalSuperko), (0.0, KoRule::Simple)] {
        let mut go = Go9::startpos().with_komi(komi).unwrap().with_ko_rule(rule);
        let mut moves = MoveList::new();
        for _ in 0..300 {
            go.legal_moves(&mut moves);
            let m = moves[rng.below(moves.len())];
            go.play(m);
            let back = Go9::from_fen(&go.fen()).unwrap_or_else(|e| panic!("{}: {e}", go.fen()));
            assert_eq!(back, go, "{}", go.fen());
            assert_eq!(back.hash(), go.hash(), "{}", go.fen());
            assert_eq!(back.fen(), go.fen());
            if go.outcome().is_some() {
                break;
            }
        }
    }
    let ko = played(Go9::startpos(), "D6 E6 C5 F5 D4 E4 pass D5 E5");
    let no_ko = Go9::from_fen(&ko.fen().replace(" D5 ", " - ")).unwrap();
    assert_ne!(ko.hash(), no_ko.hash(), "the ko point is part of the hash");
    let passed = played(Go9::startpos(), "E5 pass");
    let fresh = Go9::from_fen(&passed.fen().replace(" 1 7.5", " 0 7.5")).unwrap();
    assert_ne!(passed.hash(), fresh.hash(), "a pass in a row is part of the hash");
    // 13x13 and 19x19 write two-digit runs.
    assert_eq!(Go19::startpos().fen().split('/').next(), Some("19"));
    assert!(Go13::from_fen(&Go13::startpos().fen()).is_ok());
}

#[test]
fn bad_text_is_refused_with_the_reason() {
    let cases = [
        ("", "fields"),
        ("9/9/9/9/9/9/9/9 b", "ranks"),
        ("9/9/9/9/9/9/9/9/8 b", "rank 1 describes 8"),
        ("9/9/9/9/9/9/9/9/10 b", "rank 1 describes 10"),
        ("9/9/9/9/9/9/9/9/4Z4 b", "unknown piece 'Z'"),
        ("9/9/9/9/9/9/9/9/9 x", "side to move 'x'"),
        ("9/9/9/9/9/9/9/9/09 b", "empty-square count '09'"),
        ("XO7/O8/9/9/9/9/9/9/9 b", "no liberty"),
        ("9/9/9/9/9/9/9/9/9 b E5", "no ko can be at 'E5'"),
        ("9/9/9/9/9/9/9/9/9 b Z99", "ko point 'Z99'"),
        ("9/9/9/9/9/9/9/9/9 b - 3", "passes '3'"),
        ("9/9/9/9/9/9/9/9/9 b - 0 7.3", "komi '7.3'"),
        ("9/9/9/9/9/9/9/9/9 b - 0 nan", "komi 'nan'"),
        ("9/9/9/9/9/9/9/9/9 b - 0 7.5 japanese", "ko rule 'japanese'"),
        ("9/9/9/9/9/9/9/9/9 b - 0 7.5 simple -1", "plies"),
        ("9/9/9/9/9/9/9/9/9 b - 0 7.5 simple 0 extra", "fields"),
    ];
    for (text, expected) in cases {
        let error = Go9::from_fen(text).expect_err(text).to_string();
        assert!(error.contains(expected), "{text:?}: {error}");
    }
    let go = Go9::startpos();
    for (vertex, expected) in [
        ("I5", "column 'I'"),
        ("K1", "column 'K'"),
        ("A10", "row '10'"),
        ("A0", "row '0'"),
        ("", "empty"),
        ("E", "row ''"),
    ] {
        let error = go.parse_move(vertex).expect_err(vertex).to_string();
        assert!(error.contains(expected), "{vertex:?}: {error}");
    }
    let taken = played(Go9::startpos(), "E5");
    assert!(taken.parse_move("e5").unwrap_err().to_string().contains("not a legal move"));
    assert_eq!(taken.parse_move("PASS"), Ok(GoMove::PASS));
}

/// Regression counts (leaves of the move tree, passes included, the game
/// not stopped by two passes): the empty 9x9 board, and a middle-game
/// position with captures, ataris and a ko.
#[test]
fn perft_counts() {
    assert_eq!(perft(&Go9::startpos(), 1), 82);
    // After a stone white has 80 points and the pass; after a pass, 81 and the pass.
    assert_eq!(perft(&Go9::startpos(), 2), 81 * 81 + 82);
    assert_eq!(perft(&Go9::startpos(), 3), PERFT_EMPTY_9_DEPTH_3);
    let ko = played(Go9::startpos(), "D6 E6 C5 F5 D4 E4 pass D5 E5");
    assert_eq!([1, 2, 3].map(|depth| perft(&ko, depth)), PERFT_KO);
    assert_eq!(perft(&Go19::startpos(), 2), 361 * 361 + 362);
}

const PERFT_EMPTY_9_DEPTH_3: u64 = 81 * (80 * 80 + 81) + 81 * 81 + 82;
const PERFT_KO: [u64; 3] = [74, 5477, 399970];

/// GNU Go in GTP mode on an N x N board with Chinese rules.
struct GnuGo(Engine);

impl GnuGo {
    fn start(size: usize, komi: f32) -> Option<GnuGo> {
        let path = engine_for_test("gnugo")?;
        let size = size.to_string();
        let komi = komi.to_string();
        let engine = Engine::spawn(&path, &["--mode", "gtp", "--chinese-rules", "--boardsize", &size, "--komi", &komi]);
        Some(GnuGo(engine))
    }

    /// The answer to `command`, which must succeed: the text after `= `.
    fn ask(&mut self, command: &str) -> String {
        self.0.send(command);
        let lines = self.0.read_until_line("an empty line", str::is_empty);
        let answer = lines.iter().filter(|l| !l.is_empty()).cloned().collect::<Vec<_>>().join("\n");
        answer
            .strip_prefix('=')
            .unwrap_or_else(|| panic!("GNU Go answered `{answer}` to `{command}`"))
            .trim()
            .to_string()
    }
}

fn color_name(color: Color) -> &'static str {
    if color == Color::Black { "black" } else { "white" }
}

/// Our stones of `color` as GNU Go lists them.
fn stones<const N: usize>(go: &Go<N>, color: Color) -> BTreeSet<String> {
    (0..N * N).filter(|&p| go.cell(p) == Cell::stone(color)).map(|p| GoMove::<N>::at(p).to_string()).collect()
}

fn vertex_set(text: &str) -> BTreeSet<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// A move of a random playout: any legal point that does not fill one of
/// the mover's own eyes (every neighbour its own stone), else a pass.
fn random_move<const N: usize>(go: &Go<N>, moves: &mut MoveList<GoMove<N>>, rng: &mut Rng) -> GoMove<N> {
    go.legal_moves(moves);
    let own = Cell::stone(go.turn());
    let candidates: Vec<GoMove<N>> = moves
        .iter()
        .copied()
        .filter(|m| m.point().is_some_and(|p| !go.neighbours(p).all(|q| go.cell(q) == own)))
        .collect();
    if candidates.is_empty() { GoMove::PASS } else { candidates[rng.below(candidates.len())] }
}

/// Plays `games` random games on both, checking legal moves and stones after
/// every move and the final score; returns the moves checked, and counts in
/// `scored` the games whose scores were compared.
fn cross_check<const N: usize>(games: usize, seed: u64, scored: &mut usize) -> usize {
    let mut rng = Rng::new(seed);
    let mut moves = MoveList::new();
    let mut checked = 0;
    for game in 0..games {
        let komi = [7.5, 0.5, 6.5, 5.5][game % 4];
        let Some(mut gnugo) = GnuGo::start(N, komi) else { return 0 };
        let mut go = Go::<N>::empty(komi, KoRule::Simple);
        let mut line = Vec::new();
        while go.outcome().is_none() && line.len() < 6 * N * N {
            go.legal_moves(&mut moves);
            let ours: BTreeSet<String> = moves.iter().filter(|m| !m.is_pass()).map(ToString::to_string).collect();
            let theirs = vertex_set(&gnugo.ask(&format!("all_legal {}", color_name(go.turn()))));
            assert_eq!(
                ours,
                theirs,
                "legal moves differ in game {game} after {}: ours only {:?}, GNU Go only {:?} ({})",
                line.join(" "),
                ours.difference(&theirs).collect::<Vec<_>>(),
                theirs.difference(&ours).collect::<Vec<_>>(),
                go.fen()
            );
            let m = random_move(&go, &mut moves, &mut rng);
            gnugo.ask(&format!("play {} {m}", color_name(go.turn())));
            go.play(m);
            line.push(m.to_string());
            for color in Color::ALL {
                let theirs = vertex_set(&gnugo.ask(&format!("list_stones {}", color_name(color))));
                assert_eq!(
                    stones(&go, color),
                    theirs,
                    "{color:?} stones differ in game {game} after {}",
                    line.join(" ")
                );
            }
            checked += 1;
        }
        // GNU Go scores after removing the stones it judges dead, giving
        // their region to the captor by its own judgement; a random game
        // can end with such a stone (a ko left open). Area counting is
        // compared on the games that GNU Go finds settled.
        if go.outcome().is_some() && gnugo.ask("final_status_list dead").is_empty() {
            assert_eq!(go.score_text(), gnugo.ask("final_score"), "game {game}: {}", line.join(" "));
            *scored += 1;
        }
    }
    checked
}

#[test]
fn gnugo_agrees_on_random_9x9_games() {
    let mut scored = 0;
    let checked = cross_check::<9>(24, 9, &mut scored);
    eprintln!("9x9: {checked} moves checked against GNU Go; {scored} of 24 final scores compared");
    assert!(checked == 0 || scored >= 12, "only {scored} of 24 games ended settled");
}

#[test]
fn gnugo_agrees_on_random_13x13_and_19x19_games() {
    let mut scored = 0;
    let checked = cross_check::<13>(4, 13, &mut scored) + cross_check::<19>(2, 19, &mut scored);
    // Random games on big boards seldom end settled (an open ko somewhere):
    // their scores are compared when they do; 9x9 covers the scoring.
    eprintln!("13x13 and 19x19: {checked} moves checked against GNU Go; {scored} of 6 final scores compared");
}
