// Package replayer reads tapedeck datasets in time order and drives every
// frame through the venue driver's decoder and L2 book (venue/registry) —
// the very decoder live capture runs on every frame it records (recorder's
// live engine takes it from the same driver) — calling subscribers keyed by
// (venue, instrument, channel) with each decoded event and a read-only view
// of the book after it.
//
// The package owns three things: the order in which records of several
// datasets are replayed (Merger), the pacing of that replay against the
// recorded schedule (Speed, Clock), and the engine that decodes, routes,
// isolates faulty subscribers and digests what it emitted (Replayer, Summary).
// What a record means on the wire lives in venue/* (found by name through
// venue/registry; this package imports no venue's own package); how it is
// stored lives in datasets. Serving a recording as the venue's WebSocket is
// package replayer/serve; writing tables, replayer/export.
//
// # Order
//
// Records are merged on (receive wall time, dataset index, sequence): the
// next record is always the head with the smallest WallNs, ties going to the
// lower dataset index (the position in the paths given to New). Records of one
// dataset are never reordered: they come in Seq order, the order in which the
// recorder received them, which is also their connection order. Because Seq
// is unique within a dataset, it breaks every remaining tie, so the order is
// total and the same on every machine. When a dataset's wall clock stepped
// backwards, its records still keep Seq order and the merge interleaves them
// by their heads.
//
// # Determinism and the digest
//
// The same datasets and options give the same sequence of subscriber calls
// and the same Summary.Digest. Speed, pauses and subscribers do not change
// the digest; the window, seeks and the order of the inputs do.
//
// The digest covers everything a replay emits: every subscriber-visible
// Event, whether or not anyone subscribed to it, and the top of the book
// after it. It is a stream of little-endian items hashed with XXH64 (seed 0),
// printed as "xxh64:" and 16 lowercase hex digits. A delivered record gives a
// record item followed by one event item per Event it produced (a loss
// record: one per instrument of its connection in sorted order, then the
// connection-wide one); a quote event's item is followed by a quote item.
// Values are the fixed-point integers at the dataset's scale; wall-clock
// measurements (throughput, lateness) never enter the digest.
//
//	record item, 32 bytes           event item, 72 bytes
//	off len                         off len
//	  0  1  'R'                       0  1  'E'
//	  1  1  datasets.Kind             1  1  Channel
//	  2  2  0                         2  1  venue.EventType (0: not a frame)
//	  4  4  dataset index             3  1  flags: 1 has book, 2 book valid,
//	  8  4  connection slot                  4 book crossed, 8 side ask,
//	 12  4  0                                16 has bid, 32 has ask
//	 16  8  Seq                       4  4  Count
//	 24  8  RecvNs                    8  8  XXH64 of the instrument id, 0 for ""
//	                                 16  8  ExchangeNs; not a frame: XXH64 of the payload
//	quote item, 32 bytes             24  8  Price
//	  0 32  BidPrice, BidSize,       32  8  Size
//	        AskPrice, AskSize        40 32  best bid price, size, best ask
//	                                        price, size of the book after the
//	                                        event (0: empty side or no book)
//
// A frame's record item is present even when it yields no events; events a
// decoder Flush yields at a loss or at the end follow their own record item
// (the loss record's, or the connection's last frame's).
package replayer
