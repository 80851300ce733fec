//! Teacher games: a UCI engine's games against itself, with its multipv
//! analysis of every position before the move was played. They are the
//! data of distillation: the candidates' scores become a soft policy
//! target, the result the value target.
//!
//! ```text
//! magic "CAPATEAC" | version u8 | CRC-32 of the payload, u32 LE | payload = deflate(body)
//! body:
//!   game name, teacher, start FEN          (each: varint length + UTF-8)
//!   winner u8 (0 none, 1 white, 2 black) | ending u8
//!   plies, varint; then per ply:
//!     move played u16 LE (Game::pack_move)
//!     candidates, varint; then per candidate, the teacher's best first:
//!       move u16 LE | kind u8 (0 centipawns, 1 mate in moves) | value, zigzag varint
//! ```
//!
//! Reading checks what a damaged or hostile file could get wrong: the
//! frame, the FEN, that every move played and every candidate is legal
//! where it stands, that candidates are distinct, and that no move follows
//! the end of the game.

use std::path::Path;

use capa_rules::{Color, Game, History, MoveList};
use capa_uci::UciScore;

use crate::frame::RecordError;
use crate::frame::{Kind, Reader, format_error, put_varint};
use crate::q_from_centipawns;
use crate::record::{
    Ending, GameRecord, Header, PlyRecord, Resignation, SearchValues, legal_move, read_file, read_header, read_move,
    write_file, write_header,
};

const KIND: Kind = Kind { magic: b"CAPATEAC", version: 1, name: "teacher game" };

/// The extension of teacher game files, as `capa distill gen` names them
/// and distillation runs look for them.
pub const TEACHER_EXTENSION: &str = "teacher";

/// What a mate counts as in centipawns, less one per move to the mate: far
/// above any real evaluation, so a mating move takes all of a soft target.
pub const MATE_CENTIPAWNS: i32 = 20_000;

/// One move the teacher considered, and its score for the side to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate<M> {
    /// The move.
    pub mv: M,
    /// Its score after the teacher's search.
    pub score: UciScore,
}

/// One teacher game: the start, the moves, the teacher's candidates at
/// every ply and the result.
#[derive(Clone, Debug)]
pub struct TeacherGame<G: Game> {
    /// The start position.
    pub start: G,
    /// The teacher and its settings, as `capa distill gen` describes them.
    pub teacher: String,
    /// The moves played.
    pub moves: Vec<G::Move>,
    /// Per ply, the candidates, best first: at least one, all legal, distinct.
    pub candidates: Vec<Vec<Candidate<G::Move>>>,
    /// The winner; `None` for a draw.
    pub winner: Option<Color>,
    /// How it ended.
    pub ending: Ending,
}

/// How the teacher's candidates become a policy target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PolicyTarget {
    /// `softmax(cp / (100 T))` over the candidates, with `T` in pawns.
    Soft {
        /// The temperature, in pawns; above zero.
        temperature: f32,
    },
    /// Everything on the teacher's best move.
    Hard,
}

/// A score in centipawns, mates as [`MATE_CENTIPAWNS`] less one per move
/// (negative when the side to move is mated); centipawn scores are clamped
/// to half of that, so that no evaluation outranks a mate.
pub fn score_centipawns(score: UciScore) -> i32 {
    match score {
        UciScore::Cp(cp) => cp.clamp(-MATE_CENTIPAWNS / 2, MATE_CENTIPAWNS / 2),
        UciScore::Mate(moves) if moves > 0 => MATE_CENTIPAWNS - moves.min(MATE_CENTIPAWNS / 4),
        UciScore::Mate(moves) => -MATE_CENTIPAWNS + moves.saturating_neg().min(MATE_CENTIPAWNS / 4),
    }
}

/// The target over `candidates` (best first), as probabilities in the
/// candidates' order; empty when there are none.
pub fn policy_target<M>(candidates: &[Candidate<M>], target: PolicyTarget) -> Vec<f32> {
    match target {
        PolicyTarget::Hard => (0..candidates.len()).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect(),
        PolicyTarget::Soft { temperature } => {
            let logits: Vec<f64> = candidates
                .iter()
                .map(|c| f64::from(score_centipawns(c.score)) / (100.0 * f64::from(temperature)))
                .collect();
            let top = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = logits.iter().map(|l| (l - top).exp()).collect();
            let total: f64 = weights.iter().sum();
            weights.iter().map(|w| (w / total) as f32).collect()
        }
    }
}

impl<G: Game> TeacherGame<G> {
    /// The positions of the game, the start first and the final one last.
    pub fn history(&self) -> History<G> {
        let mut history = History::new(self.start.clone());
        for &m in &self.moves {
            history.play(m);
        }
        history
    }

