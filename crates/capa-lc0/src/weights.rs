//! Lc0's network weights file (`.pb.gz`): the messages of lc0's
//! `proto/net.proto` that a classical SE-ResNet uses (convolutional policy,
//! WDL value and moves-left heads), encoded and decoded by prost, and its
//! layers' LINEAR16 numbers. docs/lc0-weights.md has the facts from lc0's
//! source that this follows. Fields of other network families (attention
//! bodies and heads) are skipped when read.

use std::io::Read;
use std::path::Path;

use prost::Message;

/// Every weights file starts with this magic number (lc0's `kWeightMagic`).
pub const MAGIC: u32 = 0x1c0;

/// Why a weights file cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    /// The file cannot be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// The bytes are no protobuf `Net` message.
    #[error("not an Lc0 weights file (the protobuf does not parse: {0})")]
    Decode(#[from] prost::DecodeError),
    /// The message is not a weights file.
    #[error("not an Lc0 weights file: magic {0:#x}, where lc0 expects {MAGIC:#x}")]
    BadMagic(u32),
    /// A layer's bytes do not fit its encoding.
    #[error("layer {layer}: {reason}")]
    Layer {
        /// Which layer.
        layer: String,
        /// What is wrong.
        reason: String,
    },
}

/// The top-level message of a weights file.
#[derive(Clone, PartialEq, Message)]
pub struct Net {
    /// [`MAGIC`]; a fixed32 on the wire, first in the file.
    #[prost(fixed32, optional, tag = "1")]
    pub magic: Option<u32>,
    /// Free text.
    #[prost(string, optional, tag = "2")]
    pub license: Option<String>,
    /// The oldest lc0 that loads the file.
    #[prost(message, optional, tag = "3")]
    pub min_version: Option<EngineVersion>,
    /// What the network is.
    #[prost(message, optional, tag = "4")]
    pub format: Option<Format>,
    /// How it was trained (all optional).
    #[prost(message, optional, tag = "5")]
    pub training_params: Option<TrainingParams>,
    /// The weights.
    #[prost(message, optional, tag = "10")]
    pub weights: Option<Weights>,
}

/// An lc0 version.
#[derive(Clone, PartialEq, Message)]
pub struct EngineVersion {
    /// Major.
    #[prost(uint32, optional, tag = "1")]
    pub major: Option<u32>,
    /// Minor.
    #[prost(uint32, optional, tag = "2")]
    pub minor: Option<u32>,
    /// Patch.
    #[prost(uint32, optional, tag = "3")]
    pub patch: Option<u32>,
}

/// How the file is encoded, and what the network is.
#[derive(Clone, PartialEq, Message)]
pub struct Format {
    /// The layers' encoding; lc0 refuses a file without LINEAR16 here.
    #[prost(enumeration = "Encoding", optional, tag = "1")]
    pub weights_encoding: Option<i32>,
    /// The network's input, body and heads.
    #[prost(message, optional, tag = "2")]
    pub network_format: Option<NetworkFormat>,
}

/// The network's input, body and heads, as lc0's enums number them.
#[derive(Clone, PartialEq, Message)]
pub struct NetworkFormat {
    /// `INPUT_CLASSICAL_112_PLANE` = 1.
    #[prost(int32, optional, tag = "1")]
    pub input: Option<i32>,
    /// `OUTPUT_WDL` = 2.
    #[prost(int32, optional, tag = "2")]
    pub output: Option<i32>,
    /// `NETWORK_SE_WITH_HEADFORMAT` = 4.
    #[prost(int32, optional, tag = "3")]
    pub network: Option<i32>,
    /// `POLICY_CONVOLUTION` = 2.
    #[prost(int32, optional, tag = "4")]
    pub policy: Option<i32>,
    /// `VALUE_WDL` = 2.
    #[prost(int32, optional, tag = "5")]
    pub value: Option<i32>,
    /// `MOVES_LEFT_V1` = 1.
    #[prost(int32, optional, tag = "6")]
    pub moves_left: Option<i32>,
    /// `DEFAULT_ACTIVATION_RELU` = 0, `DEFAULT_ACTIVATION_MISH` = 1.
    #[prost(int32, optional, tag = "7")]
    pub default_activation: Option<i32>,
}

