// Package bench is tapedeck's performance suite and the tooling around it.
//
// The scenarios are ordinary Go benchmarks in this package's _test files
// (run them with go test -bench . ./bench), each normalized per unit: ns per
// frame, record, level or book state, MB/s of frame bytes, allocations per
// frame. Their inputs are the real frames under testdata/ and sessions of any
// size from the venues' deterministic generators (internal/samplegen);
// TAPEDECK_BENCH_FRAMES (EnvFrames) scales the generated inputs
// (DefaultFrames when unset, kept short for make bench).
//
// The package's exported code is what the runner (bench/cmd/benchrun) needs
// and what its tests check: parsing go test -bench output into a Report of
// per-scenario medians and 95th percentiles, the environment fingerprint
// that (with the runner's suite fingerprint) makes two reports comparable,
// and Gate, the regression check that compares paired rounds of a baseline
// and a current build and fails only when a slowdown's whole noise band
// clears the threshold; and MeasureReplay, which replay bench runs. Outside
// its tests it imports only the replayer: the generator, the recorder and
// the test exchange stay out of the replay binary.
//
// make bench-peers (scripts/bench-peers.sh, then benchrun peers) times
// tapedeck beside tardis-dev (npm tardis-dev@13.35.3 in bench/peers) on one
// generated 15-minute, 1.35 M-frame Polymarket recording, both its raw and its
// book modes, alternated round by round, each pass its own process. One run
// writes one PeersResult (bench/out/peers/peers.json: the machine and its load
// average, Go/node/tardis-dev versions, the recording's frame count and
// SHA-256, every pass's frames, wall and CPU time and frames/s, medians and
// same-run ratios), copies it to PeersFile (bench/RESULTS-peers.json,
// committed) and rewrites the bench-peers blocks of bench/RESULTS.md and
// README.md from it (RegeneratePeersDocs). make bench-peers-results does only
// that last step, from the committed JSON; TestCommittedPeersDocs fails when
// the committed docs are not what the committed JSON gives. make bench-results
// regenerates the rest of RESULTS.md from the suite's report and refills the
// tardis-dev block from the committed JSON; make bench-all-results runs both.
package bench
