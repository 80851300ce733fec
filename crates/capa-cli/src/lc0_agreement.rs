//! `capa bench lc0-agreement`: lc0 itself as the oracle of an exported
//! network. Positions from real games go to lc0 (with the `.pb.gz`) and to
//! `capa uci` (with the network it was exported from), each at `go nodes 1`
//! with VerboseMoveStats on; the priors of every legal move and the
//! network's value are compared.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use capa_lc0::{PgnReader, open_pgn};
use capa_uci::{Go, UciEngine};
use shakmaty::san::San;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Position};

/// What one engine said about one position at one node.
#[derive(Debug, Default)]
struct Verdict {
    /// Each legal move's prior, in percent, by UCI move.
    priors: Vec<(String, f64)>,
    /// The network's value for the side to move, win minus loss.
    q: f64,
    /// Its draw probability.
    d: f64,
}

/// The largest differences over the positions compared.
#[derive(Debug, Default)]
pub struct Agreement {
    /// Positions compared.
    pub positions: usize,
    /// Moves compared.
    pub moves: usize,
    /// The largest difference of a move's prior, percentage points.
    pub policy_pp: f64,
    /// The largest difference of the value (win minus loss).
    pub value: f64,
    /// The largest difference of the draw probability.
    pub draw: f64,
    /// Where the largest policy difference is: the position and the move.
    pub policy_at: String,
    /// Where the largest value difference is: the position, capa's and lc0's values.
    pub value_at: String,
}

/// Compares lc0 (`lc0`, a command with its `--weights=`) and `capa uci
/// --net NET` on up to `positions` positions: every `every`-th ply of the
/// games in `pgn`, each given with its moves from the start (so both see
/// the same history). lc0's policy temperature is set to 1, as capa's, and
/// its cache off; capa's mate-in-one proofs are off.
///
/// # Errors
/// A PGN that cannot be read, an illegal move in it, an engine that does
/// not start or answer, or an answer that lacks a move's prior or the
/// root's value.
pub fn compare(lc0: &str, net: &Path, pgn: &[PathBuf], positions: usize, every: usize) -> Result<Agreement> {
    let games = positions_from(pgn, positions, every.max(1))?;
    let mut lc0 = UciEngine::start(lc0).with_context(|| format!("cannot start `{lc0}`"))?;
    lc0.set_option("VerboseMoveStats", "true")?;
    lc0.set_option("PolicyTemperature", "1")?;
    // lc0's cache keys a position without its history (CacheHistoryLength
    // 0): a transposition would answer with another game's evaluation.
    lc0.set_option("NNCacheSize", "0")?;
    lc0.ready()?;
    let program = std::env::current_exe().context("cannot find the capa program")?;
    let net_arg = net.display().to_string();
    let mut capa =
        UciEngine::launch(&program, &["uci", "--net", net_arg.as_str()], std::time::Duration::from_secs(60))?;
    capa.set_option("VerboseMoveStats", "true")?;
    // A mate in one proven at the root would replace the network's value.
    capa.set_option("ProveMateInOne", "false")?;
    capa.ready()?;
    let mut agreement = Agreement::default();
    for position in &games {
        let theirs = lc0_verdict(&lc0.go(position, Go::Nodes(1))?.strings)
            .with_context(|| format!("lc0 on `position {position}`"))?;
        let ours = capa_verdict(&capa.go(position, Go::Nodes(1))?.strings)
            .with_context(|| format!("capa on `position {position}`"))?;
        if theirs.priors.len() != ours.priors.len() {
            bail!("`position {position}`: lc0 lists {} moves, capa {}", theirs.priors.len(), ours.priors.len());
        }
        for (mv, prior) in &ours.priors {
            // The same text, else the castling form lc0 writes.
            let found = |wanted: &str| theirs.priors.iter().find(|(m, _)| m == wanted);
            let Some((_, other)) = found(mv).or_else(|| found(&king_takes_rook(mv))) else {
                bail!("`position {position}`: capa lists {mv}, lc0 does not");
            };
            if (prior - other).abs() > agreement.policy_pp {
                agreement.policy_pp = (prior - other).abs();
                agreement.policy_at = format!("{position}: {mv} {prior}% against lc0's {other}%");
            }
        }
        if (ours.q - theirs.q).abs() > agreement.value {
            agreement.value = (ours.q - theirs.q).abs();
            agreement.value_at = format!("{position}: {} against lc0's {}", ours.q, theirs.q);
        }
        agreement.draw = agreement.draw.max((ours.d - theirs.d).abs());
        agreement.moves += ours.priors.len();
        agreement.positions += 1;
    }
    Ok(agreement)
}

