//! `capa net export-lc0` and `import-lc0`: a network of capa's Lc0 family
//! ([`NetFamily::Lc0`]) as Lc0's weights file, and back. docs/lc0-weights.md
//! has the facts from lc0's source that the mapping follows; what differs
//! between the two is converted here:
//! - burn's dense layers are `[in][out]`, Lc0's `[out][in]`;
//! - capa feeds the fifty-move counter divided by 99 (as Lc0's training
//!   data holds it), lc0's classical input feeds it raw;
//! - capa's moves-left head predicts in units of [`MOVES_LEFT_SCALE`]
//!   plies, Lc0's in plies;
//! - capa's policy planes list promotions as queen, rook, bishop, Lc0's as
//!   rook, bishop, queen; Lc0 pads them to 80 planes;
//! - Lc0 files may hold batch normalisation, which an import folds into
//!   the convolutions as lc0 does when it loads them.

use std::path::Path;

use anyhow::{Context, Result, ensure};
use capa_lc0::weights::{
    ConvBlock, Encoding, EngineVersion, Format, Layer, Net as Lc0Net, NetworkFormat, Residual, SeUnit, Weights, format,
};
use capa_net::{
    Activation, MOVES_LEFT_SCALE, NetConfig, NetFamily, Stored, Tensors, read_net_weights, write_net_weights,
};
use capa_rules::GameKind;

/// The fifty-move counter's input plane (Lc0's auxiliary plane 5).
const RULE50_PLANE: usize = 109;
/// capa's divisor of the fifty-move counter.
const RULE50_SCALE: f32 = 99.0;
/// The output planes of Lc0's convolutional policy (73 used).
const LC0_POLICY_PLANES: usize = 80;
/// lc0's batch normalisation epsilon.
const BN_EPSILON: f32 = 1e-5;
/// Input planes of Lc0's classical format.
const INPUT_PLANES: usize = 112;
/// Squares of the chess board.
const SQUARES: usize = 64;

/// What an export or import converted, for the summary it prints.
#[derive(Debug)]
pub struct Converted {
    /// The network's architecture.
    pub config: NetConfig,
    /// Tensors written.
    pub tensors: usize,
}

