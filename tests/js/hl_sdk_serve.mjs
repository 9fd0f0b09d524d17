// A real Hyperliquid client against `replay serve`: the official-style
// TypeScript SDK @nktkas/hyperliquid connects with its WebSocketTransport,
// subscribes with SubscriptionClient.l2Book and waits for the recorded books.
//
// Usage: node [--experimental-websocket] hl_sdk_serve.mjs URL COIN N
//
// Prints each book the SDK delivered as one JSON line on stdout and exits 0
// once N books arrived; exits 1 on a timeout or SDK error, 2 on bad usage.
// The Go test replayer/serve_test.go (TestServeHyperliquidSDK) runs it and
// compares the books with the recorded frames.
import { SubscriptionClient, WebSocketTransport } from "@nktkas/hyperliquid";

const [url, coin, nText] = process.argv.slice(2);
const want = Number(nText);
if (!url || !coin || !(want > 0)) {
  console.error("usage: hl_sdk_serve.mjs URL COIN N");
  process.exit(2);
}
if (typeof globalThis.WebSocket !== "function") {
  console.error("this Node has no global WebSocket: use Node ≥ 22 or pass --experimental-websocket");
  process.exit(2);
}

const timer = setTimeout(() => {
  console.error(`timeout: received ${books.length} of ${want} books`);
  process.exit(1);
}, 30_000);

// No reconnect: a reconnect would resubscribe and restart the replay.
const transport = new WebSocketTransport({ url, reconnect: { maxRetries: 0 }, timeout: 10_000 });
const client = new SubscriptionClient({ transport });
const books = [];
let resolveAll;
const all = new Promise((resolve) => (resolveAll = resolve));

try {
  // Resolves once the server's subscriptionResponse matched the request.
  await client.l2Book({ coin }, (book) => {
    books.push(book);
    if (books.length >= want) resolveAll();
  });
  await all;
} catch (err) {
  console.error(`sdk error: ${err?.stack ?? err}`);
  process.exit(1);
}
clearTimeout(timer);
for (const b of books) console.log(JSON.stringify(b));
transport.close();
process.exit(0);
