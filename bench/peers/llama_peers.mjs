// llama.cpp's side of `make bench-peers`: vkgrad's LLM cases (bench/llm.cpp) on the same GGUF
// files, through node-llama-cpp's prebuilt llama.cpp (CPU or Vulkan), timed the same way:
//
//   prefill (ppN, default pp128): N prompt tokens evaluated in one call, the last one's logits
//     sampled greedily; tok/s = N / time. The sequence is cleared (untimed) before each run.
//   decode (tgN, default tg32): after a 16-token prompt (evaluated once, untimed), N tokens
//     generated one at a time, greedily (temperature 0), each fed back as the next input, at
//     positions 16 .. 16+N-1; tok/s = N / time. Positions 16 and on are erased (untimed) before
//     each run, so every run attends to the same history, as ours overwrites the same positions.
//
// Each is the median of 3 timed runs after 1 warm-up. The prompt is token ids given directly,
// 259 + (i * 977) % (vocab - 259), as ours. node-llama-cpp is loaded from --node-dir, where
// bench/peers/peers.py installs it (npm install node-llama-cpp @node-llama-cpp/linux-x64
// @node-llama-cpp/linux-x64-vulkan); getLlama() is told never to build or download llama.cpp, so
// only those prebuilt binaries are used.
//
//   node bench/peers/llama_peers.mjs --model llama-tinyllama-Q4_0.gguf --threads 2 --gpu cpu \
//       --json llama-cpu.json
//
// One line per measurement on stdout; --json writes [{model, case, value, unit, threads, gpu,
// tokens, ...}], the case named as ours (llm_prefill_q4_0, llm_decode_q8_0, ...) from the
// file name's Q4_0/Q8_0 part. Exit status 0 when every measurement ran, 1 when a model failed
// (its entry then has "error"), 2 when node-llama-cpp or the asked-for backend cannot be loaded.

import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PROMPT = 16;  // the decode cases' prompt, as bench/llm.cpp's kPrompt
const WARMUPS = 1;
const RUNS = 3;

function usage(message) {
  if (message) console.error(`llama_peers: ${message}`);
  console.error("usage: node llama_peers.mjs --model FILE[,FILE...] [--model FILE ...] " +
                "[--threads N] [--gpu cpu|vulkan] [--prefill N] [--decode N] [--json OUT] " +
                "[--node-dir DIR]");
  process.exit(message ? 2 : 0);
}

function parseArgs(argv) {
  const args = {
    models: [], threads: 2, gpu: "cpu", prefill: 128, decode: 32, json: null,
    nodeDir: path.join(HERE, "..", "..", "build", "bench-peers", "node"),
  };
  for (let i = 0; i < argv.length; ++i) {
    const flag = argv[i];
    if (flag === "-h" || flag === "--help") usage();
    const value = argv[i + 1];
    if (value === undefined) usage(`${flag} needs a value`);
    ++i;
    const count = () => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) usage(`${flag} wants a positive integer, not ${value}`);
      return n;
    };
    if (flag === "--model") args.models.push(...value.split(",").filter((m) => m !== ""));
    else if (flag === "--threads") args.threads = count();
    else if (flag === "--prefill") args.prefill = count();
    else if (flag === "--decode") args.decode = count();
    else if (flag === "--json") args.json = value;
    else if (flag === "--node-dir") args.nodeDir = value;
    else if (flag === "--gpu") {
      if (value !== "cpu" && value !== "vulkan") usage(`--gpu is cpu or vulkan, not ${value}`);
      args.gpu = value;
    } else usage(`unknown option ${flag}`);
  }
  if (args.models.length === 0) usage("no --model given");
  return args;
}

