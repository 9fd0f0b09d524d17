// arrow_check.mjs — reads tapedeck Arrow IPC files with Apache Arrow JS and
// prints what it sees as JSON, for the Go tests to compare with our values.
//
// usage: node arrow_check.mjs NAME=FILE.arrow...
//
// Per NAME: the schema (field names, Arrow types, nullability), the schema
// metadata, the number of record batches and every row, with 64-bit integers
// as decimal strings, timestamps as their int64 value (ns since the epoch for
// tapedeck's timestamp[ns, UTC]) as a decimal string, and doubles as JSON
// numbers (exact round trip).
import { readFileSync } from 'node:fs';
import { tableFromIPC, Type } from 'apache-arrow';

// The stored int64 of a timestamp cell: get() would give float milliseconds.
function timestampAt(col, r) {
  for (const d of col.data) {
    if (r < d.length) {
      if (d.nullCount > 0 && !d.getValid(r)) return null;
      return d.values[d.offset + r].toString();
    }
    r -= d.length;
  }
  return null;
}

const out = { tables: {} };
for (const a of process.argv.slice(2)) {
  const eq = a.indexOf('=');
  if (eq < 0) {
    console.error(`arrow_check: argument ${a}: want NAME=FILE`);
    process.exit(2);
  }
  const table = tableFromIPC(readFileSync(a.slice(eq + 1)));
  const fields = table.schema.fields;
  const cols = fields.map((f) => table.getChild(f.name));
  const rows = [];
  for (let r = 0; r < table.numRows; r++) {
    rows.push(cols.map((c, i) => {
      if (fields[i].typeId === Type.Timestamp) return timestampAt(c, r);
      const v = c.get(r);
      if (v === null || v === undefined) return null;
      if (typeof v === 'bigint') return v.toString();
      return v;
    }));
  }
  out.tables[a.slice(0, eq)] = {
    columns: fields.map((f) => f.name),
    types: fields.map((f) => String(f.type)),
    nullable: fields.map((f) => f.nullable),
    metadata: Object.fromEntries(table.schema.metadata),
    batches: table.batches.length,
    rows,
  };
}
process.stdout.write(JSON.stringify(out));
