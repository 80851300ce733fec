//! The games capa knows, as one enum, and the one dispatch from a value of
//! it to the game's type. A leaf: what follows from each game's rules is in
//! `facts.rs`.

use std::fmt;
use std::str::FromStr;

/// Which game: in configs, on the command line, in networks and in records.
/// Every list of games in capa is this enum; code generic over [`Game`]
/// reaches the game's type through [`for_game!`](crate::for_game).
///
/// [`Game`]: crate::Game
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GameKind {
    /// Capablanca chess, 10x8.
    Capablanca,
    /// Standard chess.
    Chess,
    /// Go on 9x9.
    Go9,
    /// Go on 13x13.
    Go13,
    /// Go on 19x19.
    Go19,
}

/// Runs `$body` with `$game` the type of the game `$kind` names: the one
/// match from a [`GameKind`] to code generic over [`Game`] (or over a trait
/// every game implements, such as capa-net's `NetGame`).
///
/// [`Game`]: crate::Game
///
/// ```
/// use capa_rules::{Game, GameKind, for_game};
/// let files = for_game!(GameKind::Capablanca, G => G::FILES);
/// assert_eq!(files, 10);
/// ```
#[macro_export]
macro_rules! for_game {
    ($kind:expr, $game:ident => $body:expr) => {
        match $kind {
            $crate::GameKind::Capablanca => {
                type $game = $crate::capablanca::Capablanca;
                $body
            }
            $crate::GameKind::Chess => {
                type $game = $crate::chess::Chess;
                $body
            }
            $crate::GameKind::Go9 => {
                type $game = $crate::go::Go9;
                $body
            }
            $crate::GameKind::Go13 => {
                type $game = $crate::go::Go13;
                $body
            }
            $crate::GameKind::Go19 => {
                type $game = $crate::go::Go19;
                $body
            }
        }
    };
}

impl GameKind {
    /// Every game, in the order configs and help texts list them.
    pub const ALL: [GameKind; 5] =
        [GameKind::Capablanca, GameKind::Chess, GameKind::Go9, GameKind::Go13, GameKind::Go19];

    /// The name in configs, on the command line and, for chess games, in
    /// UCI's `UCI_Variant` ([`Game::NAME`](crate::Game::NAME)).
    pub const fn name(self) -> &'static str {
        match self {
            GameKind::Capablanca => "capablanca",
            GameKind::Chess => "chess",
            GameKind::Go9 => "go9",
            GameKind::Go13 => "go13",
            GameKind::Go19 => "go19",
        }
    }

    /// Whether this is a chess game (FEN, UCI, SAN, PGN; UCI engines play
    /// it). The others are Go (GTP, SGF).
    pub const fn is_chess(self) -> bool {
        matches!(self, GameKind::Capablanca | GameKind::Chess)
    }
}

impl fmt::Display for GameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A game name that is none of [`GameKind::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown game '{0}': capa plays {names}", names = known_names())]
pub struct UnknownGame(pub String);

fn known_names() -> String {
    GameKind::ALL.map(GameKind::name).join(", ")
}

impl FromStr for GameKind {
    type Err = UnknownGame;

    /// Reads [`GameKind::name`], exactly: an unknown name is an error.
    fn from_str(name: &str) -> Result<GameKind, UnknownGame> {
        GameKind::ALL.into_iter().find(|kind| kind.name() == name).ok_or_else(|| UnknownGame(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::GameKind;

    #[test]
    fn names_read_back_and_unknown_names_are_refused() {
        for kind in GameKind::ALL {
            assert_eq!(kind.name().parse::<GameKind>(), Ok(kind));
        }
        let e = "go7".parse::<GameKind>().unwrap_err().to_string();
        assert_eq!(e, "unknown game 'go7': capa plays capablanca, chess, go9, go13, go19");
        assert!("Chess".parse::<GameKind>().is_err());
    }
}
