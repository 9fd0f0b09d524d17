package jscan

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestSkipAgreesWithEncodingJSON(t *testing.T) {
	cases := []struct {
		name string
		in   string
	}{
		{"object", `{"a":1,"b":[true,false,null],"c":{"d":"e\"f"}}`},
		{"spaces", ` { "a" : [ 1 , 2.5e-3 , -7 ] } `},
		{"array", `[{"event_type":"book"},{"x":"\u00e9"}]`},
		{"empty", `{}`},
		{"emptyarr", `[]`},
		{"bad-trailing-comma", `[1,2,]`},
		{"bad-key", `{a:1}`},
		{"bad-colon", `{"a" 1}`},
		{"bad-number", `[1.]`},
		{"bad-exp", `[1e]`},
		{"truncated", `{"a":[1,2`},
		{"truncated-string", `{"a":"abc`},
		{"bad-escape", `["\q"]`},
		{"control-char", "[\"a\x01\"]"},
		{"bare-word", `[nul]`},
		{"missing-comma", `{"a":1 "b":2}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s Scanner
			s.Reset([]byte(c.in))
			_, err := s.Skip()
			if err == nil && !s.AtEnd() {
				err = s.Errorf("trailing data")
			}
			want := json.Valid([]byte(c.in))
			if (err == nil) != want {
				t.Fatalf("Skip(%q) err=%v, encoding/json valid=%v", c.in, err, want)
			}
		})
	}
}

func TestObjectWalk(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`{"price": "0.48", "ts":1761179949036, "n":null}`))
	if err := s.BeginObject(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for first := true; ; first = false {
		k, ok, err := s.NextKey(first)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if s.IsNull() {
			got[string(k)] = "null"
			continue
		}
		v, err := s.StringOrNumber()
		if err != nil {
			t.Fatal(err)
		}
		got[string(k)] = string(v)
	}
	want := map[string]string{"price": "0.48", "ts": "1761179949036", "n": "null"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if !s.AtEnd() {
		t.Error("not at end")
	}
}

func TestIntRejects(t *testing.T) {
	for _, in := range []string{`-1`, `"12a"`, `1.5`, `1234567890123456789`, `""`} {
		var s Scanner
		s.Reset([]byte(in))
		if v, err := s.Int(); err == nil {
			t.Errorf("Int(%s) = %d, want error", in, v)
		}
	}
	var s Scanner
	s.Reset([]byte(`"1790658661234"`))
	if v, err := s.Int(); err != nil || v != 1790658661234 {
		t.Errorf("Int = %d, %v", v, err)
	}
}

func TestDepthLimit(t *testing.T) {
	deep := make([]byte, 0, 2*(MaxDepth+5))
	for i := 0; i < MaxDepth+5; i++ {
		deep = append(deep, '[')
	}
	for i := 0; i < MaxDepth+5; i++ {
		deep = append(deep, ']')
	}
	var s Scanner
	s.Reset(deep)
	if _, err := s.Skip(); err == nil {
		t.Fatal("want depth error")
	}
}

func TestSkipAllocs(t *testing.T) {
	in := []byte(`[{"event_type":"book","bids":[{"price":"0.48","size":"100"}],"t":1}]`)
	var s Scanner
	allocs := testing.AllocsPerRun(100, func() {
		s.Reset(in)
		if _, err := s.Skip(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Skip allocates %v per run", allocs)
	}
}

func FuzzSkip(f *testing.F) {
	f.Add([]byte(`{"a":[1,"x",{"b":null}]}`))
	f.Add([]byte(`[{"event_type":"price_change","price_changes":[]}]`))
	f.Add([]byte(`PONG`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Scanner
		s.Reset(b)
		_, err := s.Skip()
		ok := err == nil && s.AtEnd()
		var se *SyntaxError
		tooDeep := errors.As(err, &se) && se.Msg == "nesting too deep"
		if ok != json.Valid(b) && !tooDeep {
			t.Fatalf("scanner ok=%v, encoding/json valid=%v for %q (err %v)", ok, !ok, b, err)
		}
	})
}

func TestAppendStringRoundTrips(t *testing.T) {
	for _, s := range []string{"", "BTC", "xyz:SP500", `a"b\c`, "tab\there", "\x00\x1f", "PURR/USDC", "é"} {
		got := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != s {
			t.Errorf("AppendString(%q) = %s, decodes to %q, %v", s, got, back, err)
		}
	}
}
