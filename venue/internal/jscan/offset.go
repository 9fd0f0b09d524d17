package jscan

// SetOffset moves the scanner to byte offset off of its text (clamped to the
// text). Decoders with a hand-written fast path for a hot shape scan the
// bytes themselves, then hand the position back, or rewind to re-read a value
// with the generic, error-reporting methods.
func (s *Scanner) SetOffset(off int) {
	s.pos = min(max(off, 0), len(s.buf))
}
