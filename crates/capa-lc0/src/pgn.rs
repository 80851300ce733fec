//! A strict, streaming PGN reader for conversion: tags, mainline SAN
//! tokens with their line numbers, the comments after each move, the
//! result token. Variations and NAGs are read past.
//!
//! Why not the `pgn-reader` crate: it drops a token it cannot read as SAN
//! without telling its visitor and keeps no line numbers, while a converter
//! must skip such a game and say where it is. SAN itself is still parsed by
//! shakmaty, the crate `pgn-reader` uses.

use std::io::{self, BufRead};

use capa_rules::Color;

/// One game as written in the PGN, before any move is checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceGame {
    /// Its number in the file, from 1.
    pub number: u64,
    /// The line its first tag (or move) is on, from 1.
    pub line: u64,
    /// Tags in file order.
    pub tags: Vec<(String, String)>,
    /// Mainline moves.
    pub moves: Vec<SourceMove>,
    /// The result token ending the movetext (`1-0`, `0-1`, `1/2-1/2`, `*`), if any.
    pub result_token: Option<String>,
    /// A problem in the text itself (an unterminated comment).
    pub syntax_error: Option<(u64, String)>,
    /// The game's lines as written (bytes, in whatever encoding the file
    /// has), from its first tag to its result, each ending in `\n`, when
    /// the reader keeps them ([`PgnReader::keeping_text`]); empty otherwise.
    pub text: Vec<u8>,
}

impl SourceGame {
    /// The value of tag `name` (case-sensitive, as PGN tag names are).
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The result: `Some(Some(winner))`, `Some(None)` for a draw, `None`
    /// when the game has none (missing or `*`). The movetext's token wins
    /// over the `[Result]` tag.
    pub fn winner(&self) -> Option<Option<Color>> {
        match self.result_token.as_deref().or(self.tag("Result")) {
            Some("1-0") => Some(Some(Color::White)),
            Some("0-1") => Some(Some(Color::Black)),
            Some("1/2-1/2") => Some(None),
            _ => None,
        }
    }
}

/// One mainline move token.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceMove {
    /// The SAN token as written, without `!` and `?` glyphs.
    pub san: String,
    /// Its line.
    pub line: u64,
    /// The comments that follow it, joined by a space.
    pub comment: String,
}

/// Reads games one by one from a PGN stream.
pub struct PgnReader<R> {
    input: R,
    line: u64,
    games: u64,
    /// A line read but not yet used: the tag line that ended the last game.
    pending: Option<Vec<u8>>,
    buffer: Vec<u8>,
    keep_text: bool,
}

impl<R: BufRead> PgnReader<R> {
    /// A reader of `input`.
    pub fn new(input: R) -> PgnReader<R> {
        PgnReader { input, line: 0, games: 0, pending: None, buffer: Vec::new(), keep_text: false }
    }

    /// The same reader, keeping each game's text in [`SourceGame::text`]
    /// (to copy a game through unchanged).
    pub fn keeping_text(self) -> PgnReader<R> {
        PgnReader { keep_text: true, ..self }
    }

    fn keep(&self, game: &mut SourceGame, line: &[u8]) {
        if self.keep_text {
            game.text.extend_from_slice(line);
            game.text.push(b'\n');
        }
    }

    fn next_line(&mut self) -> io::Result<Option<Vec<u8>>> {
        if let Some(line) = self.pending.take() {
            return Ok(Some(line));
        }
        self.buffer.clear();
        if self.input.read_until(b'\n', &mut self.buffer)? == 0 {
            return Ok(None);
        }
        self.line += 1;
        let mut line = std::mem::take(&mut self.buffer);
        while line.last().is_some_and(|b| matches!(b, b'\n' | b'\r')) {
            line.pop();
        }
        Ok(Some(line))
    }

    /// Up to `count` next games; fewer only at the end of the stream.
    ///
    /// # Errors
    /// As [`PgnReader::next_game`].
    pub fn next_games(&mut self, count: u64) -> io::Result<Vec<SourceGame>> {
        let mut games = Vec::with_capacity(count.min(1 << 12) as usize);
        while (games.len() as u64) < count {
            match self.next_game()? {
                Some(game) => games.push(game),
                None => break,
            }
        }
        Ok(games)
    }

    /// The next game, `None` at the end of the stream.
    ///
    /// # Errors
    /// Reading the stream failed (a truncated compressed file among others).
    pub fn next_game(&mut self) -> io::Result<Option<SourceGame>> {
        let mut game = SourceGame::default();
        let mut movetext = Movetext::default();
        let mut started = false;
        loop {
            let line_number = if self.pending.is_some() { self.line } else { self.line + 1 };
            let Some(line) = self.next_line()? else { break };
            let text = String::from_utf8_lossy(&line);
            let trimmed = text.trim();
            if movetext.in_comment.is_none() && trimmed.starts_with('%') {
                if started {
                    self.keep(&mut game, &line);
                }
                continue;
            }
            if movetext.in_comment.is_none() && movetext.depth == 0 && trimmed.starts_with('[') {
                if movetext.seen_moves {
                    // A new game's tags with no result before them.
                    self.pending = Some(line);
                    break;
                }
                if !started {
                    game.line = line_number;
                    started = true;
                }
                self.keep(&mut game, &line);
                if let Some(tag) = parse_tag(trimmed) {
                    game.tags.push(tag);
                }
                continue;
            }
            if trimmed.is_empty() && movetext.in_comment.is_none() {
                if started {
                    self.keep(&mut game, &line);
                }
                continue;
            }
            if !started {
                game.line = line_number;
                started = true;
            }
            self.keep(&mut game, &line);
            movetext.seen_moves = true;
            if movetext.feed(&text, line_number, &mut game) {
                break;
            }
        }
        if !started {
            return Ok(None);
        }
        if let Some(opened) = movetext.in_comment {
            game.syntax_error = Some((opened, "a comment opened here is never closed".to_string()));
        }
        self.games += 1;
        game.number = self.games;
        Ok(Some(game))
    }
}

