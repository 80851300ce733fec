//! Game records as PGN, for people and their viewers.
//!
//! Each move carries the search's view in its comment: `[%eval]` in pawns
//! from White's side (the form Lichess and most viewers read), the root's
//! win/draw/loss per mille for the side that moved (as engines report
//! `wdl`), and the expected plies left. Fast searches are marked `fast`.

use std::fmt::Write;

use capa_rules::{Color, Game, GameKind};

use crate::record::GameRecord;

/// The game as one PGN game (tags, movetext, result), ending with a blank line.
pub fn to_pgn<G: Game>(record: &GameRecord<G>, event: &str, round: &str) -> String {
    let mut position = record.start.clone();
    let mut comments = Vec::with_capacity(record.moves.len());
    for (&m, search) in record.moves.iter().zip(&record.plies) {
        let root = search.root;
        let white_q = if position.turn() == Color::White { root.q } else { -root.q };
        let [w, d, l] = wdl_per_mille(root.q, root.d);
        comments.push(format!(
            "[%eval {:.2}] wdl {w}/{d}/{l} ml {:.0}{}",
            centipawns(white_q) / 100.0,
            root.m,
            if search.full_search { "" } else { " fast" }
        ));
        position.play(m);
    }
    let termination = record.ending.to_string();
    let tags = PgnTags { event, site: "capa self-play", round, white: &record.network, black: &record.network };
    write_pgn(&tags, &record.start, &record.moves, &comments, record.winner, &termination)
}

/// The first five tags of PGN's seven-tag roster (Result and the date's
/// absence are the writer's business).
#[derive(Clone, Copy, Debug)]
pub struct PgnTags<'a> {
    /// The event: a run, a match.
    pub event: &'a str,
    /// Where it was played.
    pub site: &'a str,
    /// The game's number in the event.
    pub round: &'a str,
    /// The white player.
    pub white: &'a str,
    /// The black player.
    pub black: &'a str,
}

/// One game as PGN, ending with a blank line: `tags`, Result, Variant (for
/// games other than chess), SetUp and FEN (when `start` is not the start
/// position), Termination; then SAN movetext, each move followed by its
/// entry of `comments` when there is one, in lines of at most 79 characters.
/// `winner` is `None` for a draw.
pub fn write_pgn<G: Game>(
    tags: &PgnTags,
    start: &G,
    moves: &[G::Move],
    comments: &[String],
    winner: Option<Color>,
    termination: &str,
) -> String {
    let result = match winner {
        Some(Color::White) => "1-0",
        Some(Color::Black) => "0-1",
        None => "1/2-1/2",
    };
    let mut pgn = String::new();
    let mut tag = |name: &str, value: &str| {
        let value = value.replace('\\', "\\\\").replace('"', "\\\"");
        let _ = writeln!(pgn, "[{name} \"{value}\"]");
    };
    tag("Event", tags.event);
    tag("Site", tags.site);
    tag("Round", tags.round);
    tag("White", tags.white);
    tag("Black", tags.black);
    tag("Result", result);
    if G::KIND != GameKind::Chess {
        tag("Variant", G::NAME);
    }
    let fen = start.fen();
    if fen != G::startpos().fen() {
        tag("SetUp", "1");
        tag("FEN", &fen);
    }
    tag("Termination", termination);
    pgn.push('\n');
    let mut position = start.clone();
    let mut tokens = Vec::with_capacity(moves.len() + 1);
    for (ply, &m) in moves.iter().enumerate() {
        let mover = position.turn();
        let mut token = String::new();
        if mover == Color::White || ply == 0 {
            let number = position.ply() / 2 + 1;
            let dots = if mover == Color::White { "." } else { "..." };
            let _ = write!(token, "{number}{dots} ");
        }
        token.push_str(&position.san(m));
        if let Some(comment) = comments.get(ply).filter(|c| !c.is_empty()) {
            // A `}` would end the comment early.
            let _ = write!(token, " {{{}}}", comment.replace('}', ")"));
        }
        tokens.push(token);
        position.play(m);
    }
    tokens.push(result.to_string());
    // Movetext lines of at most 79 characters (PGN's export format asks for 80).
    let mut line = String::new();
    for token in tokens {
        if !line.is_empty() && line.len() + 1 + token.len() > 79 {
            pgn.push_str(&line);
            pgn.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&token);
    }
    pgn.push_str(&line);
    pgn.push_str("\n\n");
    pgn
}

