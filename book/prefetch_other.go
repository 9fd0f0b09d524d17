//go:build !amd64 && !arm64

package book

import "unsafe"

// prefetch does nothing where the package has no prefetch instructions for
// it (see prefetch.go).
func prefetch(lines unsafe.Pointer, n int, pair, w unsafe.Pointer) {}