/// The numbers of lc0's format enums that capa's family uses.
pub mod format {
    /// `InputFormat::INPUT_CLASSICAL_112_PLANE`.
    pub const INPUT_CLASSICAL_112_PLANE: i32 = 1;
    /// `OutputFormat::OUTPUT_WDL`.
    pub const OUTPUT_WDL: i32 = 2;
    /// `NetworkStructure::NETWORK_SE_WITH_HEADFORMAT`.
    pub const NETWORK_SE_WITH_HEADFORMAT: i32 = 4;
    /// `PolicyFormat::POLICY_CONVOLUTION`.
    pub const POLICY_CONVOLUTION: i32 = 2;
    /// `ValueFormat::VALUE_WDL`.
    pub const VALUE_WDL: i32 = 2;
    /// `MovesLeftFormat::MOVES_LEFT_V1`.
    pub const MOVES_LEFT_V1: i32 = 1;
    /// `DefaultActivation::DEFAULT_ACTIVATION_RELU`.
    pub const ACTIVATION_RELU: i32 = 0;
    /// `DefaultActivation::DEFAULT_ACTIVATION_MISH`.
    pub const ACTIVATION_MISH: i32 = 1;
}

/// How a layer's numbers are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum Encoding {
    /// Unset: LINEAR16 for a layer, refused for the file.
    Unknown = 0,
    /// 16-bit steps between the layer's `min_val` and `max_val`.
    Linear16 = 1,
    /// IEEE half precision (lc0 0.33 on).
    Float16 = 2,
    /// bfloat16 (lc0 0.33 on).
    Bfloat16 = 3,
    /// IEEE single precision (lc0 0.33 on).
    Float32 = 4,
}

/// How the network was trained; informational.
#[derive(Clone, PartialEq, Message)]
pub struct TrainingParams {
    /// Steps trained.
    #[prost(uint32, optional, tag = "1")]
    pub training_steps: Option<u32>,
    /// The last learning rate.
    #[prost(float, optional, tag = "2")]
    pub learning_rate: Option<f32>,
    /// The value loss.
    #[prost(float, optional, tag = "3")]
    pub mse_loss: Option<f32>,
    /// The policy loss.
    #[prost(float, optional, tag = "4")]
    pub policy_loss: Option<f32>,
    /// Policy accuracy.
    #[prost(float, optional, tag = "5")]
    pub accuracy: Option<f32>,
    /// Free text.
    #[prost(string, optional, tag = "6")]
    pub lc0_params: Option<String>,
}

/// A tensor: its numbers as `encoding` stores them.
#[derive(Clone, PartialEq, Message)]
pub struct Layer {
    /// LINEAR16's value of step 0.
    #[prost(float, optional, tag = "1")]
    pub min_val: Option<f32>,
    /// LINEAR16's value of step 65535.
    #[prost(float, optional, tag = "2")]
    pub max_val: Option<f32>,
    /// The numbers, little-endian.
    #[prost(bytes = "vec", optional, tag = "3")]
    pub params: Option<Vec<u8>>,
    /// Their encoding (unset: LINEAR16).
    #[prost(enumeration = "Encoding", optional, tag = "4")]
    pub encoding: Option<i32>,
}

/// A convolution, its bias, and optionally a batch normalisation lc0 folds in.
#[derive(Clone, PartialEq, Message)]
pub struct ConvBlock {
    /// `[out][in][kh][kw]`.
    #[prost(message, optional, tag = "1")]
    pub weights: Option<Layer>,
    /// One per output channel.
    #[prost(message, optional, tag = "2")]
    pub biases: Option<Layer>,
    /// Batch norm means (empty: no batch norm).
    #[prost(message, optional, tag = "3")]
    pub bn_means: Option<Layer>,
    /// Batch norm variances (the field's name notwithstanding).
    #[prost(message, optional, tag = "4")]
    pub bn_stddivs: Option<Layer>,
    /// Batch norm scales.
    #[prost(message, optional, tag = "5")]
    pub bn_gammas: Option<Layer>,
    /// Batch norm shifts.
    #[prost(message, optional, tag = "6")]
    pub bn_betas: Option<Layer>,
}

