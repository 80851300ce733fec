//! Lc0's V6 training record: 8356 packed little-endian bytes per position.
//!
//! The layout is Lc0's `V6TrainingData` (../shared/reference/lc0-v6.md §2);
//! files are gzip streams of records back to back, with no header.

use std::fmt;

/// Bytes in one V6 record.
pub const V6_SIZE: usize = 8356;
/// The version word of a V6 record.
pub const V6_VERSION: u32 = 6;
/// Lc0's `INPUT_CLASSICAL_112_PLANE`, the input format capa writes.
pub const CLASSICAL_INPUT: u32 = 1;
/// Entries of Lc0's chess policy map.
pub const POLICY_SIZE: usize = 1858;
/// Stored planes: 8 history positions x 13 bitboards.
pub const PLANE_COUNT: usize = 104;
/// `invariance_info` bit: the game was adjudicated.
pub const ADJUDICATED: u8 = 1 << 5;

/// One V6 record, field by field (names as in Lc0's `trainingdata_v6.h`).
///
/// Values are from the side to move's point of view: q is win minus loss,
/// d the draw probability, m plies left.
#[derive(Clone, Debug, PartialEq)]
pub struct V6Record {
    /// Lc0's input format; 1 (classical) is what the converter writes.
    pub input_format: u32,
    /// The policy target, [`POLICY_SIZE`] entries: -1 on illegal moves.
    pub probabilities: Vec<f32>,
    /// 8 history slots x 13 bitboards, bits reversed within each byte.
    pub planes: [u64; PLANE_COUNT],
    /// Castling rights: ours queen side, ours king side, theirs queen
    /// side, theirs king side (0 or 1 in input format 1).
    pub castling: [u8; 4],
    /// Input formats 1 and 2: 1 when black is to move.
    pub side_to_move_or_enpassant: u8,
    /// The halfmove clock.
    pub rule50_count: u8,
    /// Bit 5 adjudicated, bit 4 undecided at the length cap, bit 3 proven best_q.
    pub invariance_info: u8,
    /// The search root's value.
    pub root_q: f32,
    /// The best move's value.
    pub best_q: f32,
    /// The root's draw probability.
    pub root_d: f32,
    /// The best move's draw probability.
    pub best_d: f32,
    /// The root's plies left.
    pub root_m: f32,
    /// The best move's plies left.
    pub best_m: f32,
    /// The moves-left target.
    pub plies_left: f32,
    /// The game's result: +1 won, 0 drawn, -1 lost.
    pub result_q: f32,
    /// 1 when the game was drawn.
    pub result_d: f32,
    /// The played move's value.
    pub played_q: f32,
    /// The played move's draw probability.
    pub played_d: f32,
    /// The played move's plies left.
    pub played_m: f32,
    /// The network's raw value (NaN when unknown).
    pub orig_q: f32,
    /// The network's raw draw probability (NaN when unknown).
    pub orig_d: f32,
    /// The network's raw plies left (NaN when unknown).
    pub orig_m: f32,
    /// Root visits.
    pub visits: u32,
    /// The played move's policy index.
    pub played_idx: u16,
    /// The best move's policy index.
    pub best_idx: u16,
    /// KL divergence of visits from the prior (0 when unknown).
    pub policy_kld: f32,
    /// Reserved; Lc0 writes 0.
    pub q_st: f32,
}

/// A record that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordReadError {
    /// The bytes end inside a record.
    #[error("{bytes} bytes left over: a V6 file is a whole number of {V6_SIZE}-byte records (truncated?)")]
    Truncated {
        /// Bytes of the incomplete record.
        bytes: usize,
    },
    /// The version word is not 6.
    #[error("version {found} where a V6 record has 6")]
    Version {
        /// The version found.
        found: u32,
    },
}