    /// The game as a training record: every ply a full search whose visit
    /// distribution is `target`, and whose root value is the teacher's best
    /// score as an expected score (Lc0's centipawn mapping, no draw
    /// share), so that `train.value_q_weight` can mix the teacher's
    /// evaluation into the value target.
    pub fn to_game_record(&self, target: PolicyTarget) -> GameRecord<G> {
        let mut history = History::new(self.start.clone());
        let mut plies = Vec::with_capacity(self.moves.len());
        for (ply, (&m, candidates)) in self.moves.iter().zip(&self.candidates).enumerate() {
            let position = history.current();
            let shares = policy_target(candidates, target);
            let visits = candidates
                .iter()
                .zip(shares)
                .filter(|&(_, share)| share > 0.0)
                .map(|(c, share)| (position.policy_index(c.mv) as u16, share))
                .collect();
            let q = candidates.first().map_or(0.0, |c| q_from_centipawns(f64::from(score_centipawns(c.score))));
            let values = SearchValues { q, d: 0.0, m: (self.moves.len() - ply) as f32 };
            plies.push(PlyRecord { full_search: true, root: values, best: values, visits });
            history.play(m);
        }
        GameRecord {
            start: self.start.clone(),
            network: self.teacher.clone(),
            moves: self.moves.clone(),
            plies,
            winner: self.winner,
            ending: self.ending,
            resignation: Resignation::default(),
        }
    }

    /// The game's bytes.
    ///
    /// # Panics
    /// When `candidates` and `moves` differ in length: the writer built them wrong.
    pub fn to_bytes(&self) -> Vec<u8> {
        assert_eq!(self.moves.len(), self.candidates.len(), "a teacher game has one candidate list per move");
        let mut body = Vec::with_capacity(64 + self.moves.len() * 40);
        write_header(&mut body, &self.teacher, &self.start, self.winner, self.ending);
        put_varint(&mut body, self.moves.len() as u64);
        for (&m, candidates) in self.moves.iter().zip(&self.candidates) {
            body.extend_from_slice(&G::pack_move(m).to_le_bytes());
            put_varint(&mut body, candidates.len() as u64);
            for c in candidates {
                body.extend_from_slice(&G::pack_move(c.mv).to_le_bytes());
                let (kind, value) = match c.score {
                    UciScore::Cp(cp) => (0, cp),
                    UciScore::Mate(moves) => (1, moves),
                };
                body.push(kind);
                put_varint(&mut body, u64::from(((value << 1) ^ (value >> 31)) as u32));
            }
        }
        KIND.seal(&body)
    }

    /// Reads a game, checking it throughout (see the module's docs).
    ///
    /// # Errors
    /// [`RecordError::Format`] saying what is wrong and at which ply.
    pub fn from_bytes(bytes: &[u8]) -> Result<TeacherGame<G>, RecordError> {
        let body = KIND.open(bytes)?;
        let mut r = Reader::new(&body);
        let Header { player: teacher, start, winner, ending } = read_header::<G>(&mut r, "teacher")?;
        let count = r.varint("ply count")?;
        // Each ply takes at least 6 bytes: refuse a count the body cannot hold before allocating.
        if count > (body.len() / 6) as u64 {
            return Err(format_error(format!("{count} plies do not fit in {} bytes", body.len())));
        }
        let mut history = History::new(start.clone());
        let mut moves = Vec::with_capacity(count as usize);
        let mut all_candidates = Vec::with_capacity(count as usize);
        let mut legal = MoveList::new();
        for ply in 0..count {
            let at = |what: &str| format!("ply {ply}: {what}");
            let m = read_move(&mut r, &history, &mut legal, ply)?;
            let listed = r.varint(&at("candidate count"))?;
            if listed == 0 || listed > legal.len() as u64 {
                return Err(format_error(at(&format!("{listed} candidates, {} legal moves", legal.len()))));
            }
            let mut candidates: Vec<Candidate<G::Move>> = Vec::with_capacity(listed as usize);
            for _ in 0..listed {
                let mv = legal_move::<G>(&legal, r.u16(&at("candidate"))?, ply, "candidate")?;
                if candidates.iter().any(|c| c.mv == mv) {
                    return Err(format_error(at(&format!("candidate {mv} is listed twice"))));
                }
                let kind = r.byte(&at("score kind"))?;
                let raw = r.varint(&at("score"))?;
                let raw = u32::try_from(raw).map_err(|_| format_error(at("the score is out of range")))?;
                let value = ((raw >> 1) as i32) ^ -((raw & 1) as i32);
                let score = match kind {
                    0 => UciScore::Cp(value),
                    1 => UciScore::Mate(value),
                    other => return Err(format_error(at(&format!("score kind {other} (0 or 1)")))),
                };
                candidates.push(Candidate { mv, score });
            }
            history.play(m);
            moves.push(m);
            all_candidates.push(candidates);
        }
        if r.remaining() > 0 {
            return Err(format_error(format!("{} bytes after the last ply", r.remaining())));
        }
        Ok(TeacherGame { start, teacher, moves, candidates: all_candidates, winner, ending })
    }

    /// Writes the game to `path` atomically.
    ///
    /// # Errors
    /// [`RecordError::File`] naming the path and the I/O error.
    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        write_file(path, &self.to_bytes())
    }

    /// Reads the game at `path`.
    ///
    /// # Errors
    /// [`RecordError::File`] naming the path and what is wrong.
    pub fn read(path: &Path) -> Result<TeacherGame<G>, RecordError> {
        read_file(path, TeacherGame::from_bytes)
    }
}

