//! Game records: one self-play game per file.
//!
//! ```text
//! magic "CAPAGAME" | version u8 | CRC-32 of the payload, u32 LE | payload = deflate(body)
//! body:
//!   game name, network id, start FEN        (each: varint length + UTF-8)
//!   winner u8 (0 none, 1 white, 2 black) | ending u8 | resignation u8 (bit 0: enabled)
//!   would-have-resigned ply + 1, varint (0: never)
//!   plies, varint; then per ply:
//!     move u16 LE (Game::pack_move) | flags u8 (bit 0: full search)
//!     root Q D M, best Q D M: six f32 LE (side to move's view)
//!     visited moves, varint; then per move: policy index u16 LE, probability u16 LE (/ 65535)
//! ```
//!
//! Reading checks everything a damaged or hostile file could get wrong:
//! magic, version, checksum, lengths, the FEN, that every move is legal
//! where it is played and the game not over before it, and that every
//! visited policy index is a legal move's.

use std::path::Path;

use capa_rules::{Color, Game, History, MoveList, Termination};

use crate::atomic::write_atomically;
use crate::frame::{Kind, Reader, RecordError, format_error, put_str, put_varint};

const KIND: Kind = Kind { magic: b"CAPAGAME", version: 1, name: "game record" };

/// How a game ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// By the rules (or the ply cap).
    Rules(Termination),
    /// The loser resigned.
    Resignation,
    /// Decided outside the rules: won on material (Go: on the score) at the
    /// ply cap (the trainer's `game.ply_cap_win_margin`), or a converted Go
    /// record won on time or forfeit, or counted with dead stones left on
    /// the board.
    Adjudication,
}

impl Ending {
    /// Every ending, in the order of their codes on disk (append only).
    const ALL: [Ending; 9] = [
        Ending::Rules(Termination::Checkmate),
        Ending::Rules(Termination::Stalemate),
        Ending::Rules(Termination::FiftyMoveRule),
        Ending::Rules(Termination::ThreefoldRepetition),
        Ending::Rules(Termination::InsufficientMaterial),
        Ending::Rules(Termination::PlyCap),
        Ending::Resignation,
        Ending::Adjudication,
        Ending::Rules(Termination::Scored),
    ];

    pub(crate) fn code(self) -> u8 {
        Ending::ALL.iter().position(|&e| e == self).expect("every ending is listed") as u8
    }

    pub(crate) fn from_code(code: u8) -> Result<Ending, RecordError> {
        Ending::ALL.get(usize::from(code)).copied().ok_or_else(|| format_error(format!("ending code {code}")))
    }
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Rules(termination) => termination.fmt(f),
            Ending::Resignation => f.write_str("resignation"),
            Ending::Adjudication => f.write_str("adjudication"),
        }
    }
}

/// Q (win minus loss), D (draw) and M (plies left), for the side to move.
#[derive(Copy, Clone, Debug, PartialEq, Default)]
pub struct SearchValues {
    /// Expected result, -1 to 1.
    pub q: f32,
    /// Draw probability.
    pub d: f32,
    /// Expected plies left.
    pub m: f32,
}

/// What the search said at one ply.
#[derive(Clone, Debug, PartialEq)]
pub struct PlyRecord {
    /// A full search (a training target) rather than a fast one.
    pub full_search: bool,
    /// The root's values.
    pub root: SearchValues,
    /// The values of the most visited move.
    pub best: SearchValues,
    /// Visited moves as (policy index, share of the visits).
    pub visits: Vec<(u16, f32)>,
}

/// Whether resignation was allowed in a game, and when it would have
/// happened: games played out to the end measure how often resigning
/// would have been wrong.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Resignation {
    /// The players could resign.
    pub enabled: bool,
    /// The first ply at which the side to move's values fell below the
    /// threshold.
    pub would_have_resigned: Option<u32>,
}

