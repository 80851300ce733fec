//! The search's evaluator backed by the network.
//!
//! The network lives on a thread of its own per device (burn's device handles need not
//! be shareable between threads); `evaluate` encodes the batch in parallel,
//! hands the planes over, and turns the answer into priors over the legal
//! moves. Batches are padded to the next power of two so that a backend
//! that compiles kernels per shape sees few shapes.

use std::marker::PhantomData;
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use burn::prelude::*;
use capa_mcts::{EvalError, Evaluations, Evaluator, LeafRequest, Value};
use rayon::prelude::*;

use crate::NetError;
use crate::backend::{BackendTask, with_backend};
use crate::checkpoint::load_net;
use crate::device::DeviceSpec;
use crate::encode::{NetGame, encode_batch};
use crate::model::{MOVES_LEFT_SCALE, Net};
use crate::ops::{CapaAutodiffBackend, CapaBackend};
use crate::precision::Precision;

/// A padded batch of planes going to the network thread.
struct Job {
    planes: Vec<f32>,
    rows: usize,
    reply: SyncSender<Result<Answer, String>>,
}

/// The network's raw answer, on the host.
struct Answer {
    policy: Vec<f32>,
    wdl: Vec<f32>,
    moves_left: Vec<f32>,
}

/// Evaluates leaves with a network on a thread of its own per device.
pub struct NetEvaluator<G: NetGame> {
    jobs: Mutex<Option<Sender<Job>>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    policy_size: usize,
    _game: PhantomData<fn() -> G>,
}

impl<G: NetGame> NetEvaluator<G> {
    /// Evaluates with a copy of `net` on each of `devices`, each on a
    /// thread of its own taking the next batch as it is free (a search
    /// with several batches in flight keeps them all busy).
    ///
    /// # Errors
    /// [`NetError::Config`] when the network plays another game than `G`
    /// or `devices` is empty.
    pub fn from_net<B: CapaBackend>(net: Net<B>, devices: &[B::Device]) -> Result<NetEvaluator<G>, NetError> {
        let game = net.config().game;
        if game.name() != G::NAME {
            return Err(NetError::Config(format!("the network plays {}, not {}", game.name(), G::NAME)));
        }
        if devices.is_empty() {
            return Err(NetError::Config("a network evaluator needs a device".to_string()));
        }
        let (jobs, receiver) = channel();
        let receiver = Arc::new(Mutex::new(receiver));
        let mut workers = Vec::with_capacity(devices.len());
        for device in devices {
            let (net, device, receiver) = (net.clone().to_device(device), device.clone(), Arc::clone(&receiver));
            let worker = std::thread::Builder::new()
                .name("capa-net".to_string())
                .spawn(move || serve::<G, B>(&net, &device, &receiver))
                .map_err(|e| NetError::Backend(format!("cannot start the network thread: {e}")))?;
            workers.push(worker);
        }
        Ok(NetEvaluator {
            jobs: Mutex::new(Some(jobs)),
            workers: Mutex::new(workers),
            policy_size: game.policy_size(),
            _game: PhantomData,
        })
    }