/// Writes the network file or checkpoint `input` (of the Lc0 family) as
/// Lc0's weights file `output` (gzip, LINEAR16, written atomically).
///
/// # Errors
/// A file that is not a capa network, a network of capa's own family
/// (which Lc0 cannot run), or an output that cannot be written.
pub fn export(input: &Path, output: &Path) -> Result<Converted> {
    let (config, weights) = read_net_weights(input)?;
    ensure!(
        config.family == NetFamily::Lc0,
        "{}: a network of capa's own family (GroupNorm, transformer blocks), which lc0 cannot run; only networks \
         built with `preset = \"lc0\"` (family = \"lc0\") map to Lc0's weights file",
        input.display()
    );
    let get = |name: &str| -> Result<&Stored> {
        weights.get(name).with_context(|| format!("{}: no tensor {name}", input.display()))
    };
    let conv = |prefix: &str| -> Result<ConvBlock> {
        Ok(plain_conv(&get(&format!("{prefix}.weight"))?.values, &get(&format!("{prefix}.bias"))?.values))
    };
    let dense = |prefix: &str| -> Result<(Layer, Layer)> {
        let weight = get(&format!("{prefix}.weight"))?;
        Ok((Layer::linear16(&transpose(weight)), Layer::linear16(&get(&format!("{prefix}.bias"))?.values)))
    };

    let input_weight = get("input_conv.weight")?;
    let mut input_values = input_weight.values.clone();
    for (index, value) in input_values.iter_mut().enumerate() {
        if (index / 9) % INPUT_PLANES == RULE50_PLANE {
            *value /= RULE50_SCALE;
        }
    }
    let residual = (0..config.blocks)
        .map(|block| -> Result<Residual> {
            let prefix = format!("blocks.{block}");
            let (w1, b1) = dense(&format!("{prefix}.se.squeeze"))?;
            let (w2, b2) = dense(&format!("{prefix}.se.excite"))?;
            Ok(Residual {
                conv1: Some(conv(&format!("{prefix}.conv1"))?),
                conv2: Some(conv(&format!("{prefix}.conv2"))?),
                se: Some(SeUnit { w1: Some(w1), b1: Some(b1), w2: Some(w2), b2: Some(b2) }),
            })
        })
        .collect::<Result<Vec<_>>>()?;

    let lc0_plane = policy_planes()?;
    let (planes_weight, planes_bias) = (get("policy.planes.weight")?, get("policy.planes.bias")?);
    let per_plane = planes_weight.values.len() / lc0_plane.len();
    let mut policy_weight = vec![0.0; LC0_POLICY_PLANES * per_plane];
    let mut policy_bias = vec![0.0; LC0_POLICY_PLANES];
    for (capa, &lc0) in lc0_plane.iter().enumerate() {
        policy_weight[lc0 * per_plane..(lc0 + 1) * per_plane]
            .copy_from_slice(&planes_weight.values[capa * per_plane..(capa + 1) * per_plane]);
        policy_bias[lc0] = planes_bias.values[capa];
    }

    let (ip1_val_w, ip1_val_b) = dense("wdl.hidden")?;
    let (ip2_val_w, ip2_val_b) = dense("wdl.out")?;
    let (ip1_mov_w, ip1_mov_b) = dense("moves_left.hidden")?;
    let in_plies = |values: Vec<f32>| values.into_iter().map(|v| v * MOVES_LEFT_SCALE).collect::<Vec<_>>();
    let ip2_mov_w = in_plies(transpose(get("moves_left.out.weight")?));
    let ip2_mov_b = in_plies(get("moves_left.out.bias")?.values.clone());

    let (activation, minor) = match config.activation {
        Activation::Mish => (format::ACTIVATION_MISH, 29),
        Activation::Relu => (format::ACTIVATION_RELU, 21),
    };
    let net = Lc0Net {
        magic: Some(capa_lc0::weights::MAGIC),
        license: None,
        min_version: Some(EngineVersion { major: Some(0), minor: Some(minor), patch: Some(0) }),
        format: Some(Format {
            weights_encoding: Some(Encoding::Linear16 as i32),
            network_format: Some(NetworkFormat {
                input: Some(format::INPUT_CLASSICAL_112_PLANE),
                output: Some(format::OUTPUT_WDL),
                network: Some(format::NETWORK_SE_WITH_HEADFORMAT),
                policy: Some(format::POLICY_CONVOLUTION),
                value: Some(format::VALUE_WDL),
                moves_left: Some(format::MOVES_LEFT_V1),
                default_activation: Some(activation),
            }),
        }),
        training_params: None,
        weights: Some(Weights {
            input: Some(plain_conv(&input_values, &get("input_conv.bias")?.values)),
            residual,
            policy: Some(plain_conv(&policy_weight, &policy_bias)),
            value: Some(conv("wdl.conv")?),
            ip1_val_w: Some(ip1_val_w),
            ip1_val_b: Some(ip1_val_b),
            ip2_val_w: Some(ip2_val_w),
            ip2_val_b: Some(ip2_val_b),
            policy1: Some(conv("policy.conv")?),
            moves_left: Some(conv("moves_left.conv")?),
            ip1_mov_w: Some(ip1_mov_w),
            ip1_mov_b: Some(ip1_mov_b),
            ip2_mov_w: Some(Layer::linear16(&ip2_mov_w)),
            ip2_mov_b: Some(Layer::linear16(&ip2_mov_b)),
        }),
    };
    net.write(output)?;
    let tensors = weights.keys().filter(|name| !name.starts_with("future.")).count();
    Ok(Converted { config, tensors })
}

