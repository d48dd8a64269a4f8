package nkc1

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/keys"
	"github.com/nereusctl/nereusctl/internal/state"
)

// Anchor says where a checkpoint stands in its stream: the stable-head
// anchor of docs/design.md §5.
type Anchor struct {
	StreamID  string `json:"stream_id"`
	TopicID   string `json:"topic_id"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Offset is the anchor offset (<= head at creation): the end of the
	// object ObjectKey names, and the state's next offset.
	Offset int64 `json:"offset"`
	// HeadEpoch is the stream head epoch observed at creation.
	HeadEpoch int64 `json:"head_epoch"`
	// ObjectKey is the COMMITTED object ending at Offset ("" when Offset is
	// the stream's first offset and no object precedes it).
	ObjectKey string `json:"object_key"`
	// ObjectSHA256 is the hex SHA-256 of that object ("" with no object).
	ObjectSHA256 string `json:"object_sha256"`
	// LogStart is the partition log start at the anchor.
	LogStart int64 `json:"log_start"`
}

// Coverage is the exact range [LogStart, Anchor) the checkpoint covers and
// the sealed COMMITTED generations it was built from, with their manifest
// digests, ordered by generation.
type Coverage struct {
	LogStart int64       `json:"log_start"`
	Anchor   int64       `json:"anchor"`
	Sources  []SourceRef `json:"sources"`
}

// SourceRef is a source generation by number and manifest digest (the
// shape of a generation manifest's sources, docs/layout.md).
type SourceRef struct {
	Gen            int64  `json:"gen"`
	ManifestSHA256 string `json:"manifest_sha256"`
}

// BindingRef is the binding key and version a checkpoint was made for.
type BindingRef struct {
	Key     string `json:"key"`
	Version int64  `json:"version"`
}

// Checkpoint is everything an NKC1 checkpoint holds. State's LogStart and
// NextOffset are the anchor's LogStart and Offset.
type Checkpoint struct {
	Anchor   Anchor
	State    *state.Partition
	Coverage Coverage
	Binding  BindingRef
	// Clock is the clock producer expiration was applied at when the
	// checkpoint was made (optional section 10); nil: none was, the
	// state holds every producer the log names.
	Clock *state.Clock
	// Manifests are the generation manifests the state depends on, with
	// the size and MD5 of their bytes (optional section 11); nil in a
	// checkpoint made before the section.
	Manifests []ManifestRef
}

// Field caps (bytes). Strings are stored as uint16 length + UTF-8 bytes.
const (
	maxStreamID = 64
	maxTopicID  = 64
	maxTopic    = 249
	maxKey      = keys.MaxLen
)

// ---- encoding helpers ----

type wbuf struct{ b []byte }

func (w *wbuf) u16(v uint16) { w.b = binary.BigEndian.AppendUint16(w.b, v) }
func (w *wbuf) u32(v uint32) { w.b = binary.BigEndian.AppendUint32(w.b, v) }
func (w *wbuf) i32(v int32)  { w.u32(uint32(v)) }
func (w *wbuf) i64(v int64)  { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *wbuf) str(s string) { w.u16(uint16(len(s))); w.b = append(w.b, s...) }
func (w *wbuf) raw(p []byte) { w.b = append(w.b, p...) }

type rbuf struct {
	b   []byte
	err error
}

func (r *rbuf) need(n int, what string) bool {
	if r.err != nil {
		return false
	}
	if len(r.b) < n {
		r.err = fmt.Errorf("%s: truncated (need %d bytes, have %d)", what, n, len(r.b))
		return false
	}
	return true
}

func (r *rbuf) u16(what string) uint16 {
	if !r.need(2, what) {
		return 0
	}
	v := binary.BigEndian.Uint16(r.b)
	r.b = r.b[2:]
	return v
}

func (r *rbuf) u32(what string) uint32 {
	if !r.need(4, what) {
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *rbuf) i32(what string) int32 { return int32(r.u32(what)) }

func (r *rbuf) i64(what string) int64 {
	if !r.need(8, what) {
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return int64(v)
}

func (r *rbuf) bytes(n int, what string) []byte {
	if !r.need(n, what) {
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *rbuf) str(max int, what string) string {
	n := int(r.u16(what + " length"))
	if r.err == nil && n > max {
		r.err = fmt.Errorf("%s: length %d exceeds %d", what, n, max)
		return ""
	}
	return string(r.bytes(n, what))
}

// count reads a uint32 list length and checks that count*size bytes remain.
func (r *rbuf) count(size int, what string) int {
	n := r.u32(what + " count")
	if r.err == nil && uint64(n)*uint64(size) > uint64(len(r.b)) {
		r.err = fmt.Errorf("%s: count %d exceeds the %d bytes present", what, n, len(r.b))
		return 0
	}
	return int(n)
}

func (r *rbuf) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	return r.err
}

func hexDigest(s, what string) ([32]byte, error) {
	var d [32]byte
	if len(s) != 64 || strings.ToLower(s) != s {
		return d, fmt.Errorf("%s %q is not a lowercase hex SHA-256", what, s)
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, fmt.Errorf("%s %q is not a lowercase hex SHA-256", what, s)
	}
	return d, nil
}

// ---- anchor ----

// encodeAnchor: stream_id str, topic_id str, topic str, partition i32,
// offset i64, head_epoch i64, log_start i64, object_key str, then the
// object's 32-byte SHA-256 when object_key is not empty.
func encodeAnchor(a *Anchor) ([]byte, error) {
	if err := validateAnchor(a); err != nil {
		return nil, err
	}
	w := &wbuf{}
	w.str(a.StreamID)
	w.str(a.TopicID)
	w.str(a.Topic)
	w.i32(a.Partition)
	w.i64(a.Offset)
	w.i64(a.HeadEpoch)
	w.i64(a.LogStart)
	w.str(a.ObjectKey)
	if a.ObjectKey != "" {
		d, _ := hexDigest(a.ObjectSHA256, "object_sha256") // validated above
		w.raw(d[:])
	}
	return w.b, nil
}

func decodeAnchor(raw []byte) (Anchor, error) {
	r := &rbuf{b: raw}
	var a Anchor
	a.StreamID = r.str(maxStreamID, "stream_id")
	a.TopicID = r.str(maxTopicID, "topic_id")
	a.Topic = r.str(maxTopic, "topic")
	a.Partition = r.i32("partition")
	a.Offset = r.i64("offset")
	a.HeadEpoch = r.i64("head_epoch")
	a.LogStart = r.i64("log_start")
	a.ObjectKey = r.str(maxKey, "object_key")
	if r.err == nil && a.ObjectKey != "" {
		a.ObjectSHA256 = hex.EncodeToString(r.bytes(32, "object_sha256"))
	}
	if err := r.done(); err != nil {
		return Anchor{}, err
	}
	if err := validateAnchor(&a); err != nil {
		return Anchor{}, err
	}
	return a, nil
}

// validateStreamID follows layout's rule for stream ids: 1..64 of [a-z0-9-].
func validateStreamID(sid string) error {
	if sid == "" || len(sid) > maxStreamID {
		return fmt.Errorf("stream_id %q: want 1..%d characters", sid, maxStreamID)
	}
	for i := 0; i < len(sid); i++ {
		c := sid[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return fmt.Errorf("stream_id %q: want [a-z0-9-]", sid)
		}
	}
	return nil
}

func validateAnchor(a *Anchor) error {
	if err := validateStreamID(a.StreamID); err != nil {
		return err
	}
	if len(a.TopicID) > maxTopicID {
		return fmt.Errorf("topic_id: %d bytes, at most %d", len(a.TopicID), maxTopicID)
	}
	for i := 0; i < len(a.TopicID); i++ {
		if c := a.TopicID[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("topic_id %q: want printable ASCII", a.TopicID)
		}
	}
	if len(a.Topic) > maxTopic {
		return fmt.Errorf("topic: %d bytes, at most %d", len(a.Topic), maxTopic)
	}
	if err := kafka.ValidateTopic(a.Topic); err != nil {
		return err
	}
	if a.Partition < 0 {
		return fmt.Errorf("partition %d is negative", a.Partition)
	}
	if a.Offset < 0 || a.LogStart < 0 || a.LogStart > a.Offset {
		return fmt.Errorf("log_start %d, offset %d: want 0 <= log_start <= offset", a.LogStart, a.Offset)
	}
	if a.HeadEpoch < 0 {
		return fmt.Errorf("head_epoch %d is negative", a.HeadEpoch)
	}
	if a.ObjectKey == "" {
		if a.ObjectSHA256 != "" {
			return errors.New("object_sha256 without object_key")
		}
		return nil
	}
	if len(a.ObjectKey) > maxKey {
		return fmt.Errorf("object_key: %d bytes, at most %d", len(a.ObjectKey), maxKey)
	}
	if err := keys.Validate(a.ObjectKey); err != nil {
		return fmt.Errorf("object_key: %w", err)
	}
	if !strings.HasPrefix(a.ObjectKey, keys.ObjectsPrefix(a.StreamID)) {
		return fmt.Errorf("object_key %q is not under %s", a.ObjectKey, keys.ObjectsPrefix(a.StreamID))
	}
	_, end, err := keys.ParseObjectKey(a.ObjectKey)
	if err != nil {
		return fmt.Errorf("object_key: %w", err)
	}
	if end != a.Offset {
		return fmt.Errorf("object_key %q ends at %d, not at the anchor offset %d", a.ObjectKey, end, a.Offset)
	}
	if _, err := hexDigest(a.ObjectSHA256, "object_sha256"); err != nil {
		return err
	}
	return nil
}

// ---- coverage ----

const sourceSize = 8 + 32

// encodeCoverage: log_start i64, anchor i64, count u32, count × (gen i64,
// manifest SHA-256 32 bytes), ordered by gen, no duplicates.
func encodeCoverage(c *Coverage) ([]byte, error) {
	srcs := append([]SourceRef(nil), c.Sources...)
	sort.SliceStable(srcs, func(i, j int) bool { return srcs[i].Gen < srcs[j].Gen })
	sorted := Coverage{LogStart: c.LogStart, Anchor: c.Anchor, Sources: srcs}
	if err := validateCoverage(&sorted); err != nil {
		return nil, err
	}
	w := &wbuf{}
	w.i64(c.LogStart)
	w.i64(c.Anchor)
	w.u32(uint32(len(srcs)))
	for _, s := range srcs {
		w.i64(s.Gen)
		d, _ := hexDigest(s.ManifestSHA256, "manifest_sha256") // validated above
		w.raw(d[:])
	}
	return w.b, nil
}

func decodeCoverage(raw []byte) (Coverage, error) {
	r := &rbuf{b: raw}
	var c Coverage
	c.LogStart = r.i64("log_start")
	c.Anchor = r.i64("anchor")
	n := r.count(sourceSize, "sources")
	c.Sources = make([]SourceRef, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		gen := r.i64("gen")
		d := r.bytes(32, "manifest_sha256")
		c.Sources = append(c.Sources, SourceRef{Gen: gen, ManifestSHA256: hex.EncodeToString(d)})
	}
	if err := r.done(); err != nil {
		return Coverage{}, err
	}
	if err := validateCoverage(&c); err != nil {
		return Coverage{}, err
	}
	return c, nil
}

// validateCoverage checks a coverage whose sources are sorted by gen.
func validateCoverage(c *Coverage) error {
	if c.LogStart < 0 || c.Anchor < c.LogStart {
		return fmt.Errorf("range [%d, %d): want 0 <= log_start <= anchor", c.LogStart, c.Anchor)
	}
	for i, s := range c.Sources {
		if s.Gen < 0 {
			return fmt.Errorf("source gen %d is negative", s.Gen)
		}
		if i > 0 && s.Gen <= c.Sources[i-1].Gen {
			return fmt.Errorf("source gens not strictly ascending at %d", s.Gen)
		}
		if _, err := hexDigest(s.ManifestSHA256, fmt.Sprintf("source %d manifest_sha256", s.Gen)); err != nil {
			return err
		}
	}
	return nil
}

// ---- binding reference ----

// encodeBinding: key str, version i64.
func encodeBinding(b *BindingRef) ([]byte, error) {
	if err := validateBinding(b); err != nil {
		return nil, err
	}
	w := &wbuf{}
	w.str(b.Key)
	w.i64(b.Version)
	return w.b, nil
}

func decodeBinding(raw []byte) (BindingRef, error) {
	r := &rbuf{b: raw}
	var b BindingRef
	b.Key = r.str(maxKey, "key")
	b.Version = r.i64("version")
	if err := r.done(); err != nil {
		return BindingRef{}, err
	}
	if err := validateBinding(&b); err != nil {
		return BindingRef{}, err
	}
	return b, nil
}

func validateBinding(b *BindingRef) error {
	if len(b.Key) > maxKey || !utf8.ValidString(b.Key) {
		return fmt.Errorf("key: want at most %d bytes of UTF-8", maxKey)
	}
	if _, _, err := keys.ParseBindingKey(b.Key); err != nil {
		return err
	}
	if b.Version < 1 {
		return fmt.Errorf("version %d: want >= 1", b.Version)
	}
	return nil
}

// ---- cross-section rules ----

// validateCheckpoint checks that the parts agree; it returns the section at
// fault with the error.
func validateCheckpoint(c *Checkpoint) (uint16, error) {
	a := &c.Anchor
	if c.State == nil {
		return SectionAnchor, errors.New("no partition state")
	}
	if c.State.NextOffset != a.Offset || c.State.LogStart != a.LogStart {
		return SectionAnchor, fmt.Errorf("state spans [%d, %d), anchor says [%d, %d)", c.State.LogStart, c.State.NextOffset, a.LogStart, a.Offset)
	}
	if c.Coverage.LogStart != a.LogStart || c.Coverage.Anchor != a.Offset {
		return SectionCoverage, fmt.Errorf("coverage [%d, %d) differs from the anchor's [%d, %d)", c.Coverage.LogStart, c.Coverage.Anchor, a.LogStart, a.Offset)
	}
	topic, partition, err := keys.ParseBindingKey(c.Binding.Key)
	if err != nil {
		return SectionBindingRef, err
	}
	if topic != a.Topic || partition != a.Partition {
		return SectionBindingRef, fmt.Errorf("binding key %q names %s-%d, the anchor %s-%d", c.Binding.Key, topic, partition, a.Topic, a.Partition)
	}
	return 0, nil
}

// encodeClock is the clock section: now_ms i64, producer_id_expiration_ms
// i64, both positive.
func encodeClock(c *state.Clock) ([]byte, error) {
	if err := validateClock(c); err != nil {
		return nil, err
	}
	w := &wbuf{}
	w.i64(c.NowMs)
	w.i64(c.ExpirationMs)
	return w.b, nil
}

func decodeClock(raw []byte) (state.Clock, error) {
	r := &rbuf{b: raw}
	c := state.Clock{NowMs: r.i64("now_ms"), ExpirationMs: r.i64("producer_id_expiration_ms")}
	if err := r.done(); err != nil {
		return state.Clock{}, err
	}
	if err := validateClock(&c); err != nil {
		return state.Clock{}, err
	}
	return c, nil
}

func validateClock(c *state.Clock) error {
	if c.NowMs <= 0 || c.ExpirationMs <= 0 {
		return fmt.Errorf("now_ms %d, producer_id_expiration_ms %d: want both positive", c.NowMs, c.ExpirationMs)
	}
	return nil
}
