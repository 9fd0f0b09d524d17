// nautilus_check.mjs — reads a NautilusTrader catalog written by
// `replay export --format nautilus` with DuckDB and prints what it sees as
// JSON, so the Go tests check the files against Nautilus's layout, schemas and
// metadata and rebuild the books from the deltas with a reader that is not ours.
//
// usage: node nautilus_check.mjs CATALOG_DIR
//
// For every .parquet file under CATALOG_DIR (its path relative to the
// directory, '/' separated) it prints the Parquet schema as DuckDB reads it
// from the footer (parquet_schema: name, physical type, type_length,
// logical and converted type, repetition), the columns and DuckDB types, the
// file's key/value metadata, and every row in file order: BLOB columns
// (FIXED_LEN_BYTE_ARRAY, BYTE_ARRAY without a logical type) as lower-case hex,
// UBIGINT as strings, UTINYINT as numbers.
import { DuckDBInstance } from '@duckdb/node-api';
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

const root = process.argv[2];
if (!root) {
  console.error('usage: node nautilus_check.mjs CATALOG_DIR');
  process.exit(2);
}
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      walk(p);
    } else if (name.endsWith('.parquet')) {
      files.push(p);
    }
  }
};
walk(root);

const quote = (s) => `'${s.replaceAll("'", "''")}'`;
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
// One thread keeps row order equal to file order.
await conn.run('SET threads = 1');
const out = { duckdb_version: '', files: {} };
out.duckdb_version = (await conn.runAndReadAll('SELECT version()')).getRowsJson()[0][0];
for (const file of files) {
  const src = `read_parquet(${quote(file)})`;
  const schema = (await conn.runAndReadAll(
    `SELECT name, type, type_length, logical_type, converted_type, repetition_type
     FROM parquet_schema(${quote(file)}) WHERE num_children IS NULL OR num_children = 0`)).getRowsJson();
  const desc = (await conn.runAndReadAll(`DESCRIBE SELECT * FROM ${src}`)).getRowsJson();
  const blobs = desc.filter(([, ty]) => String(ty) === 'BLOB').map(([n]) => n);
  const sel = blobs.length === 0 ? '*'
    : `* REPLACE (${blobs.map((n) => `lower(hex("${n}")) AS "${n}"`).join(', ')})`;
  const rows = (await conn.runAndReadAll(`SELECT ${sel} FROM ${src}`)).getRowsJson();
  const kv = (await conn.runAndReadAll(
    `SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${quote(file)}) ORDER BY key`)).getRowsJson();
  out.files[relative(root, file).split(sep).join('/')] = {
    schema: schema.map(([name, type, len, logical, converted, rep]) => ({ name, type, type_length: len, logical_type: logical, converted_type: converted, repetition: rep })),
    columns: desc.map(([n]) => n),
    types: desc.map(([, ty]) => String(ty)),
    kv: Object.fromEntries(kv.filter(([k]) => k !== 'ARROW:schema').map(([k, v]) => [k, v])),
    rows,
  };
}
conn.closeSync();
instance.closeSync();
process.stdout.write(JSON.stringify(out));
