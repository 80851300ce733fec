//! SGF (Smart Game Format, FF[4]) game records of Go: a strict reader of our
//! own, and the replay of a record's main line on capa's Go rules.
//!
//! Our own reader rather than a crate: the grammar is a dozen lines, and a
//! reader of our own reports what a training pipeline needs (the game's
//! number in the file, its line, the move) and reads past a broken game to
//! the next one. Read: `SZ` (square boards), `KM`, `HA`, `RE`, `PL`, setup
//! (`AB`, `AW`, `AE`, point lists and FF[4] rectangles) in the root node,
//! `B`/`W` moves with passes as the empty value or `tt` (boards up to 19),
//! the main line (the first child of every node) and the variations beside
//! it, several games per file; everything else is read past.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use capa_rules::go::{Cell, Go, GoMove, KoRule};
use capa_rules::{Color, Game};
use thiserror::Error;

/// Nesting of variations beyond which a file is refused (a stack guard).
const MAX_DEPTH: usize = 10_000;

/// Why one game of an SGF file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("game {game} (line {line}){}: {message}", .moves.map(|m| format!(", move {m}")).unwrap_or_default())]
pub struct SgfError {
    /// The game's place in the file, from 1.
    pub game: usize,
    /// The line of the file where the problem is.
    pub line: usize,
    /// The move, from 1, when the problem is a move.
    pub moves: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// How a game ended, from `RE`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum SgfResult {
    /// This player won (by points, resignation, time or forfeit).
    Won(Color),
    /// A draw (jigo).
    Draw,
}

/// A move of an SGF record: who played, and where (`None`: a pass), with the
/// line it is on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SgfMove {
    /// The player.
    pub color: Color,
    /// The point, `row * size + column` from A1 (bottom left); `None` for a pass.
    pub point: Option<usize>,
    /// The line of the file.
    pub line: usize,
}

/// One game of an SGF file: its root's properties and its main line.
#[derive(Clone, Debug, PartialEq)]
pub struct SgfGame {
    /// Its place in the file, from 1.
    pub number: usize,
    /// The line where it starts.
    pub line: usize,
    /// The board's size (`SZ`, 19 when absent).
    pub size: usize,
    /// The komi (`KM`, 0 when absent).
    pub komi: f32,
    /// Handicap stones (`HA`, 0 when absent).
    pub handicap: u32,
    /// The result (`RE`), `None` when absent or unknown (`?`, `Void`).
    pub result: Option<SgfResult>,
    /// `RE` as written.
    pub result_text: String,
    /// Who moves first after the setup (`PL`), when the record says.
    pub first: Option<Color>,
    /// Setup stones of the root (`AB`, `AW`, `AE`), in order.
    pub setup: Vec<(usize, Cell)>,
    /// The main line's moves.
    pub moves: Vec<SgfMove>,
    /// The other lines, each leaving the main line before one of its moves.
    pub variations: Vec<SgfVariation>,
    /// The root's other properties, first value each (`PB`, `PW`, `DT`, ...).
    pub properties: BTreeMap<String, String>,
}

/// A line of moves that leaves its parent line (the main line, or another
/// variation) in place of the parent's move number `at` (from 0; the
/// parent's length: after its last move).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SgfVariation {
    /// Where it leaves its parent line: the parent's moves before it.
    pub at: usize,
    /// Its moves.
    pub moves: Vec<SgfMove>,
    /// The lines leaving it in turn.
    pub variations: Vec<SgfVariation>,
}

/// A replayed game: the position before each move, the moves, and the end.
#[derive(Clone, Debug)]
pub struct Replay<const N: usize> {
    /// The position before each move (the setup's with its side to move first).
    pub positions: Vec<Go<N>>,
    /// The moves, each legal in the position before it.
    pub moves: Vec<GoMove<N>>,
    /// The position after the last move.
    pub end: Go<N>,
}

