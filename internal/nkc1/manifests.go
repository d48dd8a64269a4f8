package nkc1

import (
	"encoding/hex"
	"fmt"
)

// SectionManifests (optional, flagged FlagOptional) records, for each
// generation manifest the checkpoint's state depends on, its summary and
// the size and MD5 of its bytes (docs/formats/nkc1.md §4.12). A reader of
// the stream's listing compares a manifest's listed size and ETag (the MD5
// of a single-part object on S3, on file:// and mem://) with it, and needs
// to GET only a manifest that changed since the checkpoint was made: the
// health check of a restart then costs requests for the tail, not for the
// length of the log.
const SectionManifests uint16 = 11

// ManifestRef is one generation manifest a checkpoint records.
type ManifestRef struct {
	Gen  int64  `json:"gen"`
	Kind string `json:"kind"` // COMMITTED or TOPIC_COMPACTED
	Base int64  `json:"base"`
	End  int64  `json:"end"`
	// Size and MD5 (hex) of the manifest's bytes.
	Size int64  `json:"size"`
	MD5  string `json:"md5"`
}

// The kinds of a generation manifest, as docs/layout.md names them.
const (
	KindCommitted      = "COMMITTED"
	KindTopicCompacted = "TOPIC_COMPACTED"
)

// manifestRefSize is one encoded entry: gen, base, end, size, md5, kind.
const manifestRefSize = 8 + 8 + 8 + 8 + 16 + 1

// Kind codes of a manifest ref.
const (
	kindCommitted      = 1
	kindTopicCompacted = 2
)

// encodeManifests is the manifests section: count u32, then per ref (in
// ascending generation order, each once) gen i64, base i64, end i64,
// size i64, md5 [16]byte, kind u8 (1 COMMITTED, 2 TOPIC_COMPACTED).
func encodeManifests(refs []ManifestRef) ([]byte, error) {
	if err := validateManifests(refs); err != nil {
		return nil, err
	}
	w := &wbuf{}
	w.u32(uint32(len(refs)))
	for _, m := range refs {
		w.i64(m.Gen)
		w.i64(m.Base)
		w.i64(m.End)
		w.i64(m.Size)
		md5, _ := hex.DecodeString(m.MD5)
		w.raw(md5)
		k := byte(kindCommitted)
		if m.Kind == KindTopicCompacted {
			k = kindTopicCompacted
		}
		w.b = append(w.b, k)
	}
	return w.b, nil
}

func decodeManifests(raw []byte) ([]ManifestRef, error) {
	r := &rbuf{b: raw}
	n := r.count(manifestRefSize, "manifests")
	out := make([]ManifestRef, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		m := ManifestRef{Gen: r.i64("gen"), Base: r.i64("base"), End: r.i64("end"), Size: r.i64("size")}
		m.MD5 = hex.EncodeToString(r.bytes(16, "md5"))
		switch k := r.bytes(1, "kind"); {
		case r.err != nil:
		case k[0] == kindCommitted:
			m.Kind = KindCommitted
		case k[0] == kindTopicCompacted:
			m.Kind = KindTopicCompacted
		default:
			return nil, fmt.Errorf("manifest ref %d: kind %d: want 1 or 2", i, k[0])
		}
		out = append(out, m)
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	if err := validateManifests(out); err != nil {
		return nil, err
	}
	return out, nil
}

func validateManifests(refs []ManifestRef) error {
	for i, m := range refs {
		if m.Gen < 0 || m.Base < 0 || m.End < m.Base || m.Size <= 0 {
			return fmt.Errorf("manifest ref %d: gen %d [%d, %d) size %d: want gen >= 0, 0 <= base <= end, size > 0", i, m.Gen, m.Base, m.End, m.Size)
		}
		if i > 0 && m.Gen <= refs[i-1].Gen {
			return fmt.Errorf("manifest ref %d: gen %d after %d: want ascending, each once", i, m.Gen, refs[i-1].Gen)
		}
		if m.Kind != KindCommitted && m.Kind != KindTopicCompacted {
			return fmt.Errorf("manifest ref %d: kind %q", i, m.Kind)
		}
		if b, err := hex.DecodeString(m.MD5); err != nil || len(b) != 16 || hex.EncodeToString(b) != m.MD5 {
			return fmt.Errorf("manifest ref %d: md5 %q: want 32 lowercase hex digits", i, m.MD5)
		}
	}
	return nil
}
