//! The network on the CPU backend: shapes, the flat start, learning,
//! checkpoints and their failures, the evaluator in a search.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::module::AutodiffModule;
use burn::prelude::*;
use burn::tensor::activation::softmax;
use capa_mcts::{Evaluations, Evaluator, LeafRequest, Limits, SearchParams, Tree};
use capa_net::burn;
use capa_net::{
    BackendKind, DeviceSpec, FfnKind, Heads, LossWeights, Net, NetConfig, NetError, NetEvaluator, NetGame, NormKind,
    OptimizerKind, PolicyHeadKind, Precision, Targets, TrainConfig, Trainer, load_checkpoint, load_net, load_net_into,
    read_net_info, read_net_weights, save_checkpoint, save_net, slim_net, with_backend,
};
use capa_rules::GameKind;
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, MoveList};

type Train = Autodiff<Flex>;
type Infer = Flex;

/// The real architecture, narrow enough for CI.
fn tiny(game: GameKind) -> NetConfig {
    NetConfig { channels: 32, blocks: 2, transformer_blocks: 1, heads: 4, ..NetConfig::small(game) }
}

/// [`tiny`] with every architecture option away from its default.
fn every_option(game: GameKind) -> NetConfig {
    NetConfig {
        ffn: FfnKind::Swiglu,
        norm: NormKind::Rms,
        qk_norm: true,
        qkv_bias: false,
        position_embedding: true,
        value_channels: 48,
        value_hidden: 160,
        future_head: false,
        ..tiny(game)
    }
}

/// A path in this test binary's scratch folder (under the target folder,
/// emptied once per run, so runs do not pile up files).
fn scratch(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capa-net-tests");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
    .join(name)
}

/// Positions from a seeded random game, with their planes.
fn positions<G: NetGame>(count: usize, seed: u64) -> Vec<G> {
    let mut out = Vec::new();
    let mut rng = capa_rules::Rng::new(seed);
    let mut position = G::startpos();
    let mut moves = MoveList::new();
    while out.len() < count {
        position.legal_moves(&mut moves);
        if moves.is_empty() || position.outcome().is_some() {
            position = G::startpos();
            continue;
        }
        out.push(position.clone());
        position.play(moves[(rng.next_u64() % moves.len() as u64) as usize]);
    }
    out
}

fn planes<G: NetGame, B: Backend>(positions: &[G], device: &B::Device) -> Tensor<B, 4> {
    let mut data = vec![0.0; positions.len() * G::INPUT_LEN];
    for (position, out) in positions.iter().zip(data.chunks_mut(G::INPUT_LEN)) {
        G::encode(std::slice::from_ref(position), &[false], out);
    }
    Tensor::from_data(TensorData::new(data, [positions.len(), G::PLANES, G::RANKS, G::FILES]), device)
}

/// Targets that a network can only meet by telling the positions apart:
/// a pseudo-random legal move and a pseudo-random result for each.
fn targets<G: NetGame, B: Backend>(positions: &[G], device: &B::Device) -> Targets<B> {
    let (n, p) = (positions.len(), G::policy_size());
    let (mut policy, mut legal, mut wdl, mut future) =
        (vec![0.0; n * p], vec![false; n * p], vec![0.0; n * 3], vec![0.0; n * p]);
    let mut moves = MoveList::new();
    for (i, position) in positions.iter().enumerate() {
        position.legal_moves(&mut moves);
        for &m in moves.iter() {
            legal[i * p + position.policy_index(m)] = true;
        }
        let chosen = moves[(i * 7 + 3) % moves.len()];
        policy[i * p + position.policy_index(chosen)] = 1.0;
        future[i * p + position.policy_index(moves[(i * 5 + 1) % moves.len()])] = 1.0;
        wdl[i * 3 + i % 3] = 1.0;
    }
    let moves_left: Vec<f32> = (0..n).map(|i| 10.0 + i as f32).collect();
    Targets {
        policy: Tensor::from_data(TensorData::new(policy, [n, p]), device),
        legal: Tensor::from_data(TensorData::new(legal, [n, p]), device),
        wdl: Tensor::from_data(TensorData::new(wdl, [n, 3]), device),
        moves_left: Tensor::from_data(TensorData::new(moves_left, [n, 1]), device),
        future: Tensor::from_data(TensorData::new(future, [n, p]), device),
        territory: None,
    }
}

