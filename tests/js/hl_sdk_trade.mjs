// A real Hyperliquid bot against `replay serve --trading`: the TypeScript SDK
// @nktkas/hyperliquid, unchanged, signs with a viem private-key account and
// trades through ExchangeClient (order GTC with a cloid, modify, cancel, IOC
// that takes the ask, updateLeverage), reads through InfoClient (meta,
// l2Book, openOrders, orderStatus, userFills, clearinghouseState) and
// receives its fills through SubscriptionClient.userFills.
//
// Usage: node hl_sdk_trade.mjs HTTP_URL WS_URL PRIVATE_KEY COIN
//
// Prints one JSON line per step ({"step": name, ...}) on stdout and exits 0;
// exits 1 on an SDK error or timeout, 2 on bad usage. The Go test
// replayer/serve/trading (TestHyperliquidSDKTrades) runs it and checks
// every step against the simulator's own state.
import { ExchangeClient, HttpTransport, InfoClient, SubscriptionClient, WebSocketTransport } from "@nktkas/hyperliquid";
import { privateKeyToAccount } from "viem/accounts";

const [httpUrl, wsUrl, key, coin] = process.argv.slice(2);
if (!httpUrl || !wsUrl || !key || !coin) {
  console.error("usage: hl_sdk_trade.mjs HTTP_URL WS_URL PRIVATE_KEY COIN");
  process.exit(2);
}
const timer = setTimeout(() => {
  console.error("timeout");
  process.exit(1);
}, 60_000);
const out = (step, v) => console.log(JSON.stringify({ step, ...v }));

const wallet = privateKeyToAccount(key);
const user = wallet.address.toLowerCase();
const http = new HttpTransport({ apiUrl: httpUrl, timeout: 30_000 });
const info = new InfoClient({ transport: http });
const exch = new ExchangeClient({ transport: http, wallet });
const ws = new WebSocketTransport({ url: wsUrl, reconnect: { maxRetries: 0 }, timeout: 30_000 });
const subs = new SubscriptionClient({ transport: ws });

try {
  const fills = [];
  let fillWaiter;
  await subs.userFills({ user }, (e) => {
    if (e.isSnapshot) return;
    fills.push(...e.fills);
    fillWaiter?.();
  });
  // The market data starts the shared replay: wait for a book.
  let gotBook;
  const firstBook = new Promise((r) => (gotBook = r));
  await subs.l2Book({ coin }, (b) => gotBook(b));
  await firstBook;

  const meta = await info.meta();
  const asset = meta.universe.findIndex((u) => u.name === coin);
  const szDecimals = meta.universe[asset].szDecimals;
  out("meta", { asset, szDecimals });

  const book = await info.l2Book({ coin });
  const bid = Number(book.levels[0][0].px);
  const ask = Number(book.levels[1][0].px);
  out("book", { bid, ask });
  const size = (Math.ceil((12 / bid) * 10 ** szDecimals) / 10 ** szDecimals).toFixed(szDecimals);
  // Five significant figures, as the venue wants.
  const sig5 = (x) => Number(x.toPrecision(5)).toString();

  await exch.updateLeverage({ asset, isCross: true, leverage: 5 });

  // A resting bid far below the book, with a client order id.
  const cloid = "0x00000000000000000000000000000001";
  const low = sig5(bid * 0.9);
  const placed = await exch.order({
    orders: [{ a: asset, b: true, p: low, s: size, r: false, t: { limit: { tif: "Gtc" } }, c: cloid }],
    grouping: "na",
  });
  const resting = placed.response.data.statuses[0].resting;
  out("rest", { oid: resting.oid, cloid: resting.cloid, px: low, sz: size });

  const open1 = await info.openOrders({ user });
  out("open", { orders: open1.map((o) => ({ oid: o.oid, px: o.limitPx, sz: o.sz, side: o.side, cloid: o.cloid ?? null })) });
  const st = await info.orderStatus({ user, oid: resting.oid });
  out("status", { status: st.status, orderStatus: st.order?.status });

  const lower = sig5(bid * 0.85);
  await exch.modify({ oid: resting.oid, order: { a: asset, b: true, p: lower, s: size, r: false, t: { limit: { tif: "Gtc" } }, c: cloid } });
  const open2 = await info.openOrders({ user });
  out("modified", { px: open2[0]?.limitPx, oid: open2[0]?.oid });

  const cancelled = await exch.cancel({ cancels: [{ a: asset, o: resting.oid }] });
  out("cancel", { status: cancelled.response.data.statuses[0] });
  // A second cancel of the same order is the venue's error, thrown by the SDK.
  try {
    await exch.cancel({ cancels: [{ a: asset, o: resting.oid }] });
    out("recancel", { error: null });
  } catch (e) {
    out("recancel", { error: String(e.message) });
  }

  // An IOC buy through the ask: taker fills, one per level it takes (the
  // book may have moved since it was read). Wait until the subscription has
  // told all of the filled size.
  const through = sig5(ask * 1.01);
  let iocFilled = null;
  let allTold;
  const waitFill = new Promise((r) => (allTold = r));
  fillWaiter = () => {
    if (!iocFilled) return;
    const told = fills.filter((f) => f.oid === iocFilled.oid).reduce((a, f) => a + Number(f.sz), 0);
    if (told >= Number(iocFilled.totalSz) - 1e-12) allTold();
  };
  const taken = await exch.order({
    orders: [{ a: asset, b: true, p: through, s: size, r: false, t: { limit: { tif: "Ioc" } } }],
    grouping: "na",
  });
  iocFilled = taken.response.data.statuses[0].filled;
  out("ioc", { filled: iocFilled });
  fillWaiter();
  await waitFill;
  out("wsfill", { fills: fills.map((f) => ({ oid: f.oid, px: f.px, sz: f.sz, side: f.side, crossed: f.crossed })) });

  const uf = await info.userFills({ user });
  out("fills", { fills: uf.map((f) => ({ oid: f.oid, px: f.px, sz: f.sz, side: f.side, dir: f.dir })) });
  const ch = await info.clearinghouseState({ user });
  out("clearinghouse", {
    positions: ch.assetPositions.map((p) => ({ coin: p.position.coin, szi: p.position.szi, lev: p.position.leverage })),
    accountValue: ch.marginSummary.accountValue,
  });

  // A bad order: a price off the five-significant-figure rule is refused
  // with the venue's text, and nothing rests.
  try {
    await exch.order({
      orders: [{ a: asset, b: true, p: (Math.floor(bid * 0.9) + 0.5).toString(), s: size, r: false, t: { limit: { tif: "Gtc" } } }],
      grouping: "na",
    });
    out("bad", { error: null });
  } catch (e) {
    out("bad", { error: String(e.message) });
  }
  const open3 = await info.openOrders({ user });
  out("end", { open: open3.length, user });
} catch (err) {
  console.error(`sdk error: ${err?.stack ?? err}`);
  process.exit(1);
}
clearTimeout(timer);
await ws.close?.();
process.exit(0);