// "llm_<kind>_q4_0" from a file name holding Q4_0 (or Q8_0, ...); the type part lower-cased.
function caseName(kind, file) {
  const found = path.basename(file).match(/(?:^|[-_.])(Q\d+_[0-9A-Z]+|F16|BF16|F32)(?=[-_.])/i);
  return `llm_${kind}_${found ? found[1].toLowerCase() : "unknown"}`;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

// WARMUPS untimed calls of once(), then the median of RUNS; once() returns its own milliseconds
// (what it does before its clock starts, clearing the sequence, is not counted).
async function measure(once) {
  for (let i = 0; i < WARMUPS; ++i) await once();
  const ms = [];
  for (let i = 0; i < RUNS; ++i) ms.push(await once());
  return { ms: median(ms), runs: ms };
}

function promptTokens(n, vocab) {
  return Array.from({ length: n }, (_, i) => 259 + ((i * 977) % (vocab - 259)));
}

// The vocabulary size from the file's metadata: <arch>.vocab_size, or the tokenizer's list.
function vocabSize(model) {
  const meta = model.fileInfo.metadata;
  const arch = meta?.general?.architecture;
  const n = meta?.[arch]?.vocab_size ?? meta?.tokenizer?.ggml?.tokens?.length;
  if (!Number.isInteger(n) || n <= 259) throw new Error(`no usable vocabulary size (${n})`);
  return n;
}

// Evaluates `tokens` and samples one token greedily from the last one's logits (the sampled
// token is returned, not added to the sequence). An end-of-generation token is returned like any
// other, so a run never ends early.
async function evaluateOne(sequence, tokens) {
  const it = sequence.evaluate(tokens, { temperature: 0, yieldEogToken: true });
  const { value, done } = await it.next();
  await it.return();
  if (done) throw new Error("the evaluation produced no token");
  return value;
}

// Feeds `first` and then each sampled token back, `steps` evaluations of one token each.
async function generate(sequence, first, steps) {
  const it = sequence.evaluate([first], { temperature: 0, yieldEogToken: true });
  let token = first;
  for (let t = 0; t < steps; ++t) {
    const { value, done } = await it.next();
    if (done) throw new Error(`generation stopped after ${t} of ${steps} tokens`);
    token = value;
  }
  await it.return();
  return token;
}

// Both measurements of one model file, each handed to emit() as it is done.
async function benchModel(llama, info, args, file, emit) {
  const gpu = args.gpu === "vulkan";
  let t0 = performance.now();
  const model = await llama.loadModel({ modelPath: file, gpuLayers: gpu ? "max" : 0 });
  const loadMs = performance.now() - t0;
  // gpuLayers "max" quietly becomes 0 where the backend has no device: refuse a CPU figure then.
  if (gpu && model.gpuLayers === 0) throw new Error("no layer was offloaded to the Vulkan device");
  const context = await model.createContext({
    contextSize: 512, batchSize: Math.max(512, args.prefill), sequences: 1,
    threads: { ideal: args.threads, min: args.threads },
  });
  const sequence = context.getSequence();
  const vocab = vocabSize(model);
  const base = {
    model: path.basename(file), unit: "tok/s", threads: args.threads, gpu: args.gpu, ...info,
    gpu_layers: model.gpuLayers, context_size: context.contextSize,
    batch_size: context.batchSize, flash_attention_option: context.flashAttention,
    threads_used: context.currentThreads, load_ms: loadMs,
  };

  const prefillTokens = promptTokens(args.prefill, vocab);
  const prefill = await measure(async () => {
    await sequence.clearHistory();
    const start = performance.now();
    await evaluateOne(sequence, prefillTokens);
    return performance.now() - start;
  });
  emit({ ...base, case: caseName("prefill", file), tokens: args.prefill,
         value: args.prefill / (prefill.ms / 1e3), ms: prefill.ms, runs_ms: prefill.runs });

  await sequence.clearHistory();
  t0 = performance.now();
  const first = await evaluateOne(sequence, promptTokens(PROMPT, vocab));
  const promptMs = performance.now() - t0;
  const decode = await measure(async () => {
    await sequence.eraseContextTokenRanges([{ start: PROMPT, end: sequence.nextTokenIndex }]);
    const start = performance.now();
    await generate(sequence, first, args.decode);
    return performance.now() - start;
  });
  emit({ ...base, case: caseName("decode", file), tokens: args.decode, prompt: PROMPT,
         prompt_ms: promptMs, value: args.decode / (decode.ms / 1e3), ms: decode.ms,
         runs_ms: decode.runs });

  await context.dispose();
  await model.dispose();
}

function fmt(v) {
  const a = Math.abs(v);
  return v.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 2);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const results = [];
  const writeJson = () => {
    if (args.json) fs.writeFileSync(args.json, JSON.stringify(results, null, 2) + "\n");
  };
  // An entry with "error" (the message's first line; value null) for each case of `files` not
  // measured.
  const failed = (files, message) => {
    message = message.split("\n")[0];
    for (const file of files)
      for (const kind of ["prefill", "decode"]) {
        const name = caseName(kind, file);
        if (!results.some((r) => r.model === path.basename(file) && r.case === name))
          results.push({ model: path.basename(file), case: name, value: null, unit: "tok/s",
                         threads: args.threads, gpu: args.gpu, error: message });
      }
    writeJson();
  };
  const unavailable = (message) => {
    console.error(`llama_peers: ${message}`);
    failed(args.models, message);
    return 2;
  };

  // The package resolved from --node-dir's own package.json, as `node` run there would.
  let nlc;
  try {
    const entry = createRequire(path.join(path.resolve(args.nodeDir), "package.json"))
      .resolve("node-llama-cpp");
    nlc = await import(pathToFileURL(entry).href);
  } catch (err) {
    return unavailable(`cannot load node-llama-cpp from ${args.nodeDir}: ${err.message}`);
  }

  // llama.cpp's Vulkan backend, left to choose, takes only discrete and integrated GPUs and
  // finds no device where lavapipe (a device of type CPU) is the only one ("ggml_vulkan: No
  // devices found.", every layer left on the CPU); GGML_VK_VISIBLE_DEVICES names devices by
  // their index, whatever their type. Unset, it is set to 0, the Vulkan loader's first device.
  if (args.gpu === "vulkan" && !process.env.GGML_VK_VISIBLE_DEVICES)
    process.env.GGML_VK_VISIBLE_DEVICES = "0";

  // Only the installed prebuilt binaries: never a build from source, never a download.
  let llama;
  try {
    llama = await nlc.getLlama({
      gpu: args.gpu === "vulkan" ? "vulkan" : false, build: "never", skipDownload: true,
      maxThreads: args.threads, logLevel: nlc.LlamaLogLevel.error, progressLogs: false,
    });
  } catch (err) {
    const devices = args.gpu === "vulkan"
      ? ` (GGML_VK_VISIBLE_DEVICES=${process.env.GGML_VK_VISIBLE_DEVICES})` : "";
    return unavailable(`no ${args.gpu} build of llama.cpp loads${devices}: ${err.message}`);
  }
  if ((args.gpu === "vulkan") !== (llama.gpu === "vulkan"))
    return unavailable(`asked for ${args.gpu}, got gpu ${llama.gpu}`);
  const devices = args.gpu === "vulkan" ? await llama.getGpuDeviceNames() : [];
  if (args.gpu === "vulkan" && devices.length === 0)
    return unavailable("llama.cpp's Vulkan backend found no device " +
                       `(GGML_VK_VISIBLE_DEVICES=${process.env.GGML_VK_VISIBLE_DEVICES})`);
  const info = {
    llama_cpp: llama.llamaCppRelease.release, node_llama_cpp: await nlc.getModuleVersion(),
    device: devices.join(", ") || "CPU",
  };
  console.log(`llama.cpp ${info.llama_cpp} (node-llama-cpp ${info.node_llama_cpp}, ` +
              `${llama.buildType}) on ${info.device}, ${args.threads} threads`);

  let status = 0;
  for (const file of args.models) {
    try {
      await benchModel(llama, info, args, file, (r) => {
        const label = r.case.includes("prefill") ? `pp${r.tokens}` : `tg${r.tokens}`;
        console.log(`${r.case.padEnd(18)} ${fmt(r.value).padStart(8)} tok/s  (${label}, ` +
                    `${r.ms.toFixed(1)} ms median of ${RUNS}, ${r.model}, ${r.gpu}, ` +
                    `${r.threads_used} threads)`);
        results.push(r);
        writeJson();
      });
    } catch (err) {
      console.error(`llama_peers: ${file}: ${err.stack ?? err}`);
      failed([file], String(err.message ?? err));
      status = 1;
    }
  }
  writeJson();
  await llama.dispose();
  return status;
}

process.exitCode = await main();
