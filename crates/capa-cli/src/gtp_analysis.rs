//! The analysis commands Go front ends speak over GTP (Leela Zero's
//! `lz-analyze` and KataGo's `kata-analyze`, and their `genmove_analyze`
//! forms): what they ask for, and the `info` lines that answer, as KataGo's
//! GTP extensions document them.
//!
//! An analysis line holds one `info` record per root move, best first:
//! `info move E5 visits 120 winrate 5120 prior 2210 lcb 4990 order 0 pv E5 D4`.
//! `lz-analyze` gives the win rate, prior and LCB as integers out of 10,000;
//! `kata-analyze` as floats in `[0, 1]`, with the move's `utility` (its
//! win-minus-loss value) and, from a network with the score head, its score
//! lead; with `ownership true` (a network with the ownership head) the line
//! ends with `ownership` and each point's value. Every value is for the
//! player the analysis is for.

use std::time::Duration;

use anyhow::{Result, bail};
use capa_mcts::{MoveInfo, SearchResult};
use capa_net::Territory;
use capa_rules::{Color, Game};

/// Which front end's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Leela Zero's: values out of 10,000.
    Lz,
    /// KataGo's: values as floats.
    Kata,
}

/// What an analysis command asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The format of the lines.
    pub dialect: Dialect,
    /// The player to analyse for (by default the side to move).
    pub color: Option<Color>,
    /// Time between lines; `None` (interval 0 or none given) writes none
    /// while searching, so only `genmove_analyze`'s move ends the answer.
    pub interval: Option<Duration>,
    /// At least this many moves per line, unvisited ones by prior if need be.
    pub min_moves: usize,
    /// At most this many moves per line.
    pub max_moves: usize,
    /// Whether each line ends with the ownership of every point.
    pub ownership: bool,
}

/// Parses `[player] [interval] KEY VALUE ...` (the interval in
/// centiseconds), as KataGo's GTP extensions define the arguments.
///
/// # Errors
/// A syntax error naming the word: a number that is not one, a key without
/// its value, or a key capa does not implement (`allow`, `avoid`).
pub fn parse_request(dialect: Dialect, args: &[&str], parse_color: impl Fn(&str) -> Result<Color>) -> Result<Request> {
    let mut request =
        Request { dialect, color: None, interval: None, min_moves: 0, max_moves: usize::MAX, ownership: false };
    let mut rest = args;
    if let [first, tail @ ..] = rest
        && first.parse::<u64>().is_err()
        && !is_key(first)
    {
        request.color = Some(parse_color(first)?);
        rest = tail;
    }
    if let [first, tail @ ..] = rest
        && let Ok(centiseconds) = first.parse::<u64>()
    {
        request.interval = interval(centiseconds);
        rest = tail;
    }
    while let [key, tail @ ..] = rest {
        let [value, tail @ ..] = tail else { bail!("syntax error: '{key}' needs a value") };
        let number = || -> Result<u64> {
            value.parse::<u64>().map_err(|_| anyhow::anyhow!("syntax error: {key} '{value}' is not a whole number"))
        };
        match *key {
            "interval" => request.interval = interval(number()?),
            "minmoves" => request.min_moves = usize::try_from(number()?).unwrap_or(usize::MAX),
            "maxmoves" => request.max_moves = usize::try_from(number()?).unwrap_or(usize::MAX),
            "ownership" => match *value {
                "false" => request.ownership = false,
                "true" => request.ownership = true,
                _ => bail!("syntax error: ownership '{value}' is not true or false"),
            },
            "allow" | "avoid" => bail!("{key} is not supported: analyse without it"),
            _ => bail!("syntax error: unknown key '{key}' (interval, minmoves, maxmoves, ownership)"),
        }
        rest = tail;
    }
    Ok(request)
}

fn is_key(word: &str) -> bool {
    ["interval", "minmoves", "maxmoves", "ownership", "allow", "avoid"].contains(&word)
}

fn interval(centiseconds: u64) -> Option<Duration> {
    (centiseconds > 0).then(|| Duration::from_millis(centiseconds.saturating_mul(10)))
}

/// A win rate in `[0, 1]` from a win-minus-loss value, a draw counting half.
fn winrate(q: f32) -> f64 {
    ((1.0 + f64::from(q)) / 2.0).clamp(0.0, 1.0)
}

/// The lower confidence bound of a win rate `w` over `visits`: the normal
/// approximation of a binomial's 95% bound, `w - 1.96 sqrt(w (1 - w) / n)`,
/// 0 for an unvisited move. (Leela Zero's uses each node's value variance,
/// which capa's tree does not keep; this bound ranks moves the same way:
/// more visits, a tighter bound.)
fn lcb(w: f64, visits: u32) -> f64 {
    if visits == 0 {
        return 0.0;
    }
    (w - 1.96 * (w * (1.0 - w) / f64::from(visits)).sqrt()).max(0.0)
}

