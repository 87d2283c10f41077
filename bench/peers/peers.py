#!/usr/bin/python3
"""`make bench-peers`: vkgrad's CPU figures beside PyTorch's, in one sitting.

Runs `vkgrad bench --device CPU` over the cases that have a PyTorch counterpart, then
bench/peers/torch_peers.py once per thread count (a fresh process each, OPENBLAS_CORETYPE unset,
OMP/OPENBLAS/MKL_NUM_THREADS set), and prints one table: ours, PyTorch's best over its thread
counts and configurations (and which won), and the ratio of the times, ours / PyTorch's (lower
is better; for rates, PyTorch's rate / ours). The table also goes to <out>/peers.md and
<out>/peers.json, beside each side's raw JSON and output.

Needs only the standard library; the PyTorch side runs with --python (Debian's /usr/bin/python3,
where python3-torch and python3-torchvision live).
"""

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Our cases, in suite order, and the torch_peers.py case each is compared with.
PEER_OF = {
    "matmul_f32_512": "matmul_f32_512",
    "matmul_f32_1024": "matmul_f32_1024",
    "matmul_f32_2048": "matmul_f32_2048",
    "ew_axbpc_16M": "ew_axbpc_16M",
    "sum_16M": "sum_16M",
    "softmax_4096": "softmax_4096",
    "conv2d_b32_c64_56_k3": "conv2d_b32_c64_56_k3",
    "mlp_step_nojit": "mlp_step",
    "mlp_step_jit": "mlp_step",
    "resnet18": "resnet18",
    "resnet18_jit": "resnet18",
    "resnet50": "resnet50",
    "resnet50_jit": "resnet50",
    "mobilenetv2": "mobilenetv2",
    "mobilenetv2_jit": "mobilenetv2",
    "bert_encoder": "bert_encoder",
    "bert_encoder_jit": "bert_encoder",
    "resnet18_train": "resnet18_train",
    "resnet18_train_jit": "resnet18_train",
}
RATES = {"GFLOPS", "GB/s"}


