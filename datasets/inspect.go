package datasets

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Info describes a dataset: what Inspect and Catalog return.
type Info struct {
	Dir      string   `json:"dir"`
	Manifest Manifest `json:"manifest"`
	Segments int      `json:"segments"`
	// DiskBytes is the size of every file in the dataset directory;
	// RawBytes the payload bytes of its records (the frames as received).
	DiskBytes int64  `json:"disk_bytes"`
	RawBytes  uint64 `json:"raw_bytes"`
	// Ratio is RawBytes / DiskBytes (0 when empty).
	Ratio   float64           `json:"compression_ratio"`
	Records uint64            `json:"records"`
	ByKind  map[string]uint64 `json:"records_by_kind"`
	// StartNs and EndNs are the wall-clock receive times of the first and
	// last record read (0 when there are none).
	StartNs int64      `json:"start_ns"`
	EndNs   int64      `json:"end_ns"`
	Conns   []ConnInfo `json:"connections"`
	// Losses lists every loss record (Kind.IsLoss) in order.
	Losses []Loss `json:"losses"`
	// Live lists the live engine's records (KindIntegrity, KindResubscribe,
	// KindLiveLag) in order: Detail is "reason: text", or the text.
	Live []Loss `json:"live"`
	// Truncated is the torn tail the reader stopped at, if any.
	Truncated *Truncation `json:"truncated,omitempty"`
	// Damage lists what the reader stepped over (each also a gap record
	// in Losses): run Verify and Repair.
	Damage []Damage `json:"damage,omitempty"`
	// Err is set when the dataset could not be read to the end (damage:
	// run Verify and Repair); the counts cover what came before.
	Err string `json:"error,omitempty"`
	// FromIndex means the Info comes from the manifest and the segment
	// indexes alone (Catalog of a remote store): no segment body was read,
	// so Records, StartNs and EndNs are the indexes' and RawBytes, ByKind,
	// Conns and Losses are not known.
	FromIndex bool `json:"from_index,omitempty"`
}

// ConnInfo summarises one connection slot.
type ConnInfo struct {
	Conn        uint32 `json:"conn"`
	URL         string `json:"url,omitempty"` // from its first connect record
	Records     uint64 `json:"records"`
	Frames      uint64 `json:"frames"`
	FrameBytes  uint64 `json:"frame_bytes"`
	FirstNs     int64  `json:"first_ns"`
	LastNs      int64  `json:"last_ns"`
	Connects    int    `json:"connects"`
	Disconnects int    `json:"disconnects"`
	Losses      int    `json:"losses"`
}

// Loss is one loss record: a disconnect, reconnect, stall, gap, overload or
// write error.
type Loss struct {
	Seq     uint64 `json:"seq"`
	Conn    uint32 `json:"conn"`
	Kind    string `json:"kind"`
	WallNs  int64  `json:"wall_ns"`
	FromNs  int64  `json:"from_ns,omitempty"`
	ToNs    int64  `json:"to_ns,omitempty"`
	Dropped uint64 `json:"dropped,omitempty"`
	Detail  string `json:"detail,omitempty"` // reason, error or text of the record
	// Instruments the record names (live engine records).
	Instruments []string `json:"instruments,omitempty"`
}

// MaxConns bounds the connection slots Inspect summarises (the replayer's
// default bound is the same): a crafted dataset with a slot per record
// would grow Info, and every report of it, with its record count. A real
// capture uses a few dozen.
const MaxConns = 4096

