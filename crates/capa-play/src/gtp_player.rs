//! A GTP engine as a player of Go: any engine command (`gnugo --mode gtp
//! --level 1`), or a network run as a `capa gtp` child process. One process
//! per game slot; each is told the game's moves it has not yet seen, then
//! asked `genmove`. A process that fails forfeits that game and is started
//! again for the next move it is asked.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use capa_rules::go::Go;
use capa_rules::{Color, Game};
use capa_uci::{GtpEngine, Restarting};

use crate::player::{Answer, Player, Turn};

/// A GTP engine playing one side of a Go match.
pub struct GtpPlayer {
    name: String,
    program: PathBuf,
    args: Vec<String>,
    timeout: Duration,
    /// Per slot: the process and the moves of the game it holds.
    processes: Vec<Restarting<(GtpEngine, Vec<u16>)>>,
}

impl GtpPlayer {
    /// The engine started by `command` (a program and its arguments, split
    /// at spaces), named by the command.
    ///
    /// # Errors
    /// An empty command.
    pub fn command(command: &str) -> Result<GtpPlayer> {
        let command = command.trim();
        let mut words = command.split_whitespace();
        let program = words.next().context("the engine command is empty")?;
        Ok(GtpPlayer::new(command.to_string(), PathBuf::from(program), words.map(String::from).collect()))
    }

    /// The Go network file `net` played by `capa gtp` (`capa` is the
    /// executable; `device_args` are its flags for the device, such as
    /// `--backend cpu`) with `playouts` per move, named by the file's stem.
    pub fn network(capa: &Path, net: &Path, playouts: u64, device_args: &[String]) -> GtpPlayer {
        let name = net.file_stem().map_or_else(|| net.display().to_string(), |s| s.to_string_lossy().into_owned());
        let args = ["gtp".to_string(), "--net".to_string(), net.to_string_lossy().into_owned()]
            .into_iter()
            .chain(["--playouts".to_string(), playouts.to_string()])
            .chain(device_args.iter().cloned())
            .collect();
        GtpPlayer::new(name, capa.to_path_buf(), args)
    }

    fn new(name: String, program: PathBuf, args: Vec<String>) -> GtpPlayer {
        GtpPlayer { name, program, args, timeout: capa_uci::DEFAULT_TIMEOUT, processes: Vec::new() }
    }

    /// The same player under another name.
    pub fn with_name(mut self, name: &str) -> GtpPlayer {
        self.name = name.to_string();
        self
    }

    /// How long a move may take before the engine counts as hung.
    pub fn with_timeout(mut self, timeout: Duration) -> GtpPlayer {
        self.timeout = timeout;
        self
    }

    /// The player's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<const N: usize> Player<Go<N>> for GtpPlayer {
    fn name(&self) -> &str {
        &self.name
    }

    fn new_game(&mut self, slot: usize) {
        // The next move clears the board (the game it holds is not a prefix).
        if let Some((_, moves)) = self.processes.get_mut(slot).and_then(Restarting::running) {
            moves.clear();
            moves.push(u16::MAX);
        }
    }

    fn moves(&mut self, turns: &[Turn<'_, Go<N>>]) -> Result<Vec<Answer<<Go<N> as Game>::Move>>> {
        let slots = turns.iter().map(|t| t.slot + 1).max().unwrap_or(0);
        if self.processes.len() < slots {
            self.processes.resize_with(slots, Restarting::default);
        }
        let (program, args, timeout, name) = (&self.program, &self.args, self.timeout, self.name.as_str());
        let mut answers: Vec<Option<Answer<<Go<N> as Game>::Move>>> = vec![None; turns.len()];
        std::thread::scope(|scope| -> Result<()> {
            let mut handles = Vec::new();
            for (slot, process) in self.processes.iter_mut().enumerate() {
                let Some(t) = turns.iter().position(|turn| turn.slot == slot) else { continue };
                handles.push(scope.spawn(move || -> Result<(usize, Answer<<Go<N> as Game>::Move>)> {
                    let engine = process.get_or_start(|| {
                        let engine = GtpEngine::launch(program, args, timeout)
                            .with_context(|| format!("cannot start {name}"))?;
                        anyhow::Ok((engine, vec![u16::MAX]))
                    })?;
                    let started = Instant::now();
                    let played = genmove(engine, &turns[t]);
                    // Its board may have gone its own way: a fresh engine starts from a clear one.
                    if played.is_err() {
                        process.failed();
                    }
                    Ok((t, Answer { played, thinking: started.elapsed() }))
                }));
            }
            for handle in handles {
                let (t, answer) = handle.join().expect("an engine thread panicked")?;
                answers[t] = Some(answer);
            }
            Ok(())
        })?;
        Ok(answers.into_iter().map(|a| a.expect("every turn answered")).collect())
    }
}

/// Brings the engine's game up to `turn` and asks for its move.
fn genmove<const N: usize>(
    (engine, known): &mut (GtpEngine, Vec<u16>),
    turn: &Turn<'_, Go<N>>,
) -> Result<<Go<N> as Game>::Move, String> {
    let history = turn.history;
    let moves: Vec<u16> = history.moves().iter().map(|&m| Go::<N>::pack_move(m)).collect();
    let fail = |e: capa_uci::UciError| e.to_string();
    if !moves.starts_with(known) {
        let start = history.start();
        if *start != Go::<N>::empty(start.komi(), start.ko_rule()) {
            return Err("a GTP engine plays from the empty board only".to_string());
        }
        engine.command(&format!("boardsize {N}")).map_err(fail)?;
        engine.command("clear_board").map_err(fail)?;
        engine.command(&format!("komi {}", start.komi())).map_err(fail)?;
        known.clear();
    }
    let positions = history.positions();
    for (i, &m) in history.moves().iter().enumerate().skip(known.len()) {
        engine.command(&format!("play {} {m}", color_name(positions[i].turn()))).map_err(fail)?;
    }
    known.clone_from(&moves);
    let position = history.current();
    let answer = engine.command(&format!("genmove {}", color_name(position.turn()))).map_err(fail)?;
    if answer.eq_ignore_ascii_case("resign") {
        return Err("it resigned".to_string());
    }
    let m = position.parse_move(&answer).map_err(|e| format!("illegal move: {e}"))?;
    known.push(Go::<N>::pack_move(m));
    Ok(m)
}

fn color_name(color: Color) -> &'static str {
    match color {
        Color::Black => "black",
        Color::White => "white",
    }
}
