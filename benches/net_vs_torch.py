#!/usr/bin/env python3
"""capa's network on burn against the identical architecture in PyTorch.

Runs `capa bench net` and then the same measurements in PyTorch, in one run on the
same cores, and prints both and their ratios. The last line is
`ratio infer_b256 X train_b256 Y` (capa over torch: higher is better).

PyTorch is needed for this benchmark only (capa never uses Python):
    python3 -m venv /tmp/torch && /tmp/torch/bin/pip install torch
    /tmp/torch/bin/python benches/net_vs_torch.py

Environment: CAPA (the capa binary, default target/release/capa), SIZE (small),
VARIANT (capablanca), BATCH (256), SECONDS (5: minimum seconds per measurement),
THREADS (torch threads; default: the machine's cores, as burn's CPU backend uses),
ROUNDS (1: capa then torch, repeated; the ratio uses the medians), BACKEND (cpu, or
cuda to run both on the GPU: capa built with `--features cuda`).
"""

import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# The architectures of capa-net's NetConfig::small and ::typical, and the games.
SIZES = {
    "small": dict(channels=64, blocks=4, transformer_blocks=1, heads=4),
    "typical": dict(channels=256, blocks=15, transformer_blocks=4, heads=8),
}
GAMES = {
    "capablanca": dict(planes=139, ranks=8, files=10, policy=2644),
    "chess": dict(planes=112, ranks=8, files=8, policy=1858),
}
GROUPS, SE_RATIO, FFN_MULTIPLIER = 8, 4, 2
POLICY_CHANNELS, VALUE_CHANNELS, MOVES_LEFT_CHANNELS, HEAD_HIDDEN = 32, 32, 8, 128
WEIGHTS = dict(policy=1.0, wdl=1.0, moves_left=0.1, future=0.15)


