package backtest

import (
	"reflect"
	"testing"
)

// TestRejections groups rejected orders by the venue's reason without the
// values that broke the rule, sorted, and ignores orders not rejected.
func TestRejections(t *testing.T) {
	r := &Result{Orders: []*Order{
		{Status: StatusRejected, Reason: "Post only order would have immediately matched, bbo was 0.5@0.51"},
		{Status: StatusRejected, Reason: "insufficient balance (need 12.5, have 3)"},
		{Status: StatusFilled, Reason: ""},
		{Status: StatusRejected, Reason: "insufficient balance (need 7, have 3)"},
		{Status: StatusRejected, Reason: "Post only order would have immediately matched, bbo was 0.4@0.6"},
	}}
	want := []ReasonCount{{"Post only order would have immediately matched", 2}, {"insufficient balance", 2}}
	if got := r.Rejections(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Rejections() = %v, want %v", got, want)
	}
	if got := (&Result{}).Rejections(); len(got) != 0 {
		t.Fatalf("no orders: %v", got)
	}
}