def run_logged(cmd, log_path, env=None):
    """Runs cmd, its output both on our stdout and in log_path; returns the exit status."""
    print("$ " + " ".join(cmd), flush=True)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                bufsize=1, env=env)
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            log.write(line)
        return proc.wait()


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def cpu_has_avx512():
    """avx512f, bw, dq and vl: what PyTorch's AVX512 kernels (and OpenBLAS's SkylakeX) need."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                return {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags
    return False


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def git_commit():
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=HERE, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, cwd=HERE).stdout.strip()
        return rev + (" (modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def num(v):
    if v is None:
        return "-"
    a = abs(v)
    digits = 0 if a >= 100 else 1 if a >= 10 else 2 if a >= 1 else 3
    return f"{v:.{digits}f}"


def best_config(peer_runs, name, threads=None):
    """The fastest configuration of case `name` across the PyTorch runs (one thread count if
    given): (ms, value, label) or None."""
    best = None
    for run in peer_runs:
        if threads is not None and run["threads"] != threads:
            continue
        for case in run["cases"]:
            if case["name"] != name:
                continue
            for c in case["configs"]:
                if best is None or c["ms"] < best[0]:
                    label = f"{run['threads']} thr, {c['config']}"
                    best = (c["ms"], c["value"], label)
    return best


def combine(ours, peer_runs, thread_counts):
    rows = []
    for r in ours:
        peer = PEER_OF.get(r["name"])
        if peer is None:
            continue
        row = {"case": r["name"], "unit": r["unit"], "ours": r["value"],
               "ours_ok": r.get("ok", True), "peer_case": peer}
        best = best_config(peer_runs, peer)
        row["pytorch_best"] = best[1] if best else None
        row["pytorch_config"] = best[2] if best else None
        errors = [f"{run['threads']} thr: {case['error']}" for run in peer_runs
                  for case in run["cases"] if case["name"] == peer and "error" in case]
        if errors:
            row["pytorch_errors"] = errors
            if not best:
                row["pytorch_config"] = "ERROR (torch-N.txt)"
        for n in thread_counts:
            b = best_config(peer_runs, peer, n)
            row[f"pytorch_{n}thr"] = b[1] if b else None
            row[f"pytorch_{n}thr_config"] = b[2].split(", ", 1)[1] if b else None
        if best and r["value"]:
            # The ratio of times: for rates, PyTorch's rate / ours.
            ratio = best[1] / r["value"] if r["unit"] in RATES else r["value"] / best[1]
            row["ratio"] = ratio
        else:
            row["ratio"] = None
        rows.append(row)
    return rows


def table_lines(rows, thread_counts, markdown):
    head = ["case", "unit", "ours", "PyTorch best", "won by"]
    head += [f"PyTorch {n} thr" for n in thread_counts] + ["ours/PyTorch"]
    body = []
    for r in rows:
        ours = num(r["ours"]) + ("" if r["ours_ok"] else " FAIL")
        cells = [r["case"], r["unit"], ours, num(r["pytorch_best"]), r["pytorch_config"] or "-"]
        cells += [num(r[f"pytorch_{n}thr"]) for n in thread_counts]
        cells.append(f"{r['ratio']:.2f}" if r["ratio"] is not None else "-")
        body.append(cells)
    if markdown:
        align = ["---", "---", "---:", "---:", "---"] + ["---:"] * len(thread_counts) + ["---:"]
        return ["| " + " | ".join(c) + " |" for c in [head, align] + body]
    widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
    left = {0, 1, 4}

    def fmt(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [fmt(head), fmt(["-" * w for w in widths])] + [fmt(b) for b in body]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--vkgrad", default="build/release/tools/cli/vkgrad")
    p.add_argument("--python", default="/usr/bin/python3", help="the interpreter with torch")
    p.add_argument("--out", default="build/bench-peers")
    p.add_argument("--threads", default="1,2", help="PyTorch's thread counts, one process each")
    p.add_argument("--only", help="comma-separated vkgrad case names (default: every one above)")
    args = p.parse_args()

    names = args.only.split(",") if args.only else list(PEER_OF)
    unknown = [n for n in names if n not in PEER_OF]
    if unknown:
        p.error(f"no PyTorch counterpart for: {', '.join(unknown)}")
    thread_counts = [int(t) for t in args.threads.split(",")]
    peer_names = list(dict.fromkeys(PEER_OF[n] for n in names))
    os.makedirs(args.out, exist_ok=True)
    started = datetime.datetime.now().astimezone()
    load_before = loadavg()

    # Ours: exit status 1 means a case printed FAIL or ERROR; its JSON says which ("ok").
    ours_json = os.path.join(args.out, "vkgrad.json")
    if os.path.exists(ours_json):
        os.remove(ours_json)
    status = run_logged([args.vkgrad, "bench", "--device", "CPU", "--only", ",".join(names),
                         "--json", ours_json], os.path.join(args.out, "vkgrad.txt"))
    if status not in (0, 1) or not os.path.exists(ours_json):
        print(f"bench-peers: vkgrad bench failed (exit {status})", file=sys.stderr)
        return 1
    with open(ours_json) as f:
        ours = json.load(f)

    # Since 1.12 PyTorch runs its own kernels (elementwise, reductions, softmax) as AVX2 even on
    # AVX-512 CPUs unless told otherwise (pytorch/pytorch#80253); on AVX-512 CPUs ask for them,
    # as OPENBLAS_CORETYPE is unset for its BLAS. A value set by the caller is passed on as is.
    aten = []
    if "ATEN_CPU_CAPABILITY" not in os.environ and cpu_has_avx512():
        aten = ["ATEN_CPU_CAPABILITY=avx512"]
    peer_runs = []
    for n in thread_counts:
        out = os.path.join(args.out, f"torch-{n}.json")
        if os.path.exists(out):
            os.remove(out)
        cmd = ["env", "-u", "OPENBLAS_CORETYPE", f"OMP_NUM_THREADS={n}",
               f"OPENBLAS_NUM_THREADS={n}", f"MKL_NUM_THREADS={n}"] + aten + [
               args.python, os.path.join(HERE, "torch_peers.py"), "--threads", str(n), "--only",
               ",".join(peer_names), "--json", out]
        status = run_logged(cmd, os.path.join(args.out, f"torch-{n}.txt"))
        if not os.path.exists(out):
            print(f"bench-peers: the PyTorch run on {n} thread(s) failed (exit {status}); is "
                  f"python3-torch installed for {args.python}? (scripts/install-deps.sh --peers)",
                  file=sys.stderr)
            return 1
        with open(out) as f:
            peer_runs.append(json.load(f))

    rows = combine(ours, peer_runs, thread_counts)
    with open(os.path.join(args.out, "vkgrad.txt")) as f:
        found = re.search(r"CPU backend on (\d+) threads", f.read())
    ours_threads = found.group(1) if found else "?"
    about = [
        f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs; vkgrad {git_commit()}, "
        f"CPU backend on {ours_threads} threads",
        f"PyTorch {peer_runs[0]['torch']}, ATen kernels {peer_runs[0]['cpu_capability']}, "
        f"BLAS {peer_runs[0]['blas']}; one process per thread count, OPENBLAS_CORETYPE unset, "
        f"ATEN_CPU_CAPABILITY={peer_runs[0]['env'].get('ATEN_CPU_CAPABILITY', 'unset')}",
        f"started {started:%Y-%m-%d %H:%M %Z}; load average {load_before} before, "
        f"{loadavg()} after",
        "medians after a warm-up (runs adding up to 1 s, as bench/harness.cpp); PyTorch best of "
        "its configs and thread counts; ratio = our time / PyTorch's (rates: PyTorch's rate / "
        "ours), lower is better",
    ]
    text = table_lines(rows, thread_counts, markdown=False)
    print("\n==> vkgrad vs PyTorch (CPU)")
    for line in about:
        print("  " + line)
    print()
    print("\n".join(text))

    md = ["# vkgrad vs PyTorch (CPU)", ""] + [f"- {line}" for line in about] + [""]
    md += table_lines(rows, thread_counts, markdown=True)
    with open(os.path.join(args.out, "peers.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(args.out, "peers.json"), "w") as f:
        json.dump({"about": about, "cpu": cpu_model(), "vkgrad_commit": git_commit(),
                   "vkgrad_threads": ours_threads, "started": started.isoformat(),
                   "loadavg_before": load_before, "loadavg_after": loadavg(),
                   "pytorch": [{k: v for k, v in r.items() if k != "cases"} for r in peer_runs],
                   "rows": rows, "pytorch_configs": {r["threads"]: r["cases"] for r in peer_runs}},
                  f, indent=2)
        f.write("\n")
    print(f"\nwrote {args.out}/peers.md and {args.out}/peers.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
