// Command fakereplay stands in for cmd/replay in TestPeersRun: it answers
// the two invocations benchrun peers makes, "run DATASET --json" and
// "export DATASET --table depth … --out -", with FAKE_FRAMES frames,
// FAKE_DIGEST as the digest and FAKE_ROWS CSV rows after a header; it
// appends "replay VERB" to FAKE_LOG.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if log := os.Getenv("FAKE_LOG"); log != "" && len(os.Args) > 1 {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, "replay "+os.Args[1])
			f.Close()
		}
	}
	frames, _ := strconv.Atoi(os.Getenv("FAKE_FRAMES"))
	switch {
	case len(os.Args) > 2 && os.Args[1] == "run" && os.Args[len(os.Args)-1] == "--json":
		time.Sleep(5 * time.Millisecond) // longer than the 1 ms it says it took
		fmt.Printf(`{"frames": %d, "wall_ns": 1000000, "digest": %q, "decode_errors": 0}`+"\n", frames, os.Getenv("FAKE_DIGEST"))
	case len(os.Args) > 2 && os.Args[1] == "export" && os.Args[len(os.Args)-1] == "-":
		rows, _ := strconv.Atoi(os.Getenv("FAKE_ROWS"))
		fmt.Println("exchange,symbol,timestamp")
		fmt.Print(strings.Repeat("polymarket,x,1\n", rows))
	default:
		fmt.Fprintf(os.Stderr, "fakereplay: unexpected arguments %q\n", os.Args[1:])
		os.Exit(2)
	}
}