/// Squeeze and excitation: `w1` `[se][C]`, `w2` `[2C][se]`; the first `C`
/// outputs are a sigmoid scale, the last `C` a shift.
#[derive(Clone, PartialEq, Message)]
pub struct SeUnit {
    /// The squeeze.
    #[prost(message, optional, tag = "1")]
    pub w1: Option<Layer>,
    /// Its bias.
    #[prost(message, optional, tag = "2")]
    pub b1: Option<Layer>,
    /// The excitation.
    #[prost(message, optional, tag = "3")]
    pub w2: Option<Layer>,
    /// Its bias.
    #[prost(message, optional, tag = "4")]
    pub b2: Option<Layer>,
}

/// A residual block: two 3x3 convolutions and the SE unit.
#[derive(Clone, PartialEq, Message)]
pub struct Residual {
    /// The first convolution.
    #[prost(message, optional, tag = "1")]
    pub conv1: Option<ConvBlock>,
    /// The second.
    #[prost(message, optional, tag = "2")]
    pub conv2: Option<ConvBlock>,
    /// Squeeze and excitation after the second.
    #[prost(message, optional, tag = "3")]
    pub se: Option<SeUnit>,
}

/// The weights of a classical SE-ResNet with convolutional policy, WDL value
/// and moves-left heads.
#[derive(Clone, PartialEq, Message)]
pub struct Weights {
    /// 3x3, 112 planes to the body's channels.
    #[prost(message, optional, tag = "1")]
    pub input: Option<ConvBlock>,
    /// The residual blocks.
    #[prost(message, repeated, tag = "2")]
    pub residual: Vec<Residual>,
    /// The convolutional policy's output, 3x3 to 80 planes.
    #[prost(message, optional, tag = "3")]
    pub policy: Option<ConvBlock>,
    /// The value head's 1x1 convolution.
    #[prost(message, optional, tag = "6")]
    pub value: Option<ConvBlock>,
    /// The value head's first dense layer, `[out][in]`.
    #[prost(message, optional, tag = "7")]
    pub ip1_val_w: Option<Layer>,
    /// Its bias.
    #[prost(message, optional, tag = "8")]
    pub ip1_val_b: Option<Layer>,
    /// The value head's output layer (3: win, draw, loss).
    #[prost(message, optional, tag = "9")]
    pub ip2_val_w: Option<Layer>,
    /// Its bias.
    #[prost(message, optional, tag = "10")]
    pub ip2_val_b: Option<Layer>,
    /// The convolutional policy's hidden 3x3 convolution.
    #[prost(message, optional, tag = "11")]
    pub policy1: Option<ConvBlock>,
    /// The moves-left head's 1x1 convolution.
    #[prost(message, optional, tag = "12")]
    pub moves_left: Option<ConvBlock>,
    /// The moves-left head's first dense layer.
    #[prost(message, optional, tag = "13")]
    pub ip1_mov_w: Option<Layer>,
    /// Its bias.
    #[prost(message, optional, tag = "14")]
    pub ip1_mov_b: Option<Layer>,
    /// The moves-left head's output layer (one number, through a ReLU).
    #[prost(message, optional, tag = "15")]
    pub ip2_mov_w: Option<Layer>,
    /// Its bias.
    #[prost(message, optional, tag = "16")]
    pub ip2_mov_b: Option<Layer>,
}

impl Layer {
    /// `values` as LINEAR16, the way lczero-training writes them: 16-bit
    /// steps between their minimum and maximum (a constant layer stores its
    /// value as the minimum; a single 0 spans 0 to 1).
    pub fn linear16(values: &[f32]) -> Layer {
        let mut min = values.iter().copied().fold(f32::INFINITY, f32::min);
        let mut max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        if values.is_empty() {
            (min, max) = (0.0, 0.0);
        }
        if values.len() == 1 {
            (min, max) = (0.0, if values[0] == 0.0 { 1.0 } else { values[0] });
        }
        let range = max - min;
        let params = values
            .iter()
            .flat_map(|&v| {
                // A single negative value spans 0 down to itself: a negative range.
                let step = if range != 0.0 { ((v - min) / range * 65535.0).round().clamp(0.0, 65535.0) } else { 0.0 };
                (step as u16).to_le_bytes()
            })
            .collect();
        Layer {
            min_val: Some(min),
            max_val: Some(max),
            params: Some(params),
            encoding: Some(Encoding::Linear16 as i32),
        }
    }