/// Reads every game of SGF text: each a game or why it cannot be used.
/// Broken syntax ends the reading of the text (what follows cannot be
/// trusted) with an error for the game it broke.
pub fn read_sgf(text: &str) -> Vec<Result<SgfGame, SgfError>> {
    let mut parser = Parser { bytes: text.as_bytes(), at: 0, line: 1 };
    let mut games = Vec::new();
    loop {
        // Text between game trees is read past.
        while parser.peek().is_some_and(|b| b != b'(') {
            parser.bump();
        }
        if parser.peek().is_none() {
            return games;
        }
        let number = games.len() + 1;
        let line = parser.line;
        match parser.tree(0) {
            Ok(tree) => games.push(game_from_tree(number, line, tree)),
            Err((line, message)) => {
                games.push(Err(SgfError { game: number, line, moves: None, message }));
                return games;
            }
        }
    }
}

/// Reads an `.sgf` or `.sgf.gz` file.
///
/// # Errors
/// A file that cannot be read, or is not UTF-8 text (after decompression).
pub fn read_sgf_file(path: &Path) -> anyhow::Result<Vec<Result<SgfGame, SgfError>>> {
    use anyhow::Context;
    let file = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut bytes = Vec::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::MultiGzDecoder::new(file).read_to_end(&mut bytes)
    } else {
        std::io::BufReader::new(file).read_to_end(&mut bytes)
    }
    .with_context(|| format!("cannot read {}", path.display()))?;
    // Old records are often Latin-1; their text properties do not matter here.
    let text = String::from_utf8_lossy(&bytes);
    Ok(read_sgf(&text))
}

/// A node: its properties, each with its values and the line it is on.
type Node = Vec<(String, Vec<String>, usize)>;

/// A game tree: a sequence of nodes, then the trees that follow it (the
/// first continues the main line).
struct Tree {
    nodes: Vec<Node>,
    children: Vec<Tree>,
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
    line: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        if byte == b'\n' {
            self.line += 1;
        }
        Some(byte)
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.bump();
        }
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T, (usize, String)> {
        Err((self.line, message.into()))
    }

    /// A game tree at `(`.
    fn tree(&mut self, depth: usize) -> Result<Tree, (usize, String)> {
        if depth > MAX_DEPTH {
            return self.fail(format!("variations nested more than {MAX_DEPTH} deep"));
        }
        self.bump(); // `(`
        self.skip_space();
        let mut nodes = Vec::new();
        while self.peek() == Some(b';') {
            self.bump();
            nodes.push(self.node()?);
            self.skip_space();
        }
        if nodes.is_empty() {
            return self.fail("a game tree without a node (expected `;` after `(`)");
        }
        let mut children = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                Some(b'(') => children.push(self.tree(depth + 1)?),
                Some(b')') => {
                    self.bump();
                    return Ok(Tree { nodes, children });
                }
                Some(other) => return self.fail(format!("unexpected '{}' in a game tree", char::from(other))),
                None => return self.fail("the file ends inside a game tree (a `)` is missing)"),
            }
        }
    }

    fn node(&mut self) -> Result<Node, (usize, String)> {
        let mut properties = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                Some(b) if b.is_ascii_alphabetic() => {
                    let line = self.line;
                    let mut ident = String::new();
                    while let Some(b) = self.peek().filter(u8::is_ascii_alphabetic) {
                        self.bump();
                        // FF[3] allowed lower-case letters in names (`AddBlack`): only capitals count.
                        if b.is_ascii_uppercase() {
                            ident.push(char::from(b));
                        }
                    }
                    let mut values = Vec::new();
                    self.skip_space();
                    while self.peek() == Some(b'[') {
                        values.push(self.value()?);
                        self.skip_space();
                    }
                    if values.is_empty() {
                        return self.fail(format!("property {ident} has no value"));
                    }
                    properties.push((ident, values, line));
                }
                _ => return Ok(properties),
            }
        }
    }

    fn value(&mut self) -> Result<String, (usize, String)> {
        let line = self.line;
        self.bump(); // `[`
        let mut escaped = Vec::new();
        loop {
            match self.bump() {
                None => return Err((line, "the file ends inside a property value (a `]` is missing)".to_string())),
                Some(b'\\') => {
                    if let Some(b) = self.bump() {
                        escaped.push(b);
                    }
                }
                Some(b']') => break,
                Some(b) => escaped.push(b),
            }
        }
        Ok(String::from_utf8_lossy(&escaped).into_owned())
    }
}

