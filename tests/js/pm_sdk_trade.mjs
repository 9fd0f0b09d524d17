// A real Polymarket bot against `replay serve --trading`: the official
// TypeScript client @polymarket/clob-client, unchanged, with a viem wallet,
// derives an API key (L1 headers), places a GTC BUY and a FOK market BUY
// (L2 headers, orders signed as the client builds them), reads open orders,
// the order and its trades, cancels, and a plain WebSocket on the user
// channel receives the order and trade events.
//
// Usage: node pm_sdk_trade.mjs HTTP_URL WS_BASE PRIVATE_KEY TOKEN_ID
//
// Prints one JSON line per step ({"step": name, ...}) and exits 0; exits 1
// on an error or timeout, 2 on bad usage. The Go test replayer/serve/trading
// (TestPolymarketSDKTrades) runs it.
import { ClobClient, Side, OrderType } from "@polymarket/clob-client";
import { createWalletClient, custom } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const [httpUrl, wsBase, key, token] = process.argv.slice(2);
if (!httpUrl || !wsBase || !key || !token) {
  console.error("usage: pm_sdk_trade.mjs HTTP_URL WS_BASE PRIVATE_KEY TOKEN_ID");
  process.exit(2);
}
const timer = setTimeout(() => {
  console.error("timeout");
  process.exit(1);
}, 90_000);
const out = (step, v) => console.log(JSON.stringify({ step, ...v }));
const fail = (what, v) => {
  console.error(`${what}: ${JSON.stringify(v)}`);
  process.exit(1);
};

// A local account: the wallet signs here, no RPC is ever called.
const wallet = createWalletClient({
  account: privateKeyToAccount(key),
  transport: custom({ request: async () => { throw new Error("no RPC here"); } }),
});

// The market channel starts the shared replay.
const market = new WebSocket(`${wsBase}/ws/market`);
let gotFrame;
const firstFrame = new Promise((r) => (gotFrame = r));
market.onmessage = () => gotFrame();
await new Promise((r) => (market.onopen = r));
// Lockstep, acknowledging nothing: the deterministic replay stays at the
// first frame except while an order, cancel or modify waits for the
// simulator, so every step sees the book the one before left.
market.send("tapedeck:lockstep");
market.send(JSON.stringify({ assets_ids: [token], type: "market" }));
await firstFrame;

const l1 = new ClobClient(httpUrl, 137, wallet);
const creds = await l1.createOrDeriveApiKey();
const again = await l1.deriveApiKey();
out("apikey", { key: creds.key, same: again.key === creds.key && again.secret === creds.secret });

const events = [];
let onEvent = () => {};
const user = new WebSocket(`${wsBase}/ws/user`);
user.onmessage = (m) => {
  const v = JSON.parse(m.data);
  for (const e of Array.isArray(v) ? v : [v]) events.push(e);
  onEvent();
};
await new Promise((r) => (user.onopen = r));
user.send(JSON.stringify({ auth: { apiKey: creds.key, secret: creds.secret, passphrase: creds.passphrase }, markets: [], type: "user" }));
const waitEvents = (pred) =>
  new Promise((r) => {
    onEvent = () => pred(events) && r();
    onEvent();
  });

const client = new ClobClient(httpUrl, 137, wallet, creds);
const tick = await client.getTickSize(token);
const book = await client.getOrderBook(token);
const bestBid = Number(book.bids[book.bids.length - 1].price);
const bestAsk = Number(book.asks[book.asks.length - 1].price);
out("book", { tick, bestBid, bestAsk, hash: book.hash, time: typeof (await client.getServerTime()) });

// A resting GTC BUY below the best bid.
const px = Number(Math.max(Number(tick), bestBid - 0.1).toFixed(4));
const order = await client.createOrder({ tokenID: token, price: px, side: Side.BUY, size: 10 });
const placed = await client.postOrder(order, OrderType.GTC);
out("gtc", { success: placed.success, status: placed.status, orderID: placed.orderID });
if (!placed.success) fail("gtc", placed);

const open = await client.getOpenOrders({ asset_id: token });
out("open", { ids: open.map((o) => o.id), price: open[0]?.price, size: open[0]?.original_size, status: open[0]?.status });
const one = await client.getOrder(placed.orderID);
out("order", { id: one.id, status: one.status, side: one.side });

const cancelled = await client.cancelOrder({ orderID: placed.orderID });
out("cancel", { canceled: cancelled.canceled, not: cancelled.not_canceled });
const open2 = await client.getOpenOrders({ asset_id: token });
out("open2", { n: open2.length });

// A FOK market BUY of $5 at the best ask: matched at once.
const worst = Number(Math.min(bestAsk + 0.05, 1 - Number(tick)).toFixed(4));
const fok = await client.createMarketOrder({ tokenID: token, amount: 5, side: Side.BUY, price: worst, orderType: OrderType.FOK });
const taken = await client.postOrder(fok, OrderType.FOK);
out("fok", { success: taken.success, status: taken.status, taking: taken.takingAmount, making: taken.makingAmount });
if (!taken.success) fail("fok", taken);

const trades = await client.getTrades({ asset_id: token });
out("trades", { n: trades.length, side: trades[0]?.side, price: trades[0]?.price, size: trades[0]?.size });

// A FOK far larger than the book: the venue's error, and nothing changes.
const huge = await client.createMarketOrder({ tokenID: token, amount: 900000, side: Side.BUY, price: bestAsk, orderType: OrderType.FOK });
const refused = await client.postOrder(huge, OrderType.FOK);
out("refused", { error: refused.error ?? null, status: refused.status ?? null });

const bal = await client.getBalanceAllowance({ asset_type: "COLLATERAL" });
out("balance", { balance: bal.balance });

await waitEvents((es) => es.some((e) => e.event_type === "trade") && es.some((e) => e.type === "CANCELLATION"));
out("user", { events: events.map((e) => ({ event_type: e.event_type, type: e.type, id: e.id, status: e.status ?? null })) });
clearTimeout(timer);
market.close();
user.close();
process.exit(0);