fn values<const D: usize>(t: Tensor<Infer, D>) -> Vec<f32> {
    t.into_data().convert::<f32>().into_vec::<f32>().unwrap()
}

#[test]
fn output_shapes_for_both_games() {
    for (game, planes_per_position) in [(GameKind::Capablanca, 139), (GameKind::Chess, 112)] {
        assert_eq!(capa_net::input_planes(game), planes_per_position);
        let net = Net::<Infer>::new(&tiny(game), &FlexDevice);
        let input =
            Tensor::<Infer, 4>::zeros([3, capa_net::input_planes(game), game.ranks(), game.files()], &FlexDevice);
        let out = net.forward(input, Heads::ALL);
        assert_eq!(out.policy.dims(), [3, game.policy_size()]);
        assert_eq!(out.wdl.dims(), [3, 3]);
        assert_eq!(out.moves_left.dims(), [3, 1]);
        assert_eq!(out.future.unwrap().dims(), [3, game.policy_size()]);
    }
    assert_eq!(GameKind::Capablanca.policy_size(), 2644);
    assert_eq!(GameKind::Chess.policy_size(), 1858);
}

#[test]
fn parameter_counts() {
    // The figure PyTorch prints for the same architecture (benches/net_vs_torch.py).
    assert_eq!(NetConfig::small(GameKind::Capablanca).parameter_count(), 14_383_304);
    let configs = [
        tiny(GameKind::Chess),
        NetConfig { future_head: false, transformer_blocks: 2, ffn_multiplier: 3, ..tiny(GameKind::Capablanca) },
        NetConfig { transformer_blocks: 0, groups: 2, se_ratio: 8, ..tiny(GameKind::Chess) },
        NetConfig { policy_head: PolicyHeadKind::Conv, ..tiny(GameKind::Capablanca) },
        NetConfig { policy_head: PolicyHeadKind::Conv, future_head: false, ..tiny(GameKind::Chess) },
    ];
    for config in configs {
        assert_eq!(Net::<Infer>::new(&config, &FlexDevice).num_params(), config.parameter_count(), "{config:?}");
    }
}

#[test]
fn a_fresh_network_is_flat() {
    for head in [PolicyHeadKind::Dense, PolicyHeadKind::Conv] {
        fresh_network_is_flat(NetConfig { policy_head: head, ..NetConfig::small(GameKind::Capablanca) });
    }
}

fn fresh_network_is_flat(config: NetConfig) {
    let net = Net::<Infer>::new(&config, &FlexDevice);
    let out = net.forward(planes(&positions::<Capablanca>(8, 1), &FlexDevice), Heads::SEARCH);
    let policy = values(softmax(out.policy, 1));
    let size = GameKind::Capablanca.policy_size();
    for row in policy.chunks(size) {
        // max prior x number of entries: 1.0 is exactly uniform.
        let peak = row.iter().copied().fold(0.0, f32::max) * size as f32;
        assert!(peak < 1.1, "policy peak {peak} x uniform");
    }
    for wdl in values(softmax(out.wdl, 1)).chunks(3) {
        for p in wdl {
            assert!((p - 1.0 / 3.0).abs() < 0.01, "wdl {wdl:?}");
        }
    }
}

fn train_config() -> TrainConfig {
    TrainConfig { learning_rate: 3e-3, warmup_steps: 0, ema_decay: 0.0, ..TrainConfig::default() }
}

#[test]
fn one_step_reduces_the_loss_and_200_overfit_32_positions() {
    for head in [PolicyHeadKind::Dense, PolicyHeadKind::Conv] {
        overfit_32_positions(NetConfig { policy_head: head, ..tiny(GameKind::Chess) });
    }
    overfit_32_positions(every_option(GameKind::Chess));
}

