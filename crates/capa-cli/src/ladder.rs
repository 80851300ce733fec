//! `capa ladder`: calibrates a ladder file (capa-play's [`calibrate`]) and
//! prints its rungs.

use std::path::PathBuf;

use anyhow::Result;
use capa_play::{Ladder, PairPlayed, calibrate};
use capa_rules::Game;

use crate::args::seconds;

/// Calibrates a ladder: opponents of fixed strength on one Elo scale.
///
/// Plays the calibration matches the file lacks (each rung against the
/// next `calibration.reach` rungs, `calibration.games` games from seeded
/// random openings), rewriting the file after each match so that an
/// interrupted calibration resumes where it stopped; then fits every
/// rung's Elo at once by maximum likelihood, the anchor rung held at
/// `anchor_elo`, and writes the Elo and its 95% interval into each rung.
/// Prints `pair N/M: A - B: +W =D -L` per match, then one line per rung.
/// With every match already played it only refits.
#[derive(clap::Args, Debug)]
pub struct LadderCommand {
    /// The ladder file (configs/ladder-capablanca.toml).
    pub file: PathBuf,
    /// Replay every calibration match, dropping the ones in the file.
    #[arg(long)]
    pub fresh: bool,
    /// Games played at once (each rung gets this many engine processes).
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Seconds an engine may take to answer before it forfeits the game.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
}

impl LadderCommand {
    /// Calibrates the file in place and prints the rungs.
    ///
    /// # Errors
    /// A bad ladder file, an engine that cannot start, a failed match.
    pub fn run(self) -> Result<()> {
        let mut ladder = Ladder::read(&self.file)?;
        if self.fresh {
            ladder.matches.clear();
        }
        capa_rules::for_game!(ladder.game, G => self.calibrate::<G>(&mut ladder)?);
        for rung in &ladder.rungs {
            let (elo, low, high) =
                (rung.elo.unwrap_or(f64::NAN), rung.low.unwrap_or(f64::NAN), rung.high.unwrap_or(f64::NAN));
            println!("{:<16} Elo {elo:>5.0} (95%: {low:.0} to {high:.0})", rung.name);
        }
        Ok(())
    }

    fn calibrate<G: Game>(&self, ladder: &mut Ladder) -> Result<()> {
        let (file, timeout) = (&self.file, seconds(self.timeout)?);
        calibrate::<G>(
            ladder,
            self.concurrency,
            timeout,
            &mut |ladder| ladder.write(file),
            &mut |_, _, _| {},
            &mut |played: PairPlayed| {
                let m = played.result;
                let (number, pairs) = played.number;
                println!("pair {number}/{pairs}: {} - {}: +{} ={} -{}", m.first, m.second, m.wins, m.draws, m.losses);
            },
        )
    }
}
