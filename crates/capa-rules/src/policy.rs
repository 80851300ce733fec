//! Policy maps: the network's move vocabulary, built by Lc0's rule for any board size.
//!
//! For each from-square in square order (`a1, b1, …`), every destination a queen
//! or a knight could reach on an empty board, sorted by square; then, for each
//! pawn on the 7th rank and each of its up to three destinations on the 8th, one
//! entry per promotion piece other than the knight (a knight promotion uses the
//! plain entry). On 8x8 with `q r b` this is Lc0's 1858-entry map, in Lc0's order.

use std::fmt;

/// One entry of a policy map, in the side-to-move frame (white's view).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PolicyMove {
    /// From-square index, `rank * files + file`.
    pub from: u8,
    /// To-square index.
    pub to: u8,
    /// Promotion piece letter for a suffixed entry.
    pub promotion: Option<char>,
}

/// The bijection between policy indices and moves for one board geometry.
#[derive(Clone, Debug)]
pub struct PolicyMap {
    files: usize,
    ranks: usize,
    promotions: Vec<char>,
    entries: Vec<PolicyMove>,
    /// `from * squares + to` -> index, `u16::MAX` where the map has no entry.
    plain: Vec<u16>,
    /// `(from_file * 3 + (to_file + 1 - from_file)) * promotions + piece` -> index.
    promoted: Vec<u16>,
}

const NONE: u16 = u16::MAX;
const QUEEN_DIRECTIONS: [(i32, i32); 8] = [(0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1)];
const KNIGHT_JUMPS: [(i32, i32); 8] = [(1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)];

impl PolicyMap {
    /// Builds the map for a `files` x `ranks` board whose suffixed promotion
    /// pieces are `promotions`, in that order (the knight is never among them).
    ///
    /// # Panics
    /// If the board has more than 255 squares or the map more than 65535 entries.
    pub fn build(files: usize, ranks: usize, promotions: &[char]) -> PolicyMap {
        let squares = files * ranks;
        assert!(squares <= 255, "policy maps index squares with u8");
        let on_board = |f: i32, r: i32| f >= 0 && r >= 0 && (f as usize) < files && (r as usize) < ranks;
        let mut entries = Vec::new();
        for from in 0..squares {
            let (ff, fr) = ((from % files) as i32, (from / files) as i32);
            let mut targets = vec![false; squares];
            for (df, dr) in QUEEN_DIRECTIONS {
                let (mut f, mut r) = (ff + df, fr + dr);
                while on_board(f, r) {
                    targets[r as usize * files + f as usize] = true;
                    f += df;
                    r += dr;
                }
            }
            for (df, dr) in KNIGHT_JUMPS {
                if on_board(ff + df, fr + dr) {
                    targets[(fr + dr) as usize * files + (ff + df) as usize] = true;
                }
            }
            entries.extend((0..squares).filter(|&to| targets[to]).map(|to| PolicyMove {
                from: from as u8,
                to: to as u8,
                promotion: None,
            }));
        }
        let seventh = (ranks - 2) * files;
        let eighth = (ranks - 1) * files;
        for file in 0..files {
            for to_file in file.saturating_sub(1)..=(file + 1).min(files - 1) {
                for &piece in promotions {
                    entries.push(PolicyMove {
                        from: (seventh + file) as u8,
                        to: (eighth + to_file) as u8,
                        promotion: Some(piece),
                    });
                }
            }
        }
        assert!(entries.len() < NONE as usize, "policy map too large for u16 indices");

        let mut plain = vec![NONE; squares * squares];
        let mut promoted = vec![NONE; files * 3 * promotions.len()];
        for (index, e) in entries.iter().enumerate() {
            let (from, to) = (e.from as usize, e.to as usize);
            match e.promotion {
                None => plain[from * squares + to] = index as u16,
                Some(p) => {
                    let piece = promotions.iter().position(|&q| q == p).expect("listed piece");
                    let slot = from % files * 3 + (to % files + 1 - from % files);
                    promoted[slot * promotions.len() + piece] = index as u16;
                }
            }
        }
        PolicyMap { files, ranks, promotions: promotions.to_vec(), entries, plain, promoted }
    }

    /// The number of entries: the width of the policy head.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map is empty (never, for a real board).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in index order.
    pub fn entries(&self) -> &[PolicyMove] {
        &self.entries
    }

    /// Board width.
    pub fn files(&self) -> usize {
        self.files
    }

    /// Board height.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// The index of a move from `from` to `to` (square indices in the
    /// side-to-move frame), promoting to `promotion` if given. A promotion
    /// letter not among the map's suffixed pieces (the knight) maps to the
    /// plain entry. `None` if the map has no such move.
    #[inline]
    pub fn index(&self, from: usize, to: usize, promotion: Option<char>) -> Option<usize> {
        let squares = self.files * self.ranks;
        if from >= squares || to >= squares {
            return None;
        }
        let suffixed = promotion.and_then(|p| self.promotions.iter().position(|&q| q == p));
        let index = match suffixed {
            None => self.plain[from * squares + to],
            Some(piece) => {
                let (ff, tf) = (from % self.files, to % self.files);
                if from / self.files != self.ranks - 2
                    || to / self.files != self.ranks - 1
                    || tf + 1 < ff
                    || tf > ff + 1
                {
                    return None;
                }
                self.promoted[(ff * 3 + (tf + 1 - ff)) * self.promotions.len() + piece]
            }
        };
        (index != NONE).then_some(index as usize)
    }

    /// Move planes of a convolutional policy head: one per queen direction
    /// and distance, one per knight jump, and one per promotion piece and
    /// file step (AlphaZero's move planes, for this board).
    pub fn move_planes(&self) -> usize {
        8 * (self.files.max(self.ranks) - 1) + 8 + 3 * self.promotions.len()
    }