fn overfit_32_positions(config: NetConfig) {
    let device = FlexDevice;
    let batch = positions::<Chess>(32, 7);
    let input = planes::<Chess, Train>(&batch, &device);
    let target = targets::<Chess, Train>(&batch, &device);
    let mut trainer = Trainer::new(Net::<Train>::new(&config, &device), train_config()).unwrap();
    let first = trainer.step(input.clone(), target.clone());
    let second = trainer.step(input.clone(), target.clone());
    assert!(second.total < first.total, "{} then {}", first.total, second.total);
    let mut last = second;
    for _ in 2..200 {
        last = trainer.step(input.clone(), target.clone());
    }
    assert!(last.wdl < 0.05, "WDL loss {} after 200 steps", last.wdl);
    let out = trainer.model().forward(input, Heads::SEARCH);
    let chosen = target.policy.argmax(1);
    let legal_logits = out.policy.mask_fill(target.legal.bool_not(), -1.0e4);
    let agree = legal_logits.argmax(1).equal(chosen).int().sum().into_scalar().elem::<i64>();
    assert_eq!(agree, 32, "policy top-1 on the 32 positions");
}

#[test]
fn save_and_load_give_identical_outputs() {
    for head in [PolicyHeadKind::Dense, PolicyHeadKind::Conv] {
        save_and_load(NetConfig { policy_head: head, ..tiny(GameKind::Capablanca) });
    }
}

fn save_and_load(config: NetConfig) {
    let net = Net::<Infer>::new(&config, &FlexDevice);
    let path = scratch("roundtrip.safetensors");
    save_net(&net, &path).unwrap();
    let loaded = load_net::<Infer>(&path, &FlexDevice).unwrap();
    assert_eq!(loaded.config(), &config);
    let input = planes(&positions::<Capablanca>(4, 3), &FlexDevice);
    let (a, b) = (net.forward(input.clone(), Heads::ALL), loaded.forward(input, Heads::ALL));
    assert_eq!(values(a.policy), values(b.policy));
    assert_eq!(values(a.wdl), values(b.wdl));
    assert_eq!(values(a.moves_left), values(b.moves_left));
    assert_eq!(values(a.future.unwrap()), values(b.future.unwrap()));
}

#[test]
fn loading_into_another_architecture_lists_the_differences() {
    let path = scratch("other.safetensors");
    save_net(&Net::<Infer>::new(&tiny(GameKind::Chess), &FlexDevice), &path).unwrap();
    let wider = NetConfig { channels: 64, blocks: 3, future_head: false, ..tiny(GameKind::Chess) };
    let err = load_net_into(Net::<Infer>::new(&wider, &FlexDevice), &path).unwrap_err();
    let NetError::Mismatch { problems, .. } = &err else { panic!("{err}") };
    let text = err.to_string();
    assert!(
        text.contains("net.input_conv.weight: the file has [32, 112, 3, 3], the network wants [64, 112, 3, 3]"),
        "{text}"
    );
    assert!(text.contains("missing net.blocks.2.conv1.weight"), "{text}");
    assert!(text.contains("unexpected net.future.out.weight"), "{text}");
    assert!(problems.len() > 10, "{text}");

    // Settings without tensors of their own (GroupNorm groups) are compared too.
    let regrouped = NetConfig { groups: 4, ..tiny(GameKind::Chess) };
    let err = load_net_into(Net::<Infer>::new(&regrouped, &FlexDevice), &path).unwrap_err();
    assert!(err.to_string().contains("groups: 8") && err.to_string().contains("groups: 4"), "{err}");
}