#[cfg(test)]
mod tests {
    use capa_rules::Termination;
    use capa_rules::chess::Chess;

    use super::*;

    fn candidate(position: &Chess, uci: &str, score: UciScore) -> Candidate<<Chess as Game>::Move> {
        Candidate { mv: position.parse_move(uci).unwrap(), score }
    }

    fn game() -> TeacherGame<Chess> {
        let start = Chess::startpos();
        let e4 = start.parse_move("e2e4").unwrap();
        let mut after = start.clone();
        after.play(e4);
        TeacherGame {
            teacher: "stockfish depth 1 multipv 3".to_string(),
            moves: vec![e4, after.parse_move("e7e5").unwrap()],
            candidates: vec![
                vec![
                    candidate(&start, "e2e4", UciScore::Cp(40)),
                    candidate(&start, "d2d4", UciScore::Cp(-35)),
                    candidate(&start, "g1f3", UciScore::Mate(-3)),
                ],
                vec![candidate(&after, "e7e5", UciScore::Mate(2))],
            ],
            start,
            winner: Some(Color::Black),
            ending: Ending::Rules(Termination::PlyCap),
        }
    }

    #[test]
    fn a_game_survives_the_round_trip() {
        let game = game();
        let read = TeacherGame::<Chess>::from_bytes(&game.to_bytes()).unwrap();
        assert_eq!(read.start.fen(), game.start.fen());
        assert_eq!(read.teacher, game.teacher);
        assert_eq!(read.moves, game.moves);
        assert_eq!(read.candidates, game.candidates);
        assert_eq!((read.winner, read.ending), (game.winner, game.ending));
    }

    #[test]
    fn soft_targets_are_the_softmax_of_the_scores() {
        let game = game();
        let shares = policy_target(&game.candidates[0], PolicyTarget::Soft { temperature: 1.0 });
        let (a, b) = ((0.40f64).exp(), (-0.35f64).exp());
        let c = (f64::from(-MATE_CENTIPAWNS + 3) / 100.0).exp();
        let total = a + b + c;
        for (share, want) in shares.iter().zip([a / total, b / total, c / total]) {
            assert!((f64::from(*share) - want).abs() < 1e-6, "{shares:?}");
        }
        assert!((shares.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        let colder = policy_target(&game.candidates[0], PolicyTarget::Soft { temperature: 0.1 });
        assert!(colder[0] > shares[0]);
        assert_eq!(policy_target(&game.candidates[0], PolicyTarget::Hard), vec![1.0, 0.0, 0.0]);
    }

    #[test]
    fn mates_outrank_every_evaluation() {
        assert!(score_centipawns(UciScore::Mate(30)) > score_centipawns(UciScore::Cp(i32::MAX)));
        assert!(score_centipawns(UciScore::Mate(1)) > score_centipawns(UciScore::Mate(2)));
        assert!(score_centipawns(UciScore::Mate(-1)) < score_centipawns(UciScore::Mate(-2)));
        assert!(score_centipawns(UciScore::Mate(-30)) < score_centipawns(UciScore::Cp(i32::MIN)));
        assert!(score_centipawns(UciScore::Mate(i32::MIN)) < 0);
    }

    #[test]
    fn the_training_record_carries_the_targets() {
        let record = game().to_game_record(PolicyTarget::Hard);
        let start = Chess::startpos();
        let e4 = start.parse_move("e2e4").unwrap();
        assert_eq!(record.plies[0].visits, vec![(start.policy_index(e4) as u16, 1.0)]);
        assert!(record.plies[0].root.q > 0.0 && record.plies[1].root.q > 0.99);
        assert_eq!(record.plies[0].root.m, 2.0);
        assert_eq!(record.winner, Some(Color::Black));
        // The move that walks into a mate gets no share at all.
        let soft = game().to_game_record(PolicyTarget::Soft { temperature: 1.0 });
        assert_eq!(soft.plies[0].visits.len(), 2);
    }

    #[test]
    fn damaged_and_hostile_files_are_refused() {
        let error = |bytes: &[u8]| TeacherGame::<Chess>::from_bytes(bytes).unwrap_err().to_string();
        let bytes = game().to_bytes();
        assert!(error(&bytes[..bytes.len() - 1]).contains("checksum"));
        assert!(error(b"CAPAGAME").contains("no CAPATEAC header"));
        let mut twice = game();
        twice.candidates[0][1] = twice.candidates[0][0];
        assert!(error(&twice.to_bytes()).contains("ply 0: candidate e2e4 is listed twice"));
        let mut none = game();
        none.candidates[1].clear();
        assert!(error(&none.to_bytes()).contains("ply 1: 0 candidates"));
        let mut illegal = game();
        illegal.candidates[1][0] = illegal.candidates[0][0];
        assert!(error(&illegal.to_bytes()).contains("ply 1: candidate code"));
    }
}
