//! `capa`: the command line around capa's crates. Each command's arguments
//! live with the command in its module and become the library's arguments
//! in one step; this file only names the commands and maps the result to
//! an exit code.

mod args;
mod bench;
mod diagnostics;
mod distill;
mod elo;
mod explorer_bench;
mod gtp;
mod gtp_analysis;
mod gui;
mod help_markdown;
mod judge;
mod ladder;
mod lc0;
mod lc0_agreement;
mod lc0_archive;
mod lc0_net;
mod matches;
mod net;
mod play;
mod plot;
mod rules;
mod sgf;
mod uci;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// capa: an AlphaZero-style training framework for Capablanca chess, chess and Go.
#[derive(Parser, Debug)]
#[command(name = "capa", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per run: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    Perft(rules::PerftCommand),
    Legal(rules::LegalCommand),
    Uci(uci::EngineArgs),
    Gtp(gtp::GtpArgs),
    Match(matches::MatchCommand),
    Elo(elo::EloCommand),
    Ladder(ladder::LadderCommand),
    Play(play::PlayArgs),
    Gui(gui::GuiArgs),
    Plot(plot::PlotCommand),
    PolicyHealth(diagnostics::PolicyHealthCommand),
    Judge(judge::JudgeCommand),
    BufferStats(diagnostics::BufferStatsCommand),
    OverfitCheck(diagnostics::OverfitCheckCommand),
    /// Lc0 V6 training data: convert PGN games (static, comment or engine
    /// evals), finish adjudicated games, rescore with tablebases, dedup,
    /// pack, verify, and fit the WDL model.
    #[command(subcommand)]
    Lc0(lc0::Lc0Command),
    /// Go game records (SGF) to training examples.
    #[command(subcommand)]
    Sgf(sgf::SgfCommand),
    /// Distillation from a UCI engine (Stockfish, Fairy-Stockfish).
    #[command(subcommand)]
    Distill(distill::DistillCommand),
    /// Network files and training checkpoints.
    #[command(subcommand)]
    Net(net::NetCommand),
    /// Measure a component; benches/ compares the figures with real peers.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Print this command reference as Markdown (docs/cli.md is its output).
    #[command(hide = true)]
    HelpMarkdown,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    capa_train::cli::init_logging();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => capa_train::cli::exit_code(&error),
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Perft(command) => command.run(),
        Command::Legal(command) => command.run(),
        Command::Uci(args) => uci::run(&args),
        Command::Gtp(args) => gtp::run(&args),
        Command::Match(command) => command.run(),
        Command::Elo(command) => command.run(),
        Command::Ladder(command) => command.run(),
        Command::Play(args) => play::run(&args),
        Command::Gui(args) => gui::run(&args),
        Command::Plot(command) => command.run(),
        Command::PolicyHealth(command) => command.run(),
        Command::Judge(command) => command.run(),
        Command::BufferStats(command) => command.run(),
        Command::OverfitCheck(command) => command.run(),
        Command::Lc0(command) => lc0::run(&command),
        Command::Sgf(command) => command.run(),
        Command::Distill(command) => command.run(),
        Command::Net(command) => command.run(),
        Command::Bench(command) => command.run(),
        Command::HelpMarkdown => {
            print!("{}", help_markdown::markdown(&<Cli as clap::CommandFactory>::command()));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use capa_rules::GameKind;

    /// Parses a command line; `~` inside a word stands for a space.
    fn parse(line: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(line.split_whitespace().map(|word| word.replace('~', " ")))
    }

    #[test]
    fn the_definitions_are_consistent() {
        Cli::command().debug_assert();
        capa_train::cli::command().debug_assert();
    }

    #[test]
    fn every_command_takes_its_flags() {
        for line in [
            "capa perft --variant capablanca --depth 3 --divide",
            "capa perft --variant chess --fen 8/8/8/8/8/8/8/K1k5~w~-~-~0~1 --depth 1",
            "capa legal --variant chess",
            "capa uci --net n.safetensors --backend cpu --device 0",
            "capa gtp --net n.safetensors --playouts 64 --seed 3 --backend cpu",
            "capa match a.safetensors gnugo --variant go9 --nodes 32",
            "capa perft --variant go9 --depth 2",
            "capa sgf convert a.sgf games/ --out ex --size 9 --winner-only --tactical-bias --max-per-game 40 \
             --ko-rule superko --seed 2",
            "capa sgf spot-check ex/ more.capa --count 12 --out sheet.png --size 13 --seed 4",
            "capa match a.safetensors fairy-stockfish --games 4 --nodes 16 --variant capablanca --openings o.txt \
             --random-plies 2 --seed 3 --concurrency 2 --pgn m.pgn --sprt -5,5 --ply-cap 300 \
             --option-a MinibatchSize=4 --option-b UCI_Elo=1500 --option-b Threads=1 --timeout 5",
            "capa match a b --movetime 100 --variant chess",
            "capa match a b --tc 10+0.1 --variant chess",
            "capa elo --net n.safetensors --engine fairy-stockfish --games 10 --nodes 32 --low 500 --high 1500 \
             --tolerance 100 --max-probes 3 --option Threads=1 --random-plies 4 --seed 2 --concurrency 2 --timeout 9",
            "capa elo --net n.safetensors --ladder l.toml --games 10 --max-probes 3 --nodes 64 --concurrency 2",
            "capa ladder l.toml --fresh --concurrency 2 --timeout 5",
            "capa bench net --channels 48 --blocks 4 --transformer-blocks 0 --policy-head conv",
            "capa play --net n.safetensors --nodes 64 --color black --fen x --state s.txt --move e2e4",
            "capa policy-health a.safetensors b.safetensors --positions 64 --seed 2",
            "capa buffer-stats run",
            "capa overfit-check s3://bucket/run --positions 128",
            "capa lc0 convert g.pgn --output-dir out --name sup --files-per-dir 100",
            "capa lc0 verify out",
            "capa lc0 fit-wdl g.pgn --limit 100",
            "capa lc0 draw-rate g.pgn",
            "capa lc0 finish-games g.pgn --engine stockfish --depth 8 --max-extra-plies 100 --workers 2 --threads 1 \
             --hash 32 --only-termination adjudication --include-draws --limit 10 --resume --output-dir out",
            "capa lc0 rescore v6 --syzygy tb --replace --threads 2",
            "capa lc0 dedup v6 --output-dir out --name d --chunks-per-file 64 --files-per-dir 100",
            "capa lc0 pack v6 --output-dir tars --group 2 --compress gz --resume --no-verify",
            "capa distill gen --engine stockfish --variant chess --games 10 --depth 6 --multipv 4 --workers 2 \
             --out d --random-plies 4 --seed 2 --ply-cap 200 --hash 32 --option Skill=3 --resume --timeout 30",
            "capa bench search --variant chess --nodes 1000 --batch 64 --threads 2 --games 4 --groups 2",
            "capa bench lc0 g.pgn --repeat 2",
            "capa bench net --size small --variant chess --batch 32 --seconds 0.5",
            "capa bench explorer --variant chess --games 1000 --max-plies 60 --queries 10 --dir idx --seed 2 --reuse",
            "capa gui --net n.safetensors --run runs/tiny --games a.pgn b.pgn.gz --port 0 --host 0.0.0.0 \
             --index-dir idx --backend cpu",
            "capa gui",
            "capa plot runs/tiny --out plots --x hours",
            "capa help-markdown",
        ] {
            if let Err(e) = parse(line) {
                panic!("{line}: {e}");
            }
        }
    }

    #[test]
    fn values_reach_the_command() {
        let Command::Match(command) =
            parse("capa match a b --games 7 --nodes 5 --sprt -5,5,0.1,0.2 --option-a X=1").unwrap().command
        else {
            panic!("not a match")
        };
        assert_eq!((command.a.as_str(), command.b.as_str(), command.games), ("a", "b", 7));
        assert_eq!(command.limit.nodes, Some(5));
        assert_eq!(command.sprt.map(|s| (s.elo0, s.elo1, s.beta)), Some((-5.0, 5.0, 0.2)));
        assert_eq!(command.option_a, vec![("X".to_string(), "1".to_string())]);
        let Command::Perft(perft) = parse("capa perft --variant chess --depth 2").unwrap().command else {
            panic!("not perft")
        };
        assert_eq!((perft.position.variant, perft.depth, perft.divide), (GameKind::Chess, 2, false));
    }

    #[test]
    fn bad_flags_are_refused() {
        for line in [
            "capa",
            "capa perft --variant capablanca",
            "capa perft --variant shogi --depth 2",
            "capa perft --variant chess --depth 0",
            "capa perft --variant chess --depth 21",
            "capa legal",
            "capa uci",
            "capa gtp",
            "capa gtp --net n.safetensors --playouts many",
            "capa perft --variant go7",
            "capa sgf convert a.sgf",
            "capa sgf convert a.sgf --out x --ko-rule japanese",
            "capa sgf spot-check ex/",
            "capa sgf spot-check --out sheet.png",
            "capa match a",
            "capa match a b --nodes 5 --movetime 100",
            "capa match a b --tc 0+1",
            "capa match a b --sprt 10,0",
            "capa match a b --option-a Threads",
            "capa match a b --games many",
            "capa gui --port 70000",
            "capa gui --host localhost~name",
            "capa plot runs/tiny",
            "capa plot runs/tiny --out p --x minutes",
            "capa bench explorer --max-plies 1 --dir d",
            "capa elo --engine fairy-stockfish",
            "capa elo --net n.safetensors --ladder l.toml --engine fairy-stockfish",
            "capa elo --net n.safetensors --ladder l.toml --low 1000",
            "capa ladder",
            "capa bench net --policy-head wide",
            "capa uci --net no-such-shipped-network",
            "capa play --net n --color green",
            "capa policy-health",
            "capa lc0 convert --output-dir out",
            "capa lc0 convert g.pgn --files-per-dir 0",
            "capa lc0 convert g.pgn --pgn-eval-mode --stockfish sf",
            "capa lc0 finish-games g.pgn",
            "capa lc0 finish-games g.pgn --engine sf --depth 0",
            "capa lc0 finish-games g.pgn --engine sf --output o.pgn --output-dir d",
            "capa lc0 rescore v6",
            "capa lc0 pack v6",
            "capa lc0 pack v6 --output-dir t --compress zip",
            "capa lc0 fit-wdl",
            "capa distill gen --engine stockfish --variant chess --out d",
            "capa bench search --variant chess --batch 0",
            "capa bench net --batch 0",
            "capa no-such-command",
        ] {
            assert!(parse(line).is_err(), "{line} was accepted");
        }
    }

    #[test]
    fn docs_cli_md_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md");
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        let current = help_markdown::markdown(&Cli::command());
        assert!(
            written == current,
            "docs/cli.md is stale: run `cargo run --release -p capa-cli -- help-markdown > docs/cli.md`"
        );
    }
}