#[test]
fn bad_files_are_errors_that_name_the_file() {
    let missing = scratch("does-not-exist.safetensors");
    let err = load_net::<Infer>(&missing, &FlexDevice).unwrap_err();
    assert!(err.to_string().contains("does-not-exist.safetensors"), "{err}");

    let garbage = scratch("garbage.safetensors");
    std::fs::write(&garbage, b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all").unwrap();
    let err = load_net::<Infer>(&garbage, &FlexDevice).unwrap_err();
    assert!(
        err.to_string().contains("garbage.safetensors") && err.to_string().contains("not a safetensors file"),
        "{err}"
    );

    // A valid network file cut short.
    let good = scratch("good.safetensors");
    save_net(&Net::<Infer>::new(&tiny(GameKind::Chess), &FlexDevice), &good).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let truncated = scratch("truncated.safetensors");
    for cut in [0, 7, 8, 100, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&truncated, &bytes[..cut]).unwrap();
        let err = load_net::<Infer>(&truncated, &FlexDevice).unwrap_err();
        assert!(err.to_string().contains("truncated.safetensors"), "cut at {cut}: {err}");
    }

    // Damage anywhere in the file: an error or (for a flipped bit in a weight)
    // a network, never a panic.
    let mut rng = capa_rules::Rng::new(0x9E37_79B9_7F4A_7C15);
    for _ in 0..300 {
        let state = rng.next_u64();
        let mut damaged = bytes.clone();
        let at =
            if state.is_multiple_of(2) { (state >> 8) as usize % 600 } else { (state >> 8) as usize % bytes.len() };
        damaged[at] ^= 1 << ((state >> 40) % 8);
        std::fs::write(&truncated, &damaged).unwrap();
        let _ = load_net::<Infer>(&truncated, &FlexDevice);
    }

    // A config asking for more than the file holds is refused before anything is built.
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + header_len]).unwrap();
    let config =
        header["__metadata__"]["capa.config"].as_str().unwrap().replace("\"channels\":32", "\"channels\":4096");
    header["__metadata__"]["capa.config"] = serde_json::Value::String(config);
    let mut header = serde_json::to_vec(&header).unwrap();
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut inflated = (header.len() as u64).to_le_bytes().to_vec();
    inflated.extend_from_slice(&header);
    inflated.extend_from_slice(&bytes[8 + header_len..]);
    std::fs::write(&truncated, &inflated).unwrap();
    let err = load_net::<Infer>(&truncated, &FlexDevice).unwrap_err();
    assert!(err.to_string().contains("parameters but the file holds"), "{err}");

    // A network file is not a checkpoint.
    let err = load_checkpoint::<Train>(&good, train_config(), &FlexDevice).err().unwrap();
    assert!(err.to_string().contains("not a checkpoint"), "{err}");
}

/// `slim_net`: a checkpoint's EMA network alone, in f32 (the same outputs),
/// f16 or bf16 (close), which both loaders read; a weight beyond f16's
/// range is refused and nothing is written.
#[test]
fn a_slim_file_holds_the_ema_network_in_each_precision() {
    let config = every_option(GameKind::Capablanca);
    let device = FlexDevice;
    let batch = positions::<Capablanca>(8, 5);
    let (input, target) = (planes::<Capablanca, Train>(&batch, &device), targets::<Capablanca, Train>(&batch, &device));
    let settings = TrainConfig { ema_decay: 0.5, ..train_config() };
    let mut trainer = Trainer::new(Net::<Train>::new(&config, &device), settings.clone()).unwrap();
    for _ in 0..3 {
        trainer.step(input.clone(), target.clone());
    }
    let checkpoint = scratch("slim-source.safetensors");
    save_checkpoint(&trainer, &checkpoint).unwrap();
    let probe = planes::<Capablanca, Infer>(&batch, &device);
    let expected = values(trainer.inference_net().forward(probe.clone(), Heads::SEARCH).policy);
    let raw = values(trainer.model().valid().forward(probe.clone(), Heads::SEARCH).policy);
    assert_ne!(expected, raw, "the EMA differs from the raw weights, so the test tells them apart");
    let mut sizes = Vec::new();
    for (precision, tolerance) in [(Precision::F32, 0.0), (Precision::F16, 1e-2), (Precision::Bf16, 6e-2)] {
        let slim = scratch(&format!("slim-{precision}.safetensors"));
        let info = slim_net(&checkpoint, &slim, precision).unwrap();
        assert_eq!((info.precision, info.source_step, info.step, info.ema), (precision, Some(3), None, false));
        assert_eq!(info.parameters, config.parameter_count());
        assert_eq!(read_net_info(&slim).unwrap(), info);
        sizes.push(std::fs::metadata(&slim).unwrap().len());
        let loaded = load_net::<Infer>(&slim, &device).unwrap();
        let policy = values(loaded.forward(probe.clone(), Heads::SEARCH).policy);
        for (a, b) in policy.iter().zip(&expected) {
            assert!((a - b).abs() <= tolerance * (1.0 + b.abs()), "{precision}: {a} vs {b}");
        }
        load_net_into(Net::<Infer>::new(&config, &device), &slim).unwrap();
        let err = load_checkpoint::<Train>(&slim, settings.clone(), &device).err().unwrap();
        assert!(err.to_string().contains("not a checkpoint"), "{err}");
        // A slim file slims again, keeping where it came from.
        let again = slim_net(&slim, &scratch("slim-again.safetensors"), precision).unwrap();
        assert_eq!(again.source_step, Some(3));
    }
    assert!(sizes[1..].iter().all(|half| half * 195 < sizes[0] * 100), "f32, f16, bf16 sizes: {sizes:?}");

    // One weight beyond f16's range: refused by f16, kept by bf16.
    let mut bytes = std::fs::read(scratch("slim-f32.safetensors")).unwrap();
    let data = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    bytes[data..data + 4].copy_from_slice(&1.0e5f32.to_le_bytes());
    let huge = scratch("slim-huge.safetensors");
    std::fs::write(&huge, &bytes).unwrap();
    let out = scratch("slim-never.safetensors");
    let err = slim_net(&huge, &out, Precision::F16).unwrap_err().to_string();
    assert!(err.contains("beyond f16's range") && err.contains("slim-huge.safetensors"), "{err}");
    assert!(!out.exists(), "nothing written");
    slim_net(&huge, &out, Precision::Bf16).unwrap();
}