/// A tree's main line: its nodes, and the trees that branch from it, each
/// with the number of nodes before it.
fn main_line(tree: Tree) -> (Vec<Node>, Vec<(usize, Tree)>) {
    let (mut nodes, mut branches) = (Vec::new(), Vec::new());
    let mut current = tree;
    loop {
        nodes.extend(current.nodes);
        let mut children = current.children.into_iter();
        let Some(next) = children.next() else { return (nodes, branches) };
        branches.extend(children.map(|other| (nodes.len(), other)));
        current = next;
    }
}

/// The game a tree describes: its root's properties, its main line and its variations.
fn game_from_tree(number: usize, line: usize, tree: Tree) -> Result<SgfGame, SgfError> {
    let error = |line: usize, moves: Option<usize>, message: String| SgfError { game: number, line, moves, message };
    let (nodes, branches) = main_line(tree);
    let root = &nodes[0];
    let first_value =
        |name: &str| root.iter().find(|(id, ..)| id == name).map(|(_, values, line)| (values[0].trim(), *line));
    if let Some((gm, line)) = first_value("GM")
        && gm != "1"
    {
        return Err(error(line, None, format!("GM[{gm}] is not Go (GM[1])")));
    }
    let size = match first_value("SZ") {
        None => 19,
        Some((text, line)) => {
            let size = match text.split_once(':') {
                Some((columns, rows)) if columns.trim() == rows.trim() => columns.trim().parse::<usize>().ok(),
                Some(_) => return Err(error(line, None, format!("SZ[{text}]: only square boards are read"))),
                None => text.parse::<usize>().ok(),
            };
            match size {
                Some(size @ 2..=25) => size,
                _ => return Err(error(line, None, format!("SZ[{text}] is not a board size from 2 to 25"))),
            }
        }
    };
    let komi = match first_value("KM") {
        None => 0.0,
        Some((text, line)) => text
            .parse::<f32>()
            .ok()
            .filter(|k| k.is_finite())
            .ok_or_else(|| error(line, None, format!("KM[{text}] is not a number")))?,
    };
    let handicap = match first_value("HA") {
        None => 0,
        Some((text, line)) => text
            .parse::<u32>()
            .ok()
            .filter(|&h| (h as usize) < size * size)
            .ok_or_else(|| error(line, None, format!("HA[{text}] is not a number of stones")))?,
    };
    let result_text = first_value("RE").map_or("", |(text, _)| text).to_string();
    let result = parse_result(&result_text).map_err(|message| {
        let line = first_value("RE").map_or(line, |(_, line)| line);
        error(line, None, message)
    })?;
    let first = match first_value("PL") {
        None => None,
        Some((text, line)) => {
            Some(parse_color(text).ok_or_else(|| error(line, None, format!("PL[{text}] is not B or W")))?)
        }
    };
    let mut setup = Vec::new();
    for (ident, values, line) in root {
        let cell = match ident.as_str() {
            "AB" => Cell::Black,
            "AW" => Cell::White,
            "AE" => Cell::Empty,
            _ => continue,
        };
        for value in values {
            for point in
                points(value, size).map_err(|message| error(*line, None, format!("{ident}[{value}]: {message}")))?
            {
                setup.push((point, cell));
            }
        }
    }
    let mut moves = Vec::new();
    let (mut before, mut setup_allowed) = (Vec::with_capacity(nodes.len()), true);
    for node in &nodes {
        before.push(moves.len());
        node_moves(node, setup_allowed, size, &mut moves)
            .map_err(|(line, at, message)| error(line, Some(at), message))?;
        setup_allowed = false;
    }
    let variations =
        variations(branches, &before, size).map_err(|(line, at, message)| error(line, Some(at), message))?;
    let properties = root
        .iter()
        .filter(|(id, ..)| !matches!(id.as_str(), "AB" | "AW" | "AE" | "B" | "W"))
        .map(|(id, values, _)| (id.clone(), values[0].clone()))
        .collect();
    Ok(SgfGame { number, line, size, komi, handicap, result, result_text, first, setup, moves, variations, properties })
}

