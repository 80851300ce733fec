//! A GPU backend against the CPU one: wgpu on whatever adapter `wgpu:0` is
//! (Mesa's lavapipe in CI), or, built with the `cuda` feature alone
//! (scripts/gpu-check.sh), CUDA device 0. Every op
//! of `CapaBackend` through its GPU path (the tensor-op defaults,
//! differentiated by capa's autodiff nodes) against the CPU kernels; a
//! whole training step of a narrow network for both games: outputs,
//! losses, gradients, and the weights, the AdamW moments and the EMA after
//! one clipped step; and the same step in f16 and bf16 where the device
//! has them.
//!
//! Each test computes the same named quantities on both backends from the
//! same host data and compares them element by element, `|gpu - cpu| <=
//! tolerance (1 + |cpu|)`; with `--nocapture` it prints the largest
//! difference of each quantity.

#![cfg(any(feature = "wgpu", feature = "cuda"))]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use burn::module::{AutodiffModule, ModuleVisitor, Param};
use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;
use capa_net::burn;
use capa_net::{
    AdamWStep, BackendKind, BackendTask, CapaAutodiffBackend, CapaBackend, DeviceSpec, FfnKind, Heads, Net, NetConfig,
    NetGame, NormKind, PolicyHeadKind, Precision, Targets, TrainConfig, Trainer, load_net, losses, save_net,
    with_backend,
};
use capa_rules::GameKind;
use capa_rules::MoveList;
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;

type Inner<B> = <B as AutodiffBackend>::InnerBackend;

/// The CPU backend, which the GPU one is held to.
type Cpu = burn::backend::Autodiff<burn::backend::Flex>;

/// The GPU backend under test: wgpu where it is compiled in, else CUDA.
/// The tests run their work on these two types only (not through
/// `with_backend`, which would compile it for every backend there is).
#[cfg(feature = "wgpu")]
type Gpu = burn::backend::Autodiff<burn::backend::Wgpu>;
#[cfg(not(feature = "wgpu"))]
type Gpu = burn::backend::Autodiff<burn::backend::Cuda>;

/// Device 0 of the backend under test.
fn gpu() -> DeviceSpec {
    DeviceSpec::new(<Gpu as CapaBackend>::KIND, 0)
}

/// Holds the device for one test at a time. Lavapipe runs every dispatch
/// on all the cores and wgpu waits for it by spinning, so two tests at once
/// on a small machine take far longer than the two in turn; in turn, the
/// later tests also reuse the kernels the earlier ones compiled.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static DEVICE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    DEVICE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Named quantities, each flattened.
type Values = BTreeMap<String, Vec<f32>>;

/// Host data from a seeded generator: the same on both backends.
struct HostRng(capa_rules::Rng);

impl HostRng {
    fn normal(&mut self, len: usize, mean: f32, spread: f32) -> Vec<f32> {
        (0..len)
            .map(|_| {
                // The sum of four uniforms: close enough to normal, and bounded.
                let sum: f32 = (0..4).map(|_| (self.0.next_u64() >> 40) as f32 / (1u64 << 24) as f32).sum();
                mean + spread * (sum - 2.0) * 1.7
            })
            .collect()
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }
}

fn tensor<B: Backend, const D: usize>(data: &[f32], shape: [usize; D], device: &B::Device) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(data.to_vec(), shape), device)
}

fn values<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data().convert::<f32>().into_vec::<f32>().expect("f32 values")
}