/// Two peers on the CPU device, each with a shard of the batch and
/// burn-collective's all-reduce between them, train as one trainer does on
/// the whole batch: the same losses, gradient norm, weights and EMA.
#[test]
fn two_devices_train_as_one_on_the_whole_batch() {
    let config = tiny(GameKind::Chess);
    let device = FlexDevice;
    // Seven rows split 3 + 4; rows without a policy or future target make
    // the shards' shares of those losses differ from their shares of rows.
    let batch = positions::<Chess>(7, 5);
    let input = planes::<Chess, Train>(&batch, &device);
    let mut target = targets::<Chess, Train>(&batch, &device);
    let p = Chess::policy_size();
    target.future = target.future.slice_assign([2..4, 0..p], Tensor::zeros([2, p], &device));
    target.policy = target.policy.slice_assign([5..6, 0..p], Tensor::zeros([1, p], &device));
    let settings = TrainConfig { ema_decay: 0.9, grad_clip_norm: 1.0, learning_rate: 1e-3, ..train_config() };
    let net = Net::<Train>::new(&config, &device);
    let mut one = Trainer::new(net.clone(), settings.clone()).unwrap();
    let mut two = Trainer::new(net, settings).unwrap();
    two.spread_over(vec![device]).unwrap();
    assert!(two.spread_over(vec![device]).is_err(), "spread twice");
    let close = |a: f32, b: f32, what: &str| assert!((a - b).abs() <= 1e-5 * a.abs().max(1.0), "{what}: {a} vs {b}");
    for step in 0..3 {
        let (a, b) = (one.step(input.clone(), target.clone()), two.step(input.clone(), target.clone()));
        for (what, x, y) in [
            ("total", a.total, b.total),
            ("policy", a.policy, b.policy),
            ("wdl", a.wdl, b.wdl),
            ("moves_left", a.moves_left, b.moves_left),
            ("future", a.future, b.future),
            ("grad_norm", a.grad_norm, b.grad_norm),
        ] {
            close(x, y, &format!("step {step}, {what}"));
        }
        assert!(a.grad_norm > 1.0, "clipping is active: {}", a.grad_norm);
    }
    let probe = planes::<Chess, Infer>(&batch, &device);
    let largest = |x: Vec<f32>, y: Vec<f32>| x.iter().zip(&y).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    let trained = largest(
        values(one.model().valid().forward(probe.clone(), Heads::SEARCH).policy),
        values(two.model().valid().forward(probe.clone(), Heads::SEARCH).policy),
    );
    let ema = largest(
        values(one.inference_net().forward(probe.clone(), Heads::SEARCH).policy),
        values(two.inference_net().forward(probe, Heads::SEARCH).policy),
    );
    eprintln!(
        "two devices against one: policy logits after 3 steps differ by {trained:.1e}, with the EMA by {ema:.1e}"
    );
    assert!(trained < 1e-4 && ema < 1e-4, "policy logits after 3 steps differ by {trained}, with the EMA by {ema}");
}

