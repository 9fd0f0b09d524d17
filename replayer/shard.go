package replayer

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Shard is the K-th of N parts of a job split by instrument (K counts from
// 1, as job arrays do): an instrument belongs to exactly one shard, chosen
// by a hash of its venue and id, so N processes given 1/N … N/N do the work
// of one between them, each on its own instruments, and the union of their
// outputs is the unsharded output. Records that name no instrument
// (connection-wide events) belong to shard 1. The zero Shard (N 0) is the
// whole job.
type Shard struct {
	K, N int
}

// ParseShard parses "K/N" (1 ≤ K ≤ N ≤ 65536); "" is the whole job.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	ks, ns, ok := strings.Cut(s, "/")
	k, err1 := strconv.Atoi(ks)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 1<<16 || k < 1 || k > n {
		return Shard{}, fmt.Errorf("%w: shard %q: want K/N with 1 <= K <= N (e.g. 1/4 … 4/4)", ErrOption, s)
	}
	return Shard{K: k, N: n}, nil
}

// String returns "K/N", or "" for the whole job.
func (s Shard) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Whole reports whether s is the whole job (no sharding, or 1/1).
func (s Shard) Whole() bool { return s.N <= 1 }

// ShardOf returns the shard (1..n) that owns instrument of venue.
func ShardOf(venue, instrument string, n int) int {
	if instrument == "" || n <= 1 {
		return 1
	}
	var buf [160]byte
	b := append(append(append(buf[:0], venue...), 0), instrument...)
	return int(xxhash.Sum64(b)%uint64(n)) + 1
}

// Owns reports whether instrument of venue belongs to s.
func (s Shard) Owns(venue, instrument string) bool {
	return s.Whole() || ShardOf(venue, instrument, s.N) == s.K
}