/// How many of `result`'s moves a line shows: the visited ones, then
/// unvisited ones by prior up to `min_moves`, at most `max_moves` in all.
pub fn shown_moves<G: Game>(request: &Request, result: &SearchResult<G>) -> usize {
    let visited = result.moves.iter().filter(|m| m.visits > 0).count();
    visited.max(request.min_moves).min(request.max_moves).min(result.moves.len())
}

/// One analysis line for `result`: its [`shown_moves`] best first (an
/// unvisited move shows the root's win rate), with `territory`'s score
/// leads after the shown moves (`kata-analyze`) and its ownership, written
/// row by row from the top-left (A19 on 19x19) as KataGo writes it. Empty
/// when there is no move to show.
pub fn analysis_line<G: Game>(request: &Request, result: &SearchResult<G>, territory: &Territory) -> String {
    let records: Vec<String> = result
        .moves
        .iter()
        .take(shown_moves(request, result))
        .enumerate()
        .map(|(order, m)| record(request.dialect, m, order, result.q, territory.leads.get(order + 1)))
        .collect();
    if records.is_empty() {
        return String::new();
    }
    let mut line = records.join(" ");
    if !territory.ownership.is_empty() {
        let side = territory.ownership.len().isqrt();
        let values: Vec<String> = (0..side)
            .rev()
            .flat_map(|row| &territory.ownership[row * side..(row + 1) * side])
            .map(|v| format!("{v:.6}"))
            .collect();
        line.push_str(" ownership ");
        line.push_str(&values.join(" "));
    }
    line
}

fn record<G: Game>(dialect: Dialect, m: &MoveInfo<G>, order: usize, root_q: f32, lead: Option<&(f32, f32)>) -> String {
    let q = if m.visits > 0 { m.q } else { root_q };
    let w = winrate(q);
    let bound = lcb(w, m.visits);
    let pv: Vec<String> =
        if m.pv.is_empty() { vec![m.mv.to_string()] } else { m.pv.iter().map(ToString::to_string).collect() };
    let prior = f64::from(m.prior);
    let values = match dialect {
        Dialect::Lz => {
            let scaled = |x: f64| (x * 10_000.0).round() as i64;
            format!("winrate {} prior {} lcb {}", scaled(w), scaled(prior), scaled(bound))
        }
        Dialect::Kata => {
            // KataGo's scoreMean is its scoreLead, kept for older tools.
            let score = lead.map_or_else(String::new, |(lead, spread)| {
                format!(" scoreMean {lead:.6} scoreStdev {spread:.6} scoreLead {lead:.6}")
            });
            format!("utility {q:.6} winrate {w:.6}{score} prior {prior:.6} lcb {bound:.6}")
        }
    };
    format!("info move {} visits {} {values} order {order} pv {}", m.mv, m.visits, pv.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn color(text: &str) -> Result<Color> {
        match text {
            "b" | "B" => Ok(Color::Black),
            "w" | "W" => Ok(Color::White),
            _ => bail!("syntax error: '{text}' is not a color"),
        }
    }

    #[test]
    fn requests_parse_as_the_front_ends_send_them() {
        let parse = |args: &[&str]| parse_request(Dialect::Kata, args, color);
        let plain = parse(&[]).unwrap();
        assert_eq!((plain.color, plain.interval, plain.min_moves, plain.max_moves), (None, None, 0, usize::MAX));
        let sabaki = parse(&["B", "50"]).unwrap();
        assert_eq!((sabaki.color, sabaki.interval), (Some(Color::Black), Some(Duration::from_millis(500))));
        let lizzie = parse(&["10"]).unwrap();
        assert_eq!((lizzie.color, lizzie.interval), (None, Some(Duration::from_millis(100))));
        let keys = parse(&["w", "interval", "20", "minmoves", "3", "maxmoves", "5", "ownership", "false"]).unwrap();
        assert_eq!(
            (keys.color, keys.interval, keys.min_moves, keys.max_moves),
            (Some(Color::White), Some(Duration::from_millis(200)), 3, 5)
        );
        assert_eq!(parse(&["0"]).unwrap().interval, None);
        assert!(parse(&["ownership", "true"]).unwrap().ownership);
        assert!(!keys.ownership);
        for (args, error) in [
            (&["x"][..], "'x' is not a color"),
            (&["10", "minmoves"][..], "'minmoves' needs a value"),
            (&["maxmoves", "many"][..], "maxmoves 'many' is not a whole number"),
            (&["ownership", "yes"][..], "ownership 'yes'"),
            (&["avoid", "b"][..], "avoid is not supported"),
            (&["10", "rootInfo", "true"][..], "unknown key 'rootInfo'"),
        ] {
            let e = format!("{:#}", parse(args).unwrap_err());
            assert!(e.contains(error), "{args:?}: {e}");
        }
    }

    #[test]
    fn the_lower_bound_tightens_with_visits() {
        assert_eq!(lcb(0.6, 0), 0.0);
        assert!(lcb(0.6, 10) < lcb(0.6, 100));
        assert!(lcb(0.6, 100) < 0.6);
        assert_eq!(lcb(0.01, 1), 0.0);
        assert_eq!(winrate(1.0), 1.0);
        assert_eq!(winrate(-1.0), 0.0);
    }
}