/// A castling move as lc0's VerboseMoveStats writes it (the king takes its
/// rook, `e1h1`), from UCI's `e1g1` (for a move that is not a rook's
/// on the same squares).
fn king_takes_rook(mv: &str) -> String {
    match mv {
        "e1g1" => "e1h1",
        "e1c1" => "e1a1",
        "e8g8" => "e8h8",
        "e8c8" => "e8a8",
        other => other,
    }
    .to_string()
}

/// `startpos moves ...` for every `every`-th ply of the games, up to `limit`.
fn positions_from(pgn: &[PathBuf], limit: usize, every: usize) -> Result<Vec<String>> {
    let mut positions = Vec::new();
    for path in pgn {
        let mut reader = PgnReader::new(open_pgn(path).with_context(|| format!("cannot read {}", path.display()))?);
        while let Some(game) = reader.next_game().with_context(|| format!("cannot read {}", path.display()))? {
            let mut board = Chess::default();
            let mut moves: Vec<String> = Vec::new();
            for (ply, source) in game.moves.iter().enumerate() {
                let at = || format!("{}:{}: {}", path.display(), source.line, source.san);
                let san: San = source.san.parse().with_context(|| format!("{}: not SAN", at()))?;
                let played = san.to_move(&board).with_context(|| format!("{}: illegal here", at()))?;
                moves.push(UciMove::from_move(played, CastlingMode::Standard).to_string());
                board.play_unchecked(played);
                if ply % every == every / 2 && !board.legal_moves().is_empty() {
                    positions.push(format!("startpos moves {}", moves.join(" ")));
                    if positions.len() == limit {
                        return Ok(positions);
                    }
                }
            }
        }
    }
    Ok(positions)
}

/// lc0's VerboseMoveStats: `e2e4  (322 ) N: ... (P: 12.34%) ...` per move,
/// then `node  (...) ... (WL: -0.01234) (D: 0.567) ...`.
fn lc0_verdict(lines: &[String]) -> Result<Verdict> {
    let field = |line: &str, name: &str| -> Option<f64> {
        let start = line.find(&format!("({name}:"))? + name.len() + 2;
        let rest = &line[start..];
        rest[..rest.find(')')?].trim().trim_end_matches('%').parse().ok()
    };
    let mut verdict = Verdict::default();
    let mut root = false;
    for line in lines {
        let name = line.split_whitespace().next().unwrap_or_default();
        if name == "node" {
            verdict.q = field(line, "WL").context("a node line without WL")?;
            verdict.d = field(line, "D").context("a node line without D")?;
            root = true;
        } else if let Some(prior) = field(line, "P") {
            verdict.priors.push((name.to_string(), prior));
        }
    }
    if !root {
        bail!("no `node` line (is VerboseMoveStats on?)");
    }
    Ok(verdict)
}

/// capa's VerboseMoveStats: `e2e4 visits 0 prior 12.34% q ...` per move,
/// then `node visits 1 q -0.01234 d 0.56700 m 80.1`.
fn capa_verdict(lines: &[String]) -> Result<Verdict> {
    let mut verdict = Verdict::default();
    let mut root = false;
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let after = |key: &str| -> Option<f64> {
            let at = words.iter().position(|w| *w == key)?;
            words.get(at + 1)?.trim_end_matches('%').parse().ok()
        };
        match words.first() {
            Some(&"node") => {
                verdict.q = after("q").context("a node line without q")?;
                verdict.d = after("d").context("a node line without d")?;
                root = true;
            }
            Some(mv) => verdict.priors.push((mv.to_string(), after("prior").context("a move without its prior")?)),
            None => {}
        }
    }
    if !root {
        bail!("no `node` line");
    }
    Ok(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as lc0 0.33 prints them.
    #[test]
    fn reads_lc0s_verbose_move_stats() {
        let lines = [
            "f8a3  (143 ) N:       0 (+ 0) (P:  0.55%) (WL:  -.-----) (D: -.---) (M:  -.-) (Q: -0.00142) (U: 0.00954) \
             (S:  0.00812) (V:  -.----) ",
            "g8f6  (159 ) N:       0 (+ 0) (P: 10.58%) (WL:  -.-----) (D: -.---) (M:  -.-) (Q: -0.00142) (U: 0.18464) \
             (S:  0.18322) (V:  -.----) ",
            "node  (  29) N:       1 (+ 0) (P:  0.00%) (WL: -0.00138) (D: 0.629) (M: 80.8) (Q: -0.00138) (V: -0.0014) ",
        ]
        .map(String::from);
        let verdict = lc0_verdict(&lines).unwrap();
        assert_eq!(verdict.priors, vec![("f8a3".to_string(), 0.55), ("g8f6".to_string(), 10.58)]);
        assert_eq!((verdict.q, verdict.d), (-0.00138, 0.629));
        assert!(lc0_verdict(&lines[..2]).is_err());
    }
}
