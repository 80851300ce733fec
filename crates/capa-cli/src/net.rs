//! `capa net`: network files and checkpoints.

use std::path::PathBuf;

use anyhow::Result;
use capa_net::{PolicyHeadKind, read_net_info};
use clap::Subcommand;

/// Inspect network files and training checkpoints.
#[derive(Subcommand, Debug)]
pub enum NetCommand {
    /// Print what a network file or checkpoint holds: file kind, training
    /// step, game, architecture, parameter count and stored precision. The
    /// file is checked as a load would check it (its tensors against its
    /// architecture), without building the network.
    Info {
        /// A network file (`nets/<hash>.safetensors`) or a checkpoint
        /// (`checkpoints/iter-N.safetensors`).
        file: PathBuf,
    },
}

impl NetCommand {
    /// Runs the command.
    ///
    /// # Errors
    /// A file that cannot be read or is not a capa network.
    pub fn run(self) -> Result<()> {
        match self {
            NetCommand::Info { file } => {
                let info = read_net_info(&file)?;
                let c = &info.config;
                let kind = match (info.checkpoint, info.step) {
                    (true, Some(step)) => format!(
                        "training checkpoint after {step} steps{}",
                        if info.ema { ", with EMA weights" } else { "" }
                    ),
                    _ => "network file".to_string(),
                };
                let policy = match c.policy_head {
                    PolicyHeadKind::Dense => "dense",
                    PolicyHeadKind::Conv => "conv",
                };
                println!("file        {}", file.display());
                println!("kind        {kind}");
                println!("game        {}", c.game.name());
                println!(
                    "network     {} channels; {} residual blocks (SE ratio {}, {} groups); {} transformer blocks \
                     ({} heads, FFN x{}); {policy} policy head; future head {}",
                    c.channels,
                    c.blocks,
                    c.se_ratio,
                    c.groups,
                    c.transformer_blocks,
                    c.heads,
                    c.ffn_multiplier,
                    if c.future_head { "on" } else { "off" }
                );
                println!("parameters  {}", info.parameters);
                println!("precision   f32");
                Ok(())
            }
        }
    }
}
