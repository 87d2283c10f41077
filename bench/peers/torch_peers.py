#!/usr/bin/python3
"""PyTorch's side of `make bench-peers`: the `vkgrad bench` cases that have a PyTorch counterpart,
computed the way bench/suite.cpp, mlp.cpp and models.cpp compute them, timed the way
bench/harness.cpp times them (one warm-up, then runs until they add up to 1 s, at least 3, no run
that would end past 2.5 s; the median), on one thread count per process.

Run it with Debian's interpreter (python3-torch, python3-torchvision), in a fresh process per
thread count, with OPENBLAS_CORETYPE unset and the thread variables set, as bench/peers/peers.py
does:

    env -u OPENBLAS_CORETYPE OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 MKL_NUM_THREADS=2 \\
        /usr/bin/python3 bench/peers/torch_peers.py --threads 2 --json torch-2.json

Each case runs in every configuration that applies (memory format, Adam's implementation, two
ways of writing a*b+c or the encoder) and reports each; the comparison takes the best. The cases
with 64 MiB results run once more at the end with malloc keeping freed memory ("heap kept").
`--list` prints the case names without importing torch.
"""

import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

# name -> (unit, work per run: GFLOP or GB for rates, 0 for times)
CASES = {
    "matmul_f32_512": ("GFLOPS", 2 * 512**3 / 1e9),
    "matmul_f32_1024": ("GFLOPS", 2 * 1024**3 / 1e9),
    "matmul_f32_2048": ("GFLOPS", 2 * 2048**3 / 1e9),
    "ew_axbpc_16M": ("GB/s", 4 * 4 * 2**24 / 1e9),  # a, b, c read; out written
    "sum_16M": ("GB/s", 4 * 2**24 / 1e9),
    "softmax_4096": ("ms", 0),
    "conv2d_b32_c64_56_k3": ("ms", 0),
    "mlp_step": ("ms", 0),
    "resnet18_train": ("ms", 0),
    "resnet18": ("ms", 0),
    "resnet50": ("ms", 0),
    "mobilenetv2": ("ms", 0),
    "bert_encoder": ("ms", 0),
}

# Cases whose result is larger than glibc's largest mmap threshold (32 MiB): see main().
LARGE_RESULTS = ("ew_axbpc_16M", "softmax_4096")

MIN_RUNS, MAX_RUNS = 3, 1000
TARGET_MS, MAX_WALL_MS = 1000.0, 2500.0


def ms_since(t0):
    return (time.perf_counter() - t0) * 1e3


def measure(once):
    """bench/harness.cpp's measure(): `once` returns the ms of one timed run."""
    once()
    runs, timed, start = [], 0.0, time.perf_counter()
    while True:
        t0 = time.perf_counter()
        runs.append(once())
        last_wall = ms_since(t0)
        timed += runs[-1]
        wanted = len(runs) < MIN_RUNS or timed < TARGET_MS
        fits = ms_since(start) + last_wall <= MAX_WALL_MS
        if not wanted or not fits or len(runs) >= MAX_RUNS:
            return runs


def timed(fn):
    """A `once` for measure(): times fn(); its result is freed only after the clock stopped."""
    keep = [None]

    def once():
        t0 = time.perf_counter()
        result = fn()
        ms = ms_since(t0)
        keep[0] = result
        return ms

    return once


def uniform(torch, shape, seed, lo, hi):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) * (hi - lo) + lo


# ---- the cases: each returns {config: timed-run function} -----------------------------------


def matmul(torch, n):
    a, b = uniform(torch, (n, n), 100 + n, -1, 1), uniform(torch, (n, n), 200 + n, -1, 1)
    return {"a @ b": lambda: a @ b}


def axbpc(torch):
    n = 2**24
    a, b, c = (uniform(torch, (n,), seed, -1, 1) for seed in (11, 12, 13))
    # Eager a*b+c is two kernels and an intermediate; addcmul is the one fused kernel.
    return {"a*b+c": lambda: a * b + c, "addcmul": lambda: torch.addcmul(c, a, b)}


def sum16m(torch):
    x = uniform(torch, (2**24,), 21, 0, 1)
    return {"x.sum()": lambda: x.sum()}


def softmax(torch):
    x = uniform(torch, (4096, 4096), 31, -4, 4)
    return {"x.softmax(-1)": lambda: x.softmax(-1)}