/// Reads Lc0's weights file `input` and writes it as a capa network file
/// `output` of the Lc0 family.
///
/// # Errors
/// As [`read_lc0`], and an output that cannot be written.
pub fn import(input: &Path, output: &Path) -> Result<Converted> {
    let (config, tensors) = read_lc0(input)?;
    write_net_weights(&config, &tensors, output)?;
    Ok(Converted { tensors: tensors.len(), config })
}

/// Reads Lc0's weights file `input` (a classical SE-ResNet with the
/// convolutional policy, WDL value and moves-left heads) as the weights of
/// a capa network of the Lc0 family, by parameter name.
///
/// # Errors
/// A file that is not Lc0's, a network that capa's Lc0 family cannot hold
/// (another input format, an attention body, a dense policy, a value head
/// without WDL, no moves-left head), or layers whose sizes do not fit
/// together.
pub fn read_lc0(input: &Path) -> Result<(NetConfig, Tensors)> {
    let file = Lc0Net::read(input)?;
    let in_file = |message: String| anyhow::anyhow!("{}: {message}", input.display());
    let network = file.format.as_ref().and_then(|f| f.network_format.as_ref()).ok_or_else(|| {
        in_file(
            "no network format (an old classical network): capa reads SE-ResNets with a WDL \
             value head, the convolutional policy and a moves-left head"
                .to_string(),
        )
    })?;
    let wanted = [
        ("input", network.input, format::INPUT_CLASSICAL_112_PLANE, "the classical 112-plane input"),
        ("network", network.network, format::NETWORK_SE_WITH_HEADFORMAT, "an SE-ResNet body (not an attention body)"),
        ("policy", network.policy, format::POLICY_CONVOLUTION, "the convolutional policy"),
        ("value", network.value, format::VALUE_WDL, "a WDL value head"),
        ("moves_left", network.moves_left, format::MOVES_LEFT_V1, "a moves-left head"),
    ];
    for (field, value, expected, what) in wanted {
        let value = value.unwrap_or(0);
        if value != expected {
            return Err(in_file(format!(
                "network format {field} = {value}, where capa's Lc0 family needs {expected} ({what})"
            )));
        }
    }
    let activation = match network.default_activation.unwrap_or(format::ACTIVATION_RELU) {
        format::ACTIVATION_RELU => Activation::Relu,
        format::ACTIVATION_MISH => Activation::Mish,
        other => return Err(in_file(format!("default activation {other}: capa knows ReLU (0) and Mish (1)"))),
    };
    let weights = file.weights.as_ref().ok_or_else(|| in_file("no weights (an ONNX network?)".to_string()))?;
    let missing = |name: &str| in_file(format!("no {name} layer"));

    let mut tensors = Tensors::new();
    let input_block = weights.input.as_ref().ok_or_else(|| missing("input"))?;
    let (mut input_weight, input_bias) = fold(input_block, "input")?;
    let channels = input_bias.len();
    ensure!(channels > 0, in_file("the input convolution has no output channels".to_string()));
    expect_len("input weights", &input_weight, channels * INPUT_PLANES * 9).map_err(&in_file)?;
    for (index, value) in input_weight.iter_mut().enumerate() {
        if (index / 9) % INPUT_PLANES == RULE50_PLANE {
            *value *= RULE50_SCALE;
        }
    }
    insert_conv(&mut tensors, "input_conv", [channels, INPUT_PLANES, 3, 3], input_weight, input_bias);

    ensure!(!weights.residual.is_empty(), in_file("no residual blocks".to_string()));
    let mut se_width = None;
    for (index, block) in weights.residual.iter().enumerate() {
        let prefix = format!("blocks.{index}");
        for (name, conv) in [("conv1", &block.conv1), ("conv2", &block.conv2)] {
            let what = format!("residual {index} {name}");
            let conv = conv.as_ref().ok_or_else(|| missing(&what))?;
            let (weight, bias) = fold(conv, &what)?;
            expect_len(&what, &weight, channels * channels * 9).map_err(&in_file)?;
            expect_len(&format!("{what} biases"), &bias, channels).map_err(&in_file)?;
            insert_conv(&mut tensors, &format!("{prefix}.{name}"), [channels, channels, 3, 3], weight, bias);
        }
        let what = format!("residual {index} se");
        let se = block.se.as_ref().ok_or_else(|| in_file(format!("{what}: a block without squeeze-excitation")))?;
        let b1 = values(&se.b1, &format!("{what} b1"))?;
        let width = b1.len();
        ensure!(
            width > 0 && channels.is_multiple_of(width),
            in_file(format!("{what}: {width} units do not divide {channels} channels"))
        );
        ensure!(se_width.is_none_or(|w| w == width), in_file(format!("{what}: {width} units, unlike the first block")));
        se_width = Some(width);
        insert_dense(
            &mut tensors,
            &format!("{prefix}.se.squeeze"),
            values(&se.w1, &format!("{what} w1"))?,
            b1,
            channels,
        )
        .map_err(&in_file)?;
        let b2 = values(&se.b2, &format!("{what} b2"))?;
        expect_len(&format!("{what} b2"), &b2, 2 * channels).map_err(&in_file)?;
        insert_dense(&mut tensors, &format!("{prefix}.se.excite"), values(&se.w2, &format!("{what} w2"))?, b2, width)
            .map_err(&in_file)?;
    }

    let policy1 = weights.policy1.as_ref().ok_or_else(|| missing("policy1"))?;
    let (weight, bias) = fold(policy1, "policy1")?;
    expect_len("policy1", &weight, channels * channels * 9).map_err(&in_file)?;
    expect_len("policy1 biases", &bias, channels).map_err(&in_file)?;
    insert_conv(&mut tensors, "policy.conv", [channels, channels, 3, 3], weight, bias);
    let policy = weights.policy.as_ref().ok_or_else(|| missing("policy"))?;
    let (weight, bias) = fold(policy, "policy")?;
    let per_plane = channels * 9;
    ensure!(
        bias.len() >= 73 && weight.len() == bias.len() * per_plane,
        in_file(format!(
            "policy: {} planes of {} weights; lc0's convolutional policy has 80 planes of {per_plane}",
            bias.len(),
            weight.len() / bias.len().max(1)
        ))
    );
    let lc0_plane = policy_planes()?;
    let mut planes_weight = Vec::with_capacity(lc0_plane.len() * per_plane);
    let mut planes_bias = Vec::with_capacity(lc0_plane.len());
    for &lc0 in &lc0_plane {
        planes_weight.extend_from_slice(&weight[lc0 * per_plane..(lc0 + 1) * per_plane]);
        planes_bias.push(bias[lc0]);
    }
    insert_conv(&mut tensors, "policy.planes", [lc0_plane.len(), channels, 3, 3], planes_weight, planes_bias);

    // A head's layers: `name` in Lc0's file, `prefix` in capa's network,
    // its outputs divided by `out_scale` (capa's units over Lc0's).
    let head = |(name, prefix): (&str, &str),
                conv: &Option<ConvBlock>,
                hidden: [&Option<Layer>; 2],
                out: [&Option<Layer>; 2],
                outputs: usize,
                out_scale: f32,
                tensors: &mut Tensors|
     -> Result<(usize, usize)> {
        let conv = conv.as_ref().ok_or_else(|| missing(name))?;
        let (weight, bias) = fold(conv, name)?;
        let planes = bias.len();
        expect_len(name, &weight, planes * channels).map_err(&in_file)?;
        insert_conv(tensors, &format!("{prefix}.conv"), [planes, channels, 1, 1], weight, bias);
        let hidden_bias = values(hidden[1], &format!("{name} ip1 biases"))?;
        let width = hidden_bias.len();
        insert_dense(
            tensors,
            &format!("{prefix}.hidden"),
            values(hidden[0], &format!("{name} ip1"))?,
            hidden_bias,
            planes * SQUARES,
        )
        .map_err(&in_file)?;
        let mut out_weight = values(out[0], &format!("{name} ip2"))?;
        let mut out_bias = values(out[1], &format!("{name} ip2 biases"))?;
        expect_len(&format!("{name} ip2 biases"), &out_bias, outputs).map_err(&in_file)?;
        for value in out_weight.iter_mut().chain(out_bias.iter_mut()) {
            *value /= out_scale;
        }
        insert_dense(tensors, &format!("{prefix}.out"), out_weight, out_bias, width).map_err(&in_file)?;
        Ok((planes, width))
    };
    let (value_channels, value_hidden) = head(
        ("value", "wdl"),
        &weights.value,
        [&weights.ip1_val_w, &weights.ip1_val_b],
        [&weights.ip2_val_w, &weights.ip2_val_b],
        3,
        1.0,
        &mut tensors,
    )?;
    let moves_left = head(
        ("moves_left", "moves_left"),
        &weights.moves_left,
        [&weights.ip1_mov_w, &weights.ip1_mov_b],
        [&weights.ip2_mov_w, &weights.ip2_mov_b],
        1,
        MOVES_LEFT_SCALE,
        &mut tensors,
    )?;
    let (planes, hidden) = (capa_net::MOVES_LEFT_CHANNELS, capa_net::MOVES_LEFT_HIDDEN);
    ensure!(
        moves_left == (planes, hidden),
        in_file(format!(
            "a moves-left head of {} planes and {} hidden units; capa's has {planes} and {hidden}",
            moves_left.0, moves_left.1
        ))
    );

    let config = NetConfig {
        channels,
        blocks: weights.residual.len(),
        se_ratio: channels / se_width.unwrap_or(channels),
        value_channels,
        value_hidden,
        future_head: false,
        activation,
        ..NetConfig::lc0(GameKind::Chess)
    };
    config.validate().map_err(|e| in_file(e.to_string()))?;
    Ok((config, tensors))
}