    /// Loads a network file onto the device `spec` names, to compute in its precision.
    ///
    /// # Errors
    /// As [`load_net`] and [`with_backend`].
    pub fn from_file(path: &Path, spec: DeviceSpec) -> Result<NetEvaluator<G>, NetError> {
        struct Load<'a, G>(&'a Path, Precision, PhantomData<G>);
        impl<G: NetGame> BackendTask for Load<'_, G> {
            type Output = Result<NetEvaluator<G>, NetError>;
            fn run<B: CapaAutodiffBackend>(self, device: B::Device) -> Self::Output {
                let net = load_net::<B::InnerBackend>(self.0, &device)?;
                NetEvaluator::from_net(net.cast(self.1), &[device])
            }
        }
        with_backend(spec, Load::<G>(path, spec.precision, PhantomData))?
    }

    fn run(&self, batch: &[LeafRequest<G>]) -> Result<Answer, String> {
        if let Some(i) = batch.iter().position(|r| r.history().is_empty() || r.history().len() != r.repeated().len()) {
            return Err(format!("request {i} of the batch has no position or mismatched repetition flags"));
        }
        let rows = batch.len().next_power_of_two();
        // Padding rows stay zero.
        let mut planes = vec![0.0; rows * G::INPUT_LEN];
        encode_batch::<G>(batch.par_iter().map(|r| (r.history(), r.repeated())), &mut planes);
        let (reply, answer) = sync_channel(1);
        let sent = match self.jobs.lock().expect("not poisoned").as_ref() {
            Some(jobs) => jobs.send(Job { planes, rows, reply }).is_ok(),
            None => false,
        };
        if !sent {
            return Err("the network thread has stopped".to_string());
        }
        let answer = answer.recv().map_err(|_| "the network thread stopped during a batch".to_string())??;
        Ok(answer)
    }
}

impl<G: NetGame> Evaluator<G> for NetEvaluator<G> {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        if batch.is_empty() {
            return Ok(());
        }
        let answer = self.run(batch)?;
        let used = batch.len();
        let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
        if !(finite(&answer.policy[..used * self.policy_size])
            && finite(&answer.wdl[..used * 3])
            && finite(&answer.moves_left[..used]))
        {
            return Err("the network's output is not finite (damaged or diverged weights)".into());
        }
        for (row, request) in batch.iter().enumerate() {
            let logits = &answer.policy[row * self.policy_size..][..self.policy_size];
            let position = request.position();
            let legal = request.legal_moves();
            let max = legal.iter().map(|&m| logits[position.policy_index(m)]).fold(f32::NEG_INFINITY, f32::max);
            let priors = legal.iter().map(|&m| (logits[position.policy_index(m)] - max).exp());
            let wdl = softmax3(&answer.wdl[row * 3..row * 3 + 3]);
            out.push(priors, Value { wdl, moves_left: answer.moves_left[row] * MOVES_LEFT_SCALE });
        }
        Ok(())
    }
}

impl<G: NetGame> Drop for NetEvaluator<G> {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        self.jobs.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        for worker in self.workers.get_mut().unwrap_or_else(PoisonError::into_inner).drain(..) {
            let _ = worker.join();
        }
    }
}

fn softmax3(logits: &[f32]) -> [f32; 3] {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e = [(logits[0] - max).exp(), (logits[1] - max).exp(), (logits[2] - max).exp()];
    let sum = e[0] + e[1] + e[2];
    [e[0] / sum, e[1] / sum, e[2] / sum]
}

/// A network thread: runs the next job while there is one, until the
/// channel closes.
fn serve<G: NetGame, B: CapaBackend>(net: &Net<B>, device: &B::Device, jobs: &Mutex<Receiver<Job>>) {
    let (ranks, files) = (G::RANKS, G::FILES);
    loop {
        // The lock is held only while waiting: the next free thread takes the next job.
        let next = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(job) = next else { return };
        let rows = job.rows;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let input =
                Tensor::<B, 4>::from_data(TensorData::new(job.planes, [job.rows, G::PLANES, ranks, files]), device);
            let output = net.forward(input, false);
            let host = |t: Tensor<B, 2>| t.into_data().convert::<f32>().into_vec::<f32>().expect("f32");
            (host(output.policy), host(output.wdl), host(output.moves_left))
        }));
        let answer = match result {
            Ok((policy, wdl, moves_left)) => Ok(Answer { policy, wdl, moves_left }),
            Err(panic) => Err(format!(
                "the network failed on a batch of {}: {}",
                rows,
                panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or(panic.downcast_ref::<&str>().copied())
                    .unwrap_or("?")
            )),
        };
        let _ = job.reply.send(answer);
    }
}