impl V6Record {
    /// Appends the record's [`V6_SIZE`] bytes to `out`.
    ///
    /// # Panics
    /// If `probabilities` does not hold [`POLICY_SIZE`] entries: records are
    /// built with [`V6Record::probabilities`] of the right size.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        assert_eq!(self.probabilities.len(), POLICY_SIZE, "a V6 policy has {POLICY_SIZE} entries");
        out.reserve(V6_SIZE);
        out.extend_from_slice(&V6_VERSION.to_le_bytes());
        out.extend_from_slice(&self.input_format.to_le_bytes());
        for p in &self.probabilities {
            out.extend_from_slice(&p.to_le_bytes());
        }
        for plane in &self.planes {
            out.extend_from_slice(&plane.to_le_bytes());
        }
        out.extend_from_slice(&self.castling);
        out.extend_from_slice(&[self.side_to_move_or_enpassant, self.rule50_count, self.invariance_info, 0]);
        for v in self.floats() {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.visits.to_le_bytes());
        out.extend_from_slice(&self.played_idx.to_le_bytes());
        out.extend_from_slice(&self.best_idx.to_le_bytes());
        out.extend_from_slice(&self.policy_kld.to_le_bytes());
        out.extend_from_slice(&self.q_st.to_le_bytes());
    }

    /// The fifteen f32 fields from root_q to orig_m, in file order.
    fn floats(&self) -> [f32; 15] {
        [
            self.root_q,
            self.best_q,
            self.root_d,
            self.best_d,
            self.root_m,
            self.best_m,
            self.plies_left,
            self.result_q,
            self.result_d,
            self.played_q,
            self.played_d,
            self.played_m,
            self.orig_q,
            self.orig_d,
            self.orig_m,
        ]
    }

    /// Reads one record from exactly [`V6_SIZE`] bytes.
    ///
    /// # Errors
    /// A version other than 6.
    pub fn read(bytes: &[u8; V6_SIZE]) -> Result<V6Record, RecordReadError> {
        let mut at = 0;
        let mut take = |n: usize| {
            let field = &bytes[at..at + n];
            at += n;
            field
        };
        let u32_at = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("4 bytes"));
        let f32_at = |b: &[u8]| f32::from_le_bytes(b.try_into().expect("4 bytes"));
        let version = u32_at(take(4));
        if version != V6_VERSION {
            return Err(RecordReadError::Version { found: version });
        }
        let input_format = u32_at(take(4));
        let probabilities = take(POLICY_SIZE * 4).chunks_exact(4).map(f32_at).collect();
        let mut planes = [0; PLANE_COUNT];
        for (plane, b) in planes.iter_mut().zip(take(PLANE_COUNT * 8).chunks_exact(8)) {
            *plane = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        }
        let castling = take(4).try_into().expect("4 bytes");
        let flags = take(4);
        let mut floats = [0.0; 15];
        for v in &mut floats {
            *v = f32_at(take(4));
        }
        let visits = u32_at(take(4));
        let played_idx = u16::from_le_bytes(take(2).try_into().expect("2 bytes"));
        let best_idx = u16::from_le_bytes(take(2).try_into().expect("2 bytes"));
        let policy_kld = f32_at(take(4));
        let q_st = f32_at(take(4));
        let [
            root_q,
            best_q,
            root_d,
            best_d,
            root_m,
            best_m,
            plies_left,
            result_q,
            result_d,
            played_q,
            played_d,
            played_m,
            orig_q,
            orig_d,
            orig_m,
        ] = floats;
        Ok(V6Record {
            input_format,
            probabilities,
            planes,
            castling,
            side_to_move_or_enpassant: flags[0],
            rule50_count: flags[1],
            invariance_info: flags[2],
            root_q,
            best_q,
            root_d,
            best_d,
            root_m,
            best_m,
            plies_left,
            result_q,
            result_d,
            played_q,
            played_d,
            played_m,
            orig_q,
            orig_d,
            orig_m,
            visits,
            played_idx,
            best_idx,
            policy_kld,
            q_st,
        })
    }

    /// Reads every record of an uncompressed V6 stream.
    ///
    /// # Errors
    /// A stream that is not a whole number of records, or a record whose
    /// version is not 6 (with its index).
    pub fn read_all(bytes: &[u8]) -> Result<Vec<V6Record>, (usize, RecordReadError)> {
        let chunks = bytes.chunks_exact(V6_SIZE);
        let rest = chunks.remainder().len();
        let records = chunks
            .enumerate()
            .map(|(i, chunk)| V6Record::read(chunk.try_into().expect("exact chunks")).map_err(|e| (i, e)))
            .collect::<Result<Vec<_>, _>>()?;
        if rest != 0 {
            return Err((records.len(), RecordReadError::Truncated { bytes: rest }));
        }
        Ok(records)
    }

    /// What is wrong with this record as Lc0's trainer reads input format 1
    /// (empty when nothing is): legal entries non-negative and summing to 1,
    /// illegal ones exactly -1, the played and best moves legal, values in
    /// range, flag bytes 0 or 1.
    pub fn problems(&self) -> Vec<RecordProblem> {
        let mut problems = Vec::new();
        let mut sum = 0.0f64;
        for (index, &p) in self.probabilities.iter().enumerate() {
            if p == -1.0 {
                continue;
            }
            if !(0.0..=1.0 + 1e-6).contains(&p) {
                problems.push(RecordProblem::Probability { index, value: p });
            }
            sum += f64::from(p);
        }
        if (sum - 1.0).abs() > 1e-3 {
            problems.push(RecordProblem::PolicySum { sum });
        }
        for (field, index) in [("played_idx", self.played_idx), ("best_idx", self.best_idx)] {
            if self.probabilities.get(usize::from(index)).is_none_or(|&p| p < 0.0) {
                problems.push(RecordProblem::IllegalMove { field, index });
            }
        }
        for (field, value) in
            [("root_q", self.root_q), ("best_q", self.best_q), ("result_q", self.result_q), ("played_q", self.played_q)]
        {
            if !(-1.0..=1.0).contains(&value) {
                problems.push(RecordProblem::OutOfRange { field, value });
            }
        }
        for (field, value) in
            [("root_d", self.root_d), ("best_d", self.best_d), ("result_d", self.result_d), ("played_d", self.played_d)]
        {
            if !(0.0..=1.0).contains(&value) {
                problems.push(RecordProblem::OutOfRange { field, value });
            }
        }
        // NaN is out of range too.
        if !(0.0..).contains(&self.plies_left) {
            problems.push(RecordProblem::OutOfRange { field: "plies_left", value: self.plies_left });
        }
        if self.input_format == CLASSICAL_INPUT {
            let flags = self.castling.iter().chain([&self.side_to_move_or_enpassant]);
            if flags.into_iter().any(|&b| b > 1) {
                problems.push(RecordProblem::FlagByte);
            }
        }
        problems
    }
}