/// `[Name "value"]` with `\"` and `\\` escapes.
fn parse_tag(line: &str) -> Option<(String, String)> {
    let inner = line.strip_prefix('[')?.trim_end().strip_suffix(']')?;
    let (name, rest) = inner.split_once(char::is_whitespace)?;
    let rest = rest.trim().strip_prefix('"')?.strip_suffix('"')?;
    let mut value = String::with_capacity(rest.len());
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        value.push(if c == '\\' { chars.next().unwrap_or('\\') } else { c });
    }
    Some((name.to_string(), value))
}

/// The movetext state carried from line to line.
#[derive(Default)]
struct Movetext {
    seen_moves: bool,
    /// The line a still-open `{` comment began on.
    in_comment: Option<u64>,
    /// Variation depth.
    depth: u32,
}

impl Movetext {
    /// Reads one line of movetext into `game`; true once the result token ends it.
    fn feed(&mut self, text: &str, line: u64, game: &mut SourceGame) -> bool {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if self.in_comment.is_some() {
                let end = text[i..].find('}').map_or(bytes.len(), |e| i + e);
                if self.depth == 0 {
                    append_comment(game, &text[i..end]);
                }
                if end < bytes.len() {
                    self.in_comment = None;
                }
                i = end + 1;
                continue;
            }
            match bytes[i] {
                b'{' => {
                    self.in_comment = Some(line);
                    i += 1;
                }
                b';' => {
                    if self.depth == 0 {
                        append_comment(game, &text[i + 1..]);
                    }
                    return false;
                }
                b'(' => {
                    self.depth += 1;
                    i += 1;
                }
                b')' => {
                    self.depth = self.depth.saturating_sub(1);
                    i += 1;
                }
                // A stray `}` is read past like a separator.
                b if b.is_ascii_whitespace() || b == b'.' || b == b'}' => i += 1,
                _ => {
                    // Never empty: the byte at `i` is none of these.
                    let end = text[i..]
                        .find(|c: char| c.is_ascii_whitespace() || "{}();".contains(c))
                        .map_or(bytes.len(), |e| i + e);
                    let token = &text[i..end];
                    i = end;
                    if self.depth > 0 || token.starts_with('$') {
                        continue;
                    }
                    if matches!(token, "1-0" | "0-1" | "1/2-1/2" | "*") {
                        game.result_token = Some(token.to_string());
                        return true;
                    }
                    // A move number: digits and dots (`12.`, `12...`, or `12` before `.`).
                    let token = token.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
                    // Annotation glyphs may sit before or after the check mark (`Rh1!!#`).
                    let san: String = token.chars().filter(|&c| c != '!' && c != '?').collect();
                    if !san.is_empty() {
                        game.moves.push(SourceMove { san, line, comment: String::new() });
                    }
                }
            }
        }
        false
    }
}

/// Adds comment text to the last move (comments before the first move describe the game).
fn append_comment(game: &mut SourceGame, text: &str) {
    let Some(last) = game.moves.last_mut() else { return };
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    if !last.comment.is_empty() {
        last.comment.push(' ');
    }
    last.comment.push_str(text);
}

/// An eval found in a move's comment, in pawns.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum CommentEval {
    /// cutechess/Fishtest `{+0.76/18 1.813s}` or `{-M5/12}`: the mover's
    /// eval of the position before its move.
    Mover(f32),
    /// Lichess `[%eval 0.17]` or `[%eval #-3]`: White's eval of the
    /// position after the move.
    WhiteAfter(f32),
}

/// The eval in a comment, if it carries one (mates are ±[`super::wdl::MATE_PAWNS`]).
pub fn comment_eval(comment: &str) -> Option<CommentEval> {
    if let Some(at) = comment.find("[%eval") {
        let value = comment[at + 6..].trim_start();
        let value = &value[..value.find([']', ' ', ',']).unwrap_or(value.len())];
        return if let Some(mate) = value.strip_prefix('#') {
            let moves: i32 = mate.parse().ok()?;
            Some(CommentEval::WhiteAfter(if moves < 0 { -super::wdl::MATE_PAWNS } else { super::wdl::MATE_PAWNS }))
        } else {
            value.parse::<f32>().ok().filter(|v| v.is_finite()).map(CommentEval::WhiteAfter)
        };
    }
    let (score, _) = comment.trim_start().split_once('/')?;
    let (sign, magnitude) = match score.as_bytes().first()? {
        b'+' => (1.0, &score[1..]),
        b'-' => (-1.0, &score[1..]),
        _ => (1.0, score),
    };
    if let Some(distance) = magnitude.strip_prefix('M') {
        distance.parse::<u32>().ok()?;
        return Some(CommentEval::Mover(sign * super::wdl::MATE_PAWNS));
    }
    let valid = !magnitude.is_empty()
        && magnitude.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && magnitude.bytes().next().is_some_and(|b| b.is_ascii_digit());
    if !valid {
        return None;
    }
    magnitude.parse::<f32>().ok().map(|v| CommentEval::Mover(sign * v))
}
