//! A V6 record as a training sample: decoded straight from its bytes into
//! the few fields a trainer uses, with the policy kept sparse so that a
//! shuffle buffer of many thousand samples stays small.

use std::fmt;

use crate::planes::reverse_bits_in_bytes;
use crate::record::{CLASSICAL_INPUT, PLANE_COUNT, POLICY_SIZE, V6_SIZE, V6_VERSION};

/// Floats per input: Lc0's 112 planes of 64 squares.
pub const INPUT_FLOATS: usize = 112 * 64;

/// Byte offsets of a V6 record's fields (../shared/reference/lc0-v6.md §2).
const PROBABILITIES: usize = 8;
const PLANES: usize = PROBABILITIES + POLICY_SIZE * 4;
const CASTLING: usize = PLANES + PLANE_COUNT * 8;
const SIDE_TO_MOVE: usize = CASTLING + 4;
const RULE50: usize = SIDE_TO_MOVE + 1;
const ROOT_Q: usize = RULE50 + 3;
const BEST_Q: usize = ROOT_Q + 4;
const ROOT_D: usize = ROOT_Q + 8;
const BEST_D: usize = ROOT_Q + 12;
const PLIES_LEFT: usize = ROOT_Q + 24;
const RESULT_Q: usize = ROOT_Q + 28;
const RESULT_D: usize = ROOT_Q + 32;
const BEST_IDX: usize = ROOT_Q + 60 + 6;

/// Which search value the value target mixes with the game's result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QSource {
    /// The best move's Q and D (lczero-training's choice).
    #[default]
    Best,
    /// The root's Q and D.
    Root,
}

/// How records become samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleSettings {
    /// Share of the value target taken from the search's Q and D; the rest
    /// is the game's result (lczero-training's `q_ratio`).
    pub q_ratio: f32,
    /// Whose Q and D.
    pub q_source: QSource,
}

impl Default for SampleSettings {
    fn default() -> SampleSettings {
        SampleSettings { q_ratio: 0.0, q_source: QSource::Best }
    }
}

/// One position's input and targets, from the side to move's point of view.
#[derive(Clone, Debug, PartialEq)]
pub struct V6Sample {
    /// 8 history slots x 13 bitboards, bits reversed within each byte as
    /// the record stores them.
    pub planes: [u64; PLANE_COUNT],
    /// Ours queen side, ours king side, theirs queen side, theirs king side.
    pub castling: [bool; 4],
    /// Whether black is to move.
    pub black_to_move: bool,
    /// The halfmove clock.
    pub rule50: u8,
    /// The legal moves' policy indices and target probabilities.
    pub policy: Vec<(u16, f32)>,
    /// The value target: win, draw, loss.
    pub wdl: [f32; 3],
    /// The moves-left target.
    pub plies_left: f32,
    /// The policy index of the move the record names best.
    pub best_idx: u16,
}

/// Why a record is not a sample.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SampleError {
    /// The version word is not 6.
    #[error("version {0} where a V6 record has 6")]
    Version(u32),
    /// Not Lc0's classical 112-plane input.
    #[error("input format {0}: only the classical format ({CLASSICAL_INPUT}) is read")]
    InputFormat(u32),
    /// A field that no trainer could use.
    #[error("{0}")]
    Invalid(Invalid),
}