/// For each of capa's convolutional policy planes (chess), Lc0's plane of
/// the same kind of move: every policy entry's capa plane and Lc0 plane,
/// which must pair one to one.
fn policy_planes() -> Result<Vec<usize>> {
    let map = GameKind::Chess.policy_map().context("chess has a policy map")?;
    let capa_places = map.move_plane_indices();
    let mut lc0_plane = vec![usize::MAX; map.move_planes()];
    for (entry, place) in map.entries().iter().zip(capa_places) {
        let capa = place / SQUARES;
        let lc0 = lc0_move_plane(entry.from, entry.to, entry.promotion)
            .with_context(|| format!("policy entry {entry:?} has no Lc0 plane"))?;
        if lc0_plane[capa] == usize::MAX {
            lc0_plane[capa] = lc0;
        }
        ensure!(
            lc0_plane[capa] == lc0,
            "capa's policy plane {capa} holds moves of Lc0's planes {} and {lc0}",
            lc0_plane[capa]
        );
    }
    ensure!(lc0_plane.iter().all(|&p| p < LC0_POLICY_PLANES), "a capa policy plane without moves");
    Ok(lc0_plane)
}

/// Lc0's convolutional policy plane of a move (`lc0_az_policy_map.py`):
/// 56 queen-like planes (direction N, NE, E, SE, S, SW, W, NW, then
/// distance), 8 knight jumps, then promotions by file step and piece
/// (rook, bishop, queen).
fn lc0_move_plane(from: u8, to: u8, promotion: Option<char>) -> Option<usize> {
    const DIRECTIONS: [(i32, i32); 8] = [(0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1)];
    const KNIGHT: [(i32, i32); 8] = [(1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)];
    let (from, to) = (i32::from(from), i32::from(to));
    let (df, dr) = (to % 8 - from % 8, to / 8 - from / 8);
    if let Some(piece) = promotion {
        let piece = ['r', 'b', 'q'].iter().position(|&p| p == piece)?;
        return Some(64 + usize::try_from(df + 1).ok()? * 3 + piece);
    }
    if let Some(jump) = KNIGHT.iter().position(|&j| j == (df, dr)) {
        return Some(56 + jump);
    }
    let direction = DIRECTIONS.iter().position(|&d| d == (df.signum(), dr.signum()))?;
    Some(direction * 7 + usize::try_from(df.abs().max(dr.abs())).ok()? - 1)
}

