//go:build tools

// Package tools pins the module's dependencies before every package that uses
// them exists, and the benchstat command used by make bench.
package tools

import (
	_ "github.com/apache/arrow/go/v15/arrow/ipc"
	_ "github.com/apache/arrow/go/v15/parquet/pqarrow"
	_ "github.com/gorilla/websocket"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/schollz/progressbar/v3"
	_ "go.uber.org/goleak"
	_ "golang.org/x/perf/cmd/benchstat"
)