/// Lc0's mapping from an expected score (win minus loss, -1 to 1) to
/// centipawns, as engines print them: 0 at 0, about 110 at 0.5, rising
/// steeply towards the ends (clamped at |q| = 0.999, about 10,900).
pub fn centipawns(q: f32) -> f64 {
    let q = f64::from(q).clamp(-0.999, 0.999);
    // + 0.0 turns -0 into 0, which prints without a sign.
    111.714_640_912 * (1.562_068_842_1 * q).tan() + 0.0
}

/// Win, draw and loss per mille, as engines report `wdl`, from Q (win
/// minus loss) and the draw probability: each from 0 to 1000, summing to 1000.
pub fn wdl_per_mille(q: f32, d: f32) -> [u32; 3] {
    let per_mille = |v: f32| (v.clamp(0.0, 1.0) * 1000.0).round() as u32;
    let w = per_mille((1.0 + q - d) / 2.0);
    let d = per_mille(d).min(1000 - w);
    [w, d, 1000 - w - d]
}

/// The inverse of [`centipawns`]: the expected score (win minus loss) of
/// an evaluation in centipawns, within (-1, 1).
pub fn q_from_centipawns(cp: f64) -> f32 {
    ((cp / 111.714_640_912).atan() / 1.562_068_842_1).clamp(-1.0, 1.0) as f32
}

#[cfg(test)]
mod tests {
    use capa_rules::capablanca::Capablanca;
    use capa_rules::{Game, Termination};

    use super::*;
    use crate::record::{Ending, PlyRecord, Resignation, SearchValues};

    #[test]
    fn wdl_per_mille_sums_to_a_thousand() {
        assert_eq!(wdl_per_mille(0.0, 1.0), [0, 1000, 0]);
        assert_eq!(wdl_per_mille(1.0, 0.0), [1000, 0, 0]);
        assert_eq!(wdl_per_mille(-0.2, 0.3), [250, 300, 450]);
        // Rounded separately, these would print a loss of -1.
        for (q, d) in [(0.3331, 0.3331), (0.0005, 0.9995), (-1.0, 0.0), (0.9995, 0.0009)] {
            let [w, d, l] = wdl_per_mille(q, d);
            assert_eq!(w + d + l, 1000, "{q} {d}");
        }
    }

    #[test]
    fn centipawns_and_back() {
        for q in [-0.99f32, -0.5, -0.01, 0.0, 0.3, 0.9] {
            assert!((q_from_centipawns(centipawns(q)) - q).abs() < 1e-5, "{q}");
        }
        assert!((centipawns(q_from_centipawns(110.0)) - 110.0).abs() < 1e-2);
        assert!(q_from_centipawns(1e9) <= 1.0 && q_from_centipawns(-1e9) >= -1.0);
    }

    #[test]
    fn a_short_game_reads_as_pgn() {
        let mut position = Capablanca::startpos();
        let mut moves = Vec::new();
        let mut plies = Vec::new();
        for (uci, q) in [("e2e4", 0.1), ("e7e5", 0.0), ("b1c3", 0.2)] {
            let m = position.parse_move(uci).unwrap();
            moves.push(m);
            plies.push(PlyRecord {
                full_search: uci != "e7e5",
                root: SearchValues { q, d: 0.5, m: 60.0 },
                best: SearchValues::default(),
                visits: Vec::new(),
            });
            position.play(m);
        }
        let record = GameRecord {
            start: Capablanca::startpos(),
            network: "abc".to_string(),
            moves,
            plies,
            winner: None,
            ending: Ending::Rules(Termination::PlyCap),
            resignation: Resignation::default(),
        };
        let pgn = to_pgn(&record, "capa \"run\"", "1.4");
        assert!(pgn.starts_with("[Event \"capa \\\"run\\\"\"]\n"), "{pgn}");
        assert!(
            pgn.contains(
                "[Variant \"capablanca\"]\n[Termination \"ply cap\"]\n\n1. e4 {[%eval 0.18] wdl 300/500/200 ml 60}\n\
                 e5 {[%eval 0.00] wdl 250/500/250 ml 60 fast}\n2. Nc3 {[%eval 0.36] wdl 350/500/150 ml 60} 1/2-1/2\n\n"
            ),
            "{pgn}"
        );
        assert!(pgn.ends_with("1/2-1/2\n\n"), "{pgn}");
        assert!(pgn.lines().all(|line| line.len() <= 80), "{pgn}");
        assert!(!pgn.contains("[FEN"));
    }
}
