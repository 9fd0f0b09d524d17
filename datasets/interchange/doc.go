// Package interchange moves frames between tapedeck datasets and the line
// formats other tools use: NDJSON (one frame per line, or a wrapper object
// carrying the receive time), Tardis raw slices (`<ISO 8601 time> <frame>`,
// an empty line marking a disconnect) and hftbacktest collector files
// (`<receive ns> <frame>`).
//
// Importers stream: memory is bounded by the longest line (WithMaxLineSize),
// gzip and zstd input is detected from its magic bytes, and every error names
// the file and line. Frames are stored byte-identical; only the framing
// around them (time prefix, wrapper keys, line break) is parsed. Files are
// appended in order or merged by receive time. Exporters write the same
// forms back, so an import followed by an export yields the same frames and
// receive times.
//
// The NDJSON wrapper form holds one record per line and keeps everything a
// dataset record has but its sequence number:
//
//	{"recv_ns":1761179880071577415,"frame":{...}}          a frame that is one-line JSON, embedded byte for byte
//	{"recv_ns":…,"text":"PONG"}                            any other UTF-8 frame, as a JSON string
//	{"recv_ns":…,"b64":"…"}                                a frame that is not UTF-8, base64
//	{"recv_ns":…,"binary":true,"b64":"…"}                  a binary WebSocket message (FlagBinary)
//	{"recv_ns":…,"kind":"sent","text":"PING"}              another record kind, by its datasets.Kind name
//	{"recv_ns":…,"kind":"disconnect","control":{…}}        a control record
//
// with optional "conn" (connection slot, default 0) and "assigned":true
// (the time was assigned, not measured). recv_ns is the receive wall time in
// ns since the epoch; it always comes first on export. On import keys may
// come in any order, unknown keys are skipped, and tardis-machine's lines
// {"localTimestamp":"2019-06-01T00:00:00.0520580Z","message":{…}} are read
// as frames.
//
// The package reads and writes records through two small interfaces, Appender
// and Source, which *datasets.Writer and *datasets.Reader satisfy; it imports
// neither venue nor book.
package interchange
