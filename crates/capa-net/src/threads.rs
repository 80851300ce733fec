//! The network on a thread of its own per device, answering batches of
//! planes.
//!
//! Neither the backend nor the game is in [`NetThreads`]' type: the burn
//! code behind it is compiled once, in this crate, for each backend,
//! rather than in every crate that evaluates, for every game it plays.

use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use burn::prelude::*;
use burn::tensor::activation::softmax;

use crate::config::{NetConfig, input_planes};
use crate::error::NetError;
use crate::model::{Heads, MOVES_LEFT_SCALE, Net};
use crate::ops::CapaBackend;

/// The network's outputs for a batch, on the host.
#[derive(Clone, Debug)]
pub struct HostOutput {
    /// `[rows, policy]`: the policy logits.
    pub policy: Vec<f32>,
    /// `[rows, 3]`: the win, draw and loss logits.
    pub wdl: Vec<f32>,
    /// `[rows]`: plies left, in plies.
    pub moves_left: Vec<f32>,
    /// Go, `[rows, squares]`: how surely the side to move owns each point
    /// at the end, from -1 (the opponent) to 1; empty unless analysis asked
    /// for it and the network has the head.
    pub ownership: Vec<f32>,
    /// Go, `[rows, 2 squares + 1]`: the probability of each final area
    /// difference for the side to move, from -squares to +squares; empty
    /// unless analysis asked for it and the network has the head.
    pub score: Vec<f32>,
}

impl HostOutput {
    /// Row `row`'s win, draw and loss probabilities (the softmax of its logits).
    pub fn win_draw_loss(&self, row: usize) -> [f32; 3] {
        let logits = &self.wdl[row * 3..row * 3 + 3];
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let e = [(logits[0] - max).exp(), (logits[1] - max).exp(), (logits[2] - max).exp()];
        let sum = e[0] + e[1] + e[2];
        [e[0] / sum, e[1] / sum, e[2] / sum]
    }

    /// Row `row`'s expected final area difference for the side to move and
    /// its standard deviation (komi not counted); `None` without the score
    /// head.
    pub fn area_difference(&self, row: usize) -> Option<(f32, f32)> {
        let rows = self.moves_left.len();
        let bins = self.score.len().checked_div(rows).filter(|&bins| bins > 0)?;
        let half = (bins / 2) as f32;
        let probabilities = &self.score[row * bins..(row + 1) * bins];
        let at = |bin: usize| bin as f32 - half;
        let mean: f32 = probabilities.iter().enumerate().map(|(bin, p)| p * at(bin)).sum();
        let variance: f32 = probabilities.iter().enumerate().map(|(bin, p)| p * (at(bin) - mean).powi(2)).sum();
        Some((mean, variance.sqrt()))
    }
}

/// A padded batch of planes going to the network thread.
struct Job {
    planes: Vec<f32>,
    rows: usize,
    heads: Heads,
    reply: SyncSender<Result<HostOutput, String>>,
}

/// A network on a thread of its own per device, each taking the next
/// batch as it is free.
pub(crate) struct NetThreads {
    jobs: Mutex<Option<Sender<Job>>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    config: NetConfig,
}

impl NetThreads {
    /// Starts a copy of `net` on each of `devices`, each on a thread of its
    /// own taking the next batch as it is free.
    pub(crate) fn start<B: CapaBackend>(net: Net<B>, devices: &[B::Device]) -> Result<NetThreads, NetError> {
        if devices.is_empty() {
            return Err(NetError::Config("a network evaluator needs a device".to_string()));
        }
        let config = net.config().clone();
        let (jobs, receiver) = channel();
        let receiver = Arc::new(Mutex::new(receiver));
        let mut workers = Vec::with_capacity(devices.len());
        for device in devices {
            let (net, device, receiver) = (net.clone().to_device(device), device.clone(), Arc::clone(&receiver));
            let worker = std::thread::Builder::new()
                .name("capa-net".to_string())
                .spawn(move || serve::<B>(&net, &device, &receiver))
                .map_err(|e| NetError::Backend(format!("cannot start the network thread: {e}")))?;
            workers.push(worker);
        }
        Ok(NetThreads { jobs: Mutex::new(Some(jobs)), workers: Mutex::new(workers), config })
    }

    /// The network's architecture.
    pub(crate) fn config(&self) -> &NetConfig {
        &self.config
    }

    /// The outputs (with the further `heads`) for a padded batch of `rows`
    /// positions' `planes`.
    pub(crate) fn run(&self, planes: Vec<f32>, rows: usize, heads: Heads) -> Result<HostOutput, String> {
        let (reply, answer) = sync_channel(1);
        let sent = match self.jobs.lock().expect("not poisoned").as_ref() {
            Some(jobs) => jobs.send(Job { planes, rows, heads, reply }).is_ok(),
            None => false,
        };
        if !sent {
            return Err("the network thread has stopped".to_string());
        }
        answer.recv().map_err(|_| "the network thread stopped during a batch".to_string())?
    }
}

impl Drop for NetThreads {
    fn drop(&mut self) {
        // Closing the channel ends the threads' loops.
        self.jobs.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        for worker in self.workers.get_mut().unwrap_or_else(PoisonError::into_inner).drain(..) {
            let _ = worker.join();
        }
    }
}

/// A network thread: runs the next job while there is one, until the
/// channel closes.
fn serve<B: CapaBackend>(net: &Net<B>, device: &B::Device, jobs: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held only while waiting: the next free thread takes the next job.
        let next = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(job) = next else { return };
        let rows = job.rows;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            forward_on_host(net, job.planes, rows, device, job.heads)
        }));
        let answer = result.map_err(|panic| {
            let reason = panic.downcast_ref::<String>().map(String::as_str).or(panic.downcast_ref::<&str>().copied());
            format!("the network failed on a batch of {rows}: {}", reason.unwrap_or("?"))
        });
        let _ = job.reply.send(answer);
    }
}

/// `net`'s outputs for `rows` positions' `planes`, on the host, with the
/// ownership and score when `heads` asks for them.
pub(crate) fn forward_on_host<B: CapaBackend>(
    net: &Net<B>,
    planes: Vec<f32>,
    rows: usize,
    device: &B::Device,
    heads: Heads,
) -> HostOutput {
    let game = net.config().game;
    let shape = [rows, input_planes(game), game.ranks(), game.files()];
    let output = net.forward(Tensor::<B, 4>::from_data(TensorData::new(planes, shape), device), heads);
    let host = |t: Tensor<B, 2>| t.into_data().convert::<f32>().into_vec::<f32>().expect("f32");
    HostOutput {
        policy: host(output.policy),
        wdl: host(output.wdl),
        moves_left: host(output.moves_left).into_iter().map(|m| m * MOVES_LEFT_SCALE).collect(),
        // A logit x of owning becomes 2 sigmoid(x) - 1 = tanh(x / 2).
        ownership: output.ownership.map_or_else(Vec::new, |x| host(x.div_scalar(2.0).tanh())),
        score: output.score.map_or_else(Vec::new, |logits| host(softmax(logits, 1))),
    }
}