/// The moves-left training target of the position before move `ply` of a
/// game of `moves` moves: the plies to the game's end, the move to play
/// included, so 1 before the last move. The search counts the same way (an
/// ended game's node has 0, each parent one more), and so do Lc0's own
/// training data and the tablebase rescorer; trainingdata-tool writes one
/// less. Self-play and V6 conversion both use this.
pub fn plies_to_end(moves: usize, ply: usize) -> f32 {
    moves.saturating_sub(ply) as f32
}

/// The extension of game record files, as self-play and `capa sgf
/// convert` name them.
pub const RECORD_EXTENSION: &str = "capa";

/// One game: the start, the moves, and the search's view of each ply.
#[derive(Clone, Debug)]
pub struct GameRecord<G: Game> {
    /// The first position.
    pub start: G,
    /// The network that played (its id in the run).
    pub network: String,
    /// The moves played.
    pub moves: Vec<G::Move>,
    /// One entry per move.
    pub plies: Vec<PlyRecord>,
    /// The winner; `None` for a draw.
    pub winner: Option<Color>,
    /// How the game ended.
    pub ending: Ending,
    /// Resignation in this game.
    pub resignation: Resignation,
}

impl<G: Game> GameRecord<G> {
    /// The positions of the game, the start first and the final one last.
    pub fn history(&self) -> History<G> {
        let mut history = History::new(self.start.clone());
        for &m in &self.moves {
            history.play(m);
        }
        history
    }

    /// The record's bytes.
    ///
    /// # Panics
    /// When `plies` and `moves` differ in length or a visit list has more
    /// than `u32::MAX` entries: the writer built them wrong.
    pub fn to_bytes(&self) -> Vec<u8> {
        assert_eq!(self.moves.len(), self.plies.len(), "a record has one ply entry per move");
        let mut body = Vec::with_capacity(64 + self.plies.len() * 64);
        write_header(&mut body, &self.network, &self.start, self.winner, self.ending);
        body.push(u8::from(self.resignation.enabled));
        put_varint(&mut body, self.resignation.would_have_resigned.map_or(0, |ply| u64::from(ply) + 1));
        put_varint(&mut body, self.moves.len() as u64);
        for (&m, ply) in self.moves.iter().zip(&self.plies) {
            body.extend_from_slice(&G::pack_move(m).to_le_bytes());
            body.push(u8::from(ply.full_search));
            for v in [ply.root.q, ply.root.d, ply.root.m, ply.best.q, ply.best.d, ply.best.m] {
                body.extend_from_slice(&v.to_le_bytes());
            }
            put_varint(&mut body, ply.visits.len() as u64);
            for &(index, share) in &ply.visits {
                body.extend_from_slice(&index.to_le_bytes());
                body.extend_from_slice(&quantize(share).to_le_bytes());
            }
        }
        KIND.seal(&body)
    }

    /// Reads a record, checking it throughout (see the module's docs).
    ///
    /// # Errors
    /// [`RecordError::Format`] saying what is wrong and at which ply.
    pub fn from_bytes(bytes: &[u8]) -> Result<GameRecord<G>, RecordError> {
        let body = KIND.open(bytes)?;
        let mut r = Reader::new(&body);
        let Header { player: network, start, winner, ending } = read_header::<G>(&mut r, "network id")?;
        let flags = r.byte("resignation flags")?;
        let would = r.varint("resignation ply")?;
        let resignation = Resignation {
            enabled: flags & 1 == 1,
            would_have_resigned: match would {
                0 => None,
                ply => Some(u32::try_from(ply - 1).map_err(|_| format_error("resignation ply out of range"))?),
            },
        };
        let count = r.varint("ply count")?;
        // Each ply takes at least 28 bytes: refuse a count the body cannot hold before allocating.
        if count > (body.len() / 28) as u64 {
            return Err(format_error(format!("{count} plies do not fit in {} bytes", body.len())));
        }
        let mut history = History::new(start.clone());
        let (mut moves, mut plies) = (Vec::with_capacity(count as usize), Vec::with_capacity(count as usize));
        let mut legal = MoveList::new();
        for ply in 0..count {
            let at = |what: &str| format!("ply {ply}: {what}");
            let m = read_move(&mut r, &history, &mut legal, ply)?;
            let position = history.current();
            let full_search = r.byte(&at("flags"))? & 1 == 1;
            let mut values = [0.0f32; 6];
            for v in &mut values {
                *v = r.f32(&at("values"))?;
            }
            let visited = r.varint(&at("visit count"))?;
            if visited > legal.len() as u64 {
                return Err(format_error(at(&format!("{visited} visited moves, {} legal", legal.len()))));
            }
            let mut visits = Vec::with_capacity(visited as usize);
            for _ in 0..visited {
                let index = r.u16(&at("policy index"))?;
                if !legal.iter().any(|&m| position.policy_index(m) == usize::from(index)) {
                    return Err(format_error(at(&format!("policy index {index} is not a legal move's"))));
                }
                visits.push((index, f32::from(r.u16(&at("visit share"))?) / f32::from(u16::MAX)));
            }
            let [q, d, m_left, best_q, best_d, best_m] = values;
            plies.push(PlyRecord {
                full_search,
                root: SearchValues { q, d, m: m_left },
                best: SearchValues { q: best_q, d: best_d, m: best_m },
                visits,
            });
            history.play(m);
            moves.push(m);
        }
        if r.remaining() > 0 {
            return Err(format_error(format!("{} bytes after the last ply", r.remaining())));
        }
        Ok(GameRecord { start, network, moves, plies, winner, ending, resignation })
    }