/// A convolution with a bias and no batch normalisation.
fn plain_conv(weights: &[f32], biases: &[f32]) -> ConvBlock {
    ConvBlock { weights: Some(Layer::linear16(weights)), biases: Some(Layer::linear16(biases)), ..ConvBlock::default() }
}

/// A burn dense weight, `[in, out]`, as Lc0's `[out][in]`.
fn transpose(weight: &Stored) -> Vec<f32> {
    let (inputs, outputs) = (weight.shape[0], weight.shape[1]);
    (0..outputs).flat_map(|o| (0..inputs).map(move |i| weight.values[i * outputs + o])).collect()
}

/// A layer's values, or an error naming it when it is absent or undecodable.
fn values(layer: &Option<Layer>, name: &str) -> Result<Vec<f32>> {
    let layer = layer.as_ref().filter(|l| !l.is_empty()).with_context(|| format!("no {name} layer"))?;
    Ok(layer.values(name)?)
}

fn expect_len(name: &str, values: &[f32], wanted: usize) -> std::result::Result<(), String> {
    if values.len() == wanted {
        Ok(())
    } else {
        Err(format!("{name}: {} values where the network's other layers make {wanted}", values.len()))
    }
}

/// A convolution's weights and biases with its batch normalisation, if
/// any, folded in as lc0 folds it: `γ/sqrt(var + ε) (conv(x) + b - μ) + β`.
fn fold(conv: &ConvBlock, name: &str) -> Result<(Vec<f32>, Vec<f32>)> {
    let mut weights = values(&conv.weights, &format!("{name} weights"))?;
    let optional = |layer: &Option<Layer>, what: &str| -> Result<Vec<f32>> {
        match layer.as_ref().filter(|l| !l.is_empty()) {
            Some(layer) => Ok(layer.values(&format!("{name} {what}"))?),
            None => Ok(Vec::new()),
        }
    };
    let means = optional(&conv.bn_means, "bn_means")?;
    let mut biases = optional(&conv.biases, "biases")?;
    if means.is_empty() {
        ensure!(!biases.is_empty(), "{name}: neither biases nor batch normalisation");
        return Ok((weights, biases));
    }
    let channels = means.len();
    let variances = optional(&conv.bn_stddivs, "bn_stddivs")?;
    let mut gammas = optional(&conv.bn_gammas, "bn_gammas")?;
    let mut betas = optional(&conv.bn_betas, "bn_betas")?;
    if biases.is_empty() {
        biases = vec![0.0; channels];
    }
    if betas.is_empty() {
        (gammas, betas) = (vec![1.0; channels], vec![0.0; channels]);
    }
    if gammas.is_empty() {
        gammas = vec![1.0; channels];
    }
    for (what, layer) in [("biases", &biases), ("bn_stddivs", &variances), ("bn_gammas", &gammas), ("bn_betas", &betas)]
    {
        ensure!(layer.len() == channels, "{name} {what}: {} values for {channels} channels", layer.len());
    }
    ensure!(
        !weights.is_empty() && weights.len().is_multiple_of(channels),
        "{name}: {} weights for {channels} channels",
        weights.len()
    );
    let per_channel = weights.len() / channels;
    for o in 0..channels {
        let scale = gammas[o] / (variances[o] + BN_EPSILON).sqrt();
        weights[o * per_channel..(o + 1) * per_channel].iter_mut().for_each(|w| *w *= scale);
        biases[o] = scale * (biases[o] - means[o]) + betas[o];
    }
    Ok((weights, biases))
}

