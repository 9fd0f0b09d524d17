# tapedeck — make test runs every test; make bench runs the benchmark suite.
GO ?= go
PKGS := ./...

.PHONY: test test-deps test-go vet bench bench-baseline bench-gate fmt

test: test-deps vet test-go

# Installs what the tests need beyond Go: DuckDB and Apache Arrow (npm, into
# tests/js/node_modules) and Jupyter with pandas/matplotlib (Debian packages).
test-deps:
	bash scripts/test-deps.sh

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

test-go:
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')