    /// Where each entry lies in a convolutional head's output, flattened as
    /// `plane * squares + from`: the plane of its kind of move (see
    /// [`PolicyMap::move_planes`]) at its from-square. Distinct entries lie
    /// at distinct places, so a head that gathers these reads each move's
    /// logit from the square the piece stands on.
    pub fn move_plane_indices(&self) -> Vec<usize> {
        let (files, squares) = (self.files as i32, self.files * self.ranks);
        let distances = self.files.max(self.ranks) - 1;
        let plane = |e: &PolicyMove| -> usize {
            let (from, to) = (i32::from(e.from), i32::from(e.to));
            let (df, dr) = (to % files - from % files, to / files - from / files);
            if let Some(piece) = e.promotion {
                let piece = self.promotions.iter().position(|&p| p == piece).expect("listed piece");
                return 8 * distances + 8 + (df + 1) as usize * self.promotions.len() + piece;
            }
            if let Some(jump) = KNIGHT_JUMPS.iter().position(|&j| j == (df, dr)) {
                return 8 * distances + jump;
            }
            let distance = df.abs().max(dr.abs());
            let direction = QUEEN_DIRECTIONS.iter().position(|&d| d == (df.signum(), dr.signum()));
            direction.expect("a queen or knight move") * distances + distance as usize - 1
        };
        self.entries.iter().map(|e| plane(e) * squares + usize::from(e.from)).collect()
    }

    /// The entry at `index` written as a move (`a1b1`, `a7a8q`).
    pub fn uci(&self, index: usize) -> Option<String> {
        self.entries.get(index).map(|e| e.display(self.files).to_string())
    }
}

impl PolicyMove {
    /// Writes the entry in UCI notation for a board `files` wide.
    pub fn display(self, files: usize) -> impl fmt::Display {
        struct Show(PolicyMove, usize);
        impl fmt::Display for Show {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let Show(m, files) = *self;
                let sq = |s: u8| crate::notation::square_name(s as usize % files, s as usize / files);
                write!(f, "{}{}", sq(m.from), sq(m.to))?;
                match m.promotion {
                    Some(p) => write!(f, "{p}"),
                    None => Ok(()),
                }
            }
        }
        Show(self, files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FNV-1a over the entries written as UCI and joined by `\n`.
    fn fingerprint(map: &PolicyMap) -> u64 {
        let text: Vec<String> = (0..map.len()).map(|i| map.uci(i).unwrap()).collect();
        crate::hash::fnv1a(text.join("\n").as_bytes())
    }

    #[test]
    fn move_planes_place_every_entry_once() {
        for (map, planes) in
            [(PolicyMap::build(8, 8, &['q', 'r', 'b']), 73), (PolicyMap::build(10, 8, &['q', 'r', 'b', 'a', 'c']), 95)]
        {
            assert_eq!(map.move_planes(), planes);
            let indices = map.move_plane_indices();
            let squares = map.files() * map.ranks();
            assert!(indices.iter().all(|&i| i < planes * squares));
            let mut sorted = indices.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), map.len(), "two entries share a place");
            // a1b1 is one step east (direction 2), a1c2 a knight jump, a7a8q
            // the promotion planes' straight queen.
            let at = |uci: &str| indices[(0..map.len()).find(|&i| map.uci(i).unwrap() == uci).unwrap()];
            let distances = map.files().max(map.ranks()) - 1;
            assert_eq!(at("a1b1"), 2 * distances * squares);
            assert_eq!(at("a1c2"), (8 * distances + 1) * squares);
            let a7 = (map.ranks() - 2) * map.files();
            let promotions = (map.move_planes() - 8 * distances - 8) / 3;
            assert_eq!(at("a7a8q"), (8 * distances + 8 + promotions) * squares + a7);
        }
    }

    #[test]
    fn chess_map_is_lc0s() {
        let map = PolicyMap::build(8, 8, &['q', 'r', 'b']);
        assert_eq!(map.len(), 1858);
        let first: Vec<String> = (0..4).map(|i| map.uci(i).unwrap()).collect();
        assert_eq!(first, ["a1b1", "a1c1", "a1d1", "a1e1"]);
        assert_eq!(map.uci(1792).unwrap(), "a7a8q");
        assert_eq!(map.uci(1857).unwrap(), "h7h8b");
        // The fingerprint of lczero-training's tf/policy_index.py list (1858
        // strings joined by newlines), computed once from that file; a table
        // differing in any entry or in order fails here.
        assert_eq!(fingerprint(&map), LC0_POLICY_FINGERPRINT);
    }

    const LC0_POLICY_FINGERPRINT: u64 = 0xcb2b_d77e_9af7_5d89;

    #[test]
    fn capablanca_map_size() {
        let map = PolicyMap::build(10, 8, &['q', 'r', 'b', 'a', 'c']);
        assert_eq!(map.len(), 2504 + 140);
        // a7 = 60, a8 = 70: the first promotion square, and 'c' its fifth piece.
        assert_eq!(map.index(60, 70, Some('c')), Some(map.len() - 140 + 4));
        assert_eq!(map.uci(map.len() - 1).unwrap(), "j7j8c");
    }

    #[test]
    fn lookups_invert_entries() {
        for map in [PolicyMap::build(8, 8, &['q', 'r', 'b']), PolicyMap::build(10, 8, &['q', 'r', 'b', 'a', 'c'])] {
            for (i, e) in map.entries().iter().enumerate() {
                assert_eq!(map.index(e.from as usize, e.to as usize, e.promotion), Some(i));
            }
            assert_eq!(map.index(0, 0, None), None);
            assert_eq!(map.index(999, 0, None), None);
        }
    }
}