class SqueezeExcitation(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.squeeze = nn.Linear(c, c // SE_RATIO)
        self.excite = nn.Linear(c // SE_RATIO, 2 * c)

    def forward(self, x):
        b, c = x.shape[:2]
        e = self.excite(F.mish(self.squeeze(x.mean(dim=(2, 3)))))
        scale, bias = e[:, :c].sigmoid(), e[:, c:]
        return x * scale.view(b, c, 1, 1) + bias.view(b, c, 1, 1)


class ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.norm1 = nn.GroupNorm(GROUPS, c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.norm2 = nn.GroupNorm(GROUPS, c)
        self.se = SqueezeExcitation(c)

    def forward(self, x):
        h = F.mish(self.norm1(self.conv1(x)))
        h = self.se(self.norm2(self.conv2(h)))
        return F.mish(h + x)


class TransformerBlock(nn.Module):
    def __init__(self, c, heads, ranks, files):
        super().__init__()
        self.heads = heads
        self.attention_norm = nn.LayerNorm(c)
        self.query, self.key, self.value, self.out = (nn.Linear(c, c) for _ in range(4))
        self.position_bias = nn.Parameter(torch.zeros(heads, (2 * ranks - 1) * (2 * files - 1)))
        self.ffn_norm = nn.LayerNorm(c)
        self.ffn_in = nn.Linear(c, c * FFN_MULTIPLIER)
        self.ffn_out = nn.Linear(c * FFN_MULTIPLIER, c)

    def forward(self, x, positions):
        b, s, c = x.shape
        h, d = self.heads, c // self.heads
        y = self.attention_norm(x)
        split = lambda t: t.view(b, s, h, d).transpose(1, 2)
        q, k, v = split(self.query(y)), split(self.key(y)), split(self.value(y))
        bias = self.position_bias[:, positions].view(1, h, s, s)
        logits = q @ k.transpose(2, 3) / math.sqrt(d) + bias
        context = (logits.softmax(dim=3) @ v).transpose(1, 2).reshape(b, s, c)
        x = x + self.out(context)
        return x + self.ffn_out(F.mish(self.ffn_in(self.ffn_norm(x))))


class PolicyHead(nn.Module):
    def __init__(self, c, squares, policy):
        super().__init__()
        self.conv = nn.Conv2d(c, POLICY_CHANNELS, 1)
        self.out = nn.Linear(POLICY_CHANNELS * squares, policy)

    def forward(self, x):
        return self.out(F.mish(self.conv(x)).flatten(1))


class ScalarHead(nn.Module):
    def __init__(self, c, channels, squares, outputs):
        super().__init__()
        self.conv = nn.Conv2d(c, channels, 1)
        self.hidden = nn.Linear(channels * squares, HEAD_HIDDEN)
        self.out = nn.Linear(HEAD_HIDDEN, outputs)

    def forward(self, x):
        return self.out(F.mish(self.hidden(F.mish(self.conv(x)).flatten(1))))


class Net(nn.Module):
    def __init__(self, channels, blocks, transformer_blocks, heads, planes, ranks, files, policy):
        super().__init__()
        squares = ranks * files
        self.shape = (ranks, files)
        self.input_conv = nn.Conv2d(planes, channels, 3, padding=1, bias=False)
        self.input_norm = nn.GroupNorm(GROUPS, channels)
        self.blocks = nn.ModuleList(ResBlock(channels) for _ in range(blocks))
        self.transformer = nn.ModuleList(
            TransformerBlock(channels, heads, ranks, files) for _ in range(transformer_blocks)
        )
        self.policy = PolicyHead(channels, squares, policy)
        self.wdl = ScalarHead(channels, VALUE_CHANNELS, squares, 3)
        self.moves_left = ScalarHead(channels, MOVES_LEFT_CHANNELS, squares, 1)
        self.future = PolicyHead(channels, squares, policy)
        index = [
            (q // files + ranks - 1 - k // files) * (2 * files - 1) + q % files + files - 1 - k % files
            for q in range(squares)
            for k in range(squares)
        ]
        self.register_buffer("positions", torch.tensor(index), persistent=False)

    def forward(self, x, with_future):
        x = F.mish(self.input_norm(self.input_conv(x)))
        for block in self.blocks:
            x = block(x)
        if len(self.transformer):
            b, c, r, f = x.shape
            t = x.flatten(2).transpose(1, 2)
            for block in self.transformer:
                t = block(t, self.positions)
            x = t.transpose(1, 2).reshape(b, c, r, f)
        future = self.future(x) if with_future else None
        return self.policy(x), self.wdl(x), F.softplus(self.moves_left(x)), future


def soft_cross_entropy(logits, targets):
    return -(F.log_softmax(logits, dim=1) * targets).sum() / logits.shape[0]


def huber(prediction, target, delta=0.5):
    error = (prediction - target).abs()
    quadratic = error.clamp(max=delta)
    return (0.5 * quadratic**2 + delta * (error - quadratic)).mean()


def time_calls(seconds, work):
    """Median wall seconds per call after a warm-up call, and CPU seconds per call."""
    work()
    start, cpu_start, samples = time.perf_counter(), time.process_time(), []
    while len(samples) < 3 or time.perf_counter() - start < seconds:
        call = time.perf_counter()
        work()
        samples.append(time.perf_counter() - call)
    return statistics.median(samples), (time.process_time() - cpu_start) / len(samples)


def torch_bench(size, variant, batch, seconds, device):
    game = GAMES[variant]
    net = Net(**SIZES[size], **game).to(device)
    rows = [1, 32, batch]
    inputs = (torch.rand(batch, game["planes"], game["ranks"], game["files"], device=device) < 0.1).float()
    figures = {}
    net.eval()
    for n in rows:
        x = inputs[:n].contiguous()

        def infer():
            with torch.inference_mode():
                policy, wdl, moves_left, _ = net(x, False)
                policy.cpu().numpy(), wdl.cpu().numpy(), moves_left.cpu().numpy()

        wall, cpu = time_calls(seconds, infer)
        print(f"torch infer batch {n} ms_per_batch {wall * 1e3:.2f} positions_per_s {n / wall:.1f} "
              f"positions_per_cpu_s {n / cpu:.1f}", flush=True)
        figures[f"infer_b{n}"] = n / wall

    net.train()
    p = game["policy"]
    legal = torch.rand(batch, p, device=device) < 0.02
    chosen = torch.randint(0, p, (batch,), device=device)
    legal[torch.arange(batch, device=device), chosen] = True
    policy_target = F.one_hot(chosen, p).float()
    wdl_target = F.one_hot(torch.arange(batch, device=device) % 3, 3).float()
    moves_left_target = torch.full((batch, 1), 40.0, device=device)
    decay = [q for q in net.parameters() if q.dim() >= 2]
    no_decay = [q for q in net.parameters() if q.dim() < 2]
    optimizer = torch.optim.AdamW(
        [dict(params=decay, weight_decay=1e-4), dict(params=no_decay, weight_decay=0.0)], lr=1e-3, eps=1e-8
    )
    ema = [q.detach().clone() for q in net.parameters()]

    def step():
        policy, wdl, moves_left, future = net(inputs, True)
        loss = (
            WEIGHTS["policy"] * soft_cross_entropy(policy.masked_fill(~legal, -1e4), policy_target)
            + WEIGHTS["wdl"] * soft_cross_entropy(wdl, wdl_target)
            + WEIGHTS["moves_left"] * huber(moves_left, moves_left_target / 20.0)
            + WEIGHTS["future"] * soft_cross_entropy(future, policy_target)
        )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 10.0)
        optimizer.step()
        with torch.no_grad():
            torch._foreach_lerp_(ema, list(net.parameters()), 1 - 0.999)
        loss.item()

    wall, cpu = time_calls(seconds, step)
    params = sum(q.numel() for q in net.parameters())
    print(f"torch train batch {batch} ms_per_step {wall * 1e3:.1f} positions_per_s {batch / wall:.1f} "
          f"positions_per_cpu_s {batch / cpu:.1f} params {params}", flush=True)
    figures[f"train_b{batch}"] = batch / wall
    return figures


def capa_bench(capa, size, variant, batch, seconds, backend):
    command = [capa, "bench", "net", "--size", size, "--variant", variant, "--batch", str(batch),
               "--seconds", str(seconds), "--backend", backend]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    for line in output.splitlines()[:-1]:
        print("capa " + line, flush=True)
    words = output.splitlines()[-1].split()
    return {words[i]: float(words[i + 1]) for i in range(0, len(words), 2)}


def main():
    capa = os.environ.get("CAPA", "target/release/capa")
    size, variant = os.environ.get("SIZE", "small"), os.environ.get("VARIANT", "capablanca")
    batch, seconds = int(os.environ.get("BATCH", "256")), float(os.environ.get("SECONDS", "5"))
    rounds = int(os.environ.get("ROUNDS", "1"))
    backend = os.environ.get("BACKEND", "cpu")
    device = "cuda" if backend == "cuda" else "cpu"
    torch.set_num_threads(int(os.environ.get("THREADS", os.cpu_count())))
    print(f"size {size} variant {variant} batch {batch} backend {backend} torch {torch.__version__} "
          f"torch_threads {torch.get_num_threads()}", flush=True)
    capa_runs, torch_runs = [], []
    for _ in range(rounds):
        capa_runs.append(capa_bench(capa, size, variant, batch, seconds, backend))
        torch_runs.append(torch_bench(size, variant, batch, seconds, device))
    keys = list(capa_runs[0])
    median = lambda runs, k: statistics.median(r[k] for r in runs)
    for k in keys:
        c, t = median(capa_runs, k), median(torch_runs, k)
        print(f"{k} capa {c:.1f} torch {t:.1f} ratio {c / t:.2f}")
    print(f"ratio infer_b{batch} {median(capa_runs, f'infer_b{batch}') / median(torch_runs, f'infer_b{batch}'):.2f} "
          f"train_b{batch} {median(capa_runs, f'train_b{batch}') / median(torch_runs, f'train_b{batch}'):.2f}")


if __name__ == "__main__":
    sys.exit(main())