#[test]
fn a_resumed_run_continues_exactly() {
    let config = tiny(GameKind::Chess);
    let device = FlexDevice;
    let batch = positions::<Chess>(8, 11);
    let (input, target) = (planes::<Chess, Train>(&batch, &device), targets::<Chess, Train>(&batch, &device));
    for optimizer in [OptimizerKind::AdamW, OptimizerKind::Sgd] {
        let settings = TrainConfig { optimizer, ema_decay: 0.9, warmup_steps: 2, ..train_config() };
        let mut run = Trainer::new(Net::<Train>::new(&config, &device), settings.clone()).unwrap();
        for _ in 0..3 {
            run.step(input.clone(), target.clone());
        }
        let path = scratch(&format!("resume-{optimizer:?}.safetensors"));
        save_checkpoint(&run, &path).unwrap();
        let mut resumed = load_checkpoint::<Train>(&path, settings.clone(), &device).unwrap();
        assert_eq!(resumed.steps(), 3);
        let (a, b) = (run.step(input.clone(), target.clone()), resumed.step(input.clone(), target.clone()));
        assert_eq!(a, b, "{optimizer:?}: the step after a resume");
        let probe = planes::<Chess, Infer>(&batch, &device);
        let (ema_a, ema_b) = (
            run.inference_net().forward(probe.clone(), Heads::SEARCH),
            resumed.inference_net().forward(probe, Heads::SEARCH),
        );
        assert_eq!(values(ema_a.policy), values(ema_b.policy), "{optimizer:?}: EMA weights");

        let other = TrainConfig {
            optimizer: if optimizer == OptimizerKind::Sgd { OptimizerKind::AdamW } else { OptimizerKind::Sgd },
            ..settings.clone()
        };
        let err = load_checkpoint::<Train>(&path, other, &device).err().unwrap();
        assert!(err.to_string().contains("keep the optimizer"), "{err}");
        let without_ema = TrainConfig { ema_decay: 0.0, ..settings.clone() };
        let err = load_checkpoint::<Train>(&path, without_ema, &device).err().unwrap();
        assert!(err.to_string().contains("EMA"), "{err}");
    }
}

#[test]
fn learning_rate_schedules() {
    use capa_net::ScheduleKind;
    let base = TrainConfig { learning_rate: 1.0, warmup_steps: 4, ..TrainConfig::default() };
    assert_eq!(base.learning_rate_at(0), 0.25);
    assert_eq!(base.learning_rate_at(3), 1.0);
    assert_eq!(base.learning_rate_at(1000), 1.0);
    let step = TrainConfig { schedule: ScheduleKind::Step, step_every: 10, step_factor: 0.5, ..base.clone() };
    assert_eq!(step.learning_rate_at(13), 1.0);
    assert_eq!(step.learning_rate_at(14), 0.5);
    assert_eq!(step.learning_rate_at(24), 0.25);
    let cosine = TrainConfig { schedule: ScheduleKind::Cosine, total_steps: 104, min_learning_rate: 0.0, ..base };
    assert!((cosine.learning_rate_at(54) - 0.5).abs() < 1e-12);
    assert_eq!(cosine.learning_rate_at(104), 0.0);
    assert_eq!(cosine.learning_rate_at(10_000), 0.0);
}

#[test]
fn ema_decay_warms_up() {
    let config = TrainConfig { ema_decay: 0.99, ..TrainConfig::default() };
    // The first step copies most of the new weights: the initial ones are noise.
    assert_eq!(config.ema_decay_at(0), 0.1);
    assert_eq!(config.ema_decay_at(80), 0.9);
    assert_eq!(config.ema_decay_at(890), 0.99);
    assert_eq!(config.ema_decay_at(1_000_000), 0.99);
    let off = TrainConfig { ema_decay: 0.0, ..TrainConfig::default() };
    assert_eq!(off.ema_decay_at(0), 0.0);
}

