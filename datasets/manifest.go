package datasets

// ManifestName is the file name of a dataset's manifest.
const ManifestName = "manifest.json"

// LockName is the file a Writer (and Repair) holds an exclusive lock on
// while it changes the dataset; it is removed when they finish.
const LockName = ".lock"

// Manifest describes a dataset. It is written when the dataset is created and
// rewritten (atomically) when it is closed or repaired.
type Manifest struct {
	FormatVersion int      `json:"format_version"`
	Venue         string   `json:"venue"`    // "polymarket" or "hyperliquid"
	Endpoint      string   `json:"endpoint"` // the WebSocket URL recorded
	Subscriptions []string `json:"subscriptions,omitempty"`
	Instruments   []string `json:"instruments,omitempty"`
	ToolVersion   string   `json:"tool_version,omitempty"`
	Host          string   `json:"host,omitempty"`
	// StartNs and EndNs are wall-clock ns of the first and last record; EndNs
	// is 0 while the dataset is open.
	StartNs int64 `json:"start_ns"`
	EndNs   int64 `json:"end_ns,omitempty"`
	// MonoBaseWallNs is the wall-clock time at monotonic 0: wall ≈ MonoBaseWallNs + MonoNs.
	MonoBaseWallNs int64 `json:"mono_base_wall_ns"`
	// ClockOffsetNs is a known offset of the local clock against a reference (0 if unknown).
	ClockOffsetNs int64 `json:"clock_offset_ns,omitempty"`
	// TimesAssigned is true when receive times were assigned at import, not measured.
	TimesAssigned bool `json:"times_assigned,omitempty"`
	// Source says where an imported dataset came from ("ndjson:FILE", …).
	Source string `json:"source,omitempty"`
	// Clean is true once the writer closed the dataset cleanly.
	Clean bool `json:"clean,omitempty"`
	// Recovered is true once Repair closed a dataset whose writer died: the
	// tail the crash tore is cut (and stands as a gap record), EndNs is set,
	// and damage in its last segment is no longer taken for a torn tail.
	Recovered bool `json:"recovered,omitempty"`
	// Repaired is true once Repair cut damage out of the dataset (each loss
	// stands as a gap record).
	Repaired bool `json:"repaired,omitempty"`
	// Notes is free text (for samples: which parts are real and which generated).
	Notes string `json:"notes,omitempty"`

	// unsummed is set by the reader when the manifest had no checksum
	// member: its fields cannot be checked (Verify reports it).
	unsummed bool
}
