// A short Hyperliquid bot written against the venue's TypeScript SDK
// (@nktkas/hyperliquid) and nothing else: on every EVERY-th l2Book of COIN
// it sends an IOC order at the touch — a buy at the best ask, then a sell
// at the best bid, alternately — and prints each fill it is told of. Point
// it at the venue, or, unchanged, at a recording:
//
//   replay serve datasets/samples/hyperliquid --trading --deterministic --exit-at-end --out fills/ &
//   LOCKSTEP=1 node examples/hyperliquid_taker.mjs http://127.0.0.1:8765 ws://127.0.0.1:8765/ws 0xPRIVATE_KEY BTC 10 0.0002 6
//
// (Node 20 needs --experimental-websocket.) The equivalent Go strategy, the
// same orders on the same books, is in replayer/serve/trading's tests:
// replay backtest of it gives the very fills this bot gets.
import { ExchangeClient, HttpTransport, InfoClient, SubscriptionClient, WebSocketTransport } from "@nktkas/hyperliquid";
import { privateKeyToAccount } from "viem/accounts";

const [httpUrl, wsUrl, key, coin = "BTC", everyText = "10", size = "0.0002", maxText = "6"] = process.argv.slice(2);
const lockstep = process.env.LOCKSTEP === "1";
const every = Number(everyText), maxOrders = Number(maxText);
const wallet = privateKeyToAccount(key);
const user = wallet.address.toLowerCase();
const http = new HttpTransport({ apiUrl: httpUrl, timeout: 60_000 });
const info = new InfoClient({ transport: http });
const exch = new ExchangeClient({ transport: http, wallet });
const ws = new WebSocketTransport({ url: wsUrl, reconnect: { maxRetries: 0 }, timeout: 60_000 });
const subs = new SubscriptionClient({ transport: ws });

const meta = await info.meta();
const asset = meta.universe.findIndex((u) => u.name === coin);
let books = 0, sent = 0, finish;
const finished = new Promise((r) => (finish = r));

await subs.userFills({ user }, (e) => {
  if (e.isSnapshot) return;
  for (const f of e.fills) console.log(JSON.stringify({ oid: f.oid, side: f.side, px: f.px, sz: f.sz, time: f.time }));
});
// replay serve --deterministic: acknowledge each book once handled (its
// order answered), and the replay waits for exactly that (see replay serve
// --help); a venue never sees these lines (LOCKSTEP unset).
const ack = () => lockstep && ws.socket.send("tapedeck:ack");
if (lockstep) {
  await ws.ready();
  ws.socket.send("tapedeck:lockstep");
}
await subs.l2Book({ coin }, async (book) => {
  books++;
  if (books % every !== 0 || sent >= maxOrders) return ack();
  const buy = sent % 2 === 0;
  sent++;
  const px = buy ? book.levels[1][0].px : book.levels[0][0].px;
  try {
    await exch.order({ orders: [{ a: asset, b: buy, p: px, s: size, r: false, t: { limit: { tif: "Ioc" } } }], grouping: "na" });
  } catch (err) {
    console.error(`order ${sent}: ${err.message}`);
  }
  ack();
  if (sent >= maxOrders) finish();
});
await finished;
// Let the last fills arrive over the socket.
const fills = await info.userFills({ user });
console.error(`${sent} orders, ${fills.length} fills`);
process.exit(0);