    /// Whether the layer holds no number.
    pub fn is_empty(&self) -> bool {
        self.params.as_ref().is_none_or(Vec::is_empty)
    }

    /// The layer's numbers, decoded as lc0 decodes them (`name` for errors).
    ///
    /// # Errors
    /// An unknown encoding, or bytes that are not a whole number of values.
    pub fn values(&self, name: &str) -> Result<Vec<f32>, WeightsError> {
        let bad = |reason: String| WeightsError::Layer { layer: name.to_string(), reason };
        let bytes = self.params.as_deref().unwrap_or_default();
        let encoding = match self.encoding.unwrap_or(0) {
            0 => Encoding::Linear16,
            n => Encoding::try_from(n).map_err(|_| bad(format!("unknown encoding {n}")))?,
        };
        let size = if encoding == Encoding::Float32 { 4 } else { 2 };
        if !bytes.len().is_multiple_of(size) {
            return Err(bad(format!("{} bytes are not a whole number of {size}-byte values", bytes.len())));
        }
        let (min, max) = (self.min_val.unwrap_or(0.0), self.max_val.unwrap_or(0.0));
        let halves = || bytes.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]]));
        Ok(match encoding {
            Encoding::Unknown | Encoding::Linear16 => halves()
                .map(|step| {
                    let theta = f32::from(step) / 65535.0;
                    min * (1.0 - theta) + max * theta
                })
                .collect(),
            Encoding::Float16 => halves().map(f16_to_f32).collect(),
            Encoding::Bfloat16 => halves().map(|h| f32::from_bits(u32::from(h) << 16)).collect(),
            Encoding::Float32 => bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
        })
    }
}

