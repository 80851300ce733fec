//! `capa net`: network files and checkpoints.

use std::path::PathBuf;

use anyhow::{Context, Result};
use capa_net::{
    Activation, FfnKind, NetConfig, NetFamily, NetFileInfo, NormKind, PolicyHeadKind, Precision, read_net_info,
    slim_net,
};
use clap::Subcommand;

use crate::lc0_net;

/// Inspect network files and training checkpoints.
#[derive(Subcommand, Debug)]
pub enum NetCommand {
    /// Print what a network file or checkpoint holds: file kind, training
    /// step, game, architecture, parameter count and stored precision. The
    /// file is checked as a load would check it (its tensors against its
    /// architecture), without building the network. An Lc0 weights file
    /// (`.pb.gz`) is read as `import-lc0` reads it.
    Info {
        /// A network file (`nets/<hash>.safetensors`), a checkpoint
        /// (`checkpoints/iter-N.safetensors`) or an Lc0 weights file.
        file: PathBuf,
    },
    /// Write a network of the Lc0 family (`preset = "lc0"`) as Lc0's
    /// weights file, which lc0 and its front ends load (`lc0
    /// --weights=FILE`): the classical 112-plane input, the SE-ResNet, the
    /// convolutional policy, WDL and moves-left heads, every layer in
    /// LINEAR16 (16-bit steps between its minimum and maximum), gzip. The
    /// future-move head is capa's training aid and is left out.
    ExportLc0 {
        /// A network file or checkpoint (its EMA weights where it holds them).
        net: PathBuf,
        /// The weights file to write (`.pb.gz`; written atomically).
        #[arg(long)]
        out: PathBuf,
    },
    /// Read Lc0's weights file into a capa network file of the Lc0 family,
    /// which `capa uci`, `capa gui` and a run's `run.init` load. Batch
    /// normalisation in the file is folded into the convolutions as lc0
    /// folds it. What capa cannot hold is refused with the reason: another
    /// input format, an attention body, a dense policy head, a value head
    /// without WDL, no moves-left head.
    ImportLc0 {
        /// An Lc0 weights file (`.pb.gz`, or uncompressed `.pb`).
        file: PathBuf,
        /// The network file to write (`.safetensors`; written atomically).
        #[arg(long)]
        out: PathBuf,
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
                match read_net_info(&file) {
                    Ok(info) => print_info(&file, &info),
                    Err(capa_error) => match capa_lc0::weights::Net::read(&file) {
                        Ok(_) => print_lc0_info(&file)?,
                        Err(_) => return Err(capa_error.into()),
                    },
                }
                Ok(())
            }
            NetCommand::ExportLc0 { net, out } => {
                let converted = lc0_net::export(&net, &out)?;
                let size = std::fs::metadata(&out).with_context(|| out.display().to_string())?.len();
                println!("wrote       {} ({size} bytes, {} tensors)", out.display(), converted.tensors);
                println!("network     {}", describe(&converted.config));
                Ok(())
            }
            NetCommand::ImportLc0 { file, out } => {
                lc0_net::import(&file, &out)?;
                print_info(&out, &read_net_info(&out)?);
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

/// What `capa net info` prints for an Lc0 weights file: the network as
/// `import-lc0` reads it.
fn print_lc0_info(file: &std::path::Path) -> Result<()> {
    let (config, _) = lc0_net::read_lc0(file)?;
    println!("file        {}", file.display());
    println!("kind        Lc0 weights file");
    println!("game        {}", config.game.name());
    println!("network     {}", describe(&config));
    println!("parameters  {}", config.parameter_count());
    Ok(())
}

/// The architecture in one line.
fn describe(c: &NetConfig) -> String {
    if c.family == NetFamily::Lc0 {
        let activation = match c.activation {
            Activation::Mish => "Mish",
            Activation::Relu => "ReLU",
        };
        return format!(
            "Lc0 SE-ResNet: {} channels; {} residual blocks (SE ratio {}); {activation}; 3x3 conv policy head; value \
             head {} channels, {} hidden; moves-left head; future head {}",
            c.channels,
            c.blocks,
            c.se_ratio,
            c.value_channels,
            c.value_hidden,
            if c.future_head { "on" } else { "off" }
        );
    }
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
