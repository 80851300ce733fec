//! `capa gui`: the web GUI on a local port.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::PathBuf;

use anyhow::{Context, Result};
use capa_gui::{Gui, GuiOptions};

use crate::args::DeviceArgs;

/// A web GUI in the browser: an analysis board for Capablanca chess, chess
/// and Go on 9x9, 13x13 and 19x19 (moves with variations; FEN, PGN and SGF
/// in and out; Go's passes, captures and prisoners), live analysis by the
/// network (every root move's N, P, Q, D, WDL and M, principal variations,
/// an eval bar and a win-rate graph, CPuct and contempt; arrows on a chess
/// board; on a Go board the candidate moves with their win rates, the PV of
/// the hovered move and, from a network with Go's heads, score leads and
/// an ownership map), play against the network, an opening explorer and
/// game browser over PGN and SGF files or a run's games, and a run's
/// dashboard (every metric of `metrics.jsonl` plotted as the run goes, its
/// latest games).
///
/// The page's files are in the binary: it works offline. It listens on
/// loopback unless `--host` says otherwise, and serves no file from disk
/// but through its API. The explorer's index is built on first use and
/// kept in `--index-dir`, rebuilt when the games change.
#[derive(clap::Args, Debug)]
pub struct GuiArgs {
    /// A network to analyse and play with, of any game: a file capa wrote,
    /// or a shipped network's short name (`capablanca-cpu`). Without it, the `--run`'s
    /// latest network; without either, the board, the explorer and the
    /// dashboard still work.
    #[arg(long, value_parser = crate::args::network)]
    net: Option<PathBuf>,
    /// A training run for the dashboard and the explorer: its directory or
    /// object-store URL, as `capa-train` takes it.
    #[arg(long)]
    run: Option<PathBuf>,
    /// Game files for the explorer: PGN (`.pgn` or `.pgn.gz`; chess, or
    /// Capablanca games with a `Variant "Capablanca"` tag) and SGF (`.sgf`
    /// or `.sgf.gz`; Go on 9x9, 13x13 and 19x19, each game's main line). A
    /// game that does not replay is skipped with a warning.
    #[arg(long, num_args = 1..)]
    games: Vec<PathBuf>,
    /// The port to listen on (0: any free one).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// The address to listen on. Anything but loopback lets other machines
    /// use the GUI and its network: a warning says so.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Where the explorer keeps its indexes [default: $XDG_CACHE_HOME/capa/explorer,
    /// or ~/.cache/capa/explorer].
    #[arg(long)]
    index_dir: Option<PathBuf>,
    /// The memory building an index holds at most (`2G`, `512M`): the
    /// positions beyond it are sorted into runs in --index-dir and merged
    /// (the index is the same).
    #[arg(long, default_value = "1G", value_parser = crate::args::parse_size)]
    index_memory: u64,
    #[command(flatten)]
    device: DeviceArgs,
}

/// Where indexes go by default.
fn default_index_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("capa").join("explorer")
}

/// Loads what the GUI was given and serves it until the process ends.
///
/// # Errors
/// A network, run or PGN file that cannot be read, or a port that cannot be bound.
pub fn run(args: &GuiArgs) -> Result<()> {
    let options = GuiOptions {
        net: args.net.clone(),
        device: args.device.spec(),
        run: args.run.clone(),
        games: args.games.clone(),
        index_dir: args.index_dir.clone().unwrap_or_else(default_index_dir),
        index_memory: args.index_memory,
    };
    let address = SocketAddr::new(args.host, args.port);
    let listener = TcpListener::bind(address).with_context(|| {
        format!("cannot listen on {address}: is another program using the port? Try --port with another number")
    })?;
    let gui = Gui::open(&options)?;
    if !args.host.is_loopback() {
        eprintln!(
            "warning: listening on {address}: anyone who reaches this machine can use the GUI and run searches on it"
        );
    }
    let bound = listener.local_addr().context("cannot read the bound address")?;
    let shown = if args.host.is_unspecified() { SocketAddr::new([127, 0, 0, 1].into(), bound.port()) } else { bound };
    println!("capa gui: open http://{shown}/ (Ctrl-C stops it)");
    gui.serve(listener)
}