/// IEEE half to single precision.
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exponent = u32::from((h >> 10) & 0x1f);
    let mantissa = u32::from(h & 0x3ff);
    let bits = match (exponent, mantissa) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalise.
            let shift = m.leading_zeros() - 21;
            sign | ((113 - shift) << 23) | (((m << shift) & 0x3ff) << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

impl Net {
    /// Reads a weights file: gzip (or, as lc0 allows, uncompressed) protobuf.
    ///
    /// # Errors
    /// An unreadable file, bytes that are no `Net`, or a wrong magic number.
    pub fn read(path: &Path) -> Result<Net, WeightsError> {
        let io = |source| WeightsError::Io { path: path.display().to_string(), source };
        let bytes = std::fs::read(path).map_err(io)?;
        let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
            let mut plain = Vec::new();
            flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut plain).map_err(io)?;
            plain
        } else {
            bytes
        };
        Net::from_bytes(&bytes)
    }

    /// Parses a `Net` from protobuf bytes and checks its magic number.
    ///
    /// # Errors
    /// Bytes that are no `Net`, or a wrong magic number.
    pub fn from_bytes(bytes: &[u8]) -> Result<Net, WeightsError> {
        let net = Net::decode(bytes)?;
        match net.magic {
            Some(MAGIC) => Ok(net),
            other => Err(WeightsError::BadMagic(other.unwrap_or(0))),
        }
    }

    /// Writes the file gzip-compressed, whole or not at all.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(&self, path: &Path) -> Result<(), WeightsError> {
        let io = |source| WeightsError::Io { path: path.display().to_string(), source };
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gzip, &self.encode_to_vec()).map_err(io)?;
        let bytes = gzip.finish().map_err(io)?;
        capa_data::write_atomically(path, &bytes).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net() -> Net {
        let conv = |values: &[f32]| ConvBlock {
            weights: Some(Layer::linear16(values)),
            biases: Some(Layer::linear16(&[0.5, -0.5])),
            ..ConvBlock::default()
        };
        Net {
            magic: Some(MAGIC),
            min_version: Some(EngineVersion { major: Some(0), minor: Some(21), patch: Some(0) }),
            format: Some(Format {
                weights_encoding: Some(Encoding::Linear16 as i32),
                network_format: Some(NetworkFormat {
                    input: Some(format::INPUT_CLASSICAL_112_PLANE),
                    network: Some(format::NETWORK_SE_WITH_HEADFORMAT),
                    ..NetworkFormat::default()
                }),
            }),
            weights: Some(Weights {
                input: Some(conv(&[1.0, 2.0, -3.0, 0.25])),
                residual: vec![Residual { conv1: Some(conv(&[0.1; 9])), ..Residual::default() }],
                ..Weights::default()
            }),
            ..Net::default()
        }
    }

    #[test]
    fn linear16_is_within_half_a_step_and_exact_at_the_ends() {
        let values: Vec<f32> = (0..1000).map(|i| ((i * 7919) % 1000) as f32 / 37.0 - 13.0).collect();
        let layer = Layer::linear16(&values);
        let back = layer.values("l").unwrap();
        let (min, max) = (layer.min_val.unwrap(), layer.max_val.unwrap());
        let step = (max - min) / 65535.0;
        for (v, b) in values.iter().zip(&back) {
            assert!((v - b).abs() <= step / 2.0 + 1e-6, "{v} came back as {b}");
        }
        assert!(back.contains(&min) && back.contains(&max));
        // A constant layer, and lczero-training's rule for one number.
        assert_eq!(Layer::linear16(&[2.5, 2.5]).values("c").unwrap(), [2.5, 2.5]);
        assert_eq!(Layer::linear16(&[0.0]).values("z").unwrap(), [0.0]);
        // One negative number spans 0 down to itself (lczero-training's
        // `fill_layer_v2` divides by the negative range), and comes back whole.
        assert_eq!(Layer::linear16(&[-4.0]).values("n").unwrap(), [-4.0]);
    }

    #[test]
    fn the_other_encodings_decode() {
        let layer = |encoding: Encoding, bytes: Vec<u8>| Layer {
            params: Some(bytes),
            encoding: Some(encoding as i32),
            ..Layer::default()
        };
        let floats = [1.5f32, -2.25, 0.0];
        let bytes = floats.iter().flat_map(|f| f.to_le_bytes()).collect();
        assert_eq!(layer(Encoding::Float32, bytes).values("f").unwrap(), floats);
        // 1.5, -2.25, 2^-24 (the smallest subnormal) and 65504 in half precision.
        let halves = [0x3e00u16, 0xc080, 0x0001, 0x7bff].iter().flat_map(|h| h.to_le_bytes()).collect();
        assert_eq!(layer(Encoding::Float16, halves).values("h").unwrap(), [1.5, -2.25, 2f32.powi(-24), 65504.0]);
        let brains = [0x3fc0u16, 0xc010].iter().flat_map(|h| h.to_le_bytes()).collect();
        assert_eq!(layer(Encoding::Bfloat16, brains).values("b").unwrap(), [1.5, -2.25]);
        let odd = layer(Encoding::Float32, vec![0; 6]).values("odd").unwrap_err().to_string();
        assert!(odd.contains("layer odd") && odd.contains("6 bytes"), "{odd}");
        let unknown = Layer { encoding: Some(9), ..Layer::default() }.values("u").unwrap_err().to_string();
        assert!(unknown.contains("unknown encoding 9"), "{unknown}");
    }

    #[test]
    fn a_file_round_trips_and_starts_with_the_magic() {
        let net = net();
        let bytes = net.encode_to_vec();
        // Field 1, wire type 5 (fixed32), then 0x1c0 little-endian: what lc0's autodiscovery looks for.
        assert_eq!(&bytes[..5], &[0x0d, 0xc0, 0x01, 0x00, 0x00]);
        assert_eq!(Net::from_bytes(&bytes).unwrap(), net);
        let dir = std::env::temp_dir().join(format!("capa-lc0-weights-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("net.pb.gz");
        net.write(&path).unwrap();
        assert_eq!(Net::read(&path).unwrap(), net);
        // lc0 also loads an uncompressed file.
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(Net::read(&path).unwrap(), net);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let bytes = net().encode_to_vec();
        let truncated = Net::from_bytes(&bytes[..bytes.len() - 3]).unwrap_err().to_string();
        assert!(truncated.contains("does not parse"), "{truncated}");
        let other = Net { magic: Some(7), ..net() }.encode_to_vec();
        let magic = Net::from_bytes(&other).unwrap_err().to_string();
        assert!(magic.contains("0x7") && magic.contains("0x1c0"), "{magic}");
        let missing = Net::read(Path::new("/no/such/net.pb.gz")).unwrap_err().to_string();
        assert!(missing.contains("/no/such/net.pb.gz"), "{missing}");
    }
}