// Inspect reads the whole dataset in dir and summarises it. Damage does not
// make it fail: it is stepped over (Info.Damage, a gap record in Losses),
// and Info.Err says where reading stopped when it could not go on (also past
// MaxConns connection slots). The error is for a
// directory that is not a dataset or cannot be read.
func Inspect(dir string) (*Info, error) {
	r, err := Open(dir, WithAllKinds(), WithSkipDamaged())
	if err != nil {
		return nil, err
	}
	defer r.Close()
	info := &Info{Dir: dir, Manifest: r.Manifest(), Segments: len(r.segs), ByKind: map[string]uint64{},
		Conns: []ConnInfo{}, Losses: []Loss{}, Live: []Loss{}}
	ents, err := r.st.List()
	if err != nil {
		return nil, fmt.Errorf("datasets: inspect: %w", err)
	}
	for _, e := range ents {
		if e.Regular {
			info.DiskBytes += e.Size
		}
	}
	conns := map[uint32]*ConnInfo{}
	for r.Next() {
		rec := r.Record()
		info.Records++
		info.RawBytes += uint64(len(rec.Payload))
		info.ByKind[rec.Kind.String()]++
		if info.Records == 1 {
			info.StartNs = rec.WallNs
		}
		info.EndNs = rec.WallNs
		c := conns[rec.Conn]
		if c == nil {
			if len(conns) >= MaxConns {
				info.Records--
				info.Err = fmt.Sprintf("datasets: %s uses more than %d connection slots (conn %d at seq %d): not summarised further", dir, MaxConns, rec.Conn, rec.Seq)
				break
			}
			c = &ConnInfo{Conn: rec.Conn, FirstNs: rec.WallNs}
			conns[rec.Conn] = c
		}
		c.Records++
		c.LastNs = rec.WallNs
		switch {
		case rec.Kind == KindFrame:
			c.Frames++
			c.FrameBytes += uint64(len(rec.Payload))
		case rec.Kind == KindConnect:
			c.Connects++
			if c.URL == "" {
				if ctl, err := DecodeControl(rec.Payload); err == nil {
					c.URL = ctl.URL
				}
			}
		}
		if rec.Kind == KindDisconnect {
			c.Disconnects++
		}
		if k := rec.Kind; k == KindIntegrity || k == KindResubscribe || k == KindLiveLag {
			l := Loss{Seq: rec.Seq, Conn: rec.Conn, Kind: k.String(), WallNs: rec.WallNs}
			if ctl, err := DecodeControl(rec.Payload); err == nil {
				l.FromNs, l.ToNs, l.Dropped, l.Instruments = ctl.FromNs, ctl.ToNs, ctl.Dropped, ctl.Instruments
				l.Detail = firstNonEmpty(ctl.Text, ctl.Err)
				if ctl.Reason != "" && l.Detail != "" {
					l.Detail = ctl.Reason + ": " + l.Detail
				} else if ctl.Reason != "" {
					l.Detail = ctl.Reason
				}
			} else {
				l.Detail = "unreadable control payload"
			}
			info.Live = append(info.Live, l)
		}
		if rec.Kind.IsLoss() {
			c.Losses++
			l := Loss{Seq: rec.Seq, Conn: rec.Conn, Kind: rec.Kind.String(), WallNs: rec.WallNs}
			if ctl, err := DecodeControl(rec.Payload); err == nil {
				l.FromNs, l.ToNs, l.Dropped = ctl.FromNs, ctl.ToNs, ctl.Dropped
				l.Detail = firstNonEmpty(ctl.Reason, ctl.Err, ctl.Text)
			} else {
				l.Detail = "unreadable control payload"
			}
			info.Losses = append(info.Losses, l)
		}
	}
	if err := r.Err(); err != nil {
		info.Err = err.Error()
	}
	info.Truncated = r.Truncated()
	info.Damage = r.Damaged()
	for _, c := range conns {
		info.Conns = append(info.Conns, *c)
	}
	sort.Slice(info.Conns, func(i, j int) bool { return info.Conns[i].Conn < info.Conns[j].Conn })
	if info.DiskBytes > 0 {
		info.Ratio = float64(info.RawBytes) / float64(info.DiskBytes)
	}
	return info, nil
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// Catalog inspects every dataset under root (root itself included), in path
// order, without descending into a dataset. A dataset that cannot be
// inspected is listed with only Dir and Err set. The error is for a root that
// cannot be walked.
//
// A remote root (s3://bucket/prefix) is catalogued from the manifests and
// indexes alone, without reading segment bodies (Info.FromIndex).
func Catalog(root string) ([]*Info, error) {
	if IsRemote(root) {
		return catalogRemote(root)
	}
	var out []*Info
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			out = append(out, &Info{Dir: path, Err: err.Error()})
			return fs.SkipDir
		}
		if !d.IsDir() {
			return nil
		}
		if _, err := os.Stat(filepath.Join(path, ManifestName)); err != nil {
			return nil
		}
		info, err := Inspect(path)
		if err != nil {
			info = &Info{Dir: path, Err: err.Error()}
		}
		out = append(out, info)
		return fs.SkipDir
	})
	if err != nil {
		return nil, fmt.Errorf("datasets: catalog: %w", err)
	}
	return out, nil
}

func catalogRemote(root string) ([]*Info, error) {
	st, err := OpenStore(root)
	if err != nil {
		return nil, err
	}
	w, ok := st.(Walker)
	if !ok {
		return nil, fmt.Errorf("datasets: catalog: %s cannot list its datasets", root)
	}
	locs, err := w.Datasets()
	if err != nil {
		return nil, fmt.Errorf("datasets: catalog %s: %w", root, err)
	}
	out := make([]*Info, 0, len(locs))
	for _, loc := range locs {
		info, err := IndexInfo(loc)
		if err != nil {
			info = &Info{Dir: loc, Err: err.Error()}
		}
		out = append(out, info)
	}
	return out, nil
}

// IndexInfo describes the dataset at location from its manifest and segment
// indexes, reading no segment body (a missing or stale index is rebuilt from
// the block headers): Info.FromIndex is set.
func IndexInfo(location string) (*Info, error) {
	r, err := Open(location)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	info := &Info{Dir: location, Manifest: r.Manifest(), Segments: len(r.segs), ByKind: map[string]uint64{},
		Conns: []ConnInfo{}, Losses: []Loss{}, Live: []Loss{}, FromIndex: true}
	ents, err := r.st.List()
	if err != nil {
		return nil, fmt.Errorf("datasets: inspect: %w", err)
	}
	for _, e := range ents {
		info.DiskBytes += e.Size
	}
	for i := range r.segs {
		if err := r.loadIndex(i); err != nil {
			info.Err = err.Error()
			break
		}
		s := &r.segs[i]
		for _, e := range s.entries {
			if info.Records == 0 {
				info.StartNs = e.FirstWall
			}
			info.Records += uint64(e.Count)
			info.EndNs = e.LastWall
		}
		if s.damage != nil && info.Err == "" {
			info.Err = s.damage.Error()
		}
	}
	// As a reader's missingTail: a closed (or recovered) dataset ends at
	// the manifest's EndNs, so indexes that end before it mean its last
	// segment (or more) is missing.
	if m := info.Manifest; info.Err == "" && (m.Clean || m.Recovered) && m.EndNs != 0 && (info.Records == 0 || info.EndNs < m.EndNs) {
		num := uint32(1)
		if len(r.segs) > 0 {
			num = r.segs[len(r.segs)-1].num + 1
		}
		info.Err = (&CorruptionError{File: r.st.Join(segmentName(num)), Err: fmt.Errorf(
			"%w: the manifest's range ends at %d, the indexes at %d (segment %s or later is missing)",
			ErrMissingRecords, m.EndNs, info.EndNs, segmentName(num))}).Error()
	}
	return info, nil
}
