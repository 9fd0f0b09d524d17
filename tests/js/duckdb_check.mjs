// duckdb_check.mjs — reads tapedeck Parquet exports with DuckDB and prints what
// it sees as JSON, so the Go tests compare a real reader's values with ours.
//
// usage: node duckdb_check.mjs NAME=FILE.parquet... [--asof NAME=T1,T2,...] [--levels N]
//
// For every NAME it prints the column names and DuckDB types, every row
// (getRowsJson: BIGINT and DECIMAL as strings, DOUBLE as JSON numbers, which
// round-trip exactly), and the file's key/value metadata. For --asof it also
// asks DuckDB for the book of every instrument as of each T: the last row with
// local_ts_ns <= T, in file order (what `replay books --at T` should print).
import { DuckDBInstance } from '@duckdb/node-api';

const files = {};
const asof = {};
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const a = args[i];
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
}

const quote = (s) => `'${s.replaceAll("'", "''")}'`;
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
// One thread keeps row order equal to file order for the window queries.
await conn.run('SET threads = 1');

const out = { duckdb_version: '', tables: {} };
out.duckdb_version = (await conn.runAndReadAll('SELECT version()')).getRowsJson()[0][0];
for (const [name, file] of Object.entries(files)) {
  const src = `read_parquet(${quote(file)})`;
  const all = await conn.runAndReadAll(`SELECT * FROM ${src}`);
  const kv = await conn.runAndReadAll(
    `SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${quote(file)}) ORDER BY key`);
  const t = {
    columns: all.columnNames(),
    types: all.columnTypes().map((ty) => ty.toString()),
    rows: all.getRowsJson(),
    kv: Object.fromEntries(kv.getRowsJson().map(([k, v]) => [k, v])),
    count: Number((await conn.runAndReadAll(`SELECT count(*) FROM ${src}`)).getRowsJson()[0][0]),
  };
  if (asof[name]) {
    t.asof = {};
    for (const ts of asof[name]) {
      const r = await conn.runAndReadAll(
        `SELECT * EXCLUDE (rn) FROM (SELECT *, row_number() OVER () AS rn FROM ${src})
         WHERE local_ts_ns <= ${BigInt(ts)}
         QUALIFY row_number() OVER (PARTITION BY instrument ORDER BY local_ts_ns DESC, rn DESC) = 1
         ORDER BY venue, instrument`);
      t.asof[ts] = { columns: r.columnNames(), rows: r.getRowsJson() };
    }
  }
  out.tables[name] = t;
}
conn.closeSync();
instance.closeSync();
process.stdout.write(JSON.stringify(out));
