//go:build !linux

package latency

// threadCPU is not available here: the writer's CPU figures are not reported.
func threadCPU() int64 { return 0 }
