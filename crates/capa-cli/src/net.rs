//! `capa net`: network files and checkpoints.

use std::path::PathBuf;

use anyhow::{Context, Result};
use capa_net::{FfnKind, NetConfig, NetFileInfo, NormKind, PolicyHeadKind, Precision, read_net_info, slim_net};
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
    /// Write a slim network file: only what play needs (the EMA weights
    /// where a checkpoint holds them, else its weights; the architecture;
    /// the checkpoint's step), optionally in half precision. `capa play`,
    /// `capa uci` and a run's `run.init` read it like any network file.
    Slim {
        /// A checkpoint or network file.
        input: PathBuf,
        /// Where to write the slim file (written atomically).
        #[arg(long)]
        out: PathBuf,
        /// The stored float type: `f32` (exact), `f16` or `bf16` (half the
        /// size; the weights are rounded, which moves the network's outputs
        /// by about 1e-3).
        #[arg(long, default_value = "f32")]
        precision: Precision,
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
                print_info(&file, &read_net_info(&file)?);
                Ok(())
            }
            NetCommand::Slim { input, out, precision } => {
                let before = std::fs::metadata(&input).with_context(|| input.display().to_string())?.len();
                let info = slim_net(&input, &out, precision)?;
                let after = std::fs::metadata(&out).with_context(|| out.display().to_string())?.len();
                print_info(&out, &info);
                println!(
                    "size        {after} bytes ({:.1}% of {})",
                    100.0 * after as f64 / before as f64,
                    input.display()
                );
                Ok(())
            }
        }
    }
}

/// What `capa net info` prints.
fn print_info(file: &std::path::Path, info: &NetFileInfo) {
    let kind = match (info.step, info.source_step) {
        (Some(step), _) => {
            format!("training checkpoint after {step} steps{}", if info.ema { ", with EMA weights" } else { "" })
        }
        (None, Some(step)) => format!("slim network file, from a checkpoint after {step} steps"),
        (None, None) => "network file".to_string(),
    };
    println!("file        {}", file.display());
    println!("kind        {kind}");
    println!("game        {}", info.config.game.name());
    println!("network     {}", describe(&info.config));
    println!("parameters  {}", info.parameters);
    println!("precision   {}", info.precision);
}

/// The architecture in one line.
fn describe(c: &NetConfig) -> String {
    let policy = match c.policy_head {
        PolicyHeadKind::Dense => "dense",
        PolicyHeadKind::Conv => "conv",
    };
    let mut transformer = vec![format!("{} heads", c.heads)];
    transformer.push(match c.ffn {
        FfnKind::Mish => format!("Mish FFN x{}", c.ffn_multiplier),
        FfnKind::Swiglu => format!("SwiGLU FFN x{}", c.ffn_multiplier),
    });
    transformer.push(
        match c.norm {
            NormKind::Layer => "LayerNorm",
            NormKind::Rms => "RMSNorm",
        }
        .to_string(),
    );
    if c.qk_norm {
        transformer.push("QK-norm".to_string());
    }
    if !c.qkv_bias {
        transformer.push("no QKV bias".to_string());
    }
    if c.position_embedding {
        transformer.push("position embedding".to_string());
    }
    format!(
        "{} channels; {} residual blocks (SE ratio {}, {} groups); {} transformer blocks ({}); {policy} policy head; \
         value head {} channels, {} hidden; future head {}",
        c.channels,
        c.blocks,
        c.se_ratio,
        c.groups,
        c.transformer_blocks,
        transformer.join(", "),
        c.value_channels,
        c.value_hidden,
        if c.future_head { "on" } else { "off" }
    )
}