/// The squared distance between two sets of weights of one architecture.
fn distance(a: &capa_net::Tensors, b: &capa_net::Tensors) -> f64 {
    a.iter().flat_map(|(name, x)| x.values.iter().zip(&b[name].values)).map(|(x, y)| f64::from(x - y).powi(2)).sum()
}

#[test]
fn init_decay_keeps_the_weights_near_their_anchor() {
    let device = FlexDevice;
    let config = tiny(GameKind::Chess);
    let batch = positions::<Chess>(8, 3);
    let (input, target) = (planes::<Chess, Train>(&batch, &device), targets::<Chess, Train>(&batch, &device));
    let start = Net::<Train>::new(&config, &device);
    let (anchor_file, after_file) = (scratch("anchor.safetensors"), scratch("after.safetensors"));
    save_net(&start.valid(), &anchor_file).unwrap();
    let (_, anchor) = read_net_weights(&anchor_file).unwrap();
    let drift = |init_decay: f64| {
        let mut trainer = Trainer::new(start.clone(), TrainConfig { init_decay, ..train_config() }).unwrap();
        trainer.decay_toward(&anchor, "the start").unwrap();
        for _ in 0..10 {
            trainer.step(input.clone(), target.clone());
        }
        save_net(&trainer.model().valid(), &after_file).unwrap();
        distance(&read_net_weights(&after_file).unwrap().1, &anchor)
    };
    let (free, anchored) = (drift(0.0), drift(100.0));
    assert!(free > 0.0 && anchored < free / 2.0, "distance from the start: {free} free, {anchored} anchored");

    // Another architecture's weights are refused, naming what differs.
    let mut other = Trainer::new(Net::<Train>::new(&every_option(GameKind::Chess), &device), train_config()).unwrap();
    let Err(NetError::Mismatch { what, problems }) = other.decay_toward(&anchor, "the start") else {
        panic!("another architecture's weights were taken as the anchor");
    };
    assert_eq!(what, "the start");
    assert!(problems.iter().any(|p| p.starts_with("missing ")), "{problems:?}");
    assert!(problems.iter().any(|p| p.contains("the network wants [")), "{problems:?}");
    // A pull of the whole distance or more in one step is out of range.
    let err = TrainConfig { learning_rate: 0.01, init_decay: 100.0, ..TrainConfig::default() }.validate().unwrap_err();
    assert!(err.to_string().contains("init_decay"), "{err}");
}

#[test]
fn configs_are_validated() {
    let bad = [
        NetConfig { channels: 30, ..tiny(GameKind::Chess) },
        NetConfig { heads: 3, ..tiny(GameKind::Chess) },
        NetConfig { se_ratio: 0, ..tiny(GameKind::Chess) },
        NetConfig { channels: 0, ..tiny(GameKind::Chess) },
    ];
    for config in bad {
        assert!(matches!(config.validate(), Err(NetError::Config(_))), "{config:?}");
    }
    let err = TrainConfig { learning_rate: -1.0, ..TrainConfig::default() }.validate().unwrap_err();
    assert!(err.to_string().contains("learning_rate"), "{err}");
    let loss = LossWeights { future: f32::NAN, ..LossWeights::default() };
    let err = TrainConfig { loss_weights: loss, ..TrainConfig::default() }.validate().unwrap_err();
    assert!(err.to_string().contains("loss_weights.future"), "{err}");
    assert!(NetConfig::preset("huge", GameKind::Chess).is_err());
    let json = r#"{"game": "chess", "channels": 64, "blocks": 4, "transformer_blocks": 1, "chanels": 3}"#;
    let err = serde_json::from_str::<NetConfig>(json).unwrap_err();
    assert!(err.to_string().contains("chanels"), "{err}");
}