def conv2d(torch):
    F = torch.nn.functional
    x = uniform(torch, (32, 64, 56, 56), 41, -1, 1)
    w = uniform(torch, (64, 64, 3, 3), 42, -1, 1)
    cl = torch.channels_last
    xc, wc = x.contiguous(memory_format=cl), w.contiguous(memory_format=cl)
    return {
        "NCHW": lambda: F.conv2d(x, w, None, 1, 1),
        "channels-last": lambda: F.conv2d(xc, wc, None, 1, 1),
    }


def training_step(torch, model, opt, x, y):
    """One step of the training cases: cross entropy of model(x) against y, zero_grad, backward,
    the optimizer's step; returns the loss."""

    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def mlp_step(torch):
    """bench/mlp.cpp: 784-512-512-10, batch 256, ReLU, cross entropy, Adam(lr 1e-3), one fixed
    batch; forward, zero_grad, backward, step."""
    nn = torch.nn
    x = uniform(torch, (256, 784), 99, 0, 1)
    y = torch.randint(0, 10, (256,), generator=torch.Generator().manual_seed(98))

    def step_fn(foreach):
        torch.manual_seed(7)
        model = nn.Sequential(
            nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
        )
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=foreach)
        return training_step(torch, model, opt, x, y)

    return {"Adam": step_fn(False), "Adam(foreach)": step_fn(True)}