fn primitive<B: Backend, const D: usize>(t: Tensor<B, D>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

fn wrap<B: Backend, const D: usize>(t: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

/// Compares every quantity of `gpu` with `cpu`; `tolerance` gives each
/// quantity's by its name. Prints the largest differences; fails listing
/// every quantity out of tolerance.
fn assert_parity(what: &str, cpu: &Values, gpu: &Values, tolerance: impl Fn(&str) -> f32) {
    assert_eq!(cpu.keys().collect::<Vec<_>>(), gpu.keys().collect::<Vec<_>>(), "{what}: the same quantities");
    let mut failures = Vec::new();
    for (name, expected) in cpu {
        let got = &gpu[name];
        assert_eq!(expected.len(), got.len(), "{what}: {name} sizes");
        let limit = tolerance(name);
        let (mut worst, mut worst_scaled, mut at) = (0.0f32, 0.0f32, 0);
        for (i, (&g, &c)) in got.iter().zip(expected).enumerate() {
            let scaled = (g - c).abs() / (1.0 + c.abs());
            if scaled > worst_scaled || scaled.is_nan() {
                (worst, worst_scaled, at) = ((g - c).abs(), scaled, i);
            }
        }
        eprintln!("{what}: {name:<28} max |diff| {worst:.2e} (scaled {worst_scaled:.2e}, limit {limit:.0e})");
        if worst_scaled > limit || worst_scaled.is_nan() {
            failures.push(format!("{name}: element {at}: gpu {} cpu {}", got[at], expected[at]));
        }
    }
    assert!(failures.is_empty(), "{what}: out of tolerance:\n  {}", failures.join("\n  "));
}

/// Runs `task` on the CPU and on the GPU under test.
fn on_both<T: BackendTask<Output = Values> + Clone>(task: T) -> (Values, Values) {
    (on_cpu(task.clone()), on_gpu(task))
}

fn on_cpu<T: BackendTask>(task: T) -> T::Output {
    task.run::<Cpu>(Cpu::device(0).expect("the CPU backend"))
}

fn on_gpu<T: BackendTask>(task: T) -> T::Output {
    let device = Gpu::device(0)
        .unwrap_or_else(|e| panic!("{e} (for wgpu on a machine without a GPU, install mesa-vulkan-drivers)"));
    task.run::<Gpu>(device)
}

/// Every op of `CapaBackend`, forward and (through the autodiff node)
/// backward, on host data from one seed.
#[derive(Clone)]
struct Ops {
    seed: u64,
}

impl BackendTask for Ops {
    type Output = Values;

    fn run<B: CapaAutodiffBackend>(self, device: B::Device) -> Values {
        let mut rng = HostRng(capa_rules::Rng::new(self.seed));
        let mut out = Values::new();
        let mut random = |shape: &[usize], mean: f32, spread: f32| rng.normal(shape.iter().product(), mean, spread);

        // f(inputs) weighted by fixed random weights and summed: its value
        // and the gradient of each input.
        macro_rules! differentiate {
            ($name:expr, [$($input:ident: $dims:literal = $data:expr, $shape:expr);+], $weights:expr, |$($arg:ident),+| $body:expr) => {{
                $(let $input = tensor::<B, $dims>(&$data, $shape, &device).require_grad();)+
                let output = { $(let $arg = $input.clone();)+ $body };
                let weights = tensor::<B, _>(&$weights(&output.dims()), output.dims(), &device);
                let gradients = (output.clone() * weights).sum().backward();
                out.insert(format!("{} value", $name), values(output.inner()));
                $(out.insert(format!("{} d{}", $name, stringify!($input)), values($input.grad(&gradients).unwrap()));)+
            }};
        }
        let mut weights_rng = HostRng(capa_rules::Rng::new(self.seed ^ 0x5eed));
        let mut weights = |dims: &[usize]| weights_rng.normal(dims.iter().product(), 0.0, 1.0);

        let shape = [2, 6, 8, 10];
        differentiate!("mish", [x: 4 = random(&shape, 0.0, 3.0), shape], weights, |x| wrap::<B, 4>(B::mish(primitive(x))));
        let shape = [3, 5, 80];
        differentiate!("softmax", [x: 3 = random(&shape, 0.0, 3.0), shape], weights, |x| wrap::<B, 3>(B::softmax_last(primitive(x))));
        for kernel in [3, 1] {
            differentiate!(
                format!("conv {kernel}x{kernel}"),
                [x: 4 = random(&[2, 6, 8, 10], 0.5, 2.0), [2, 6, 8, 10];
                 w: 4 = random(&[5, 6, kernel, kernel], 0.0, 0.3), [5, 6, kernel, kernel];
                 b: 1 = random(&[5], 0.0, 0.3), [5]],
                weights,
                |x, w, b| wrap::<B, 4>(B::conv_same(primitive(x), primitive(w), Some(primitive(b))))
            );
        }
        differentiate!(
            "dense",
            [x: 2 = random(&[7, 24], 0.0, 1.0), [7, 24];
             w: 2 = random(&[24, 16], 0.0, 0.3), [24, 16];
             b: 1 = random(&[16], 0.0, 0.3), [16]],
            weights,
            |x, w, b| wrap::<B, 2>(B::dense(primitive(x), primitive(w), Some(primitive(b))))
        );
        // A batch's worth of rows, as training multiplies.
        differentiate!(
            "dense 1024 rows",
            [x: 2 = random(&[1024, 64], 0.0, 1.0), [1024, 64];
             w: 2 = random(&[64, 96], 0.0, 0.3), [64, 96];
             b: 1 = random(&[96], 0.0, 0.3), [96]],
            weights,
            |x, w, b| wrap::<B, 2>(B::dense(primitive(x), primitive(w), Some(primitive(b))))
        );
        let (tokens, width, heads) = (80, 16, 2);
        differentiate!(
            "attention",
            [q: 3 = random(&[2, tokens, width], 0.0, 1.0), [2, tokens, width];
             k: 3 = random(&[2, tokens, width], 0.0, 1.0), [2, tokens, width];
             v: 3 = random(&[2, tokens, width], 0.0, 1.0), [2, tokens, width];
             bias: 3 = random(&[heads, tokens, tokens], 0.0, 1.0), [heads, tokens, tokens]],
            weights,
            |q, k, v, bias| wrap::<B, 3>(B::biased_attention(primitive(q), primitive(k), primitive(v), primitive(bias), heads))
        );
        let shape = [2, 16, 80];
        differentiate!("swap_last_dims", [x: 3 = random(&shape, 0.0, 1.0), shape], weights, |x| wrap::<B, 3>(B::swap_last_dims(primitive(x))));
        let shape = [2, 16, 8, 10];
        differentiate!("channel_moments", [x: 4 = random(&shape, 0.5, 1.0), shape], weights, |x| wrap::<B, 3>(B::channel_moments(primitive(x))));
        differentiate!(
            "scale_shift_mish",
            [x: 4 = random(&shape, 0.0, 2.0), shape;
             scale: 2 = random(&[2, 16], 1.0, 0.3), [2, 16];
             shift: 2 = random(&[2, 16], 0.0, 0.3), [2, 16]],
            weights,
            |x, scale, shift| wrap::<B, 4>(B::scale_shift_mish(primitive(x), primitive(scale), primitive(shift), None))
        );
        differentiate!(
            "scale_shift_mish residual",
            [x: 4 = random(&shape, 0.0, 2.0), shape;
             scale: 2 = random(&[2, 16], 1.0, 0.3), [2, 16];
             shift: 2 = random(&[2, 16], 0.0, 0.3), [2, 16];
             residual: 4 = random(&shape, 0.0, 1.0), shape],
            weights,
            |x, scale, shift, residual| wrap::<B, 4>(B::scale_shift_mish(
                primitive(x), primitive(scale), primitive(shift), Some(primitive(residual))))
        );
        differentiate!(
            "layer_norm",
            [x: 2 = random(&[80, 24], 3.0, 2.0), [80, 24];
             gamma: 1 = random(&[24], 1.0, 0.3), [24];
             beta: 1 = random(&[24], 0.0, 0.3), [24]],
            weights,
            |x, gamma, beta| wrap::<B, 2>(B::layer_norm_last(primitive(x), primitive(gamma), primitive(beta), 1e-5))
        );
        let (rows, classes) = (6, GameKind::Capablanca.policy_size());
        let legal: Vec<bool> = random(&[rows, classes], 0.0, 1.0).iter().map(|&u| u < -0.5).collect();
        let targets: Vec<f32> = random(&[rows, classes], 0.0, 1.0)
            .iter()
            .zip(&legal)
            .map(|(&t, &l)| if l { t.abs() } else { 0.0 })
            .collect();
        let legal = Tensor::<B, 2, Bool>::from_data(TensorData::new(legal, [rows, classes]), &device);
        differentiate!(
            "cross_entropy",
            [logits: 2 = random(&[rows, classes], 0.0, 3.0), [rows, classes]],
            weights,
            |logits| wrap::<B, 1>(B::soft_cross_entropy_rows(
                primitive(logits),
                primitive(tensor::<B, 2>(&targets, [rows, classes], &device)),
                Some(legal.clone().into_primitive()),
                -1.0e4
            ))
        );

        // The optimizer's ops, on the inner backend as the trainer runs them.
        let len = 5000;
        let flat = |data: Vec<f32>| primitive(tensor::<Inner<B>, 1>(&data, [data.len()], &device));
        let (average, current) = (random(&[len], 0.0, 1.0), random(&[len], 0.0, 1.0));
        let ema = <Inner<B> as CapaBackend>::moving_average(flat(average.clone()), flat(current), 0.999);
        out.insert("moving_average".into(), values(wrap::<Inner<B>, 1>(ema)));
        let squares = <Inner<B> as CapaBackend>::sum_of_squares(flat(average));
        out.insert("sum_of_squares".into(), values(wrap::<Inner<B>, 1>(squares)));
        // As large as the dense policy head's weights: burn's own sum of
        // a tensor this long is wrong on wgpu.
        let large = 2048 * 1858;
        for len in [large, 16 * 139 * 9, 1_000_003] {
            let squares = <Inner<B> as CapaBackend>::sum_of_squares(flat(random(&[len], 0.0, 1.0)));
            out.insert(format!("sum_of_squares {len}"), values(wrap::<Inner<B>, 1>(squares)));
        }
        let step = AdamWStep {
            learning_rate: 3e-3,
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
            weight_decay: 1e-2,
            gradient_scale: 0.5,
            bias_correction1: 1.0 - 0.9f32.powi(3),
            bias_correction2: 1.0 - 0.999f32.powi(3),
        };
        let (weight, gradient, first) = (random(&[len], 0.0, 1.0), random(&[len], 0.0, 1.0), random(&[len], 0.0, 0.1));
        let second: Vec<f32> = random(&[len], 0.0, 0.1).iter().map(|x| x * x).collect();
        for (name, moments) in [("adamw first", None), ("adamw later", Some([flat(first), flat(second)]))] {
            let updated =
                <Inner<B> as CapaBackend>::adamw_step(flat(weight.clone()), flat(gradient.clone()), moments, step);
            for (part, t) in ["weight", "first moment", "second moment"].into_iter().zip(updated) {
                out.insert(format!("{name} {part}"), values(wrap::<Inner<B>, 1>(t)));
            }
        }
        out
    }
}

#[test]
fn wgpu_ops_match_the_cpu_kernels() {
    let _device = one_at_a_time();
    let (cpu, gpu) = on_both(Ops { seed: 17 });
    // Sums over up to 3,000 products in a different order, and exp/tanh
    // from another library: a few ulps of f32 on each term; the weight
    // gradient over 1,024 rows sums 1,024 unit products.
    assert_parity("ops", &cpu, &gpu, |name| if name.starts_with("dense 1024") { 1e-4 } else { 2e-5 });
}

/// A narrow network of the real architecture.
fn narrow(game: GameKind, policy_head: PolicyHeadKind) -> NetConfig {
    NetConfig {
        channels: 16,
        blocks: 2,
        transformer_blocks: 1,
        heads: 2,
        groups: 4,
        policy_head,
        ..NetConfig::small(game)
    }
}

/// Positions from a seeded random game, and training targets for them.
struct Batch {
    planes: Vec<f32>,
    policy: Vec<f32>,
    legal: Vec<bool>,
    wdl: Vec<f32>,
    moves_left: Vec<f32>,
    future: Vec<f32>,
    rows: usize,
}

fn batch<G: NetGame>(rows: usize, seed: u64) -> Batch {
    let mut rng = HostRng(capa_rules::Rng::new(seed));
    let size = G::policy_size();
    let mut b = Batch {
        planes: Vec::new(),
        policy: vec![0.0; rows * size],
        legal: vec![false; rows * size],
        wdl: vec![0.0; rows * 3],
        moves_left: Vec::new(),
        future: vec![0.0; rows * size],
        rows,
    };
    let (mut position, mut moves, mut input) = (G::startpos(), MoveList::new(), vec![0.0; G::INPUT_LEN]);
    let mut row = 0;
    while row < rows {
        position.legal_moves(&mut moves);
        if moves.is_empty() || position.outcome().is_some() {
            position = G::startpos();
            continue;
        }
        G::encode(std::slice::from_ref(&position), &[false], &mut input);
        b.planes.extend_from_slice(&input);
        // A visit distribution over a few legal moves, the first one chosen.
        for (k, &m) in moves.iter().enumerate() {
            let entry = row * size + position.policy_index(m);
            b.legal[entry] = true;
            if k % 3 == 0 {
                b.policy[entry] = 1.0 + rng.below(10) as f32;
            }
        }
        let total: f32 = b.policy[row * size..(row + 1) * size].iter().sum();
        b.policy[row * size..(row + 1) * size].iter_mut().for_each(|p| *p /= total);
        b.wdl[row * 3 + rng.below(3) as usize] = 1.0;
        b.moves_left.push(10.0 + rng.below(80) as f32);
        let chosen = moves[rng.below(moves.len() as u64) as usize];
        b.future[row * size + position.policy_index(chosen)] = 1.0;
        position.play(chosen);
        row += 1;
    }
    b
}

impl Batch {
    fn targets<B: Backend>(&self, game: GameKind, device: &B::Device) -> Targets<B> {
        let (rows, size) = (self.rows, game.policy_size());
        Targets {
            policy: tensor(&self.policy, [rows, size], device),
            legal: Tensor::from_data(TensorData::new(self.legal.clone(), [rows, size]), device),
            wdl: tensor(&self.wdl, [rows, 3], device),
            moves_left: tensor(&self.moves_left, [rows, 1], device),
            future: tensor(&self.future, [rows, size], device),
            territory: None,
        }
    }
}

/// Each float parameter of a module under its path: its value, or with
/// `gradients` its gradient.
fn named<B: AutodiffBackend, M: Module<B>>(module: &M, gradients: Option<&B::Gradients>) -> Vec<(String, Vec<f32>)> {
    struct Visitor<'a, B: AutodiffBackend> {
        path: Vec<String>,
        gradients: Option<&'a B::Gradients>,
        out: Vec<(String, Vec<f32>)>,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Visitor<'_, B> {
        fn enter_module(&mut self, name: &str, _: &str) {
            self.path.push(name.to_string());
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.path.pop();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let value = match self.gradients {
                Some(gradients) => values(param.val().grad(gradients).expect("every weight has a gradient")),
                None => values(param.val()),
            };
            self.out.push((self.path.join("."), value));
        }
    }
    let mut visitor = Visitor { path: Vec::new(), gradients, out: Vec::new() };
    module.visit(&mut visitor);
    visitor.out
}

/// One training step of the network in `weights` on `batch`, computing in
/// `precision`.
#[derive(Clone)]
struct Step {
    weights: PathBuf,
    batch: std::sync::Arc<Batch>,
    config: TrainConfig,
    precision: Precision,
}

impl BackendTask for Step {
    type Output = Values;

    fn run<B: CapaAutodiffBackend>(self, device: B::Device) -> Values {
        let mut out = Values::new();
        let net = load_net::<B>(&self.weights, &device).unwrap();
        let game = net.config().game;
        let dims = [self.batch.rows, capa_net::input_planes(game), game.ranks(), game.files()];
        let planes = tensor::<B, 4>(&self.batch.planes, dims, &device);
        let targets = self.batch.targets::<B>(game, &device);

        let output = net.clone().cast(self.precision).forward(planes.clone(), Heads::ALL);
        out.insert("output policy".into(), values(output.policy.clone().inner()));
        out.insert("output wdl".into(), values(output.wdl.clone().inner()));
        out.insert("output moves_left".into(), values(output.moves_left.clone().inner()));
        out.insert("output future".into(), values(output.future.clone().unwrap().inner()));
        let losses = losses(output, targets.clone(), &self.config.loss_weights);
        let gradients = losses.total.backward();
        for (name, gradient) in named(&net, Some(&gradients)) {
            out.insert(format!("gradient {name}"), gradient);
        }

        let mut trainer = Trainer::new(net, self.config.clone()).unwrap();
        trainer.compute_in(self.precision).unwrap();
        let report = trainer.step(planes, targets);
        out.insert("skipped".into(), vec![f32::from(u8::from(report.skipped))]);
        let clips = report.grad_norm > self.config.grad_clip_norm as f32;
        assert!(report.skipped || clips, "the step clips: {}", report.grad_norm);
        let loss = [report.total, report.policy, report.wdl, report.moves_left, report.future];
        out.insert("loss total, policy, wdl, moves_left, future".into(), loss.to_vec());
        out.insert("gradient norm".into(), vec![report.grad_norm]);
        for (name, weight) in named(trainer.model(), None) {
            out.insert(format!("after step {name}"), weight);
        }
        // The EMA on the inner backend, seen through the autodiff one.
        for (name, weight) in named::<B, _>(&Net::<B>::from_inner(trainer.inference_net()), None) {
            out.insert(format!("ema {name}"), weight);
        }
        out
    }
}

/// A training step of a fresh network of `config` on 16 positions, with a
/// learning rate of 1e-3 and clipping at 0.1 (fresh weights give gradient norms near
/// 0.5, so the step always clips).
fn step<G: NetGame>(config: NetConfig, precision: Precision) -> Step {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capa-wgpu-tests");
    std::fs::create_dir_all(&dir).unwrap();
    // One file per test: the tests run in parallel, and each file is a
    // fresh draw that both backends must read.
    let name = format!("{}-{:?}-{:?}-{precision}", config.game.name(), config.policy_head, config.ffn);
    let weights = dir.join(format!("{name}.safetensors"));
    save_net(&Net::<burn::backend::Flex>::new(&config, &burn::backend::flex::FlexDevice), &weights).unwrap();
    let train = TrainConfig {
        learning_rate: 1e-3,
        warmup_steps: 0,
        grad_clip_norm: 0.1,
        ema_decay: 0.9,
        ..TrainConfig::default()
    };
    Step { weights, batch: std::sync::Arc::new(batch::<G>(16, 5)), config: train, precision }
}

fn step_parity<G: NetGame>(config: NetConfig) {
    let game = config.game;
    let (cpu, gpu) = on_both(step::<G>(config, Precision::F32));
    assert_parity(&format!("{} step", game.name()), &cpu, &gpu, |name| {
        if name.starts_with("output") || name.starts_with("loss") { 1e-4 } else { 1e-3 }
    });
}

/// Half precision on wgpu against f32 on the CPU, where the adapter has the
/// type; where it has not, the refusal. Tolerances: f16 keeps 11 bits
/// (about 3 decimal digits) and bf16 8; a first AdamW step moves each
/// weight by about the learning rate whatever the gradient's size, so a
/// weight differs by at most twice that (a gradient near zero whose sign
/// the rounding flips).
#[test]
#[ignore = "minutes of kernel compiling and autotuning on lavapipe: scripts/gpu-check.sh runs it on a GPU; here: cargo test --profile quick-release -p capa-net --features wgpu --test wgpu -- --ignored"]
fn wgpu_half_precision_step_is_close_to_the_cpu() {
    let _device = one_at_a_time();
    for precision in [Precision::F16, Precision::Bf16] {
        let task = step::<Capablanca>(narrow(GameKind::Capablanca, PolicyHeadKind::Conv), precision);
        let cpu = on_cpu(Step { precision: Precision::F32, ..task.clone() });
        let spec = DeviceSpec { precision, ..gpu() };
        if let Err(refusal) = with_backend(spec, Nothing) {
            let refusal = refusal.to_string();
            eprintln!("{precision}: refused on {}: {refusal}", gpu().describe());
            assert!(refusal.contains(&format!("cannot compute in `{precision}`")), "{refusal}");
            continue;
        }
        let gpu = on_gpu(task);
        let digits = if precision == Precision::F16 { 2e-3 } else { 1.6e-2 };
        assert_parity(&format!("capablanca {precision} step"), &cpu, &gpu, |name| {
            if name.starts_with("after step") || name.starts_with("ema") {
                2.1e-3
            } else if name.starts_with("gradient") {
                // Summed over the batch and the board in half precision.
                5.0 * digits
            } else {
                4.0 * digits
            }
        });
    }
}

/// The same step on Capablanca's board and policy; the chess step below
/// covers every op, so CI (lavapipe, which compiles and tunes each kernel
/// again per shape) runs that one only.
#[test]
#[ignore = "minutes of kernel compiling and autotuning on lavapipe: scripts/gpu-check.sh runs it on a GPU; here: cargo test --profile quick-release -p capa-net --features wgpu --test wgpu -- --ignored"]
fn wgpu_training_step_matches_the_cpu_for_capablanca() {
    let _device = one_at_a_time();
    step_parity::<Capablanca>(narrow(GameKind::Capablanca, PolicyHeadKind::Conv));
}

/// Chess with every architecture option away from its default.
#[test]
fn wgpu_training_step_matches_the_cpu_for_chess_with_every_option() {
    let _device = one_at_a_time();
    step_parity::<Chess>(NetConfig {
        ffn: FfnKind::Swiglu,
        norm: NormKind::Rms,
        qk_norm: true,
        qkv_bias: false,
        position_embedding: true,
        value_channels: 24,
        value_hidden: 64,
        ..narrow(GameKind::Chess, PolicyHeadKind::Dense)
    });
}

/// A task that only opens the device.
struct Nothing;

impl BackendTask for Nothing {
    type Output = ();
    fn run<B: CapaAutodiffBackend>(self, _: B::Device) {}
}

/// A device index past the last adapter is an error that lists them.
#[cfg(feature = "wgpu")]
#[test]
fn a_missing_wgpu_device_is_an_error_naming_those_there_are() {
    let _device = one_at_a_time();
    let err = with_backend(DeviceSpec::new(BackendKind::Wgpu, 99), Nothing).unwrap_err().to_string();
    assert!(err.contains("no device 99") && err.contains("wgpu:0"), "{err}");
    let wgpu = DeviceSpec::new(BackendKind::Wgpu, 0);
    assert!(with_backend(wgpu, Nothing).is_ok());
    assert!(wgpu.describe().starts_with("wgpu:0, "), "{}", wgpu.describe());
}
