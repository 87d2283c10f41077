#!/usr/bin/python3
"""`make bench-peers`: vkgrad's CPU figures beside PyTorch's and llama.cpp's, in one sitting.

Runs `vkgrad bench --device CPU` over the cases that have a PyTorch or llama.cpp counterpart,
then bench/peers/torch_peers.py once per thread count (a fresh process each, OPENBLAS_CORETYPE
unset, OMP/OPENBLAS/MKL_NUM_THREADS set), then bench/peers/llama_peers.mjs (node-llama-cpp's
prebuilt llama.cpp, npm-installed into <out>/node) on the GGUF files our LLM cases wrote: on the
CPU for the comparison, and on Vulkan (pp16, tg8 on the Q4_0 file) as extra rows. It prints one
table: ours, PyTorch's best over its thread counts and configurations (and which won),
llama.cpp's figure, and the ratio of the times, ours / the peer's (lower is better; for rates,
the peer's rate / ours). The table also goes to <out>/peers.md and <out>/peers.json, beside
each side's raw JSON and output.

llama.cpp is optional: where node, npm, the install or a llama.cpp build fails, its cells say
`unavailable` (the header says why) and the rest of the table is as without it.

Needs only the standard library; the PyTorch side runs with --python (Debian's /usr/bin/python3,
where python3-torch and python3-torchvision live), the llama.cpp side with node (20 or later).
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading

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

# Our LLM cases (bench/llm.cpp) and the llama_peers.mjs case each is compared with: the same
# measurement on the same file, <cache root>/models/llama-tinyllama-<TYPE>.gguf.
LLAMA_PEER_OF = {
    "llm_decode_q4_0": "llm_decode_q4_0",
    "llm_decode_q8_0": "llm_decode_q8_0",
    "llm_prefill_q4_0": "llm_prefill_q4_0",
    "llm_prefill_q8_0": "llm_prefill_q8_0",
}
RATES = {"GFLOPS", "GB/s", "tok/s"}

# node-llama-cpp and its prebuilt llama.cpp libraries (CPU; Vulkan), at one version.
LLAMA_PACKAGES = ["node-llama-cpp@3.22.1", "@node-llama-cpp/linux-x64@3.22.1",
                  "@node-llama-cpp/linux-x64-vulkan@3.22.1"]
# llama.cpp's Vulkan run: pp16 and tg8 (lavapipe runs it at about a token a second), killed past
# this many seconds.
LLAMA_VULKAN_ARGS = ["--prefill", "16", "--decode", "8"]
LLAMA_VULKAN_TIMEOUT_S = 900


def run_logged(cmd, log_path, env=None, timeout=None):
    """Runs cmd, its output both on our stdout and in log_path; returns the exit status, or None
    when it ran past `timeout` seconds and was killed."""
    print("$ " + " ".join(cmd), flush=True)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                bufsize=1, env=env)
        killed = threading.Event()

        def kill():
            killed.set()
            proc.kill()

        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.start()
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            log.write(line)
        status = proc.wait()
        if timer:
            timer.cancel()
        return None if killed.is_set() else status


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


def time_ratio(ours, theirs, unit):
    """The ratio of times, ours / theirs: for rates, their rate / ours. None without both."""
    if not ours or not theirs:
        return None
    return theirs / ours if unit in RATES else ours / theirs


def combine(ours, peer_runs, thread_counts):
    rows = []
    for r in ours:
        peer = PEER_OF.get(r["name"])
        if peer is None:
            continue
        row = {"case": r["name"], "unit": r["unit"], "ours": r["value"],
               "ours_ok": r.get("ok", True), "peer": "PyTorch", "peer_case": peer}
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
        row["ratio"] = time_ratio(r["value"], best[1] if best else None, r["unit"])
        rows.append(row)
    return rows


def cache_root():
    """vkgrad's cache root, as runtime/disk_cache.cpp finds it."""
    for var, sub in (("VKGRAD_CACHE_DIR", ()), ("XDG_CACHE_HOME", ("vkgrad",)),
                     ("HOME", (".cache", "vkgrad"))):
        if os.environ.get(var):
            return os.path.join(os.environ[var], *sub)
    return os.path.join(tempfile.gettempdir(), "vkgrad")


def llama_model(case):
    """The GGUF file our LLM case `case` runs on (bench/llm.cpp writes it on first use)."""
    gguf_type = "_".join(case.split("_")[2:]).upper()  # llm_decode_q4_0: Q4_0
    return os.path.join(cache_root(), "models", f"llama-tinyllama-{gguf_type}.gguf")


