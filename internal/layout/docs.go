package layout

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/keys"
	"github.com/nereusctl/nereusctl/internal/store"
)

// ErrBlocked is returned by every read path (replay, dump, the read API,
// compaction, trims) for a partition whose compacted coverage is
// QUARANTINED: its coordinator is blocked until repair, and nothing may
// fall back to COMMITTED data that compaction superseded.
var ErrBlocked = errkind.New(errkind.Blocked, "compacted coverage is quarantined: coordinator blocked")

// CheckNotBlocked returns ErrBlocked for a quarantined binding.
func (b *Binding) CheckNotBlocked() error {
	if b.Coverage.State == CoverageQuarantined {
		return fmt.Errorf("%s: %w (set %s); see 'nereusctl quarantine list' and 'nereusctl repair'", b.Name(), ErrBlocked, b.Coverage.SetID)
	}
	return nil
}

// MaxDocumentBytes caps every JSON document read from a store (docs/design.md §14).
const MaxDocumentBytes = 4 << 20

// Coverage states of a binding's compacted coverage.
const (
	CoverageNone        = "NONE"
	CoverageActive      = "ACTIVE"
	CoverageQuarantined = "QUARANTINED"
)

// Generation kinds.
const (
	KindCommitted      = "COMMITTED"
	KindTopicCompacted = "TOPIC_COMPACTED"
)

// TopicConfig is the snapshot of Kafka topic config a binding carries. Kafka's
// metadata stays the authority; this is what the tool plans with.
type TopicConfig struct {
	CleanupPolicy      string `json:"cleanup.policy"`
	RetentionMs        int64  `json:"retention.ms"`
	RetentionBytes     int64  `json:"retention.bytes"`
	SegmentBytes       int64  `json:"segment.bytes"`
	SegmentMs          int64  `json:"segment.ms"`
	DeleteRetentionMs  int64  `json:"delete.retention.ms"`
	MinCompactionLagMs int64  `json:"min.compaction.lag.ms"`
	MaxCompactionLagMs int64  `json:"max.compaction.lag.ms"`
	// MinCleanableDirtyRatio is Kafka's min.cleanable.dirty.ratio (a
	// DOUBLE in [0, 1], LogConfig), or nil for Kafka's default
	// (DefaultMinCleanableDirtyRatio): optional, so a binding written
	// before it existed keeps its bytes and digest. CleanableRatio reads it.
	MinCleanableDirtyRatio *float64 `json:"min.cleanable.dirty.ratio,omitempty"`
}

// DefaultMinCleanableDirtyRatio is Kafka's default min.cleanable.dirty.ratio
// (LogConfig / ServerLogConfigs: 0.5).
const DefaultMinCleanableDirtyRatio = 0.5

// CleanableRatio is the topic's min.cleanable.dirty.ratio: the snapshot's
// value, or Kafka's default 0.5 when it has none.
func (c TopicConfig) CleanableRatio() float64 {
	if c.MinCleanableDirtyRatio == nil {
		return DefaultMinCleanableDirtyRatio
	}
	return *c.MinCleanableDirtyRatio
}

// DefaultTopicConfig returns Kafka's broker defaults.
func DefaultTopicConfig() TopicConfig {
	return TopicConfig{
		CleanupPolicy:      "delete",
		RetentionMs:        7 * 24 * 3600 * 1000,
		RetentionBytes:     -1,
		SegmentBytes:       1 << 30,
		SegmentMs:          7 * 24 * 3600 * 1000,
		DeleteRetentionMs:  24 * 3600 * 1000,
		MinCompactionLagMs: 0,
		MaxCompactionLagMs: 1<<63 - 1,
	}
}

