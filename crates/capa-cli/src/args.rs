//! Argument groups and value parsers that several commands share.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};
use capa_net::{BackendKind, DeviceSpec, Precision};
use capa_play::{MoveLimit, Sprt};
use capa_rules::GameKind;

/// Where a network runs.
#[derive(clap::Args, Debug)]
pub struct DeviceArgs {
    /// The backend: `cpu`, `wgpu` or `cuda` (the last two need the cargo features of the same name).
    #[arg(long, default_value = "cpu")]
    pub backend: BackendKind,
    /// The device's index on the backend. For wgpu, among the adapters Vulkan (Metal, DX12)
    /// lists, discrete GPUs first, then integrated, virtual, and a CPU-type one such as lavapipe.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// The network's arithmetic: `f32`, or on a GPU backend `f16` or `bf16` (CUDA; wgpu
    /// has no bf16). A device that lacks the type is an error saying so.
    #[arg(long, default_value = "f32")]
    pub precision: Precision,
}

impl DeviceArgs {
    /// The device as capa-net names it.
    pub fn spec(&self) -> DeviceSpec {
        DeviceSpec { backend: self.backend, index: self.device, precision: self.precision }
    }

    /// The same flags for a `capa uci` or `capa gtp` child process.
    pub fn child_args(&self) -> Vec<String> {
        self.spec().child_args()
    }
}

/// How long each move of a match may take; one of the three.
#[derive(clap::Args, Debug)]
#[group(multiple = false)]
pub struct LimitArgs {
    /// Nodes per move (`go nodes`; playouts for a network). The default
    /// limit when none is given: 800.
    #[arg(long)]
    pub nodes: Option<u64>,
    /// Milliseconds per move (`go movetime`).
    #[arg(long)]
    pub movetime: Option<u64>,
    /// A clock per game and player: `BASE+INC` in seconds, such as `10+0.1`.
    /// Running out of time loses.
    #[arg(long, value_parser = parse_clock)]
    pub tc: Option<MoveLimit>,
}

impl LimitArgs {
    /// The limit given, or 800 nodes.
    ///
    /// # Errors
    /// A limit of 0.
    pub fn limit(&self) -> Result<MoveLimit> {
        Ok(match (self.nodes, self.movetime, self.tc) {
            (Some(0), ..) | (_, Some(0), _) => bail!("--nodes and --movetime must be at least 1"),
            (Some(n), ..) => MoveLimit::Nodes(n),
            (_, Some(ms), _) => MoveLimit::MoveTime(ms),
            (_, _, Some(clock)) => clock,
            _ => MoveLimit::Nodes(800),
        })
    }
}

/// A position of a game: `--variant` and `--fen`.
#[derive(clap::Args, Debug)]
pub struct PositionArgs {
    /// The game: capablanca (10x8), chess, go9, go13 or go19.
    #[arg(long)]
    pub variant: GameKind,
    /// The position as FEN; the variant's start position when absent.
    #[arg(long)]
    pub fen: Option<String>,
}

/// `--timeout` as a duration.
///
/// # Errors
/// Not a positive number of seconds.
pub fn seconds(timeout: f64) -> Result<Duration> {
    if !(timeout.is_finite() && timeout > 0.0 && timeout < 1e9) {
        bail!("--timeout must be a positive number of seconds, not {timeout}");
    }
    Ok(Duration::from_secs_f64(timeout))
}

/// Parses a size in bytes: a whole number with `K`, `M` or `G` (powers of
/// 1024) or none, e.g. `2G`, `512M`.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let upper = text.trim().to_ascii_uppercase();
    let (digits, shift) = match upper.chars().last() {
        Some('K') => (&upper[..upper.len() - 1], 10),
        Some('M') => (&upper[..upper.len() - 1], 20),
        Some('G') => (&upper[..upper.len() - 1], 30),
        _ => (upper.as_str(), 0),
    };
    let number: u64 = digits.parse().map_err(|_| format!("{text:?} is not a size: write e.g. 2G, 512M or 1048576"))?;
    number
        .checked_shl(shift)
        .filter(|bytes| bytes >> shift == number && *bytes > 0)
        .ok_or_else(|| format!("{text:?}: a size above 0 and below 16 EiB"))
}

