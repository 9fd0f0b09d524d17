//go:build !linux

package latency

// threadCPU is not available here: the writer's CPU figures are not reported.
func threadCPU() int64 { return 0 }

// pinThread is not available here: the reader and the writer run where the
// system puts them.
func pinThread(k int) (restore func(), ok bool) { return func() {}, false }