/// One broken invariant of a record.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordProblem {
    /// A legal move's probability outside [0, 1].
    Probability {
        /// Its policy index.
        index: usize,
        /// The value.
        value: f32,
    },
    /// The legal moves' probabilities do not sum to 1.
    PolicySum {
        /// Their sum.
        sum: f64,
    },
    /// The played or best move has no legal entry.
    IllegalMove {
        /// `played_idx` or `best_idx`.
        field: &'static str,
        /// The index.
        index: u16,
    },
    /// A value outside its range.
    OutOfRange {
        /// The field.
        field: &'static str,
        /// The value.
        value: f32,
    },
    /// A castling or side-to-move byte other than 0 or 1 (input format 1).
    FlagByte,
}

impl fmt::Display for RecordProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordProblem::Probability { index, value } => write!(f, "probability {value} at legal index {index}"),
            RecordProblem::PolicySum { sum } => write!(f, "legal probabilities sum to {sum:.4}, not 1"),
            RecordProblem::IllegalMove { field, index } => write!(f, "{field} {index} is not a legal move's index"),
            RecordProblem::OutOfRange { field, value } => write!(f, "{field} = {value} is out of range"),
            RecordProblem::FlagByte => write!(f, "a castling or side-to-move byte is not 0 or 1"),
        }
    }
}
