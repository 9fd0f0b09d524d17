// Package bench is tapedeck's performance suite and the tooling around it.
//
// The scenarios are ordinary Go benchmarks in this package's _test files
// (run them with go test -bench . ./bench), each normalized per unit: ns per
// frame, record, level or book state, MB/s of frame bytes, allocations per
// frame. Their inputs are the real frames under testdata/ and sessions of any
// size from the deterministic generator internal/samplegen; TAPEDECK_BENCH_FRAMES
// (EnvFrames) scales the generated inputs (DefaultFrames when unset, kept short
// for make bench).
//
// The package's exported code is what the runner (bench/cmd/benchrun) needs
// and what its tests check: parsing go test -bench output into a Report of
// per-scenario medians and 95th percentiles, the environment and suite
// fingerprints that make two reports comparable, and Gate, the regression
// check that compares paired rounds of a baseline and a current build and
// fails only when a slowdown's whole noise band clears the threshold.
package bench
