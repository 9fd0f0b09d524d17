package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestParseTime(t *testing.T) {
	const ms = 1761179883001
	start := int64(1_000_000_000_000_000_000)
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		// The pair: the same 13-digit number is the same moment in
		// capture import --start and replay --from.
		{in: "1761179883001", want: ms * 1e6},
		{in: "1761179883", want: 1761179883 * 1e9},
		{in: "1761179883001000", want: ms * 1e6},
		{in: "1761179883001000000", want: ms * 1e6},
		{in: "1761179883001ms", want: ms * 1e6},
		{in: "1761179883s", want: 1761179883 * 1e9},
		{in: "1761179883001000us", want: ms * 1e6},
		{in: "1761179883001000µs", want: ms * 1e6},
		{in: "42ns", want: 42},
		{in: "0", want: 0},
		{in: "2025-10-23T00:38:03.001Z", want: ms * 1e6},
		{in: "2025-10-23T02:38:03.001000001+02:00", want: ms*1e6 + 1},
		{in: "+90s", want: start + 90e9},
		{in: "+1h30m", want: start + int64(90*time.Minute)},
		{in: "17611798830", wantErr: "10 digits (s), 13 (ms), 16 (µs) or 19 (ns)"},
		{in: "5", wantErr: "10 digits"},
		{in: "1761179883001min", wantErr: `unknown unit "min"`},
		{in: "99999999999999999999ns", wantErr: "out of range"},
		{in: "9999999999999999s", wantErr: "out of range"},
		{in: "+soon", wantErr: "+DURATION"},
		{in: "+-1s", wantErr: "+DURATION"},
		{in: "yesterday", wantErr: "RFC 3339"},
		{in: "2025-10-23T00:38:03", wantErr: "RFC 3339"}, // no zone: refused, not guessed
		{in: "", wantErr: "RFC 3339"},
	}
	for _, tc := range tests {
		got, err := ParseTime(tc.in, start, true)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseTime(%q) = %d, %v; want error %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseTime("+1s", 0, false); err == nil || !strings.Contains(err.Error(), "needs a recording") {
		t.Errorf("relative time without a start: %v", err)
	}
}

func TestApplyConfig(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.String("config", "", "")
	name := fs.String("log-format", "text", "")
	size := fs.Int64("rotate-size", 1, "")
	d := fs.Duration("stall-timeout", time.Second, "")
	on := fs.Bool("rest-books", true, "")
	list := fs.StringSlice("instruments", nil, "")
	var opt OptionalDuration
	fs.Var(&opt, "instrument-stall-timeout", "")
	won := fs.String("venue", "", "")
	if err := fs.Parse([]string{"--venue", "hyperliquid"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "c.json")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := write(`{"log_format":"json","rotate_size":1048576,"stall_timeout":"7s","rest_books":false,
		"instruments":["BTC","ETH"],"instrument_stall_timeout":"0s","venue":"polymarket","queue_extra":1}`)
	if err := ApplyConfig(fs, p, "queue_extra"); err != nil {
		t.Fatal(err)
	}
	if *name != "json" || *size != 1<<20 || *d != 7*time.Second || *on || strings.Join(*list, ",") != "BTC,ETH" {
		t.Errorf("got %q %d %v %v %v", *name, *size, *d, *on, *list)
	}
	if v, ok := opt.Get(); !ok || v != 0 {
		t.Errorf("instrument_stall_timeout %v %v", v, ok)
	}
	if *won != "hyperliquid" {
		t.Errorf("the command line must win over the config, venue is %q", *won)
	}
	for cfg, want := range map[string]string{
		`{"queue":1}`:             `unknown key "queue" (known: instrument_stall_timeout, instruments, log_format, rest_books, rotate_size, stall_timeout, venue)`,
		`{"rotate_size":"big"}`:   "rotate_size",
		`{"stall_timeout":{}}`:    "stall_timeout",
		`{"log_format":["a"]}`:    "takes one value",
		`{"config":"other.json"}`: `unknown key "config"`,
		`not json`:                "invalid character",
	} {
		err := ApplyConfig(fs, write(cfg), "queue_extra")
		var fe *FlagError
		if err == nil || !strings.Contains(err.Error(), want) || !asFlagError(err, &fe) {
			t.Errorf("config %s: error %v, want a usage error with %q", cfg, err, want)
		}
	}
}

func asFlagError(err error, fe **FlagError) bool {
	e, ok := err.(*FlagError)
	*fe = e
	return ok
}

func TestOptionalDurationHasNoDefaultInHelp(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var o OptionalDuration
	fs.Var(&o, "instrument-stall-timeout", "replace a stalled connection")
	if u := fs.FlagUsages(); strings.Contains(u, "default") {
		t.Errorf("help shows a default: %s", u)
	}
}

func TestCheckHostPort(t *testing.T) {
	for _, tt := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:8765", true}, {":0", true}, {"[::1]:65535", true}, {"localhost:1", true},
		{"127.0.0.1", false}, {"127.0.0.1:http", false}, {"127.0.0.1:65536", false}, {"127.0.0.1:-1", false}, {"", false},
	} {
		if err := CheckHostPort(tt.addr); (err == nil) != tt.ok {
			t.Errorf("CheckHostPort(%q) = %v, want ok %v", tt.addr, err, tt.ok)
		}
	}
}