#[test]
fn backends_not_compiled_in_say_which_feature_to_enable() {
    struct Nothing;
    impl capa_net::BackendTask for Nothing {
        type Output = ();
        fn run<B: capa_net::CapaAutodiffBackend>(self, _: B::Device) {}
    }
    for backend in [BackendKind::Wgpu, BackendKind::Cuda] {
        if !backend.compiled() {
            let err = with_backend(DeviceSpec::new(backend, 0), Nothing).unwrap_err();
            assert!(err.to_string().contains(&format!("--features {}", backend.feature())), "{err}");
        }
    }
    assert!(with_backend(DeviceSpec::new(BackendKind::Cpu, 1), Nothing).is_err());
    assert!(with_backend(DeviceSpec::CPU, Nothing).is_ok());
    assert!("tpu".parse::<BackendKind>().is_err());
    // Half precision is for the GPU backends.
    for precision in [Precision::F16, Precision::Bf16] {
        let err = with_backend(DeviceSpec { precision, ..DeviceSpec::CPU }, Nothing).unwrap_err().to_string();
        assert!(err.contains(&format!("`{precision}`")) && err.contains("wgpu or cuda"), "{err}");
    }
    assert!("f8".parse::<Precision>().unwrap_err().to_string().contains("f32, f16 or bf16"));
}

#[test]
fn the_evaluator_gives_priors_over_legal_moves_and_drives_a_search() {
    let path = scratch("evaluator.safetensors");
    save_net(&Net::<Infer>::new(&tiny(GameKind::Capablanca), &FlexDevice), &path).unwrap();
    let evaluator = NetEvaluator::<Capablanca>::from_file(&path, DeviceSpec::CPU).unwrap();
    let requests: Vec<LeafRequest<Capablanca>> =
        positions::<Capablanca>(5, 5).into_iter().map(LeafRequest::standalone).collect();
    let mut out = Evaluations::default();
    evaluator.evaluate(&requests, &mut out).unwrap();
    assert_eq!(out.len(), 5);
    for (i, request) in requests.iter().enumerate() {
        let (priors, value) = out.get(i);
        assert_eq!(priors.len(), request.legal_moves().len());
        let sum: f32 = priors.iter().sum();
        assert!(priors.iter().all(|&p| p > 0.0) && sum > 0.0);
        assert!((value.wdl.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        assert!(value.moves_left >= 0.0);
    }

    let mut tree = Tree::new(capa_rules::History::new(Capablanca::startpos()), SearchParams::default(), 1).unwrap();
    let result = tree.search(&evaluator, Limits::playouts(64)).unwrap();
    assert!(result.nodes > 1);

    // Spread over two devices (the CPU twice here), batches sent from two
    // threads at once get the one-device answers.
    let net = load_net::<Infer>(&path, &FlexDevice).unwrap();
    let spread = NetEvaluator::<Capablanca>::from_net(net.clone(), &[FlexDevice, FlexDevice]).unwrap();
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let mut answer = Evaluations::default();
                    spread.evaluate(&requests, &mut answer).unwrap();
                    answer
                })
            })
            .collect();
        for thread in threads {
            let answer = thread.join().unwrap();
            for i in 0..requests.len() {
                let ((p, v), (q, w)) = (answer.get(i), out.get(i));
                assert!(p.iter().zip(q).all(|(a, b)| (a - b).abs() < 1e-6), "position {i}: {p:?} vs {q:?}");
                assert!((v.moves_left - w.moves_left).abs() < 1e-4, "position {i}");
            }
        }
    });
    assert!(NetEvaluator::<Capablanca>::from_net(net, &[]).is_err(), "no device");

    // A network for another game is refused.
    assert!(NetEvaluator::<Chess>::from_file(&path, DeviceSpec::CPU).is_err());
}

#[test]
fn a_non_finite_gradient_changes_nothing() {
    let config = tiny(GameKind::Chess);
    let batch = positions::<Chess>(4, 13);
    let input = planes::<Chess, Train>(&batch, &FlexDevice);
    let mut target = targets::<Chess, Train>(&batch, &FlexDevice);
    target.wdl = target.wdl.mul_scalar(f32::NAN);
    let mut trainer = Trainer::new(Net::<Train>::new(&config, &FlexDevice), train_config()).unwrap();
    let probe = planes::<Chess, Infer>(&batch, &FlexDevice);
    let before = values(trainer.inference_net().forward(probe.clone(), Heads::SEARCH).policy);
    let report = trainer.step(input, target);
    assert!(report.skipped && !report.grad_norm.is_finite(), "{report:?}");
    assert_eq!(values(trainer.inference_net().forward(probe, Heads::SEARCH).policy), before);
}
