package polymarket

import (
	"errors"
	"strings"
	"testing"
)

func TestBooksRequest(t *testing.T) {
	if got, want := string(booksRequest([]string{tokA, tokB})), `[{"token_id":"`+tokA+`"},{"token_id":"`+tokB+`"}]`; got != want {
		t.Errorf("booksRequest\n got %s\nwant %s", got, want)
	}
	if got := string(booksRequest(nil)); got != "[]" {
		t.Errorf("booksRequest(nil) = %s", got)
	}
	if got := bookPath(tokA); got != "/book?token_id="+tokA {
		t.Errorf("bookPath = %s", got)
	}
}

// TestParseBookSummaries reads the two real REST summaries as GET /book
// bodies and as one POST /books body, and checks that the decoder, fed the
// same batch body, learns their hash fields: both hashes verify.
func TestParseBookSummaries(t *testing.T) {
	lines := readLines(t, "real/polypy_hash_vector_rest_book_summaries_2025-10.ndjson")
	const asset = "94022367472047775158269173293876979533288470167463650966689320774843018181757"
	one, err := ParseBookSummaries(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	want := BookSummary{Market: "0x2f1ab0ffaf465c4acd76b9a4a1f8980db26bfae7d248a6bb289350586028307e", AssetID: asset,
		Hash: "b9ee8c0d2cc9a436dc6e70692b6882b881434d7b", MinOrderSize: "5", TickSize: "0.01", Bids: 18, Asks: 16}
	if len(one) != 1 || one[0] != want {
		t.Fatalf("got %+v\nwant %+v", one, want)
	}
	batch := append(append(append([]byte{'['}, lines[0]...), ','), lines[1]...)
	batch = append(batch, ']')
	both, err := ParseBookSummaries(batch)
	if err != nil || len(both) != 2 || both[1].Hash != "b93c4a66e54f5d95852a5350c83631ae695ebf31" {
		t.Fatalf("batch: %+v, %v", both, err)
	}

	if err := NewDecoder().setInstrumentInfo(one[0].info()); err != nil {
		t.Errorf("Info: %v", err)
	}
	d := NewDecoder()
	if err := d.Decode(batch, 0, nil); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.HashChecked != 2 || st.HashOK != 2 {
		t.Errorf("decoding the batch body: %d hashes checked, %d ok; want 2, 2", st.HashChecked, st.HashOK)
	}
}

func TestParseBookSummariesErrors(t *testing.T) {
	full := `{"market":"0x1","asset_id":"` + tokA + `","bids":[],"asks":[],"min_order_size":"5","tick_size":"0.01","neg_risk":true}`
	for _, tc := range []struct {
		name, body, want string
	}{
		{"not json", `<html>502</html>`, "invalid character"},
		{"error object", `{"error":"No orderbook exists for the requested token id"}`, `asset_id ""`},
		{"no neg_risk", strings.Replace(full, `,"neg_risk":true`, "", 1), "element 0 (" + tokA + "): neg_risk: polymarket: missing field"},
		{"no min_order_size", strings.Replace(full, `"min_order_size":"5",`, "", 1), "min_order_size: polymarket: missing field"},
		{"bad asset in batch", "[" + full + "," + strings.Replace(full, tokA, "0xabc", 1) + "]", `element 1: asset_id "0xabc"`},
		{"wrong type", `[{"asset_id":5}]`, "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBookSummaries([]byte(tc.body))
			if !errors.Is(err, ErrBookSummary) || !strings.Contains(err.Error(), tc.want) || got != nil {
				t.Errorf("got %v, %v; want ErrBookSummary naming %q", got, err, tc.want)
			}
		})
	}
	got, err := ParseBookSummaries([]byte(" [] "))
	if err != nil || len(got) != 0 {
		t.Errorf("empty batch: %v, %v", got, err)
	}
}
