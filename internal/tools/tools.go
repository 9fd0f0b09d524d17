//go:build tools

// Package tools pins benchstat, so `go run golang.org/x/perf/cmd/benchstat`
// compares benchmark runs at the version in go.mod.
package tools

import _ "golang.org/x/perf/cmd/benchstat"
