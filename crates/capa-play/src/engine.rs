//! A UCI engine at a set strength (`UCI_LimitStrength` and `UCI_Elo`),
//! answering one position at a time: the opponent of `[curriculum]` games
//! and of `[eval]` matches against an engine.

use anyhow::{Context, Result, bail};
use capa_rules::{Game, History};
use capa_uci::{Go, OptionKind, UciEngine, position_command};

/// The engine process, the search it runs per move, and its strength.
pub struct EnginePlayer {
    engine: UciEngine,
    /// The command it was started with, for messages.
    command: String,
    go: Go,
    /// Its current `UCI_Elo`.
    elo: i64,
    /// The `UCI_Elo` range it advertises.
    range: (i64, i64),
}

impl EnginePlayer {
    /// Starts `command` for game `G`, with its strength limited to its
    /// lowest `UCI_Elo` until [`EnginePlayer::set_elo`], searching `nodes`
    /// per move. `section` names the config section in errors.
    ///
    /// # Errors
    /// An engine that cannot start, play `G`, or limit its strength.
    pub fn start<G: Game>(section: &str, command: &str, nodes: u64) -> Result<EnginePlayer> {
        let command = command.trim().to_string();
        let mut engine = UciEngine::start(&command).with_context(|| format!("{section} engine `{command}`"))?;
        engine.select_variant(G::NAME).with_context(|| format!("{section} engine `{command}`"))?;
        let range = match engine.option("UCI_Elo").map(|o| &o.kind) {
            Some(&OptionKind::Spin { min, max }) if engine.option("UCI_LimitStrength").is_some() && min < max => {
                (min, max)
            }
            _ => bail!("{section} engine `{command}` cannot limit its strength (no UCI_LimitStrength and UCI_Elo)"),
        };
        engine.set_option("UCI_LimitStrength", "true")?;
        let mut player = EnginePlayer { engine, command, go: Go::Nodes(nodes), elo: 0, range };
        player.set_elo(range.0)?;
        player.engine.new_game()?;
        Ok(player)
    }

    /// The `UCI_Elo` range the engine advertises.
    pub fn range(&self) -> (i64, i64) {
        self.range
    }

    /// The engine's current `UCI_Elo`.
    pub fn elo(&self) -> i64 {
        self.elo
    }

    /// Sets the engine's `UCI_Elo`, clamped to its range; returns the value set.
    ///
    /// # Errors
    /// An engine that no longer takes options.
    pub fn set_elo(&mut self, elo: i64) -> Result<i64> {
        self.elo = elo.clamp(self.range.0, self.range.1);
        self.engine.set_option("UCI_Elo", &self.elo.to_string())?;
        Ok(self.elo)
    }

    /// The engine's move at the end of `history`.
    ///
    /// # Errors
    /// An engine that fails, finds no move, or answers an illegal one.
    pub fn best_move<G: Game>(&mut self, history: &History<G>) -> Result<G::Move> {
        let position = position_command(history);
        let output = self.engine.go(&position, self.go).with_context(|| format!("engine `{}`", self.command))?;
        let best = output.best.with_context(|| format!("engine `{}` found no move", self.command))?;
        history.current().parse_uci(&best).with_context(|| format!("engine `{}` played {best}", self.command))
    }
}
