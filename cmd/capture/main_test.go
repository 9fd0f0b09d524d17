package main

import (
	"os"
	"testing"

	"github.com/tapedeck/tapedeck/internal/loopback"
)

// TestMain keeps every HTTP request of these tests on loopback: capture run
// defaults to the venues' public endpoints.
func TestMain(m *testing.M) {
	loopback.Guard()
	os.Exit(m.Run())
}
