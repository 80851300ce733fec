//! The frame every capa data file shares: an 8-byte magic, a version byte,
//! the CRC-32 of the payload, and the payload, a deflated body. The bodies
//! are written with [`put_varint`] and [`put_str`] and read back with
//! [`Reader`], whose every read names what it reads when the body ends early.

use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;

/// Bodies larger than this are refused before they are inflated.
const MAX_BODY: u64 = 64 << 20;

/// One kind of file: its magic, the version this build writes and reads,
/// and what to call it in errors.
pub(crate) struct Kind {
    pub magic: &'static [u8; 8],
    pub version: u8,
    pub name: &'static str,
}

impl Kind {
    const HEADER: usize = 8 + 1 + 4;

    /// The file's bytes for `body`.
    pub fn seal(&self, body: &[u8]) -> Vec<u8> {
        let mut encoder = DeflateEncoder::new(Vec::with_capacity(body.len() / 2), Compression::default());
        encoder.write_all(body).expect("writing to memory");
        let payload = encoder.finish().expect("writing to memory");
        let mut bytes = Vec::with_capacity(Kind::HEADER + payload.len());
        bytes.extend_from_slice(self.magic);
        bytes.push(self.version);
        bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        bytes.extend_from_slice(&payload);
        bytes
    }

    /// The body of a file's bytes, after checking the magic, the version
    /// and the checksum.
    pub fn open(&self, bytes: &[u8]) -> Result<Vec<u8>, RecordError> {
        let magic = String::from_utf8_lossy(self.magic);
        if bytes.len() < Kind::HEADER || &bytes[..8] != self.magic {
            return Err(format_error(format!("not a capa {} (no {magic} header)", self.name)));
        }
        let version = bytes[8];
        if version != self.version {
            return Err(format_error(format!(
                "{} version {version}; this build reads version {}: use the capa that wrote it",
                self.name, self.version
            )));
        }
        let stored = u32::from_le_bytes(bytes[9..Kind::HEADER].try_into().expect("4 bytes"));
        let payload = &bytes[Kind::HEADER..];
        if crc32fast::hash(payload) != stored {
            return Err(format_error("checksum mismatch: the file is damaged"));
        }
        let mut body = Vec::new();
        DeflateDecoder::new(payload)
            .take(MAX_BODY + 1)
            .read_to_end(&mut body)
            .map_err(|e| format_error(format!("cannot inflate the body: {e}")))?;
        if body.len() as u64 > MAX_BODY {
            return Err(format_error(format!("the body is over {MAX_BODY} bytes")));
        }
        Ok(body)
    }
}

pub(crate) fn format_error(message: impl Into<String>) -> RecordError {
    RecordError::Format(message.into())
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Reads a body, every read naming what it reads when the body ends early.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], RecordError> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or_else(|| format_error(format!("the body ends inside the {what}")))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    pub fn byte(&mut self, what: &str) -> Result<u8, RecordError> {
        Ok(self.take(1, what)?[0])
    }

    pub fn u16(&mut self, what: &str) -> Result<u16, RecordError> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().expect("2 bytes")))
    }

    pub fn f32(&mut self, what: &str) -> Result<f32, RecordError> {
        let v = f32::from_le_bytes(self.take(4, what)?.try_into().expect("4 bytes"));
        if v.is_finite() { Ok(v) } else { Err(format_error(format!("the {what} hold {v}"))) }
    }

    pub fn varint(&mut self, what: &str) -> Result<u64, RecordError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte(what)?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format_error(format!("the {what} is not a valid varint")))
    }

    pub fn string(&mut self, what: &str) -> Result<String, RecordError> {
        let len = self.varint(what)?;
        let len = usize::try_from(len).map_err(|_| format_error(format!("the {what} is too long")))?;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| format_error(format!("the {what} is not UTF-8")))
    }
}

/// Why a record could not be read (or written).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The bytes are not a valid record.
    #[error("{0}")]
    Format(String),
    /// Reading or writing the file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Something is wrong with a record file.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        source: Box<RecordError>,
    },
}