    /// Writes the record to `path` atomically.
    ///
    /// # Errors
    /// [`RecordError::File`] naming the path and the I/O error.
    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        write_file(path, &self.to_bytes())
    }

    /// Reads the record at `path`.
    ///
    /// # Errors
    /// [`RecordError::File`] naming the path and what is wrong.
    pub fn read(path: &Path) -> Result<GameRecord<G>, RecordError> {
        read_file(path, GameRecord::from_bytes)
    }
}

/// Writes a data file atomically; errors name the path.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), RecordError> {
    write_atomically(path, bytes)
        .map_err(|e| RecordError::File { path: path.to_path_buf(), source: Box::new(e.into()) })
}

/// Reads a data file with `parse`; errors name the path.
pub(crate) fn read_file<T>(path: &Path, parse: impl FnOnce(&[u8]) -> Result<T, RecordError>) -> Result<T, RecordError> {
    let in_file = |e: RecordError| RecordError::File { path: path.to_path_buf(), source: Box::new(e) };
    let bytes = std::fs::read(path).map_err(|e| in_file(e.into()))?;
    parse(&bytes).map_err(in_file)
}

/// What both kinds of game file start with, after the game's name: who
/// played (a network id, a teacher), the start, the winner, the ending.
pub(crate) struct Header<G> {
    pub player: String,
    pub start: G,
    pub winner: Option<Color>,
    pub ending: Ending,
}

pub(crate) fn write_header<G: Game>(
    body: &mut Vec<u8>,
    player: &str,
    start: &G,
    winner: Option<Color>,
    ending: Ending,
) {
    put_str(body, G::NAME);
    put_str(body, player);
    put_str(body, &start.fen());
    body.push(winner_code(winner));
    body.push(ending.code());
}

/// Reads the header; `player` names the player field in errors.
pub(crate) fn read_header<G: Game>(r: &mut Reader<'_>, player: &str) -> Result<Header<G>, RecordError> {
    let name = r.string("game name")?;
    if name != G::NAME {
        return Err(format_error(format!("a {name} game, not {}", G::NAME)));
    }
    let player = r.string(player)?;
    let fen = r.string("start FEN")?;
    let start = G::from_fen(&fen).map_err(|e| format_error(format!("start FEN {fen:?}: {e}")))?;
    let winner = winner_from_code(r.byte("winner")?)?;
    let ending = Ending::from_code(r.byte("ending")?)?;
    Ok(Header { player, start, winner, ending })
}

