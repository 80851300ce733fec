//! `capa plot`: a run's metrics as PNG plots.

use std::path::PathBuf;

use anyhow::Result;
use capa_gui::XAxis;

/// Draws every metric of a run's `metrics.jsonl` (losses per head, learning
/// rate, self-play speed, results and game lengths, `[eval]` and curriculum
/// Elo, with the Elo's interval as a band) as one PNG file each, the same
/// plots `capa gui --run` shows.
#[derive(clap::Args, Debug)]
pub struct PlotCommand {
    /// The run: its directory or object-store URL, as `capa-train` takes it.
    run: PathBuf,
    /// The folder for the images (`<metric>.png`, created if missing).
    #[arg(long)]
    out: PathBuf,
    /// The horizontal axis: `iteration`, or `hours` of the run's self-play,
    /// training and checkpoints.
    #[arg(long, default_value = "iteration", value_parser = parse_axis)]
    x: XAxis,
}

fn parse_axis(text: &str) -> Result<XAxis, String> {
    match text {
        "iteration" => Ok(XAxis::Iteration),
        "hours" => Ok(XAxis::Hours),
        _ => Err(format!("'{text}' is not 'iteration' or 'hours'")),
    }
}

impl PlotCommand {
    /// Writes the plots and says how many.
    ///
    /// # Errors
    /// A run that cannot be read or has no metrics, or a folder that cannot be written.
    pub fn run(&self) -> Result<()> {
        let run = capa_rundir::RunDir::open(&self.run)?;
        let written = capa_gui::write_plots(&run, &self.out, self.x)?;
        println!("wrote {} plots to {}", written.len(), self.out.display());
        Ok(())
    }
}
