//! The one stable hash of bytes.

/// FNV-1a, 64 bits: a stable hash of bytes, for names and splits that must
/// never change between runs or machines (not for hash tables: see the
/// Zobrist keys for positions).
pub fn fnv1a<'a>(bytes: impl IntoIterator<Item = &'a u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}
