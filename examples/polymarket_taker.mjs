// A short Polymarket bot written against the venue's official TypeScript
// client (@polymarket/clob-client) and nothing else: it derives its API key,
// follows TOKEN on the market channel, and on every EVERY-th book of it
// sends a FOK market order at the touch — a BUY of $AMOUNT at the best ask,
// then a SELL of SIZE shares at the best bid, alternately — MAX orders in
// all, printing each answer. Point it at the venue, or, unchanged, at a
// recording:
//
//   replay serve datasets/samples/polymarket --trading --deterministic --exit-at-end --out fills/ &
//   LOCKSTEP=1 node examples/polymarket_taker.mjs http://127.0.0.1:8765 ws://127.0.0.1:8765 0xPRIVATE_KEY \
//     3329029450753225654467003002742946394863848082479209219558348197750220015613 10 5 5 6
//
// (Node 20 needs --experimental-websocket.) The equivalent Go strategy, the
// same orders on the same books, is in replayer/serve/trading's tests:
// replay backtest of it gives the very fills this bot gets.
import { ClobClient, OrderType, Side } from "@polymarket/clob-client";
import { createWalletClient, custom } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const [httpUrl, wsBase, key, token, everyText = "10", amountText = "5", sizeText = "5", maxText = "6"] = process.argv.slice(2);
if (!httpUrl || !wsBase || !key || !token) {
  console.error("usage: polymarket_taker.mjs HTTP_URL WS_BASE PRIVATE_KEY TOKEN_ID [EVERY AMOUNT SIZE MAX]");
  process.exit(2);
}
// LOCKSTEP=1: acknowledge each market message to replay serve
// --deterministic, which then waits for exactly that (see replay serve
// --help) instead of a quiet window.
const lockstep = process.env.LOCKSTEP === "1";
const every = Number(everyText), amount = Number(amountText), size = Number(sizeText), maxOrders = Number(maxText);

// The wallet signs here; no RPC is ever called.
const wallet = createWalletClient({
  account: privateKeyToAccount(key),
  transport: custom({ request: async () => { throw new Error("no RPC here"); } }),
});
const creds = await new ClobClient(httpUrl, 137, wallet).createOrDeriveApiKey();
const client = new ClobClient(httpUrl, 137, wallet, creds);

let books = 0, sent = 0, done = 0, finish;
const finished = new Promise((r) => (finish = r));
// One book at a time, in the order they came.
let chain = Promise.resolve();

async function trade(n, buy, bestBid, bestAsk) {
  const order = buy
    ? { tokenID: token, side: Side.BUY, amount, price: bestAsk, orderType: OrderType.FOK }
    : { tokenID: token, side: Side.SELL, amount: size, price: bestBid, orderType: OrderType.FOK };
  try {
    const signed = await client.createMarketOrder(order);
    const r = await client.postOrder(signed, OrderType.FOK);
    console.log(JSON.stringify({ n, side: buy ? "BUY" : "SELL", price: order.price, status: r.status ?? null,
      taking: r.takingAmount ?? null, making: r.makingAmount ?? null, error: r.error ?? r.errorMsg ?? null }));
  } catch (err) {
    console.error(`order ${n}: ${err.message}`);
  }
  if (++done >= maxOrders) finish();
}

const market = new WebSocket(`${wsBase}/ws/market`);
market.onmessage = (m) => {
  if (typeof m.data !== "string" || m.data === "PONG") return;
  const v = JSON.parse(m.data);
  for (const e of Array.isArray(v) ? v : [v]) {
    if (e.event_type !== "book" || e.asset_id !== token) continue;
    books++;
    if (books % every !== 0 || sent >= maxOrders || !e.bids.length || !e.asks.length) continue;
    // The venue lists each side worst first: the touch is the last level.
    const bestBid = Number(e.bids[e.bids.length - 1].price);
    const bestAsk = Number(e.asks[e.asks.length - 1].price);
    const n = sent++;
    chain = chain.then(() => trade(n, n % 2 === 0, bestBid, bestAsk));
  }
  // replay serve --deterministic: this message is handled (its order
  // answered); a venue never sees this line (LOCKSTEP unset).
  if (lockstep) chain = chain.then(() => market.send("tapedeck:ack"));
};
await new Promise((r) => (market.onopen = r));
if (lockstep) market.send("tapedeck:lockstep");
market.send(JSON.stringify({ assets_ids: [token], type: "market" }));
await finished;
const trades = await client.getTrades({ asset_id: token });
console.error(`${sent} orders, ${trades.length} trades`);
process.exit(0);
