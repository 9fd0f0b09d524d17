package export

import (
	"strings"
	"testing"
)

func TestParsePartitionBy(t *testing.T) {
	got, err := ParsePartitionBy("venue,date,hour,instrument")
	if err != nil || len(got) != 4 || got[0] != PartVenue || got[3] != PartInstrument {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "venue,venue", "hour", "venue,day", "date,,instrument"} {
		if _, err := ParsePartitionBy(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestHiveEscape(t *testing.T) {
	for in, want := range map[string]string{
		"BTC": "BTC", "PURR/USDC": "PURR%2FUSDC", "@107": "@107", "a=b": "a%3Db", "100%": "100%25", "": "__HIVE_DEFAULT_PARTITION__",
		"72936048731589292555781174533757608024096898681344338816447372274344589246891": "72936048731589292555781174533757608024096898681344338816447372274344589246891",
	} {
		if got := HiveEscape(in); got != want {
			t.Errorf("HiveEscape(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(HiveEscape(in), "/") {
			t.Errorf("%q escapes to a path", in)
		}
	}
}

func TestPartitionedRefusesEventsByInstrument(t *testing.T) {
	if _, err := NewPartitioned(nil, nil, TableEvents, FormatParquet, []PartitionField{PartVenue, PartInstrument}, 0); err == nil {
		t.Fatal("events table partitioned by instrument")
	}
}