fn insert_conv(tensors: &mut Tensors, prefix: &str, shape: [usize; 4], weight: Vec<f32>, bias: Vec<f32>) {
    tensors.insert(format!("{prefix}.bias"), Stored { shape: vec![shape[0]], values: bias });
    tensors.insert(format!("{prefix}.weight"), Stored { shape: shape.to_vec(), values: weight });
}

/// Lc0's dense layer, `[out][in]` with `inputs` inputs, as burn's `[in, out]`.
fn insert_dense(
    tensors: &mut Tensors,
    prefix: &str,
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
) -> std::result::Result<(), String> {
    let outputs = bias.len();
    expect_len(&format!("{prefix} weights"), &weight, inputs * outputs)?;
    let transposed = (0..inputs).flat_map(|i| (0..outputs).map(move |o| (i, o))).map(|(i, o)| weight[o * inputs + i]);
    tensors.insert(format!("{prefix}.weight"), Stored { shape: vec![inputs, outputs], values: transposed.collect() });
    tensors.insert(format!("{prefix}.bias"), Stored { shape: vec![outputs], values: bias });
    Ok(())
}

#[cfg(test)]
mod tests {
    use capa_net::burn::backend::Flex;
    use capa_net::{Net, read_net_weights, save_net};

    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("capa-lc0-net-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    /// A small Lc0-family network with its initial weights (and the
    /// moves-left head, which starts at a constant, given some spread).
    fn small(activation: Activation, path: &Path) {
        let config = NetConfig { channels: 8, blocks: 2, se_ratio: 2, activation, ..NetConfig::lc0(GameKind::Chess) };
        save_net(&Net::<Flex>::new(&config, &Default::default()), path).unwrap();
    }

    /// Export, import, export: the two weights files are byte for byte the
    /// same (the import is exact to LINEAR16's steps), the imported weights
    /// lie within one step of the original's, and the architecture survives
    /// (without the future head, which an export leaves out).
    #[test]
    fn export_import_export_is_exact_to_the_stored_precision() {
        for activation in [Activation::Mish, Activation::Relu] {
            let (net, pb, back, again) =
                (scratch("a.safetensors"), scratch("a.pb.gz"), scratch("b.safetensors"), scratch("b.pb.gz"));
            small(activation, &net);
            export(&net, &pb).unwrap();
            let imported = import(&pb, &back).unwrap();
            export(&back, &again).unwrap();
            let (first, second) = (Lc0Net::read(&pb).unwrap(), Lc0Net::read(&again).unwrap());
            assert_eq!(first, second, "{activation:?}");
            let original = read_net_weights(&net).unwrap().1;
            let (config, reread) = read_net_weights(&back).unwrap();
            assert_eq!(config, NetConfig { future_head: false, ..imported.config.clone() });
            assert_eq!(config.activation, activation);
            assert_eq!((config.channels, config.blocks, config.se_ratio), (8, 2, 2));
            for (name, stored) in &reread {
                let source = &original[name];
                let spread = source.values.iter().fold(0f32, |m, v| m.max(v.abs())) * 2.0;
                let step = spread / 65535.0 * if name.starts_with("input_conv.weight") { 99.0 } else { 1.0 };
                for (a, b) in stored.values.iter().zip(&source.values) {
                    assert!((a - b).abs() <= step + 1e-6, "{name}: {a} against {b}");
                }
            }
            assert!(original.keys().any(|name| name.starts_with("future.")));
            assert!(!reread.keys().any(|name| name.starts_with("future.")));
        }
    }

    /// What does not map is refused with the reason, and damaged files with
    /// what is wrong.
    #[test]
    fn bad_networks_and_files_are_refused_with_the_reason() {
        let capa = scratch("capa.safetensors");
        let config = NetConfig { channels: 8, blocks: 1, heads: 2, groups: 2, ..NetConfig::small(GameKind::Chess) };
        save_net(&Net::<Flex>::new(&config, &Default::default()), &capa).unwrap();
        let error = export(&capa, &scratch("capa.pb.gz")).unwrap_err().to_string();
        assert!(error.contains("capa's own family"), "{error}");

        let (net, pb) = (scratch("c.safetensors"), scratch("c.pb.gz"));
        small(Activation::Mish, &net);
        export(&net, &pb).unwrap();
        let lc0 = Lc0Net::read(&pb).unwrap();
        let with_format = |change: &dyn Fn(&mut NetworkFormat)| {
            let mut file = lc0.clone();
            change(file.format.as_mut().unwrap().network_format.as_mut().unwrap());
            let path = scratch("changed.pb.gz");
            file.write(&path).unwrap();
            import(&path, &scratch("changed.safetensors")).unwrap_err().to_string()
        };
        let error = with_format(&|f| f.network = Some(6));
        assert!(error.contains("network format network = 6") && error.contains("attention"), "{error}");
        let error = with_format(&|f| f.policy = Some(1));
        assert!(error.contains("convolutional policy"), "{error}");
        let error = with_format(&|f| f.moves_left = None);
        assert!(error.contains("moves-left"), "{error}");

        let mut file = lc0.clone();
        file.weights.as_mut().unwrap().residual[1].se = None;
        file.write(&scratch("no-se.pb.gz")).unwrap();
        let error = import(&scratch("no-se.pb.gz"), &scratch("no-se.safetensors")).unwrap_err().to_string();
        assert!(error.contains("residual 1 se"), "{error}");

        let bytes = std::fs::read(&pb).unwrap();
        std::fs::write(scratch("cut.pb.gz"), &bytes[..bytes.len() / 2]).unwrap();
        assert!(import(&scratch("cut.pb.gz"), &scratch("cut.safetensors")).is_err());
        std::fs::write(scratch("text.pb"), b"not a network").unwrap();
        assert!(import(&scratch("text.pb"), &scratch("text.safetensors")).is_err());
        assert!(!scratch("cut.safetensors").exists() && !scratch("text.safetensors").exists());
    }

    /// Batch normalisation in a file is folded as lc0 folds it: an input
    /// convolution stored with BN imports to the same weights as the folded
    /// one stored plain.
    #[test]
    fn batch_normalisation_is_folded() {
        let conv = ConvBlock {
            weights: float32(&[1.0, 2.0, 3.0, 4.0]),
            biases: float32(&[0.5, -1.0]),
            bn_means: float32(&[1.0, 2.0]),
            bn_stddivs: float32(&[4.0 - BN_EPSILON, 0.25 - BN_EPSILON]),
            bn_gammas: float32(&[2.0, 1.0]),
            bn_betas: float32(&[0.0, 3.0]),
        };
        let (weights, biases) = fold(&conv, "test").unwrap();
        // Channel 0: scale 2 / 2 = 1; channel 1: scale 1 / 0.5 = 2.
        assert_eq!(weights, vec![1.0, 2.0, 6.0, 8.0]);
        assert_eq!(biases, vec![0.5 - 1.0, 2.0 * (-1.0 - 2.0) + 3.0]);
    }

    /// A layer of FLOAT32 values (lc0 0.33's exact encoding).
    fn float32(values: &[f32]) -> Option<Layer> {
        Some(Layer {
            encoding: Some(Encoding::Float32 as i32),
            params: Some(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
            ..Layer::default()
        })
    }

    /// Every capa policy plane maps to one Lc0 plane, the 73 distinct:
    /// queen moves and knight jumps keep their planes, promotions move
    /// from queen, rook, bishop to rook, bishop, queen.
    #[test]
    fn policy_planes_pair_one_to_one() {
        let planes = policy_planes().unwrap();
        assert_eq!(planes.len(), 73);
        let mut sorted = planes.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..73).collect::<Vec<_>>());
        assert!(planes[..64].iter().enumerate().all(|(capa, &lc0)| capa == lc0));
        // a7a8q (queen, file step 0) is Lc0's plane 64 + 1 * 3 + 2.
        assert_eq!(planes[64 + 3], 64 + 3 + 2);
        assert_eq!(planes[64 + 3 + 1], 64 + 3);
    }
}
