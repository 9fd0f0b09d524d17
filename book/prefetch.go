//go:build amd64 || arm64

package book

import "unsafe"

// prefetch asks the CPU to start fetching into this core's cache n cache
// lines from lines, the two from pair (which starts a line), and the line
// holding w for writing, and returns without waiting for them. It is a
// hint, not a memory access: it reads and writes nothing the program sees,
// so it may name memory another goroutine is writing (the race detector
// does not see it, and there is nothing for it to see).
//
//go:noescape
func prefetch(lines unsafe.Pointer, n int, pair, w unsafe.Pointer)