/// Reads the move played at `ply`, after checking the game goes on there;
/// `legal` is left holding the position's legal moves.
pub(crate) fn read_move<G: Game>(
    r: &mut Reader<'_>,
    history: &History<G>,
    legal: &mut MoveList<G::Move>,
    ply: u64,
) -> Result<G::Move, RecordError> {
    let packed = r.u16(&format!("ply {ply}: move"))?;
    if let Some(outcome) = history.outcome() {
        return Err(format_error(format!("ply {ply}: a move after the game ended ({})", outcome.reason)));
    }
    history.current().legal_moves(legal);
    legal_move::<G>(legal, packed, ply, "move")
}

/// The legal move packed as `packed`; `what` names it in the error.
pub(crate) fn legal_move<G: Game>(
    legal: &MoveList<G::Move>,
    packed: u16,
    ply: u64,
    what: &str,
) -> Result<G::Move, RecordError> {
    legal
        .iter()
        .copied()
        .find(|&m| G::pack_move(m) == packed)
        .ok_or_else(|| format_error(format!("ply {ply}: {what} code {packed:#06x} is not a legal move")))
}

fn winner_code(winner: Option<Color>) -> u8 {
    match winner {
        None => 0,
        Some(Color::White) => 1,
        Some(Color::Black) => 2,
    }
}

fn winner_from_code(code: u8) -> Result<Option<Color>, RecordError> {
    match code {
        0 => Ok(None),
        1 => Ok(Some(Color::White)),
        2 => Ok(Some(Color::Black)),
        other => Err(format_error(format!("winner code {other} (0 to 2)"))),
    }
}

/// A share of the visits in 16 bits.
fn quantize(share: f32) -> u16 {
    (share.clamp(0.0, 1.0) * f32::from(u16::MAX)).round() as u16
}

#[cfg(test)]
mod tests {
    use capa_rules::chess::Chess;

    use super::*;

    /// A record whose body is `body`, with a valid checksum.
    fn with_body(body: &[u8]) -> Vec<u8> {
        KIND.seal(body)
    }

    fn body(fen: &str, packed: u16, index: u16) -> Vec<u8> {
        let mut body = Vec::new();
        put_str(&mut body, "chess");
        put_str(&mut body, "n");
        put_str(&mut body, fen);
        body.extend_from_slice(&[0, Ending::Resignation.code(), 0, 0, 1]);
        body.extend_from_slice(&packed.to_le_bytes());
        body.push(1);
        body.extend_from_slice(&[0; 24]);
        body.push(1);
        body.extend_from_slice(&index.to_le_bytes());
        body.extend_from_slice(&u16::MAX.to_le_bytes());
        body
    }

    fn error(bytes: &[u8]) -> String {
        GameRecord::<Chess>::from_bytes(bytes).unwrap_err().to_string()
    }

    /// Damage a checksum cannot catch (a writer's bug, a hostile file) is
    /// still found by replaying the game.
    #[test]
    fn checksummed_nonsense_is_refused() {
        let start = Chess::startpos();
        let mut legal = MoveList::new();
        start.legal_moves(&mut legal);
        let (m, index) = (Chess::pack_move(legal[0]), start.policy_index(legal[0]) as u16);
        let fen = start.fen();
        assert!(GameRecord::<Chess>::from_bytes(&with_body(&body(&fen, m, index))).is_ok());
        assert!(error(&with_body(&body(&fen, 0xffff, index))).contains("ply 0: move code 0xffff is not a legal move"));
        let illegal = (0..1858u16).find(|&i| legal.iter().all(|&m| start.policy_index(m) != usize::from(i))).unwrap();
        assert!(error(&with_body(&body(&fen, m, illegal))).contains("is not a legal move's"));
        assert!(error(&with_body(&body("8/8/8/8/8/8/8/8 w - - 0 1", m, index))).contains("start FEN"));
        let mut long = body(&fen, m, index);
        long.push(0);
        assert!(error(&with_body(&long)).contains("1 bytes after the last ply"));
        let mut short = body(&fen, m, index);
        short.truncate(short.len() - 1);
        assert!(error(&with_body(&short)).contains("ends inside the ply 0: visit share"));
        let mut many = body(&fen, m, index);
        let count = many.len() - 33;
        many[count] = 0x7f;
        assert!(error(&with_body(&many)).contains("plies do not fit"));
    }
}
