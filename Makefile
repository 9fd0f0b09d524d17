# tapedeck — make test runs every test; make bench runs the benchmark suite.
GO ?= go
PKGS := ./...

.PHONY: test test-deps test-go vet bench bench-baseline bench-gate bench-results bench-peers bench-peers-results bench-all-results samples fmt export-shards

test: test-deps vet test-go

# Installs what the tests need beyond Go: DuckDB and Apache Arrow (npm, into
# tests/js/node_modules), Jupyter with pandas/matplotlib and Chromium for the
# browser tests (Debian packages), and the MinIO server the S3 tests run
# (built once from the Go module proxy).
test-deps:
	bash scripts/test-deps.sh

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# book's unpinned Load and Refresh copy is built only without the race
# detector (book/copy_optimistic.go): its tests run once more without it.
# TAPEDECK_REQUIRE_MINIO: an S3 test without the MinIO binary fails here
# (a plain go test skips it, saying so).
test-go:
	TAPEDECK_REQUIRE_MINIO=1 $(GO) test -race -count=1 -timeout 15m $(PKGS)
	$(GO) test -count=1 -run Publisher ./book/

fmt:
	gofmt -w $$(git ls-files '*.go')

# Benchmarks (never part of make test): the suite with medians and a JSON report
# in bench/out/, a baseline recorded on this machine, the paired regression
# gate against it, and bench/RESULTS.md regenerated.
bench:
	$(GO) run ./bench/cmd/benchrun run

bench-baseline:
	$(GO) run ./bench/cmd/benchrun baseline

bench-gate:
	$(GO) run ./bench/cmd/benchrun gate

bench-results:
	$(GO) run ./bench/cmd/benchrun results

# tapedeck beside tardis-dev (npm, installed into bench/peers/) on one generated 1.35 M-frame
# Polymarket recording, alternated, medians and ratios: writes bench/out/peers/peers.json, copies it
# to bench/RESULTS-peers.json and regenerates the bench-peers blocks of bench/RESULTS.md and
# README.md from it. ROUNDS=N (3), BOOKS=0, NOTE="conditions", PUBLISH=0 (only bench/out/peers/).
bench-peers:
	bash scripts/bench-peers.sh

# The bench-peers blocks of bench/RESULTS.md and README.md from the committed
# bench/RESULTS-peers.json, no run (CHECK=1: exit 3 if they differ instead).
bench-peers-results:
	$(GO) run ./bench/cmd/benchrun peers-results $(if $(filter 1,$(CHECK)),--check)

# The whole of bench/RESULTS.md and the README's tardis-dev table from one invocation: the suite,
# then the side by side with tardis-dev (which rewrites its blocks last).
bench-all-results:
	$(MAKE) bench-results
	$(MAKE) bench-peers

# Regenerates the shipped sample datasets (deterministic).
samples:
	$(GO) run ./cmd/samplegen --force

# The sharded-export recipe: SHARDS (4) `replay export --shard K/N` processes in parallel into one
# Hive-partitioned tree OUT (default /tmp/tapedeck-shards; a directory or s3://bucket/prefix) from
# DATASETS (the shipped samples); the last shard to finish writes _SUCCESS.
SHARDS ?= 4
OUT ?= /tmp/tapedeck-shards
DATASETS ?= datasets/samples/polymarket
export-shards:
	bash scripts/export-shards.sh $(SHARDS) $(OUT) $(DATASETS) -- --table depth --levels 10 --partition-by venue,date,instrument --force
