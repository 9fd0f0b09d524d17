// duckdb_check.mjs — reads tapedeck Parquet exports with DuckDB and prints what
// it sees as JSON, so the Go tests compare a real reader's values with ours.
//
// usage: node duckdb_check.mjs NAME=FILE.parquet... [--asof NAME=T1,T2,...] [--levels N]
//                              [--text COL]... NAME=FILE.csv...
//
// A .csv FILE is read with read_csv's type detection, except for the --text
// columns given just before it, read as VARCHAR (types={...}): what a user names
// for Polymarket's 77-digit token ids, which the detection takes for DOUBLE
// even quoted.
//
// For every NAME it prints the column names and DuckDB types, every row
// (getRowsJson: BIGINT and DECIMAL as strings, DOUBLE as JSON numbers, which
// round-trip exactly, timestamps as epoch_ns strings), and the file's
// key/value metadata. For --asof it also asks DuckDB for the book of every
// instrument as of each T: the last row with local_ts_ns <= T, in file order
// (what `replay books --at T` should print). With --join TRADES=QUOTES it
// runs an ASOF JOIN of each trade with the last quote of its instrument at
// or before it and prints trade and quote times and the quote's prices.
import { DuckDBInstance } from '@duckdb/node-api';

const files = {};
const asof = {};
const joins = [];
const text = {};
let textCols = [];
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--text') {
    textCols = [...textCols, args[++i]];
    continue;
  }
  if (a === '--join') {
    joins.push(args[++i].split('='));
    continue;
  }
  if (a === '--asof') {
    const [name, list] = args[++i].split('=');
    asof[name] = list.split(',').filter((s) => s !== '');
    continue;
  }
  const eq = a.indexOf('=');
  if (eq < 0) {
    console.error(`duckdb_check: argument ${a}: want NAME=FILE`);
    process.exit(2);
  }
  files[a.slice(0, eq)] = a.slice(eq + 1);
  text[a.slice(0, eq)] = textCols;
  textCols = [];
}

const quote = (s) => `'${s.replaceAll("'", "''")}'`;
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
// One thread keeps row order equal to file order for the window queries.
await conn.run('SET threads = 1');

const out = { duckdb_version: '', tables: {} };
out.duckdb_version = (await conn.runAndReadAll('SELECT version()')).getRowsJson()[0][0];
for (const [name, file] of Object.entries(files)) {
  const csv = file.endsWith('.csv');
  const types = text[name].map((c) => `${quote(c)}: 'VARCHAR'`).join(', ');
  const src = !csv ? `read_parquet(${quote(file)})`
    : types === '' ? `read_csv(${quote(file)})` : `read_csv(${quote(file)}, types={${types}})`;
  const desc = (await conn.runAndReadAll(`DESCRIBE SELECT * FROM ${src}`)).getRowsJson();
  const tsCols = desc.filter(([, ty]) => String(ty).startsWith('TIMESTAMP')).map(([n]) => n);
  // Timestamps as epoch_ns: the rows compare as integers with other readers.
  const sel = tsCols.length === 0 ? '*'
    : `* REPLACE (${tsCols.map((n) => `epoch_ns("${n}")::VARCHAR AS "${n}"`).join(', ')})`;
  const all = await conn.runAndReadAll(`SELECT ${sel} FROM ${src}`);
  const kv = csv ? { getRowsJson: () => [] } : await conn.runAndReadAll(
    `SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${quote(file)}) ORDER BY key`);
  const t = {
    columns: all.columnNames(),
    types: desc.map(([, ty]) => String(ty)),
    rows: all.getRowsJson(),
    kv: Object.fromEntries(kv.getRowsJson().map(([k, v]) => [k, v])),
    count: Number((await conn.runAndReadAll(`SELECT count(*) FROM ${src}`)).getRowsJson()[0][0]),
  };
  if (asof[name]) {
    t.asof = {};
    for (const ts of asof[name]) {
      const r = await conn.runAndReadAll(
        `SELECT ${sel.replace('*', '* EXCLUDE (rn)')} FROM (SELECT *, row_number() OVER () AS rn FROM ${src})
         WHERE epoch_ns(local_ts_ns) <= ${BigInt(ts)}
         QUALIFY row_number() OVER (PARTITION BY instrument ORDER BY local_ts_ns DESC, rn DESC) = 1
         ORDER BY venue, instrument`);
      t.asof[ts] = { columns: r.columnNames(), rows: r.getRowsJson() };
    }
  }
  out.tables[name] = t;
}
out.joins = {};
for (const [trades, quotes] of joins) {
  const r = await conn.runAndReadAll(
    `SELECT epoch_ns(t.local_ts_ns)::VARCHAR AS trade_ns, t.instrument, epoch_ns(q.local_ts_ns)::VARCHAR AS quote_ns,
            q.bid_price, q.ask_price
     FROM read_parquet(${quote(files[trades])}) t
     ASOF LEFT JOIN read_parquet(${quote(files[quotes])}) q
       ON t.instrument = q.instrument AND t.local_ts_ns >= q.local_ts_ns
     ORDER BY t.local_ts_ns, t.instrument`);
  out.joins[`${trades}=${quotes}`] = { columns: r.columnNames(), rows: r.getRowsJson() };
}
conn.closeSync();
instance.closeSync();
process.stdout.write(JSON.stringify(out));
