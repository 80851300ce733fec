//! What the tests share: a GUI server on a free port, a tiny training run,
//! the sample PGN files.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;

use capa_gui::{Gui, GuiOptions};

/// The sample PGN files (real tournament and engine games; capa-lc0 keeps them).
pub fn sample_pgns() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../capa-lc0/tests/data");
    ["2008_SCT_LadiesOpen.pgn", "sf_selfplay_a.pgn", "sf_selfplay_played_out.pgn"]
        .iter()
        .map(|name| dir.join(name))
        .collect()
}

/// The shipped Capablanca network.
pub fn shipped_net() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../nets/capablanca-cpu.safetensors")
}

pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capa-gui-test-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Two iterations of `configs/tiny.toml`, made smaller: a real run with
/// metrics, networks and games, made once per test binary.
pub fn tiny_run() -> &'static Path {
    static RUN: OnceLock<PathBuf> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = scratch("run").join("run");
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/tiny.toml")).unwrap();
        let sets: Vec<String> = [
            format!("run.dir={}", dir.display()),
            "run.iterations=2".to_string(),
            "selfplay.games=4".to_string(),
            "selfplay.simulations=8".to_string(),
            "game.ply_cap=40".to_string(),
            "train.steps=2".to_string(),
            "train.batch=32".to_string(),
            // The conv policy head keeps the run's files a few MB.
            "net.policy_head=conv".to_string(),
        ]
        .to_vec();
        let config = capa_train::RunConfig::parse(&text, &sets).unwrap();
        capa_train::run(&config, &AtomicBool::new(false)).unwrap();
        dir
    })
}

/// A GUI on a free loopback port, serving until the test binary ends.
pub fn serve(options: GuiOptions) -> SocketAddr {
    let gui = Gui::open(&options).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || gui.serve(listener).unwrap());
    address
}

pub fn options(name: &str) -> GuiOptions {
    GuiOptions {
        net: None,
        device: capa_net::DeviceSpec::CPU,
        run: None,
        games: Vec::new(),
        index_dir: scratch(&format!("{name}-index")),
        index_memory: capa_gui::DEFAULT_INDEX_MEMORY,
    }
}

/// The GUI the tests share: the shipped network, the sample PGNs and the tiny run.
pub fn full_gui() -> SocketAddr {
    static ADDRESS: OnceLock<SocketAddr> = OnceLock::new();
    *ADDRESS.get_or_init(|| {
        let mut options = options("full");
        options.net = Some(shipped_net());
        options.games = sample_pgns();
        options.run = Some(tiny_run().to_path_buf());
        serve(options)
    })
}

/// A 9x9 network with the ownership and score heads, its weights random:
/// enough to draw an ownership map and a score lead.
pub fn go_network() -> &'static Path {
    static NET: OnceLock<PathBuf> = OnceLock::new();
    NET.get_or_init(|| {
        use capa_net::burn::backend::Flex;
        use capa_net::burn::backend::flex::FlexDevice;
        let config = capa_net::NetConfig {
            channels: 16,
            blocks: 1,
            groups: 4,
            transformer_blocks: 0,
            ownership_head: true,
            score_head: true,
            ..capa_net::NetConfig::small(capa_rules::GameKind::Go9)
        };
        let path = scratch("go-net").join("go9.safetensors");
        capa_net::save_net(&capa_net::Net::<Flex>::new(&config, &FlexDevice), &path).unwrap();
        path
    })
}

/// Three 9x9 games as SGF, and what the explorer must count from them:
/// at the start, E5 twice (a win each) and C7 once; after E5, C7 and G3.
pub fn go_games() -> PathBuf {
    let path = scratch("go-games").join("games.sgf");
    std::fs::write(
        &path,
        "(;GM[1]FF[4]SZ[9]KM[7.5]PB[alpha]PW[beta]RE[B+R];B[ee];W[cc];B[gc])\n\
         (;GM[1]FF[4]SZ[9]KM[7.5]PB[gamma]PW[delta]RE[W+2.5];B[ee];W[gg];B[cg])\n\
         (;GM[1]FF[4]SZ[9]KM[7.5]PB[x]PW[y]RE[B+1.5];B[cc];W[ee])\n",
    )
    .unwrap();
    path
}
