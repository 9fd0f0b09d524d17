package datasets

import (
	"encoding/json"
	"fmt"
)

// Kind says what a record holds. Readers skip kinds they do not know, so new
// kinds can be added without a format version change.
type Kind uint8

// Record kinds. Frame and Sent payloads are raw socket bytes; every other kind
// carries a JSON-encoded Control (except RESTResponse, whose payload is the
// raw HTTP body, and Note, whose payload is a Control with Text set).
const (
	KindFrame        Kind = 1  // a frame received from the venue, byte-identical
	KindSent         Kind = 2  // a frame we sent (subscribe, unsubscribe, ping)
	KindConnect      Kind = 3  // a connection opened (Control.URL)
	KindSubscribed   Kind = 4  // the venue acknowledged a subscription (Control.Text)
	KindDisconnect   Kind = 5  // a connection ended (Control.Code, Reason, Err)
	KindReconnect    Kind = 6  // a reconnect attempt begins (Control.Attempt, Control.Err)
	KindStall        Kind = 7  // no data for a while although the socket is up (Control.Instruments, FromNs, ToNs)
	KindGap          Kind = 8  // data known to be missing between FromNs and ToNs
	KindOverload     Kind = 9  // the writer queue overflowed: Control.Dropped frames between FromNs and ToNs
	KindWriteError   Kind = 10 // a write failed (Control.Err); recorded once the disk works again
	KindClockSync    Kind = 11 // a clock offset measurement (Control.OffsetNs)
	KindNote         Kind = 12 // an operator note (Control.Text)
	KindRESTResponse Kind = 13 // a REST response the session relied on (Control.URL is in the record's Meta)
	KindCleanClose   Kind = 14 // the recorder shut down cleanly (conn 0), or closed one connection cleanly (its conn; Control.Code, Reason)
	KindIntegrity    Kind = 15 // the live engine found a book wrong: Control.Instruments (one; for CheckRejected none or several), Reason (the check), Text (what was seen), Dropped (further findings it stands for)
	KindResubscribe  Kind = 16 // the recorder resubscribes Control.Instruments to get fresh snapshots: Reason (why), Attempt; the frames follow as KindSent
	KindLiveLag      Kind = 17 // the live engine skipped Control.Dropped records (FromNs..ToNs; kept in the recording) or restarted after a panic (Control.Err)
)

// Integrity checks named by a KindIntegrity record's Control.Reason (and by
// a KindResubscribe record healing what one found).
const (
	CheckHashMismatch = "hash_mismatch" // the venue's book hash differs from the hash of the rebuilt book
	CheckTopMismatch  = "top_mismatch"  // the venue's best bid/ask differ from the rebuilt book's after a batch
	CheckCrossed      = "crossed"       // the rebuilt book is still crossed after its batch
	CheckRejected     = "rejected"      // the live decoder rejected a frame carrying the instrument (Control.Err): its book is invalid until its next snapshot
	CheckStall        = "stall"         // the instrument was silent past its stall timeout (the KindStall record)
	CheckLiveLag      = "live_lag"      // the live engine fell behind and lost the book (KindLiveLag)
)

var kindNames = map[Kind]string{
	KindFrame: "frame", KindSent: "sent", KindConnect: "connect", KindSubscribed: "subscribed",
	KindDisconnect: "disconnect", KindReconnect: "reconnect", KindStall: "stall", KindGap: "gap",
	KindOverload: "overload", KindWriteError: "write_error", KindClockSync: "clock_sync",
	KindNote: "note", KindRESTResponse: "rest_response", KindCleanClose: "clean_close",
	KindIntegrity: "integrity", KindResubscribe: "resubscribe", KindLiveLag: "live_lag",
}

// String returns the kind's stable lower-case name ("frame", "disconnect", …).
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, bool) {
	for k, n := range kindNames {
		if n == s {
			return k, true
		}
	}
	return 0, false
}

// IsLoss reports whether records of this kind mean the books of the
// connection can no longer be trusted until the next snapshot.
func (k Kind) IsLoss() bool {
	switch k {
	case KindDisconnect, KindReconnect, KindStall, KindGap, KindOverload, KindWriteError:
		return true
	}
	return false
}

// IsControl reports the kinds other than frames, sent frames and REST
// bodies whose payload is a Control JSON: loss records and the rest.
func (k Kind) IsControl() bool {
	switch k {
	case KindFrame, KindSent, KindRESTResponse:
		return false
	}
	_, ok := kindNames[k]
	return ok
}

// Record flags.
const (
	FlagBinary   uint8 = 1 << 0 // the payload arrived as a binary WebSocket message
	FlagAssigned uint8 = 1 << 1 // receive times were assigned (import without times), not measured
)

// Record is one entry of a dataset. A reader's Record is borrowed until the
// next call to Next; Payload aliases the reader's buffer.
type Record struct {
	Kind  Kind
	Flags uint8
	Conn  uint32 // connection slot within the dataset; stable across reconnects of that slot
	Seq   uint64 // strictly increasing within a dataset; assigned by the Writer
	// WallNs is the receive time on the wall clock (ns since the Unix epoch),
	// MonoNs on the monotonic clock (ns since the dataset's MonoBase).
	WallNs  int64
	MonoNs  int64
	Payload []byte
}

// Control is the JSON payload of every non-frame record kind. Fields that do
// not apply to a kind are omitted.
type Control struct {
	URL         string   `json:"url,omitempty"`
	Code        int      `json:"code,omitempty"`   // WebSocket close code
	Reason      string   `json:"reason,omitempty"` // close reason
	Err         string   `json:"error,omitempty"`
	Attempt     int      `json:"attempt,omitempty"`
	Instruments []string `json:"instruments,omitempty"`
	Dropped     uint64   `json:"dropped,omitempty"`
	FromNs      int64    `json:"from_ns,omitempty"`
	ToNs        int64    `json:"to_ns,omitempty"`
	OffsetNs    int64    `json:"offset_ns,omitempty"`
	Text        string   `json:"text,omitempty"`
}

// EncodeControl returns c as a compact JSON payload.
func EncodeControl(c Control) []byte {
	b, err := json.Marshal(c)
	if err != nil { // only strings and integers: cannot fail
		panic(err)
	}
	return b
}

// DecodeControl parses a control payload.
func DecodeControl(p []byte) (Control, error) {
	var c Control
	if err := json.Unmarshal(p, &c); err != nil {
		return c, fmt.Errorf("datasets: control payload: %w", err)
	}
	return c, nil
}
