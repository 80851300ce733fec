//! What each game's rules say of it, reached from a [`GameKind`]: board
//! size and policy width, for code that holds a value rather than a type.

use crate::capablanca::Capablanca;
use crate::chess::Chess;
use crate::{Game, GameKind, PolicyMap, for_game};

impl GameKind {
    /// Board height.
    pub fn ranks(self) -> usize {
        for_game!(self, G => G::RANKS)
    }

    /// Board width.
    pub fn files(self) -> usize {
        for_game!(self, G => G::FILES)
    }

    /// Squares (points, in Go).
    pub fn squares(self) -> usize {
        self.ranks() * self.files()
    }

    /// The width of a policy over this game's moves.
    pub fn policy_size(self) -> usize {
        for_game!(self, G => G::policy_size())
    }

    /// A chess game's policy map; `None` for Go, whose policy is the points
    /// and the pass.
    pub fn policy_map(self) -> Option<&'static PolicyMap> {
        match self {
            GameKind::Capablanca => Some(Capablanca::policy_map()),
            GameKind::Chess => Some(Chess::policy_map()),
            GameKind::Go9 | GameKind::Go13 | GameKind::Go19 => None,
        }
    }
}
