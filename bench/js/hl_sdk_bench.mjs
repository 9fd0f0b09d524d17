// Runs the Hyperliquid TypeScript SDK (@nktkas/hyperliquid, installed in
// tests/js/node_modules) on the same l2Book frames as tapedeck's
// BenchmarkPeer/hl/l2book_20x2 and prints one JSON line of timings.
//
// The SDK keeps no book: its frame path is the socket "message" handler of
// HyperliquidEventTarget (JSON.parse, envelope check, a typed CustomEvent per
// channel). "dispatch" times that path with an empty l2Book listener;
// "levels" adds the least a user must do to hold the book: read every
// level's px and sz into numbers. tapedeck's figure decodes into exact
// fixed-point and replaces its book.
//
// Usage: node bench/js/hl_sdk_bench.mjs FRAME_FILE [ROUNDS]
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const sdkRoot = resolve(here, "../../tests/js/node_modules/@nktkas/hyperliquid");
const { HyperliquidEventTarget } = await import(resolve(sdkRoot, "esm/transport/websocket/_events.js"));
const sdkVersion = JSON.parse(readFileSync(resolve(sdkRoot, "package.json"), "utf8")).version;

const file = process.argv[2];
const rounds = Number(process.argv[3] ?? 5);
const frames = readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "");

function measure(withLevels) {
  const socket = new EventTarget();
  const target = new HyperliquidEventTarget(socket);
  let sink = 0;
  target.addEventListener("l2Book", (e) => {
    if (!withLevels) return;
    const book = e.detail;
    for (const side of book.levels) {
      for (const l of side) sink += Number(l.px) + Number(l.sz);
    }
  });
  const run = (n) => {
    for (let i = 0; i < n; i++) {
      socket.dispatchEvent(new MessageEvent("message", { data: frames[i % frames.length] }));
    }
  };
  run(20000); // JIT warm-up
  const samples = [];
  for (let r = 0; r < rounds; r++) {
    let n = 0;
    const t0 = process.hrtime.bigint();
    let t1 = t0;
    while (t1 - t0 < 200_000_000n) { // 200 ms, like the Go suite's -benchtime
      run(1000);
      n += 1000;
      t1 = process.hrtime.bigint();
    }
    samples.push(Number(t1 - t0) / n);
  }
  samples.sort((a, b) => a - b);
  if (sink === -1) console.error(sink); // keep the work observable
  return { median: samples[Math.floor(samples.length / 2)], samples };
}

const dispatch = measure(false);
const levels = measure(true);
console.log(JSON.stringify({
  sdk: "@nktkas/hyperliquid", sdk_version: sdkVersion, node: process.version,
  frames: frames.length, bytes: frames.reduce((s, f) => s + Buffer.byteLength(f), 0),
  dispatch_ns_per_frame: dispatch.median, levels_ns_per_frame: levels.median,
  dispatch_samples: dispatch.samples, levels_samples: levels.samples,
}));
