// Package datasets owns the on-disk format of tapedeck recordings: a directory
// holding a manifest and numbered segment files of independently decodable,
// checksummed zstd blocks of records, plus a sidecar index per segment.
//
// It moves opaque payloads: what a frame means belongs to the venue packages.
// Writer appends records (safe for concurrent use) and seals a block at least
// every flush interval, so a killed process loses at most one interval.
// Reader iterates records in sequence order and seeks by wall-clock time using
// the index; WithReadAhead has it decompress the next blocks on a second
// goroutine (bounded, same records and damage reports). Verify, Repair,
// Inspect and Catalog check, fix and describe datasets. FORMAT.md in this
// directory documents every byte. Readers go through a Store: a local
// directory, or a URL of a registered scheme (package datasets/s3store
// registers s3://bucket/prefix).
package datasets