/// Why a line's move cannot be read: the file's line, the move's number in its line, and what.
type MoveError = (usize, usize, String);

/// The variations of `branches`, each placed by the moves `before` its node.
fn variations(branches: Vec<(usize, Tree)>, before: &[usize], size: usize) -> Result<Vec<SgfVariation>, MoveError> {
    let mut lines = Vec::new();
    for (node, tree) in branches {
        let (nodes, inner) = main_line(tree);
        let mut moves = Vec::new();
        let mut inner_before = Vec::with_capacity(nodes.len());
        for node in &nodes {
            inner_before.push(moves.len());
            node_moves(node, false, size, &mut moves)?;
        }
        let nested = variations(inner, &inner_before, size)?;
        if !moves.is_empty() || !nested.is_empty() {
            lines.push(SgfVariation { at: before[node], moves, variations: nested });
        }
    }
    Ok(lines)
}

/// Appends the `B` and `W` moves of `node` to `moves`; setup (`AB`, `AW`,
/// `AE`) is read only in the root, so elsewhere it is an error.
fn node_moves(node: &Node, setup_allowed: bool, size: usize, moves: &mut Vec<SgfMove>) -> Result<(), MoveError> {
    for (ident, values, line) in node {
        let color = match ident.as_str() {
            "B" => Color::Black,
            "W" => Color::White,
            "AB" | "AW" | "AE" if !setup_allowed => {
                return Err((*line, moves.len() + 1, format!("{ident}: setup after the start is not read")));
            }
            _ => continue,
        };
        let value = values[0].trim();
        let point = match value {
            "" => None,
            "tt" if size <= 19 => None,
            _ => {
                let mut list = points(value, size)
                    .map_err(|message| (*line, moves.len() + 1, format!("{ident}[{value}]: {message}")))?;
                if list.len() != 1 || value.contains(':') {
                    return Err((*line, moves.len() + 1, format!("{ident}[{value}] is not one point")));
                }
                list.pop()
            }
        };
        moves.push(SgfMove { color, point, line: *line });
    }
    Ok(())
}

fn parse_color(text: &str) -> Option<Color> {
    match text.trim() {
        "B" | "b" => Some(Color::Black),
        "W" | "w" => Some(Color::White),
        _ => None,
    }
}

/// `RE`: `B+3.5`, `W+R`, `B+T`, `B+F`, `0`, `Draw`, `Jigo`; `?`, `Void` and
/// an absent result are unknown (`None`).
fn parse_result(text: &str) -> Result<Option<SgfResult>, String> {
    let text = text.trim();
    match text {
        "" | "?" | "Void" | "void" => return Ok(None),
        "0" | "Draw" | "draw" | "D" | "Jigo" | "jigo" => return Ok(Some(SgfResult::Draw)),
        _ => {}
    }
    let unknown = || format!("RE[{text}] is not a result (B+..., W+..., 0, Draw, ?, Void)");
    let (color, margin) = text.split_once('+').ok_or_else(unknown)?;
    let color = parse_color(color).ok_or_else(unknown)?;
    let known = ["", "R", "Resign", "T", "Time", "F", "Forfeit"];
    if !(known.contains(&margin) || margin.parse::<f32>().is_ok_and(|m| m.is_finite() && m >= 0.0)) {
        return Err(unknown());
    }
    Ok(Some(SgfResult::Won(color)))
}