/// Parses `--sprt elo0,elo1[,alpha,beta]`.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_sprt(text: &str) -> Result<Sprt, String> {
    let numbers: Vec<f64> = text
        .split(',')
        .map(|n| n.trim().parse::<f64>().map_err(|_| format!("`{n}` is not a number")))
        .collect::<Result<_, _>>()?;
    let sprt = match numbers[..] {
        [elo0, elo1] => Sprt { elo0, elo1, alpha: 0.05, beta: 0.05 },
        [elo0, elo1, alpha, beta] => Sprt { elo0, elo1, alpha, beta },
        _ => return Err("expected elo0,elo1 or elo0,elo1,alpha,beta".to_string()),
    };
    sprt.validate()?;
    Ok(sprt)
}

/// Parses `--tc BASE+INC` in seconds (e.g. `10+0.1`) into a clock.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_clock(text: &str) -> Result<MoveLimit, String> {
    let (base, increment) = text.split_once('+').unwrap_or((text, "0"));
    let seconds = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e7)
            .map(|v| (v * 1000.0).round() as u64)
            .ok_or_else(|| format!("`{s}` is not a number of seconds"))
    };
    let (base, increment) = (seconds(base)?, seconds(increment)?);
    if base == 0 {
        return Err("the base time must be above 0".to_string());
    }
    Ok(MoveLimit::Clock { base, increment })
}

/// Parses `NAME=VALUE` for `--option-a` and `--option-b`.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_option(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_string(), value.trim().to_string())),
        _ => Err(format!("`{text}`: expected NAME=VALUE")),
    }
}

/// A network file, or the short name of a shipped network (`capablanca-cpu`):
/// a word without a path or extension that is no file here is looked up as
/// `<name>.safetensors` in `$CAPA_NETS`, then in `nets/` of the checkout the
/// executable was built in (`target/release/../../nets`), then in
/// `share/capa/nets` beside an installed executable's `bin/`.
///
/// # Errors
/// A short name found nowhere, with the places looked in.
pub fn network(text: &str) -> Result<PathBuf, String> {
    let mut places: Vec<PathBuf> = std::env::var_os("CAPA_NETS").map(PathBuf::from).into_iter().collect();
    if let Some(bin) = std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)) {
        places.push(bin.join("../../nets"));
        places.push(bin.join("../share/capa/nets"));
    }
    find_network(text, &places)
}

/// [`network`] with the places to look in given.
fn find_network(text: &str, places: &[PathBuf]) -> Result<PathBuf, String> {
    let path = Path::new(text);
    let short = path.components().count() == 1 && path.extension().is_none() && !text.is_empty();
    if path.exists() || !short {
        return Ok(path.to_path_buf());
    }
    let file = format!("{text}.safetensors");
    if let Some(found) = places.iter().map(|place| place.join(&file)).find(|candidate| candidate.is_file()) {
        return Ok(found);
    }
    let looked: Vec<String> = places.iter().map(|p| p.join(&file).display().to_string()).collect();
    Err(format!("no network file `{text}`, and no shipped network of that name (looked in {})", looked.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_their_units() {
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("512m"), Ok(512 << 20));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("1000"), Ok(1000));
        for bad in ["", "G", "-1G", "1.5G", "0", "99999999999G", "2T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_short_name_finds_a_shipped_network() {
        let dir = std::env::temp_dir().join(format!("capa-nets-{}", std::process::id()));
        let (first, second) = (dir.join("first"), dir.join("second"));
        std::fs::create_dir_all(&first).unwrap();
        std::fs::create_dir_all(&second).unwrap();
        std::fs::write(second.join("tiny.safetensors"), b"").unwrap();
        let places = [first.clone(), second.clone()];
        assert_eq!(find_network("tiny", &places), Ok(second.join("tiny.safetensors")));
        // Paths and file names are taken as they are, found or not.
        assert_eq!(find_network("a/b.safetensors", &places), Ok(PathBuf::from("a/b.safetensors")));
        assert_eq!(find_network("x.safetensors", &places), Ok(PathBuf::from("x.safetensors")));
        let error = find_network("huge", &places).unwrap_err();
        assert!(
            error.contains("no shipped network")
                && error.contains(&first.join("huge.safetensors").display().to_string()),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
