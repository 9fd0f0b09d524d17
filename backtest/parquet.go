package backtest

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// WriteParquet writes orders.parquet, fills.parquet, equity.parquet and
// markouts.parquet into dir: the columns of WriteCSV, with times as
// timestamp[ns, UTC] and prices, sizes and money as exact decimal128 (one
// scale per column: the finest of the run's instruments; money at
// CashDecimals), as replayer/export writes its tables. Byte-identical for
// identical runs.
func (r *Result) WriteParquet(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var pd, sd uint8
	for _, sc := range r.Scales {
		pd, sd = max(pd, sc.PriceDecimals), max(sd, sc.SizeDecimals)
	}
	rescale := func(v int64, from, to uint8) int64 { return v * pow10(to-from) }
	px := func(id string, v int64) int64 { return rescale(v, r.Scales[id].PriceDecimals, pd) }
	sz := func(id string, v int64) int64 { return rescale(v, r.Scales[id].SizeDecimals, sd) }

	orders := newTable("order_id:i", "instrument:s", "venue:s", "side:s", "tif:s", "post_only:b", "reduce_only:b",
		"price:p", "size:z", "amount:p", "filled:z", "status:s", "reason:s", "submit_ts:t", "active_ts:t", "done_ts:t", "tag:s")
	for _, o := range r.Orders {
		orders.row(int64(o.ID), o.Instrument, o.Venue, o.Side.String(), o.TIF.String(), o.PostOnly, o.ReduceOnly,
			px(o.Instrument, o.Price), sz(o.Instrument, o.Size), px(o.Instrument, o.Amount), sz(o.Instrument, o.Filled),
			o.Status.String(), o.Reason, o.SubmitNs, o.ActiveNs, o.DoneNs, o.Tag)
	}
	fills := newTable("fill_seq:i", "order_id:i", "instrument:s", "venue:s", "side:s", "price:p", "size:z", "liquidity:s",
		"queue_ahead:z", "fee:m", "exchange_ts:t", "local_ts:t", "tag:s")
	for _, f := range r.Fills {
		fills.row(int64(f.Seq), int64(f.OrderID), f.Instrument, f.Venue, f.Side.String(), px(f.Instrument, f.Price),
			sz(f.Instrument, f.Size), f.Liquidity.String(), sz(f.Instrument, f.Queue), f.Fee, f.ExchangeNs, f.RecvNs, f.Tag)
	}
	equity := newTable("local_ts:t", "cash:m", "equity:m", "instrument:s", "position:z", "mark:p")
	for _, p := range r.Equity {
		equity.row(p.RecvNs, p.Cash, p.Equity, p.Instrument, sz(p.Instrument, p.Position), px(p.Instrument, p.Mid))
	}
	marks := newTable("fill_seq:i", "horizon_ns:i", "mid:p", "pnl_per_unit:p")
	for _, m := range r.Markouts {
		id := r.Fills[m.Fill-1].Instrument
		marks.row(int64(m.Fill), m.Horizon, px(id, m.Mid), px(id, m.PnL))
	}
	for _, t := range []struct {
		name string
		t    *table
	}{{"orders.parquet", orders}, {"fills.parquet", fills}, {"equity.parquet", equity}, {"markouts.parquet", marks}} {
		if err := t.t.write(filepath.Join(dir, t.name), pd, sd); err != nil {
			return fmt.Errorf("backtest: write %s: %w", t.name, err)
		}
	}
	return nil
}

// table holds rows column by column until write; a column spec is
// name:kind with kind i (int64), s (string), b (bool), t (time, ns),
// p (price), z (size), m (money).
type table struct {
	names []string
	kinds []byte
	vals  [][]any
}

func newTable(specs ...string) *table {
	t := &table{}
	for _, s := range specs {
		t.names = append(t.names, s[:len(s)-2])
		t.kinds = append(t.kinds, s[len(s)-1])
		t.vals = append(t.vals, nil)
	}
	return t
}

func (t *table) row(v ...any) {
	for i := range v {
		t.vals[i] = append(t.vals[i], v[i])
	}
}

func (t *table) write(path string, pd, sd uint8) error {
	mem := memory.DefaultAllocator
	fields := make([]arrow.Field, len(t.names))
	cols := make([]arrow.Array, len(t.names))
	for i, name := range t.names {
		var dt arrow.DataType
		switch t.kinds[i] {
		case 'i':
			dt = arrow.PrimitiveTypes.Int64
		case 's':
			dt = arrow.BinaryTypes.String
		case 'b':
			dt = arrow.FixedWidthTypes.Boolean
		case 't':
			dt = &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
		case 'p':
			dt = &arrow.Decimal128Type{Precision: 38, Scale: int32(pd)}
		case 'z':
			dt = &arrow.Decimal128Type{Precision: 38, Scale: int32(sd)}
		case 'm':
			dt = &arrow.Decimal128Type{Precision: 38, Scale: CashDecimals}
		}
		fields[i] = arrow.Field{Name: name, Type: dt, Nullable: t.kinds[i] == 't'}
		b := array.NewBuilder(mem, dt)
		for _, v := range t.vals[i] {
			switch bb := b.(type) {
			case *array.Int64Builder:
				bb.Append(v.(int64))
			case *array.StringBuilder:
				bb.Append(v.(string))
			case *array.BooleanBuilder:
				bb.Append(v.(bool))
			case *array.TimestampBuilder:
				if ns := v.(int64); ns != 0 {
					bb.Append(arrow.Timestamp(ns))
				} else {
					bb.AppendNull() // none: an order that never reached the exchange, an event with no exchange time
				}
			case *array.Decimal128Builder:
				bb.Append(decimal128.FromI64(v.(int64)))
			}
		}
		cols[i] = b.NewArray()
		b.Release()
	}
	sch := arrow.NewSchema(fields, nil)
	n := int64(0)
	if len(cols) > 0 {
		n = int64(cols[0].Len())
	}
	rec := array.NewRecord(sch, cols, n)
	defer rec.Release()
	for _, c := range cols {
		c.Release()
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithCreatedBy("tapedeck backtest"))
	w, err := pqarrow.NewFileWriter(sch, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		f.Close()
		return err
	}
	if err := w.Write(rec); err != nil {
		w.Close()
		return err
	}
	return w.Close() // closes f
}