/// The points of an SGF point value (`ab`) or FF[4] rectangle (`aa:cc`).
fn points(value: &str, size: usize) -> Result<Vec<usize>, String> {
    let point = |text: &str| -> Result<(usize, usize), String> {
        let bytes = text.trim().as_bytes();
        let coordinate = |b: u8| match b {
            b'a'..=b'z' => Some(usize::from(b - b'a')),
            b'A'..=b'Z' => Some(usize::from(b - b'A') + 26),
            _ => None,
        };
        match bytes {
            [c, r] => match (coordinate(*c), coordinate(*r)) {
                (Some(column), Some(row)) if column < size && row < size => Ok((column, row)),
                _ => Err(format!("'{text}' is off the {size}x{size} board")),
            },
            _ => Err(format!("'{text}' is not a point (two letters)")),
        }
    };
    let ((c1, r1), (c2, r2)) = match value.split_once(':') {
        Some((a, b)) => (point(a)?, point(b)?),
        None => {
            let p = point(value)?;
            (p, p)
        }
    };
    let mut list = Vec::new();
    // SGF counts rows from the top; capa from the bottom.
    for row_from_top in r1.min(r2)..=r1.max(r2) {
        for column in c1.min(c2)..=c1.max(c2) {
            list.push((size - 1 - row_from_top) * size + column);
        }
    }
    Ok(list)
}

impl SgfGame {
    /// Replays the main line on an N x N board under `ko_rule`: the setup,
    /// then every move, each checked for legality. A move by the side not
    /// to move (handicap stones placed as moves) goes on from the same board
    /// with that side to move.
    ///
    /// # Errors
    /// A board of another size, a komi that is not a multiple of 0.5, a
    /// setup that leaves a group without liberties, or an illegal move.
    pub fn replay<const N: usize>(&self, ko_rule: KoRule) -> Result<Replay<N>, SgfError> {
        let error =
            |line: usize, moves: Option<usize>, message: String| SgfError { game: self.number, line, moves, message };
        if self.size != N {
            return Err(error(self.line, None, format!("a {0}x{0} board, not {N}x{N}", self.size)));
        }
        let mut position =
            Go::<N>::empty(0.0, ko_rule).with_komi(self.komi).map_err(|message| error(self.line, None, message))?;
        for &(point, cell) in &self.setup {
            position.set(point, cell);
        }
        if !position.setup_is_legal() {
            return Err(error(self.line, None, "the setup leaves a group without liberties".to_string()));
        }
        let has_setup_stones = self.setup.iter().any(|&(_, cell)| cell != Cell::Empty);
        let first = self
            .first
            .or_else(|| self.moves.first().map(|m| m.color))
            .unwrap_or(if has_setup_stones && self.handicap >= 2 { Color::White } else { Color::Black });
        self.replay_line(position.with_turn(first), &self.moves)
    }

    /// Replays `line` (the main line or a variation of this game) from
    /// `position`, as [`SgfGame::replay`] does.
    ///
    /// # Errors
    /// An illegal move, named by its number in `line`.
    pub fn replay_line<const N: usize>(&self, mut position: Go<N>, line: &[SgfMove]) -> Result<Replay<N>, SgfError> {
        let error =
            |line: usize, moves: Option<usize>, message: String| SgfError { game: self.number, line, moves, message };
        let (mut positions, mut moves) = (Vec::with_capacity(line.len()), Vec::with_capacity(line.len()));
        for (i, m) in line.iter().enumerate() {
            if position.turn() != m.color {
                position = position.with_turn(m.color);
            }
            let wanted = m.point.map_or(GoMove::PASS, GoMove::at);
            let mut legal = capa_rules::MoveList::new();
            position.legal_moves(&mut legal);
            if !legal.contains(&wanted) {
                let why = if m.point.is_some_and(|p| position.cell(p) != Cell::Empty) {
                    "occupied"
                } else {
                    "illegal (suicide or ko)"
                };
                return Err(error(m.line, Some(i + 1), format!("{wanted} by {:?} is {why}", m.color)));
            }
            positions.push(position.clone());
            moves.push(wanted);
            position.play(wanted);
        }
        Ok(Replay { positions, moves, end: position })
    }
}
