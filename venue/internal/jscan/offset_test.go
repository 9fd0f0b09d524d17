package jscan

import "testing"

func TestSetOffset(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`{"a":"xy","b":1}`))
	s.SetOffset(5)
	if v, err := s.String(); err != nil || string(v) != "xy" {
		t.Fatalf("String after SetOffset(5) = %q, %v", v, err)
	}
	s.SetOffset(-3)
	if s.Offset() != 0 {
		t.Fatalf("SetOffset(-3) left offset %d", s.Offset())
	}
	s.SetOffset(100)
	if s.Offset() != len(s.Bytes()) || !s.AtEnd() {
		t.Fatalf("SetOffset(100) left offset %d", s.Offset())
	}
}