def install_llama(out):
    """node-llama-cpp and its prebuilt llama.cpp libraries (LLAMA_PACKAGES) in <out>/node, npm-
    installed there unless they are there already at those versions: (the directory, None), or
    (None, why not). The install sets NODE_LLAMA_CPP_SKIP_DOWNLOAD, on which node-llama-cpp's
    postinstall exits at once instead of fetching or building llama.cpp, and omits optional
    dependencies (node-llama-cpp lists every platform's binaries so, CUDA's hundreds of MB
    among them); the two binary packages wanted are named, so they are installed."""
    node_dir = os.path.join(out, "node")

    def installed():
        for spec in LLAMA_PACKAGES:
            name, version = spec.rsplit("@", 1)
            try:
                with open(os.path.join(node_dir, "node_modules", name, "package.json")) as f:
                    if json.load(f).get("version") != version:
                        return False
            except (OSError, ValueError):
                return False
        return True

    if shutil.which("node") is None:
        return None, "no node on PATH"
    try:
        version = subprocess.run(["node", "--version"], capture_output=True, text=True,
                                 check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        return None, f"node --version failed: {e}"
    found = re.match(r"v(\d+)\.", version)
    if not found or int(found.group(1)) < 20:
        return None, f"node-llama-cpp needs node 20 or later, this is {version}"
    if installed():
        return node_dir, None
    if shutil.which("npm") is None:
        return None, "no npm on PATH"
    os.makedirs(node_dir, exist_ok=True)
    log = os.path.join(out, "llama-install.txt")
    env = dict(os.environ, NODE_LLAMA_CPP_SKIP_DOWNLOAD="true")
    cmd = ["npm", "install", "--prefix", node_dir, "--no-audit", "--no-fund", "--omit=optional",
           "--save-exact"] + LLAMA_PACKAGES
    try:
        status = run_logged(cmd, log, env=env)
    except OSError as e:
        return None, f"npm install failed: {e}"
    if status != 0 or not installed():
        return None, f"npm install failed (exit {status}; {os.path.basename(log)})"
    return node_dir, None


def run_llama(args, node_dir, models, gpu, extra, name, timeout=None):
    """llama_peers.mjs on `models` in one process, its output in <out>/<name>.txt and .json:
    (its entries, None); (None, why not) where the backend could not be loaded (exit 2) or it
    wrote nothing; (the entries it wrote, why the rest are missing) where it was killed after
    `timeout` seconds."""
    out = os.path.join(args.out, f"{name}.json")
    if os.path.exists(out):
        os.remove(out)
    cmd = ["node", os.path.join(HERE, "llama_peers.mjs"), "--node-dir", node_dir, "--threads",
           str(args.llama_threads), "--gpu", gpu, "--json", out] + extra
    for m in models:
        cmd += ["--model", m]
    status = run_logged(cmd, os.path.join(args.out, f"{name}.txt"), timeout=timeout)
    entries = []
    if os.path.exists(out):
        with open(out) as f:
            entries = json.load(f)
    if status == 2:
        return None, next((e["error"] for e in entries if e.get("error")), f"see {name}.txt")
    if status is None:
        return entries, f"killed after {timeout} s ({name}.txt)"
    if not entries:
        return None, f"llama_peers.mjs exited {status} and wrote no {name}.json"
    return entries, None


def llama_cell(entries, why, case, log):
    """llama.cpp's `case` in one run's entries: (value, entry, cell text where value is None,
    error)."""
    entry = next((e for e in entries or [] if e["case"] == case), None)
    if entry is None:
        return None, None, "unavailable", why or "not measured"
    if entry.get("value") is None:
        return None, entry, f"ERROR ({log})", entry.get("error")
    return entry["value"], entry, None, None


def combine_llama(ours, llama):
    """Rows for our LLM cases against llama.cpp on the CPU, then llama.cpp's Vulkan rows: its own
    figures (pp16, tg8) on the Q4_0 file, one for each Q4_0 case asked for."""
    rows = []
    for r in ours:
        peer = LLAMA_PEER_OF.get(r["name"])
        if peer is None:
            continue
        value, entry, cell, error = llama_cell(llama["cpu"], llama["cpu_why"], peer,
                                               "llama-cpu.txt")
        rows.append({"case": r["name"], "unit": r["unit"], "ours": r["value"],
                     "ours_ok": r.get("ok", True), "peer": "llama.cpp", "peer_case": peer,
                     "llama_cpp": value, "llama_cpp_cell": cell, "llama_cpp_error": error,
                     "llama_cpp_run": entry,
                     "llama_ratio": time_ratio(r["value"], value, r["unit"])})
    if not llama["vulkan_asked"]:
        return rows
    for r in [r for r in rows if r["case"].endswith("_q4_0")]:
        value, entry, cell, error = llama_cell(llama["vulkan"], llama["vulkan_why"],
                                               r["peer_case"], "llama-vulkan.txt")
        flag, kind = ("--prefill", "pp") if "prefill" in r["case"] else ("--decode", "tg")
        label = kind + LLAMA_VULKAN_ARGS[LLAMA_VULKAN_ARGS.index(flag) + 1]
        rows.append({"case": f"{r['case']} (llama.cpp Vulkan {label})", "unit": r["unit"],
                     "ours": None, "ours_ok": True, "peer": "llama.cpp Vulkan",
                     "peer_case": r["peer_case"], "llama_cpp": value, "llama_cpp_cell": cell,
                     "llama_cpp_error": error, "llama_cpp_run": entry, "llama_ratio": None})
    return rows


def table_lines(rows, thread_counts, markdown, pytorch=True, llama=False):
    head = ["case", "unit", "ours"]
    if pytorch:
        head += ["PyTorch best", "won by"]
        head += [f"PyTorch {n} thr" for n in thread_counts] + ["ours/PyTorch"]
    if llama:
        head += ["llama.cpp", "ours/llama.cpp"]
    body = []
    for r in rows:
        ours = num(r["ours"]) + ("" if r["ours_ok"] else " FAIL")
        cells = [r["case"], r["unit"], ours]
        if pytorch:
            cells += [num(r.get("pytorch_best")), r.get("pytorch_config") or "-"]
            cells += [num(r.get(f"pytorch_{n}thr")) for n in thread_counts]
            cells.append(f"{r['ratio']:.2f}" if r.get("ratio") is not None else "-")
        if llama:
            cells.append(r.get("llama_cpp_cell") or num(r.get("llama_cpp")))
            cells.append(f"{r['llama_ratio']:.2f}" if r.get("llama_ratio") is not None else "-")
        body.append(cells)
    left = {i for i, h in enumerate(head) if h in ("case", "unit", "won by")}
    if markdown:
        align = ["---" if i in left else "---:" for i in range(len(head))]
        return ["| " + " | ".join(c) + " |" for c in [head, align] + body]
    widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]

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
    p.add_argument("--llama-threads", type=int, default=2, help="llama.cpp's threads on the CPU")
    p.add_argument("--llama-vulkan", action=argparse.BooleanOptionalAction, default=True,
                   help="also run llama.cpp's Vulkan build on the Q4_0 file (extra rows)")
    p.add_argument("--only", help="comma-separated vkgrad case names (default: every one above)")
    args = p.parse_args()

    names = args.only.split(",") if args.only else list(PEER_OF) + list(LLAMA_PEER_OF)
    unknown = [n for n in names if n not in PEER_OF and n not in LLAMA_PEER_OF]
    if unknown:
        p.error(f"no PyTorch or llama.cpp counterpart for: {', '.join(unknown)}")
    torch_names = [n for n in names if n in PEER_OF]
    llama_names = [n for n in names if n in LLAMA_PEER_OF]
    thread_counts = [int(t) for t in args.threads.split(",")] if torch_names else []
    peer_names = list(dict.fromkeys(PEER_OF[n] for n in torch_names))
    os.makedirs(args.out, exist_ok=True)
    started = datetime.datetime.now().astimezone()
    load_before = loadavg()

    # Ours: exit status 1 means a case printed FAIL or ERROR; its JSON says which ("ok"). The LLM
    # cases write the GGUF files llama.cpp reads below, if they are not there yet.
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

    # llama.cpp, optional: each step that fails leaves its reason for the table instead.
    q4_0 = [n for n in llama_names if n.endswith("_q4_0")]
    llama = {"cpu": None, "cpu_why": None, "vulkan": None, "vulkan_why": None,
             "vulkan_asked": bool(q4_0) and args.llama_vulkan}
    if llama_names:
        node_dir, why = install_llama(args.out)
        if node_dir is None:
            llama["cpu_why"] = llama["vulkan_why"] = why
            print(f"bench-peers: llama.cpp unavailable: {why}", file=sys.stderr)
        else:
            models = list(dict.fromkeys(llama_model(n) for n in llama_names))
            llama["cpu"], llama["cpu_why"] = run_llama(args, node_dir, models, "cpu", [],
                                                       "llama-cpu")
            if llama["vulkan_asked"]:
                llama["vulkan"], llama["vulkan_why"] = run_llama(
                    args, node_dir, [llama_model(q4_0[0])], "vulkan", LLAMA_VULKAN_ARGS,
                    "llama-vulkan", LLAMA_VULKAN_TIMEOUT_S)

    rows = combine(ours, peer_runs, thread_counts) + combine_llama(ours, llama)
    with open(os.path.join(args.out, "vkgrad.txt")) as f:
        found = re.search(r"CPU backend on (\d+) threads", f.read())
    ours_threads = found.group(1) if found else "?"
    peers = (["PyTorch"] if peer_runs else []) + (["llama.cpp"] if llama_names else [])
    about = [
        f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs; vkgrad {git_commit()}, "
        f"CPU backend on {ours_threads} threads",
    ]
    if peer_runs:
        about.append(
            f"PyTorch {peer_runs[0]['torch']}, ATen kernels {peer_runs[0]['cpu_capability']}, "
            f"BLAS {peer_runs[0]['blas']}; one process per thread count, OPENBLAS_CORETYPE unset, "
            f"ATEN_CPU_CAPABILITY={peer_runs[0]['env'].get('ATEN_CPU_CAPABILITY', 'unset')}")
    if llama_names:
        about.append(llama_about(llama, args.llama_threads))
    about += [
        f"started {started:%Y-%m-%d %H:%M %Z}; load average {load_before} before, "
        f"{loadavg()} after",
        "medians after a warm-up (runs adding up to 1 s, as bench/harness.cpp"
        + ("; llama.cpp's of 3 runs)" if llama_names else ")")
        + ("; PyTorch best of its configs and thread counts" if peer_runs else "")
        + "; ratio = our time / the peer's (rates: the peer's rate / ours), lower is better",
    ]
    title = f"vkgrad vs {' and '.join(peers)} (CPU)"
    columns = {"pytorch": bool(peer_runs), "llama": bool(llama_names)}
    text = table_lines(rows, thread_counts, markdown=False, **columns)
    print(f"\n==> {title}")
    for line in about:
        print("  " + line)
    print()
    print("\n".join(text))

    md = [f"# {title}", ""] + [f"- {line}" for line in about] + [""]
    md += table_lines(rows, thread_counts, markdown=True, **columns)
    with open(os.path.join(args.out, "peers.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(args.out, "peers.json"), "w") as f:
        json.dump({"about": about, "cpu": cpu_model(), "vkgrad_commit": git_commit(),
                   "vkgrad_threads": ours_threads, "started": started.isoformat(),
                   "loadavg_before": load_before, "loadavg_after": loadavg(),
                   "pytorch": [{k: v for k, v in r.items() if k != "cases"} for r in peer_runs],
                   "llama_cpp": llama, "rows": rows,
                   "pytorch_configs": {r["threads"]: r["cases"] for r in peer_runs}},
                  f, indent=2)
        f.write("\n")
    print(f"\nwrote {args.out}/peers.md and {args.out}/peers.json")
    return 0


def llama_about(llama, threads):
    """The header's line on llama.cpp: its build and how it ran, or why it did not."""
    def why_not(entries, why):
        return why or next((e["error"] for e in entries or [] if e.get("error")), "no figure")

    measured = [e for e in (llama["cpu"] or []) + (llama["vulkan"] or [])
                if e.get("value") is not None]
    if not measured:
        return f"llama.cpp unavailable: {why_not(llama['cpu'], llama['cpu_why'])}"
    line = (f"llama.cpp {measured[0]['llama_cpp']} (node-llama-cpp "
            f"{measured[0]['node_llama_cpp']}'s prebuilt binaries) on our LLM cases' GGUF files, "
            f"on the CPU on {threads} threads: pp128; tg32 after a 16-token prompt, greedy")
    if not any(e["gpu"] == "cpu" for e in measured):
        line += f" (unavailable: {why_not(llama['cpu'], llama['cpu_why'])})"
    if llama["vulkan_asked"]:
        vulkan = [e for e in measured if e["gpu"] == "vulkan"]
        if vulkan:
            line += f"; Vulkan rows: llama.cpp alone, pp16 and tg8, on {vulkan[0]['device']}"
            if llama["vulkan_why"]:
                line += f" ({llama['vulkan_why']})"
        else:
            line += f"; Vulkan unavailable: {why_not(llama['vulkan'], llama['vulkan_why'])}"
    return line


if __name__ == "__main__":
    sys.exit(main())
