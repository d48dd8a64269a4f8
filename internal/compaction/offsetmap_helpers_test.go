package compaction

// bytes is the map's memory now.
func (m *offsetMap) bytes() int64 { return int64(len(m.slots)) * 8 }
