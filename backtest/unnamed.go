package backtest

import (
	"maps"
	"slices"
)

// Unnamed returns the ids c names that the data of none of results named
// (Result.Names), so a caller can refuse a setting that silently changed
// nothing: the keys of FeeRates (instruments or markets) and of Resolutions
// (instruments), each sorted, and the Instruments (instruments or markets)
// in their order.
func (c *Config) Unnamed(results ...*Result) (fees, resolutions, instruments []string) {
	named := func(id string, markets bool) bool {
		for _, r := range results {
			if r.Names(id, markets) {
				return true
			}
		}
		return false
	}
	for _, id := range slices.Sorted(maps.Keys(c.FeeRates)) {
		if !named(id, true) {
			fees = append(fees, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.Resolutions)) {
		if !named(id, false) {
			resolutions = append(resolutions, id)
		}
	}
	for _, id := range c.Instruments {
		if !named(id, true) {
			instruments = append(instruments, id)
		}
	}
	return fees, resolutions, instruments
}