def resnet18_train(torch):
    """bench/models.cpp's resnet18_train: torchvision's resnet18(num_classes=100) in train mode,
    16 fixed images of 3 x 64 x 64 and labels, cross entropy, SGD(lr 0.01, momentum 0.9);
    forward, zero_grad, backward, step."""
    import torchvision

    x = uniform(torch, (16, 3, 64, 64), 19, -1, 1)
    y = torch.randint(0, 100, (16,), generator=torch.Generator().manual_seed(17))

    def step_fn(channels_last):
        torch.manual_seed(13)
        model = torchvision.models.resnet18(num_classes=100).train()
        xs = x
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
            xs = x.contiguous(memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        return training_step(torch, model, opt, xs, y)

    return {"NCHW": step_fn(False), "channels-last": step_fn(True)}


def vision_model(torch, name):
    import torchvision

    build = {
        "resnet18": torchvision.models.resnet18,
        "resnet50": torchvision.models.resnet50,
        "mobilenetv2": torchvision.models.mobilenet_v2,
    }[name]
    torch.manual_seed(11)
    x = uniform(torch, (1, 3, 224, 224), 5, -1, 1)
    nchw = build(weights=None).eval()
    cl = build(weights=None).eval().to(memory_format=torch.channels_last)
    xc = x.contiguous(memory_format=torch.channels_last)
    return {"NCHW": lambda: nchw(x), "channels-last": lambda: cl(xc)}


class HandEncoderLayer:
    """examples/models/bert_encoder.hpp, op for op: separate q/k/v projections,
    softmax(q kᵀ / √dₖ) v, the tanh GELU, post-LayerNorm."""

    def __init__(self, torch, d=256, heads=4, ffn=1024):
        nn = torch.nn
        self.F, self.heads = nn.functional, heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.up, self.down = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def __call__(self, x):
        n, s, d = x.shape
        h = self.heads

        def split(t):
            return t.reshape(n, s, h, d // h).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = (q @ k.transpose(-2, -1) / math.sqrt(d // h)).softmax(-1) @ v
        y = self.ln1(x + self.o(att.transpose(1, 2).reshape(n, s, d)))
        return self.ln2(y + self.down(self.F.gelu(self.up(y), approximate="tanh")))


def bert_encoder(torch):
    nn = torch.nn
    torch.manual_seed(11)
    x = uniform(torch, (1, 128, 256), 5, -1, 1)
    # nn.TransformerEncoderLayer is the same post-LN layer (q/k/v fused into one in_proj); in
    # eval() under no_grad it takes PyTorch's fused fast path, which computes the exact (erf)
    # GELU where ours uses the tanh approximation.
    layers = nn.Sequential(
        *[
            nn.TransformerEncoderLayer(
                256, 4, 1024, dropout=0.0, activation="gelu", batch_first=True, norm_first=False
            )
            for _ in range(4)
        ]
    ).eval()
    hand = [HandEncoderLayer(torch) for _ in range(4)]

    def run_hand():
        y = x
        for layer in hand:
            y = layer(y)
        return y

    return {"nn.TransformerEncoderLayer": lambda: layers(x), "hand-written": run_hand}


def configs(torch, name):
    if name.startswith("matmul_f32_"):
        return matmul(torch, int(name.rsplit("_", 1)[1]))
    return {
        "ew_axbpc_16M": axbpc,
        "sum_16M": sum16m,
        "softmax_4096": softmax,
        "conv2d_b32_c64_56_k3": conv2d,
        "mlp_step": mlp_step,
        "resnet18_train": resnet18_train,
        "bert_encoder": bert_encoder,
    }.get(name, lambda t: vision_model(t, name))(torch)


def blas_core():
    """The BLAS torch loaded, and the core OpenBLAS chose (after a first matmul)."""
    with open("/proc/self/maps") as maps:
        libs = sorted({line.split()[-1] for line in maps if "openblas" in line and ".so" in line})
    for path in libs:
        try:
            f = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        f.restype = ctypes.c_char_p
        return f"OpenBLAS {f().decode().strip()} ({path})"
    return "not OpenBLAS"


def cpu_capability(torch):
    """The vector ISA ATen's kernels dispatch to (ATEN_CPU_CAPABILITY overrides it)."""
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage:" in line:
            return line.split(":", 1)[1].strip()
    return "?"


def run_case(torch, entry, suffix=""):
    """Times every configuration of a case, appending to entry["configs"] (labels + suffix)."""
    name = entry["name"]
    unit, work = CASES[name]
    fns, fn = {}, None
    try:
        with torch.no_grad():
            fns = configs(torch, name)
        for config, fn in fns.items():
            t0 = time.perf_counter()
            training = name in ("mlp_step", "resnet18_train")
            grad = torch.enable_grad() if training else torch.no_grad()
            with grad:
                runs = measure(timed(fn))
            ms = statistics.median(runs)
            value = work / (ms / 1e3) if work else ms
            entry["configs"].append(
                {"config": config + suffix, "value": value, "ms": ms, "runs": len(runs)})
            print(f"  {name:<22} {config + suffix:<30} {value:10.4g} {unit:<6} "
                  f"({len(runs)} runs, {ms_since(t0) / 1e3:.1f} s)", flush=True)
    except Exception as e:  # one case failing must not lose the others
        entry["error"] = f"{type(e).__name__}: {e}"
        print(f"  {name:<22} ERROR {entry['error']}", flush=True)


def keep_freed_memory():
    """mallopt: no block is mmap'ed or trimmed back to the OS (below 1 GiB)."""
    libc = ctypes.CDLL("libc.so.6")
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)
    libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--threads", type=int, help="torch.set_num_threads (set the env variables too)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--only", help="comma-separated case names")
    p.add_argument("--list", action="store_true", help="print the case names and exit")
    args = p.parse_args()
    if args.list:
        print(" ".join(CASES))
        return 0
    if not args.threads:
        p.error("--threads is required")
    names = args.only.split(",") if args.only else list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        p.error(f"unknown case(s): {', '.join(unknown)}")

    import torch

    torch.set_num_threads(args.threads)
    env = {k: os.environ.get(k, "unset") for k in
           ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE",
            "ATEN_CPU_CAPABILITY")}
    torch.ones(8, 8) @ torch.ones(8, 8)  # loads the BLAS
    header = {
        "torch": torch.__version__,
        "threads": args.threads,
        "torch_threads": torch.get_num_threads(),
        "env": env,
        "blas": blas_core(),
        "cpu_capability": cpu_capability(torch),
    }
    print(f"torch_peers: torch {header['torch']}, {header['torch_threads']} thread(s), "
          f"{header['blas']}, ATen kernels {header['cpu_capability']}; "
          + ", ".join(f"{k}={v}" for k, v in env.items()), flush=True)

    results = [{"name": n, "unit": CASES[n][0], "configs": []} for n in names]
    for entry in results:
        run_case(torch, entry)
    # glibc hands a freed block above its mmap threshold (32 MiB at most) back to the OS, so
    # each 64 MiB result is fresh pages, faulted in as the kernel writes them; vkgrad's CPU
    # allocator keeps freed blocks for the next run. A second pass over the cases with such
    # results, with malloc told to keep freed memory, times PyTorch without those page faults.
    keep_freed_memory()
    for entry in results:
        if entry["name"] in LARGE_RESULTS and "error" not in entry:
            run_case(torch, entry, ", heap kept")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({**header, "cases": results}, f, indent=2)
            f.write("\n")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
