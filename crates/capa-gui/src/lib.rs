//! capa's web GUI: a local web server and the single page it serves (an
//! analysis board for chess, Capablanca chess and Go with live search, play
//! against the network, an opening explorer over game archives, a training
//! run's dashboard). The page's
//! files are compiled into the binary, so it works offline. The
//! dashboard's plots also come as PNG files ([`write_plots`], `capa plot`).
//!
//! [`Gui::open`] loads what the GUI was given (a network, a run, PGN
//! files: their explorer index is built once and kept on disk);
//! [`Gui::serve`] answers on a listener until the process ends.

#![deny(missing_docs)]

mod analysis;
mod archive;
mod error;
mod explorer;
mod games;
mod plot;
mod position;
mod server;
mod sheet;

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use anyhow::{Context, Result};
use capa_net::DeviceSpec;

pub use archive::GameMeta;
pub use explorer::{
    DEFAULT_INDEX_MEMORY, Explorer, IndexBuilder, LISTED_GAMES, Lookup, MoveCounts, NO_MOVE, StoredGame,
};
pub use plot::{XAxis, write_plots};
pub use server::MAX_SEARCHES;
pub use sheet::{BoardPicture, contact_sheet};

/// What the GUI is started with.
#[derive(Clone, Debug)]
pub struct GuiOptions {
    /// A network to analyse and play with; without it, the run's latest.
    pub net: Option<PathBuf>,
    /// Where the network runs.
    pub device: DeviceSpec,
    /// A run directory (or object-store URL) for the dashboard and the explorer.
    pub run: Option<PathBuf>,
    /// PGN and SGF files for the explorer.
    pub games: Vec<PathBuf>,
    /// Where the explorer's indexes are kept.
    pub index_dir: PathBuf,
    /// The memory an index build holds at most (bytes); the rest goes to
    /// sorted runs beside the index.
    pub index_memory: u64,
}

/// The GUI, loaded and ready to serve.
pub struct Gui {
    state: Arc<server::AppState>,
}

impl Gui {
    /// Loads the network, opens the run and builds (or opens) the explorer's index.
    ///
    /// # Errors
    /// A network, run or PGN file that cannot be read.
    pub fn open(options: &GuiOptions) -> Result<Gui> {
        let run = match &options.run {
            Some(location) => {
                let run = capa_rundir::RunDir::open(location)?;
                let game = run.game()?;
                Some((Arc::new(run), game))
            }
            None => None,
        };
        // Without --net, the run's latest network, if it has one yet.
        let net = match (&options.net, &run) {
            (Some(path), _) => {
                Some((path.file_name().unwrap_or(path.as_os_str()).to_string_lossy().into_owned(), path.clone()))
            }
            (None, Some((run, _))) => archive::latest_network(run)?,
            (None, None) => None,
        };
        let network = net.as_ref().map(|(_, path)| analysis::Network::load(path, options.device)).transpose()?;
        let sources = explorer::Sources { files: &options.games, run: run.as_ref().map(|(run, game)| (&**run, *game)) };
        let explorers = explorer::open_or_build(&sources, &options.index_dir, options.index_memory)
            .context("cannot build the explorer's index")?;
        let network_name = net.map(|(name, _)| name);
        Ok(Gui {
            state: Arc::new(server::AppState {
                network,
                network_name,
                explorers,
                run,
                searches: Arc::new(AtomicUsize::new(0)),
            }),
        })
    }

    /// Serves the page and the API on `listener` until the process ends.
    ///
    /// # Errors
    /// The failure to start the server's runtime or to accept connections.
    pub fn serve(self, listener: TcpListener) -> Result<()> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("capa-gui")
            .enable_all()
            .build()
            .context("cannot start the server's runtime")?;
        runtime.block_on(async move {
            listener.set_nonblocking(true).context("cannot set up the listener")?;
            let listener = tokio::net::TcpListener::from_std(listener).context("cannot set up the listener")?;
            axum::serve(listener, server::router(self.state)).await.context("the server stopped")
        })
    }
}
