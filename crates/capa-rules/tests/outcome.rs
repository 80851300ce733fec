//! Game-ending rules: `Game::outcome` for the position, `History::outcome` for the game.

use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, GameResult, History, Outcome, Termination};

fn outcome<G: Game>(fen: &str) -> Option<Outcome> {
    G::from_fen(fen).unwrap().outcome()
}

const fn ended(result: GameResult, reason: Termination) -> Option<Outcome> {
    Some(Outcome { result, reason })
}

#[test]
fn capablanca_mate_and_stalemate() {
    // Queen b7 guarded by the king: mate. The mated side is to move, so it is a loss.
    assert_eq!(
        outcome::<Capablanca>("k9/1Q8/2K7/10/10/10/10/10 b - - 0 1"),
        ended(GameResult::Loss, Termination::Checkmate)
    );
    assert_eq!(
        outcome::<Capablanca>("k9/10/1Q8/10/10/10/10/9K b - - 0 1"),
        ended(GameResult::Draw, Termination::Stalemate)
    );
    // The chancellor mates along the rank, its knight jump covering a7.
    assert_eq!(
        outcome::<Capablanca>("k1C7/10/1K8/10/10/10/10/10 b - - 0 1"),
        ended(GameResult::Loss, Termination::Checkmate)
    );
    assert_eq!(outcome::<Capablanca>("rnabqkbcnr/pppppppppp/10/10/10/10/PPPPPPPPPP/RNABQKBCNR w KQkq - 0 1"), None);
}

#[test]
fn capablanca_fifty_moves_unless_mate() {
    assert_eq!(outcome::<Capablanca>("k9/10/10/10/10/10/1R8/9K b - - 99 80"), None);
    assert_eq!(
        outcome::<Capablanca>("k9/10/10/10/10/10/1R8/9K b - - 100 80"),
        ended(GameResult::Draw, Termination::FiftyMoveRule)
    );
    assert_eq!(
        outcome::<Capablanca>("k9/1Q8/2K7/10/10/10/10/10 b - - 100 80"),
        ended(GameResult::Loss, Termination::Checkmate)
    );
}

#[test]
fn capablanca_insufficient_material() {
    let draw = ended(GameResult::Draw, Termination::InsufficientMaterial);
    assert_eq!(outcome::<Capablanca>("k9/10/10/10/10/10/10/9K w - - 0 1"), draw);
    assert_eq!(outcome::<Capablanca>("k9/10/10/10/10/10/10/7N1K w - - 0 1"), draw);
    assert_eq!(outcome::<Capablanca>("k9/10/10/10/10/10/10/6B2K w - - 0 1"), draw);
    // Bishops on one colour only (c1 and d2 are both dark).
    assert_eq!(outcome::<Capablanca>("k9/10/10/10/10/10/3b6/2B6K w - - 0 1"), draw);
    // Not dead: the archbishop and the chancellor mate alone; two knights, a pawn, or
    // bishops on both colours can still mate with help.
    assert_eq!(outcome::<Capablanca>("k9/10/10/10/10/10/10/6A2K w - - 0 1"), None);
    assert_eq!(outcome::<Capablanca>("k9/10/10/10/10/10/10/7C1K w - - 0 1"), None);
    assert_eq!(outcome::<Capablanca>("k9/10/10/10/10/10/10/6NN1K w - - 0 1"), None);
    assert_eq!(outcome::<Capablanca>("k9/10/10/10/10/10/P9/9K w - - 0 1"), None);
    assert_eq!(outcome::<Capablanca>("k9/10/10/10/10/10/2b7/2B6K w - - 0 1"), None);
}

#[test]
fn chess_outcomes() {
    assert_eq!(outcome::<Chess>("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1"), ended(GameResult::Loss, Termination::Checkmate));
    assert_eq!(outcome::<Chess>("7k/8/6Q1/8/8/8/8/K7 b - - 0 1"), ended(GameResult::Draw, Termination::Stalemate));
    assert_eq!(
        outcome::<Chess>("7k/8/8/8/8/8/8/KN6 w - - 0 1"),
        ended(GameResult::Draw, Termination::InsufficientMaterial)
    );
    assert_eq!(
        outcome::<Chess>("7k/8/8/8/8/8/R7/K7 w - - 100 70"),
        ended(GameResult::Draw, Termination::FiftyMoveRule)
    );
    assert_eq!(outcome::<Chess>("7k/8/8/8/8/8/R7/K7 w - - 99 70"), None);
}

/// Knights out and back twice: the start position a third time after 8 plies.
fn threefold<G: Game>(shuffle: [&str; 4]) {
    let mut game = History::new(G::startpos());
    for round in 0..2 {
        for uci in shuffle {
            assert_eq!(game.outcome(), None);
            let m = game.current().parse_move(uci).unwrap();
            game.play(m);
        }
        assert_eq!(game.repetitions(), round + 1);
    }
    assert_eq!(game.outcome(), Some(Outcome::draw(Termination::ThreefoldRepetition)));
    game.undo();
    assert_eq!(game.outcome(), None);
}

#[test]
fn threefold_repetition() {
    threefold::<Capablanca>(["b1c3", "b8c6", "c3b1", "c6b8"]);
    threefold::<Chess>(["g1f3", "g8f6", "f3g1", "f6g8"]);
}

#[test]
fn repetition_needs_the_same_castling_rights() {
    // Kings out and back: the pieces repeat but the rights are gone.
    let mut game = History::new(Capablanca::from_fen("r4k3r/10/10/10/10/10/10/R4K3R w KQkq - 0 1").unwrap());
    for _ in 0..2 {
        for uci in ["f1f2", "f8f7", "f2f1", "f7f8"] {
            let m = game.current().parse_move(uci).unwrap();
            game.play(m);
        }
    }
    assert_eq!(game.repetitions(), 1, "the start (with rights) differs from the later positions");
}

#[test]
fn ply_cap_adjudicates_a_draw() {
    let mut game = History::new(Capablanca::startpos()).with_ply_cap(2);
    for uci in ["e2e4", "e7e5"] {
        assert_eq!(game.outcome(), None);
        let m = game.current().parse_move(uci).unwrap();
        game.play(m);
    }
    assert_eq!(game.outcome(), Some(Outcome::draw(Termination::PlyCap)));
}

#[test]
fn result_for_either_player() {
    let mate = Outcome { result: GameResult::Loss, reason: Termination::Checkmate };
    use capa_rules::Color::{Black, White};
    assert_eq!(mate.result_for(Black, Black), GameResult::Loss);
    assert_eq!(mate.result_for(White, Black), GameResult::Win);
    assert_eq!(Outcome::draw(Termination::Stalemate).result_for(White, Black), GameResult::Draw);
}

#[test]
fn material_in_pawns() {
    use capa_rules::Color::{Black, White};
    // Ten pawns, two knights, two bishops, two rooks, archbishop 7, chancellor 8, queen 9.
    let start = Capablanca::startpos();
    assert_eq!((start.material(White), start.material(Black)), (56, 56));
    let chess = Chess::startpos();
    assert_eq!((chess.material(White), chess.material(Black)), (39, 39));
    // White: chancellor, archbishop and pawn; black: knight and pawn. Kings count nothing.
    let capa = Capablanca::from_fen("k9/1p8/10/10/10/10/1P8/1C1A4nK w - - 0 1").unwrap();
    assert_eq!((capa.material(White), capa.material(Black)), (16, 4));
    let chess = Chess::from_fen("4k3/8/8/8/8/8/3PP3/3QK2r w - - 0 1").unwrap();
    assert_eq!((chess.material(White), chess.material(Black)), (11, 5));
}