// Policies returns the cleanup.policy list.
func (c TopicConfig) Policies() []string {
	var out []string
	for _, p := range strings.Split(c.CleanupPolicy, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// HasPolicy reports whether cleanup.policy contains p ("delete", "compact").
func (c TopicConfig) HasPolicy(p string) bool {
	for _, q := range c.Policies() {
		if q == p {
			return true
		}
	}
	return false
}

// Validate checks the config values.
func (c TopicConfig) Validate() error {
	ps := c.Policies()
	if len(ps) == 0 {
		return errors.New("cleanup.policy is empty")
	}
	for _, p := range ps {
		if p != "delete" && p != "compact" {
			return fmt.Errorf("cleanup.policy %q: want delete, compact or compact,delete", c.CleanupPolicy)
		}
	}
	if c.RetentionMs < -1 {
		return fmt.Errorf("retention.ms %d: want -1 or >= 0", c.RetentionMs)
	}
	if c.RetentionBytes < -1 {
		return fmt.Errorf("retention.bytes %d: want -1 or >= 0", c.RetentionBytes)
	}
	if c.SegmentBytes < 14 {
		return fmt.Errorf("segment.bytes %d: want >= 14", c.SegmentBytes)
	}
	if c.SegmentMs < 1 {
		return fmt.Errorf("segment.ms %d: want >= 1", c.SegmentMs)
	}
	if c.DeleteRetentionMs < 0 || c.MinCompactionLagMs < 0 || c.MaxCompactionLagMs < 1 {
		return errors.New("delete.retention.ms, min.compaction.lag.ms must be >= 0 and max.compaction.lag.ms >= 1")
	}
	if r := c.MinCleanableDirtyRatio; r != nil && !(*r >= 0 && *r <= 1) {
		return fmt.Errorf("min.cleanable.dirty.ratio %v: want 0..1", *r)
	}
	return nil
}

// CheckpointRef points a binding at its newest published checkpoint.
type CheckpointRef struct {
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	Anchor int64  `json:"anchor"`
}

// Coverage is a binding's compacted coverage: the active generation set.
type Coverage struct {
	State   string      `json:"state"`
	SetID   string      `json:"set_id,omitempty"`
	Start   int64       `json:"start"`
	End     int64       `json:"end"`
	Members []SetMember `json:"members,omitempty"`
}

// SetMember is one TOPIC_COMPACTED generation of a set, by manifest digest.
type SetMember struct {
	Gen            int64  `json:"gen"`
	ManifestSHA256 string `json:"manifest_sha256"`
}

// Binding ties a Kafka topic-partition to its stream (bindings/<t>/<p>.json).
type Binding struct {
	Topic            string         `json:"topic"`
	TopicID          string         `json:"topic_id"`
	Partition        int32          `json:"partition"`
	StreamID         string         `json:"stream_id"`
	Config           TopicConfig    `json:"config"`
	ObservedLogStart int64          `json:"observed_log_start"`
	CheckpointRef    *CheckpointRef `json:"checkpoint_ref"`
	Coverage         Coverage       `json:"compacted_coverage"`
	Version          int64          `json:"version"`
	// ConfigSource says where Config came from: "import-default-retention-off",
	// "topic-config-flags", "kafka-configs-file:<name>" (joined with "+"
	// when several), "config-set"; empty in bindings written before it.
	ConfigSource string `json:"config_source,omitempty"`
	// Import is what `import kafka-log` recorded for the readers of the
	// stream it made; absent (nil) in every other binding and in bindings
	// imported by earlier builds, which keeps their bytes and digests.
	Import *ImportRecord `json:"import,omitempty"`
}

// ImportRecord is what an import recorded in the binding it created
// (docs/layout.md, "import").
type ImportRecord struct {
	// Genesis is the checkpoint holding the state Kafka's log loader
	// rebuilds (the broker's producer snapshot and the segments after it,
	// docs/kafka-retention-rules.md §16.1), anchored where that rebuild
	// starts: a full replay starts from it instead of from the stream's
	// first object, as the broker does not replay the segments the
	// snapshot covers. Absent when the stream starts from the empty state
	// or from a checkpoint at its first offset.
	Genesis *CheckpointRef `json:"genesis,omitempty"`
	// OpenSegment is the imported last .log file, which stays the open
	// segment: its range as imported and the file's last-modified time.
	// While the open segment is still [Base, End) and no batch of it
	// carries a timestamp, retention ages it by that time
	// (LogSegment.largestTimestamp falls back to the file's mtime), not
	// by the import's write time. Absent when the segment had
	// timestamps or no batch.
	OpenSegment *ImportedSegment `json:"open_segment,omitempty"`
}

// ImportedSegment is one imported .log file: its range in the stream and
// its last-modified time (ms since the epoch).
type ImportedSegment struct {
	Base           int64 `json:"base"`
	End            int64 `json:"end"`
	LastModifiedMs int64 `json:"last_modified_ms"`
}

// Name is TOPIC-PARTITION.
func (b *Binding) Name() string { return fmt.Sprintf("%s-%d", b.Topic, b.Partition) }

// Validate checks a binding's fields.
func (b *Binding) Validate() error {
	if err := kafka.ValidateTopic(b.Topic); err != nil {
		return err
	}
	if b.Partition < 0 {
		return fmt.Errorf("partition %d is negative", b.Partition)
	}
	if err := validateStreamID(b.StreamID); err != nil {
		return err
	}
	if err := b.Config.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if b.ObservedLogStart < 0 {
		return fmt.Errorf("observed_log_start %d is negative", b.ObservedLogStart)
	}
	if r := b.CheckpointRef; r != nil {
		if !strings.HasPrefix(r.Key, CheckpointsPrefix(b.StreamID)) {
			return fmt.Errorf("checkpoint_ref.key %q is not under %s", r.Key, CheckpointsPrefix(b.StreamID))
		}
		if err := validateSHA256(r.SHA256); err != nil {
			return fmt.Errorf("checkpoint_ref.sha256: %w", err)
		}
	}
	switch b.Coverage.State {
	case CoverageNone:
	case CoverageActive, CoverageQuarantined:
		if err := validateSHA256(b.Coverage.SetID); err != nil {
			return fmt.Errorf("compacted_coverage.set_id: %w", err)
		}
		if b.Coverage.End < b.Coverage.Start || len(b.Coverage.Members) == 0 {
			return errors.New("compacted_coverage: empty or reversed range")
		}
		for _, m := range b.Coverage.Members {
			if err := validateSHA256(m.ManifestSHA256); err != nil {
				return fmt.Errorf("compacted_coverage member %d: %w", m.Gen, err)
			}
		}
	default:
		return fmt.Errorf("compacted_coverage.state %q: want NONE, ACTIVE or QUARANTINED", b.Coverage.State)
	}
	if b.Version < 1 {
		return fmt.Errorf("version %d: want >= 1", b.Version)
	}
	if im := b.Import; im != nil {
		if r := im.Genesis; r != nil {
			if !strings.HasPrefix(r.Key, CheckpointsPrefix(b.StreamID)) {
				return fmt.Errorf("import.genesis.key %q is not under %s", r.Key, CheckpointsPrefix(b.StreamID))
			}
			if err := validateSHA256(r.SHA256); err != nil {
				return fmt.Errorf("import.genesis.sha256: %w", err)
			}
			if r.Anchor < 0 {
				return fmt.Errorf("import.genesis.anchor %d is negative", r.Anchor)
			}
		}
		if s := im.OpenSegment; s != nil && (s.Base < 0 || s.End < s.Base) {
			return fmt.Errorf("import.open_segment [%d, %d) is reversed", s.Base, s.End)
		}
	}
	return nil
}

// ImportGenesis is the checkpoint a full replay starts from (Import's
// Genesis), nil when the binding records none.
func (b *Binding) ImportGenesis() *CheckpointRef {
	if b.Import == nil {
		return nil
	}
	return b.Import.Genesis
}

// Head is a stream head (streams/<sid>/head.json).
type Head struct {
	StreamID string `json:"stream_id"`
	Epoch    int64  `json:"epoch"`
	// Start is the offset the stream was created at. Objects below the
	// first retained one but above Start were collected by gc.
	Start   int64 `json:"start"`
	Head    int64 `json:"head"`
	Trim    int64 `json:"trim"`
	Version int64 `json:"version"`
	// LeaderEpochs is the writer's record of the partition leader epochs
	// its batches carry in the open segment (FormatLeaderEpochs: marks
	// "EPOCH@START", comma-separated, in offset order): from each mark's
	// start on, every batch up to the next mark carries its epoch. The
	// first mark is the one in force at the open segment's base. A batch's
	// leader epoch lies outside its CRC-32C and the open segment is in no
	// manifest yet, so readers check the epochs against this record
	// (docs/layout.md, "Stream head"). Absent: not recorded (a writer that
	// predates it, or more than MaxLeaderEpochMarks changes in one
	// segment). A string, not a list, so that heads stay comparable.
	LeaderEpochs string `json:"leader_epochs,omitempty"`
}

// LeaderEpochMark is one mark of a head's leader-epoch record: from
// Start on, batches carry partition leader epoch Epoch (-1: none, as
// Kafka's NO_PARTITION_LEADER_EPOCH).
type LeaderEpochMark struct {
	Epoch int32
	Start int64
}

// MaxLeaderEpochMarks bounds a head's leader-epoch record: a writer that
// meets more epoch changes in one open segment stops recording it.
const MaxLeaderEpochMarks = 64

// FormatLeaderEpochs is the canonical text of a leader-epoch record.
func FormatLeaderEpochs(marks []LeaderEpochMark) string {
	b := make([]byte, 0, 16*len(marks))
	for i, m := range marks {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(m.Epoch), 10)
		b = append(b, '@')
		b = strconv.AppendInt(b, m.Start, 10)
	}
	return string(b)
}

// ParseLeaderEpochs reads a leader-epoch record in its canonical text:
// decimal numbers, starts strictly increasing, no two adjacent marks with
// one epoch, epochs >= -1, at most MaxLeaderEpochMarks marks.
func ParseLeaderEpochs(s string) ([]LeaderEpochMark, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxLeaderEpochMarks {
		return nil, fmt.Errorf("leader_epochs: %d marks, at most %d", len(parts), MaxLeaderEpochMarks)
	}
	marks := make([]LeaderEpochMark, 0, len(parts))
	for i, p := range parts {
		e, st, ok := strings.Cut(p, "@")
		epoch, err1 := strconv.ParseInt(e, 10, 32)
		start, err2 := strconv.ParseInt(st, 10, 64)
		if !ok || err1 != nil || err2 != nil || epoch < -1 || start < 0 || strconv.FormatInt(epoch, 10) != e || strconv.FormatInt(start, 10) != st {
			return nil, fmt.Errorf("leader_epochs mark %d %q: want EPOCH@START (decimal, epoch >= -1, start >= 0)", i, p)
		}
		m := LeaderEpochMark{Epoch: int32(epoch), Start: start}
		if i > 0 {
			if prev := marks[i-1]; m.Start <= prev.Start || m.Epoch == prev.Epoch {
				return nil, fmt.Errorf("leader_epochs mark %d %q: want starts increasing and each mark a change of epoch (after %d@%d)", i, p, prev.Epoch, prev.Start)
			}
		}
		marks = append(marks, m)
	}
	return marks, nil
}

// Validate checks a head's fields.
func (h *Head) Validate() error {
	if err := validateStreamID(h.StreamID); err != nil {
		return err
	}
	if h.Start < 0 || h.Trim < h.Start || h.Trim > h.Head {
		return fmt.Errorf("start %d, trim %d, head %d: want 0 <= start <= trim <= head", h.Start, h.Trim, h.Head)
	}
	if h.Version < 1 || h.Epoch < 0 {
		return fmt.Errorf("version %d, epoch %d: want version >= 1, epoch >= 0", h.Version, h.Epoch)
	}
	// Marks at or above the head are allowed: a head rolled back below
	// the stream's data keeps its record, and readers read nothing there.
	if _, err := ParseLeaderEpochs(h.LeaderEpochs); err != nil {
		return err
	}
	return nil
}

// ObjectRef describes one object of a generation, with its digests.
type ObjectRef struct {
	Key    string `json:"key"`
	Base   int64  `json:"base"`
	End    int64  `json:"end"`
	Size   int64  `json:"size"`
	ETag   string `json:"etag"`
	CRC32C uint32 `json:"crc32c"`
	SHA256 string `json:"sha256"`
}

// SourceRef names a source generation by its manifest digest.
type SourceRef struct {
	Gen            int64  `json:"gen"`
	ManifestSHA256 string `json:"manifest_sha256"`
}

// Generation is an immutable generation manifest.
type Generation struct {
	StreamID string      `json:"stream_id"`
	Gen      int64       `json:"gen"`
	Kind     string      `json:"kind"`
	Base     int64       `json:"base"`
	End      int64       `json:"end"`
	Objects  []ObjectRef `json:"objects"`
	Sources  []SourceRef `json:"sources"`
	// MaxTimestamp is the largest record timestamp in the range (COMMITTED).
	MaxTimestamp int64 `json:"max_timestamp"`
	// CreatedMs is when the generation was sealed or compacted.
	CreatedMs int64 `json:"created_ms"`
	// NextSegmentBase (COMMITTED only) is the base offset of the virtual
	// segment after this one when that is not its first batch's offset:
	// Kafka's segment base is the .log file's name (LocalLog,
	// LogSegment: the file is named by the segment's baseOffset), and
	// the log cleaner keeps it while removing the first batches
	// (LogCleaner.cleanSegments writes a group under
	// segments.head.baseOffset), so an imported file named 7 may hold
	// batches from 10 on. Replay opens the next segment here when it
	// seals this one (state.Roll), as Kafka rolls a segment at its base.
	// It lies at or above End and at or below the next segment's first
	// batch (docs/kafka-retention-rules.md R4). Absent (nil) in every
	// manifest that does not need it: the next segment starts at its
	// first batch.
	NextSegmentBase *int64 `json:"next_segment_base,omitempty"`
	// EmptySegments (COMMITTED only) are the Kafka segments right after
	// this one that hold no batch (a .log file the cleaner emptied): each
	// is a segment of its own to Kafka's retention
	// (UnifiedLog.deleteRetentionMsBreachedSegments walks segments in
	// order and stops at the first it keeps), [base, end) with end the
	// next .log file's name, aged by its file's mtime
	// (LogSegment.largestTimestamp of an empty segment is lastModified).
	// Replay adds them as sealed segments without data when it seals this
	// one (state.AddEmptySegment), before next_segment_base. Absent (nil)
	// in every manifest that does not need it
	// (docs/kafka-retention-rules.md R6).
	EmptySegments []EmptySegment `json:"empty_segments,omitempty"`
	// Compaction records the parameters a TOPIC_COMPACTED generation was
	// computed with, so that --regenerate reproduces it exactly.
	Compaction *CompactionParams `json:"compaction,omitempty"`
}

// EmptySegment is a Kafka segment that holds no batch: its range
// [Base, End) (End is the next segment's base) and its .log file's
// last-modified time in ms since the epoch.
type EmptySegment struct {
	Base           int64 `json:"base"`
	End            int64 `json:"end"`
	LastModifiedMs int64 `json:"last_modified_ms"`
}

// CompactionParams are the frozen inputs of a compaction beyond its sources.
type CompactionParams struct {
	NowMs             int64  `json:"now_ms"`
	DeleteRetentionMs int64  `json:"delete.retention.ms"`
	HW                int64  `json:"hw"`
	LSO               int64  `json:"lso"`
	LogStart          int64  `json:"log_start"`
	CleanEnd          int64  `json:"clean_end"`
	PrevEnd           int64  `json:"prev_end"`
	ObjectBytes       int    `json:"object_bytes"`
	PrevSetID         string `json:"prev_set_id,omitempty"`
	// Aborted are the aborted transactions with data in the compacted
	// COMMITTED range (their markers may lie beyond it), so that a
	// regenerate drops exactly the same records.
	Aborted []AbortedRange `json:"aborted"`
	// Encoder is the identity of the NTC2 encoder that wrote the objects
	// (ntc2.EncoderIdentity: format version, codec library version and
	// level), which decides their bytes as much as the inputs above: a
	// regenerate refuses when the running build's differs. Absent in
	// manifests written before it was recorded; a regenerate of those
	// cannot know and tries, the digest check deciding.
	Encoder string `json:"encoder,omitempty"`
}

// MaxEncoderIdentity bounds a recorded encoder identity.
const MaxEncoderIdentity = 256

// validate checks what the manifest says about its encoder: untrusted text
// that errors quote, so printable and bounded.
func (c *CompactionParams) validate() error {
	if len(c.Encoder) > MaxEncoderIdentity {
		return fmt.Errorf("compaction encoder: %d bytes, at most %d", len(c.Encoder), MaxEncoderIdentity)
	}
	for _, r := range c.Encoder {
		if r < 0x20 || r > 0x7e {
			return fmt.Errorf("compaction encoder %q: only printable ASCII", c.Encoder)
		}
	}
	return nil
}

// AbortedRange is one aborted transaction: producer, first offset, marker.
type AbortedRange struct {
	ProducerID  int64 `json:"producer_id"`
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"`
}

// Validate checks a generation manifest.
func (g *Generation) Validate() error {
	if err := validateStreamID(g.StreamID); err != nil {
		return err
	}
	if g.Gen < 0 {
		return fmt.Errorf("gen %d is negative", g.Gen)
	}
	if g.Kind != KindCommitted && g.Kind != KindTopicCompacted {
		return fmt.Errorf("kind %q: want COMMITTED or TOPIC_COMPACTED", g.Kind)
	}
	if g.Base < 0 || g.End < g.Base {
		return fmt.Errorf("range [%d, %d) is reversed", g.Base, g.End)
	}
	prev := g.Base
	for i, o := range g.Objects {
		if err := store.ValidateKey(o.Key); err != nil {
			return fmt.Errorf("object %d: %w", i, err)
		}
		if !strings.HasPrefix(o.Key, StreamPrefix(g.StreamID)) {
			return fmt.Errorf("object %d: key %q is outside stream %s", i, o.Key, g.StreamID)
		}
		if o.Size < 0 {
			return fmt.Errorf("object %d (%s): size %d is negative", i, o.Key, o.Size)
		}
		if o.Base < prev || o.End < o.Base || o.End > g.End {
			return fmt.Errorf("object %d (%s): range [%d, %d) out of order or outside [%d, %d)", i, o.Key, o.Base, o.End, g.Base, g.End)
		}
		if g.Kind == KindCommitted && o.Base != prev {
			return fmt.Errorf("object %d (%s): gap at %d", i, o.Key, prev)
		}
		prev = o.End
		if err := validateSHA256(o.SHA256); err != nil {
			return fmt.Errorf("object %d (%s) sha256: %w", i, o.Key, err)
		}
	}
	if g.Kind == KindCommitted && prev != g.End {
		return fmt.Errorf("objects end at %d, generation at %d", prev, g.End)
	}
	for _, s := range g.Sources {
		if err := validateSHA256(s.ManifestSHA256); err != nil {
			return fmt.Errorf("source %d: %w", s.Gen, err)
		}
	}
	if n := g.NextSegmentBase; n != nil {
		switch {
		case g.Kind != KindCommitted:
			return fmt.Errorf("next_segment_base %d: only a sealed segment (COMMITTED) has a next segment", *n)
		case *n < 0:
			return fmt.Errorf("next_segment_base %d is negative", *n)
		case *n < g.End:
			return fmt.Errorf("next_segment_base %d lies below the generation's end %d: the next segment would start inside this one", *n, g.End)
		}
	}
	if len(g.EmptySegments) > 0 {
		if g.Kind != KindCommitted {
			return errors.New("empty_segments: only a sealed segment (COMMITTED) is followed by segments")
		}
		at := g.End
		for i, e := range g.EmptySegments {
			if e.Base < at || e.End <= e.Base {
				return fmt.Errorf("empty_segments[%d] [%d, %d): want a non-empty range at or above %d, after this generation and the empty segment before it", i, e.Base, e.End, at)
			}
			at = e.End
		}
		if n := g.NextSegmentBase; n != nil && *n < at {
			return fmt.Errorf("next_segment_base %d lies below the end %d of the empty segments before it", *n, at)
		}
	}
	if g.Compaction != nil {
		return g.Compaction.validate()
	}
	return nil
}

// SetID is the identity of a generation set: the SHA-256 of the canonical
// list of (gen, manifest sha256), sorted by gen, one "gen:sha256\n" line each.
func SetID(members []SetMember) string {
	ms := append([]SetMember(nil), members...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].Gen < ms[j].Gen })
	h := sha256.New()
	for _, m := range ms {
		fmt.Fprintf(h, "%d:%s\n", m.Gen, m.ManifestSHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Quarantine is a quarantine record (quarantine/<set_id>.json).
type Quarantine struct {
	SetID     string              `json:"set_id"`
	Topic     string              `json:"topic"`
	Partition int32               `json:"partition"`
	StreamID  string              `json:"stream_id"`
	Findings  []QuarantineFinding `json:"findings"`
	CreatedMs int64               `json:"created_ms"`
	// Repair is filled when the record is archived after a repair.
	Repair *RepairRecord `json:"repair,omitempty"`
	// InProgress is what a repair under way has restored so far, recorded
	// (If-Match) before each restore, so that a rerun after a crash
	// archives the same audit trail as an uninterrupted repair.
	InProgress *RepairProgress `json:"repair_in_progress,omitempty"`
}

// RepairProgress is an open quarantine record's repair under way: where
// the bytes came from and the objects restored (or about to be).
type RepairProgress struct {
	Source   string   `json:"source"`
	Restored []string `json:"restored"`
}

// QuarantineFinding is one failed check.
type QuarantineFinding struct {
	Gen      int64  `json:"gen"`
	Object   string `json:"object,omitempty"`
	Check    string `json:"check"`
	Expected string `json:"expected,omitempty"`
	Found    string `json:"found,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// RepairRecord says what a repair did.
type RepairRecord struct {
	RepairedMs int64    `json:"repaired_ms"`
	Source     string   `json:"source"`
	Restored   []string `json:"restored"`
}

// Lease excludes concurrent long jobs (leases/<name>.json).
type Lease struct {
	Name       string `json:"name"`
	Holder     string `json:"holder"`
	AcquiredMs int64  `json:"acquired_ms"`
	ExpiresMs  int64  `json:"expires_ms"`
}

func validateStreamID(sid string) error { return keys.ValidStreamID(sid) }

func validateSHA256(s string) error {
	if len(s) != 64 || !isHex(s) {
		return fmt.Errorf("%q is not a lowercase hex SHA-256", s)
	}
	return nil
}

// Encode returns the canonical JSON of a document (sorted struct order,
// two-space indent, trailing newline): same document, same bytes. The kinds
// that carry their own digest (binding, head, generation manifest,
// quarantine record, lease) get a last field "digest": "sha256:<hex>", the
// SHA-256 of the same encoding without that field (docs/layout.md).
func Encode(v any) []byte {
	plain := encodePlain(v)
	if _, ok := v.(digested); !ok {
		return plain
	}
	s := sha256.Sum256(plain)
	return withDigest(plain, DigestPrefix+hex.EncodeToString(s[:]))
}

// Decode parses a document strictly and validates it. Every error wraps
// ErrCorruptDocument and names the key and the field: malformed JSON,
// trailing data, a field name that is not exactly one of the kind's (no
// case folding), a field twice, a missing field (every field without
// omitempty is required), null or a JSON value of the wrong type, an
// invalid value, and, for the kinds that carry a digest, a digest that does
// not match the content. A document of such a kind that is valid but has no
// digest at all returns ErrLegacyDocument, with v filled (generation
// manifests excepted: immutable, they are accepted without one).
func Decode(key string, data []byte, v interface{ Validate() error }) error {
	_, err := decodeFull(key, data, v)
	return err
}

// decodeFull is Decode, also reporting whether the document had a digest.
func decodeFull(key string, data []byte, v interface{ Validate() error }) (hasDigest bool, err error) {
	digest, has, err := decodeStrict(key, data, v)
	if err != nil {
		return false, err
	}
	if _, ok := v.(digested); !ok {
		return false, nil
	}
	if !has {
		if _, ok := v.(legacyTolerated); ok {
			return false, nil
		}
		return false, fmt.Errorf("decode %s: %w; %s", key, ErrLegacyDocument, UpgradeHint)
	}
	if want := contentDigest(v); digest != want {
		return true, corrupt(key, "digest %s does not match the content (sha256 of the document without its digest is %s)", digest, want)
	}
	return true, nil
}

// Validate lets Quarantine be decoded with Decode.
func (q *Quarantine) Validate() error {
	if err := validateSHA256(q.SetID); err != nil {
		return fmt.Errorf("set_id: %w", err)
	}
	return kafka.ValidateTopic(q.Topic)
}

// Validate lets Lease be decoded with Decode.
func (l *Lease) Validate() error {
	if l.Name == "" || l.Holder == "" {
		return errors.New("lease needs a name and a holder")
	}
	return nil
}

// getDocument reads a document's bytes, capped at MaxDocumentBytes: a
// document over the cap is corruption (no writer makes one), reported as
// ErrCorruptDocument like bytes that do not decode.
func getDocument(ctx context.Context, st store.Store, key string) ([]byte, error) {
	data, err := store.GetCapped(ctx, st, key, MaxDocumentBytes)
	if errors.Is(err, store.ErrTooLarge) {
		return nil, errkind.About(fmt.Errorf("%s: %w: %w", key, ErrCorruptDocument, err), key, CheckDocument)
	}
	return data, err
}

// IsCorrupt reports whether err says a stored document's bytes are wrong
// (ErrCorruptDocument): they do not decode or validate, name another
// document, or exceed the size cap. A missing key, an I/O failure or a
// legacy document without a digest is not.
func IsCorrupt(err error) bool { return errors.Is(err, ErrCorruptDocument) }

// ErrHeadRollback marks a stream head below what the stream holds (objects,
// generations or checkpoints above it): the head was rolled back, and
// what lies above it is data, not garbage. It is corruption.
var ErrHeadRollback = errkind.New(errkind.Corrupt, "stream head is below data the stream holds")

// ErrHeadMissing marks a stream head that is missing while a binding names
// its stream: the stream's bounds are lost, which is missing data (exit 3
// in every command). errors.Is(err, store.ErrNotFound) holds for it too.
var ErrHeadMissing = errkind.New(errkind.Missing, "stream head is missing")

// Load reads and decodes a document, returning its ETag for a later CAS.
func Load(ctx context.Context, st store.Store, key string, v interface{ Validate() error }) (etag string, err error) {
	data, err := getDocument(ctx, st, key)
	if err != nil {
		return "", err
	}
	if err := Decode(key, data, v); err != nil {
		return "", err
	}
	return store.ETagOf(data), nil
}

// Create writes a new document with IfAbsent. A lost precondition is
// checked against the stored bytes (store.ConfirmIfAbsent) whatever the
// backend: when the key holds exactly this document, an earlier attempt
// whose response was lost created it, and Create succeeds.
func Create(ctx context.Context, st store.Store, key string, v any) (store.ObjectInfo, error) {
	data := Encode(v)
	info, err := st.Put(ctx, key, data, store.IfAbsent())
	if errors.Is(err, store.ErrPreconditionFailed) {
		return store.ConfirmIfAbsent(ctx, st, key, data, err)
	}
	return info, err
}

// Replace CASes a document with IfMatch(etag). A lost precondition is
// checked against the stored bytes first (store.ConfirmIfMatch): when the
// key holds exactly this document, an earlier attempt whose response was
// lost landed, and Replace succeeds.
func Replace(ctx context.Context, st store.Store, key string, v any, etag string) (store.ObjectInfo, error) {
	data := Encode(v)
	info, err := st.Put(ctx, key, data, store.IfMatch(etag))
	if errors.Is(err, store.ErrPreconditionFailed) {
		return store.ConfirmIfMatch(ctx, st, key, data, err)
	}
	return info, err
}

// DocSHA256 is the hex SHA-256 of a document's canonical bytes.
func DocSHA256(v any) string { return store.SHA256Of(Encode(v)) }

// LoadBinding reads bindings/<topic>/<partition>.json.
func LoadBinding(ctx context.Context, st store.Store, topic string, partition int32) (*Binding, string, error) {
	var b Binding
	key := BindingKey(topic, partition)
	etag, err := Load(ctx, st, key, &b)
	if err != nil {
		return nil, "", err
	}
	if b.Topic != topic || b.Partition != partition {
		return nil, "", corrupt(key, "names partition %s-%d", b.Topic, b.Partition)
	}
	return &b, etag, nil
}

// ListBindings lists every binding key and parses topic and partition.
// A key under bindings/ that is no binding's (a README, an editor's temp
// file) is left out: ListStoreKeys names it as a stray key, a finding of
// verify and status, and no fleet command stops at it.
func ListBindings(ctx context.Context, st store.Store) ([]TopicPartition, error) {
	infos, err := st.List(ctx, BindingsPrefix)
	if err != nil {
		return nil, err
	}
	out, _ := SplitBindings(infos)
	return out, nil
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Less orders by topic, then partition number.
func (tp TopicPartition) Less(o TopicPartition) bool {
	if tp.Topic != o.Topic {
		return tp.Topic < o.Topic
	}
	return tp.Partition < o.Partition
}

// ParseTopicPartition parses TOPIC-PARTITION (split at the last '-').
func ParseTopicPartition(s string) (TopicPartition, error) {
	t, p, err := kafka.ParseTopicPartition(s)
	return TopicPartition{Topic: t, Partition: p}, err
}

// LoadHead reads streams/<sid>/head.json.
func LoadHead(ctx context.Context, st store.Store, sid string) (*Head, string, error) {
	var h Head
	key := HeadKey(sid)
	etag, err := Load(ctx, st, key, &h)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", fmt.Errorf("%s: %w: %w", key, ErrHeadMissing, err)
	}
	if err != nil {
		return nil, "", err
	}
	if h.StreamID != sid {
		return nil, "", corrupt(key, "names stream %s", h.StreamID)
	}
	return &h, etag, nil
}

// LoadGeneration reads a generation manifest and returns it with the SHA-256
// of its bytes (the digest sources and sets refer to).
func LoadGeneration(ctx context.Context, st store.Store, sid string, gen int64) (*Generation, string, error) {
	g, sums, err := LoadGenerationSums(ctx, st, sid, gen)
	return g, sums.SHA256, err
}

// ManifestSums are the digests of a manifest's bytes: the SHA-256 sources
// and sets refer to, and the size and MD5 (the ETag a listing shows) a
// checkpoint records (NKC1 section manifests).
type ManifestSums struct {
	SHA256 string
	MD5    string
	Size   int64
}

// LoadGenerationSums is LoadGeneration with the size and MD5 of the bytes.
func LoadGenerationSums(ctx context.Context, st store.Store, sid string, gen int64) (*Generation, ManifestSums, error) {
	key := GenerationKey(sid, gen)
	data, err := getDocument(ctx, st, key)
	if err != nil {
		return nil, ManifestSums{}, err
	}
	var g Generation
	if err := Decode(key, data, &g); err != nil {
		return nil, ManifestSums{}, err
	}
	if g.StreamID != sid || g.Gen != gen {
		return nil, ManifestSums{}, corrupt(key, "names stream %s generation %d", g.StreamID, g.Gen)
	}
	return &g, ManifestSums{SHA256: store.SHA256Of(data), MD5: store.ETagOf(data), Size: int64(len(data))}, nil
}

// ListGenerations lists the generation numbers of a stream, ascending.
func ListGenerations(ctx context.Context, st store.Store, sid string) ([]int64, error) {
	infos, err := st.List(ctx, GenerationsPrefix(sid))
	if err != nil {
		return nil, err
	}
	return GenerationNumbers(infos)
}

// GenerationNumbers are the generation numbers a listing of
// GenerationsPrefix names, in its order; a key that is no generation's is
// an error.
func GenerationNumbers(infos []store.ObjectInfo) ([]int64, error) {
	out := make([]int64, 0, len(infos))
	for _, in := range infos {
		g, err := ParseGenerationKey(in.Key)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// StreamObject is a COMMITTED data object found by listing.
type StreamObject struct {
	Key  string
	Base int64
	End  int64
	Size int64
	ETag string
	// Modified is the listing's modification time (zero when it has none).
	Modified time.Time
}

// ListObjects lists a stream's data objects in offset order.
func ListObjects(ctx context.Context, st store.Store, sid string) ([]StreamObject, error) {
	infos, err := st.List(ctx, ObjectsPrefix(sid))
	if err != nil {
		return nil, err
	}
	return AppendStreamObjects(make([]StreamObject, 0, len(infos)), infos)
}

// AppendStreamObjects appends the stream objects a listing of
// ObjectsPrefix names to out; a key that is not an object key is an error.
func AppendStreamObjects(out []StreamObject, infos []store.ObjectInfo) ([]StreamObject, error) {
	for _, in := range infos {
		base, end, err := ParseObjectKey(in.Key)
		if err != nil {
			return nil, err
		}
		out = append(out, StreamObject{Key: in.Key, Base: base, End: end, Size: in.Size, ETag: in.ETag, Modified: in.Modified})
	}
	return out, nil
}