/// A field out of its range.
#[derive(Clone, Debug, PartialEq)]
pub struct Invalid {
    field: &'static str,
    value: f32,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {} is out of range", self.field, self.value)
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn f32_at(bytes: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// Win, draw, loss from a Q (win minus loss) and a D.
fn wdl(field: &'static str, q: f32, d: f32) -> Result<[f32; 3], SampleError> {
    let invalid = |value| SampleError::Invalid(Invalid { field, value });
    if !(-1.0..=1.0).contains(&q) {
        return Err(invalid(q));
    }
    // Win and loss must not be negative: |q| + d at most 1 (with rounding).
    if !(0.0..=1.0).contains(&d) || q.abs() + d > 1.0 + 1e-3 {
        return Err(invalid(d));
    }
    // Rounding in the writer can leave a hair below zero.
    let win = (0.5 * (1.0 + q - d)).clamp(0.0, 1.0);
    let loss = (0.5 * (1.0 - q - d)).clamp(0.0, 1.0);
    Ok([win, d, loss])
}

impl V6Sample {
    /// Decodes one record.
    ///
    /// # Errors
    /// Another version or input format, a policy with no legal move or a
    /// non-finite or negative legal entry, values out of range.
    pub fn parse(bytes: &[u8; V6_SIZE], settings: SampleSettings) -> Result<V6Sample, SampleError> {
        let version = u32_at(bytes, 0);
        if version != V6_VERSION {
            return Err(SampleError::Version(version));
        }
        let input_format = u32_at(bytes, 4);
        if input_format != CLASSICAL_INPUT {
            return Err(SampleError::InputFormat(input_format));
        }
        let invalid = |field, value| SampleError::Invalid(Invalid { field, value });
        let mut policy = Vec::with_capacity(64);
        for (index, entry) in bytes[PROBABILITIES..PLANES].chunks_exact(4).enumerate() {
            let p = f32::from_le_bytes(entry.try_into().expect("4 bytes"));
            // Lc0 marks illegal moves -1; any negative number is illegal.
            if p < 0.0 {
                continue;
            }
            if !(0.0..=1.0 + 1e-4).contains(&p) {
                return Err(invalid("a policy probability", p));
            }
            policy.push((index as u16, p));
        }
        if policy.is_empty() {
            return Err(invalid("legal moves", 0.0));
        }
        let mut planes = [0u64; PLANE_COUNT];
        for (plane, b) in planes.iter_mut().zip(bytes[PLANES..CASTLING].chunks_exact(8)) {
            *plane = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        }
        let flag = |at: usize| bytes[at] != 0;
        let result = wdl("result_q/result_d", f32_at(bytes, RESULT_Q), f32_at(bytes, RESULT_D))?;
        let mut target = result;
        if settings.q_ratio > 0.0 {
            let (q, d, field) = match settings.q_source {
                QSource::Best => (f32_at(bytes, BEST_Q), f32_at(bytes, BEST_D), "best_q/best_d"),
                QSource::Root => (f32_at(bytes, ROOT_Q), f32_at(bytes, ROOT_D), "root_q/root_d"),
            };
            let search = wdl(field, q, d)?;
            for (t, s) in target.iter_mut().zip(search) {
                *t = settings.q_ratio * s + (1.0 - settings.q_ratio) * *t;
            }
        }
        let plies_left = f32_at(bytes, PLIES_LEFT);
        if !(0.0..=10_000.0).contains(&plies_left) {
            return Err(invalid("plies_left", plies_left));
        }
        let best_idx = u16::from_le_bytes([bytes[BEST_IDX], bytes[BEST_IDX + 1]]);
        if usize::from(best_idx) >= POLICY_SIZE {
            return Err(invalid("best_idx", f32::from(best_idx)));
        }
        Ok(V6Sample {
            planes,
            castling: [flag(CASTLING), flag(CASTLING + 1), flag(CASTLING + 2), flag(CASTLING + 3)],
            black_to_move: flag(SIDE_TO_MOVE),
            rule50: bytes[RULE50],
            policy,
            wdl: target,
            plies_left,
            best_idx,
        })
    }

    /// Writes the 112 input planes as floats ([`INPUT_FLOATS`], plane-major,
    /// each plane from a1 of the side to move's frame): what capa-net's
    /// chess encoder draws for the same position and history.
    ///
    /// # Panics
    /// If `out` does not hold [`INPUT_FLOATS`] floats.
    pub fn write_input(&self, out: &mut [f32]) {
        assert_eq!(out.len(), INPUT_FLOATS, "an input holds 112 planes of 64 squares");
        out.fill(0.0);
        for (plane, &stored) in out.chunks_exact_mut(64).zip(&self.planes) {
            let mut bits = reverse_bits_in_bytes(stored);
            while bits != 0 {
                plane[bits.trailing_zeros() as usize] = 1.0;
                bits &= bits - 1;
            }
        }
        let aux = &mut out[PLANE_COUNT * 64..];
        for (plane, set) in aux.chunks_exact_mut(64).zip(self.castling.into_iter().chain([self.black_to_move])) {
            if set {
                plane.fill(1.0);
            }
        }
        // Input format 1 scales the clock by 1/99; plane 6 is zero, plane 7 ones.
        aux[5 * 64..6 * 64].fill(f32::from(self.rule50) / 99.0);
        aux[7 * 64..8 * 64].fill(1.0);
    }
}
