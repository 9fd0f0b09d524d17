// duckdb_hive.mjs — reads a Hive-partitioned tapedeck export tree with DuckDB
// (hive_partitioning) and prints JSON, so the Go tests check what a real
// engine sees in the tree: its schema, the rows per partition, whether the
// tree's union equals a reference table row for row, and a filtered query.
//
// usage: node duckdb_hive.mjs ROOT [--ref FILE.parquet] [--where SQL]
//
// --where runs SELECT count(*) over the tree with that filter alone; the Go
// test first makes the files outside the filter unreadable, so the query
// succeeds only if DuckDB pruned them by their paths.
import { DuckDBInstance } from '@duckdb/node-api';

const args = process.argv.slice(2);
const root = args[0];
let ref = '', where = '';
for (let i = 1; i < args.length; i++) {
  if (args[i] === '--ref') ref = args[++i];
  else if (args[i] === '--where') where = args[++i];
}
const quote = (s) => `'${s.replaceAll("'", "''")}'`;
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const tree = `read_parquet(${quote(root + '/**/*.parquet')}, hive_partitioning = true)`;
const out = {};
const rows = async (q) => (await conn.runAndReadAll(q)).getRowsJson();
try {
  if (where !== '') {
    out.filtered = Number((await rows(`SELECT count(*) FROM ${tree} WHERE ${where}`))[0][0]);
  } else {
    out.schema = (await rows(`DESCRIBE SELECT * FROM ${tree}`)).map(([n, t]) => [n, String(t)]);
    out.partitions = await rows(`SELECT * EXCLUDE (n), n::VARCHAR FROM (SELECT venue, date::VARCHAR AS date, count(DISTINCT instrument) AS instruments, count(*) AS n FROM ${tree} GROUP BY ALL) ORDER BY ALL`);
    out.count = Number((await rows(`SELECT count(*) FROM ${tree}`))[0][0]);
    if (ref !== '') {
      const parts = out.schema.map(([n]) => n).filter((n) => n === 'date' || n === 'hour');
      const t = `(SELECT * EXCLUDE (${parts.join(', ')}) FROM ${tree})`;
      const r = `read_parquet(${quote(ref)})`;
      out.ref_count = Number((await rows(`SELECT count(*) FROM ${r}`))[0][0]);
      out.only_in_ref = Number((await rows(`SELECT count(*) FROM (SELECT * FROM ${r} EXCEPT ALL SELECT * FROM ${t})`))[0][0]);
      out.only_in_tree = Number((await rows(`SELECT count(*) FROM (SELECT * FROM ${t} EXCEPT ALL SELECT * FROM ${r})`))[0][0]);
    }
  }
} catch (e) {
  out.error = String(e.message || e);
}
conn.closeSync();
instance.closeSync();
process.stdout.write(JSON.stringify(out));
