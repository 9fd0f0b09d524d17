package replayer

import (
	"fmt"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// RESTCheck is what CheckREST found: the REST responses a dataset recorded
// and those its venue decoder rejects (wholly, or some of their summaries).
//
// Hash verdicts are the venue's book hashes in those bodies (Polymarket REST
// summaries), each judged against the summary's own levels: ok, mismatch,
// or unverifiable (venue/polymarket NOTES.md, "Hash verdicts").
type RESTCheck struct {
	Bodies           uint64        `json:"bodies"`
	Rejected         uint64        `json:"rejected"`
	FirstErrors      []DecodeError `json:"first_errors,omitempty"` // the first 20
	HashOK           uint64        `json:"hash_ok"`
	HashMismatch     uint64        `json:"hash_mismatch"`
	HashUnverifiable uint64        `json:"hash_unverifiable"`
}

// CheckREST decodes every REST response of the dataset at dir with a fresh
// decoder of its venue (one per connection slot, REST bodies only: a body is
// judged on its own) and counts those it rejects. It reads past damaged
// blocks, which `replay verify` and `inspect` report; only a dataset that
// cannot be read at all is an error.
func CheckREST(dir string) (*RESTCheck, error) {
	m, err := datasets.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	dopts := venue.DecoderOptions{HashCheck: true}
	drv, err := venueDriver(m.Venue)
	if err != nil {
		return nil, fmt.Errorf("replayer: dataset %s: %w", dir, err)
	}
	rd, err := datasets.Open(dir, datasets.WithSkipDamaged())
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	decs := map[uint32]venue.Decoder{}
	var out venue.Frame
	c := &RESTCheck{}
	for rd.Next() {
		rec := rd.Record()
		if rec.Kind != datasets.KindRESTResponse {
			continue
		}
		c.Bodies++
		dec := decs[rec.Conn]
		if dec == nil {
			dec = drv.NewDecoder(dopts)
			decs[rec.Conn] = dec
		}
		if err := dec.Decode(rec.Payload, rec.WallNs, &out); err != nil {
			c.Rejected++
			if len(c.FirstErrors) < maxDecodeErrors {
				c.FirstErrors = append(c.FirstErrors, DecodeError{Conn: rec.Conn, Seq: rec.Seq, RecvNs: rec.WallNs, Err: err.Error()})
			}
		}
	}
	for _, dec := range decs {
		dec.Flush(&out)
		st := dec.Stats()
		c.HashOK += st.HashOK
		c.HashMismatch += st.HashMismatch
		c.HashUnverifiable += st.HashUnverifiable
	}
	return c, nil
}
