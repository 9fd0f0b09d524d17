// polars_check.mjs — reads tapedeck exports with Polars (nodejs-polars) and
// prints what it sees as JSON, so the Go tests compare a real reader's values
// with ours.
//
// usage: node polars_check.mjs [--schema trades|depth] [--text COL]... NAME=FILE...
//
// A .parquet FILE is read with readParquet. Datetime and Int64 columns are
// printed as their int64 value (a time's ns since the epoch) in decimal
// strings, with the Polars type (e.g. Datetime(ns)). A CSV FILE is read with readCSV and,
// after --schema, with the exact schema hftbacktest's Tardis converter
// (hftbacktest.data.utils.tardis.convert) passes to Polars' read_csv:
// trade_schema or depth_schema, which fail on any other column layout.
// Without --schema, the --text columns given just before a CSV FILE are read as
// String (dtypes): Polars' detection reads a 77-digit Polymarket token id as
// Int64, null. Per NAME: columns, types, rows.
import pl from 'nodejs-polars';

const schemas = {
  trades: {
    exchange: pl.Utf8, symbol: pl.Utf8, timestamp: pl.Int64, local_timestamp: pl.Int64,
    id: pl.Utf8, side: pl.Utf8, price: pl.Float64, amount: pl.Float64,
  },
  depth: {
    exchange: pl.Utf8, symbol: pl.Utf8, timestamp: pl.Int64, local_timestamp: pl.Int64,
    is_snapshot: pl.Bool, side: pl.Utf8, price: pl.Float64, amount: pl.Float64,
  },
};

const out = { tables: {} };
const args = process.argv.slice(2);
let schema = null;
let dtypes = {};
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--text') {
    dtypes = { ...dtypes, [args[++i]]: pl.Utf8 };
    continue;
  }
  if (args[i] === '--schema') {
    schema = schemas[args[++i]];
    if (!schema) {
      console.error(`polars_check: --schema ${args[i]}: want trades or depth`);
      process.exit(2);
    }
    continue;
  }
  const eq = args[i].indexOf('=');
  if (eq < 0) {
    console.error(`polars_check: argument ${args[i]}: want NAME=FILE`);
    process.exit(2);
  }
  const [name, file] = [args[i].slice(0, eq), args[i].slice(eq + 1)];
  let df;
  if (file.endsWith('.parquet')) {
    df = pl.readParquet(file);
  } else {
    df = pl.readCSV(file, schema ? { schema } : { dtypes });
  }
  const types = df.dtypes.map(String);
  const times = df.columns.filter((c, j) => types[j].includes('Datetime'));
  if (times.length > 0) {
    df = df.withColumns(...times.map((c) => pl.col(c).cast(pl.Int64).cast(pl.Utf8)));
  }
  // Int64 as decimal strings too: a JS number holds 53 bits, a ns time 61.
  const ints = df.columns.filter((c, j) => types[j].includes('Int64'));
  if (ints.length > 0) {
    df = df.withColumns(...ints.map((c) => pl.col(c).cast(pl.Utf8)));
  }
  out.tables[name] = { columns: df.columns, types, rows: df.rows() };
  dtypes = {};
}
process.stdout.write(JSON.stringify(out, (k, v) => (typeof v === 'bigint' ? v.toString() : v)));
