package state

// DecodeBounds is the inverse of EncodeBounds.
func DecodeBounds(b []byte) (logStart, next int64, err error) {
	d := &dec{b: b, what: "bounds"}
	logStart, next = d.i64(), d.i64()
	if d.err == nil && (logStart < 0 || next < logStart) {
		d.fail("log start %d, next offset %d", logStart, next)
	}
	return logStart, next, d.done()
}
