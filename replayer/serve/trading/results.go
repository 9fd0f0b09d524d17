package trading

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/tapedeck/tapedeck/columnar"
)

// WriteResults finishes the accounts (Results) and, for each in the order
// the accounts were opened, names its strategy "api:ID", prints "account ID"
// and its summary table (backtest.Summary.WriteTable) to w and, when dir is
// not empty, writes its tables (backtest.Result.WriteTables with f and o)
// into dir, or dir/ID when there are several accounts. It returns the
// number of accounts, and stops at the first write error. Call it after
// Run.
func (h *Hub) WriteResults(w io.Writer, dir string, f columnar.Format, o columnar.Options) (int, error) {
	ids, results := h.Results()
	for i, res := range results {
		res.Summary.Strategy = "api:" + ids[i]
		fmt.Fprintf(w, "account %s\n", ids[i])
		res.Summary.WriteTable(w)
		if dir == "" {
			continue
		}
		d := dir
		if len(results) > 1 {
			d = filepath.Join(dir, ids[i])
		}
		if err := res.WriteTables(d, f, o); err != nil {
			return len(results), err
		}
	}
	return len(results), nil
}
