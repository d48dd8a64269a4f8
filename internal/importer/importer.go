// Package importer owns `import kafka-log`: bringing one partition
// directory written by a real Kafka broker into a new Nereus stream and
// binding.
//
// It reads the directory as untrusted input: no symlink is followed, only
// regular files are read, each with a size cap, and segment files must be
// named by their 20-digit base offsets. It recovers the log the way Kafka's
// LogLoader recovers the segment it was writing when a broker crashed: in
// the last segment a batch whose header claims more bytes than the file
// holds (a torn write) or a zero-filled preallocated tail ends the log, and
// the bytes dropped are reported per file. Every other defect — a torn or
// zero tail in an earlier segment, a CRC mismatch anywhere, offsets that go
// back or segments that overlap — stops the import with an error naming
// the file and byte position. Offset gaps (normal after compaction) are
// reported. With Options.Recover it recovers as Kafka's LogLoader.recoverLog
// does after an unclean shutdown (see analyze).
//
// Every entry is read as Kafka reads it: a v2 batch as it is, a legacy
// message set (magic 0 or 1) up-converted to the v2 batch holding what
// Kafka reads from it (docs/formats/legacy.md). The producer snapshots are
// used as Kafka's log loader uses them, and the state it rebuilds is the
// stream's genesis checkpoint (snapshot.go). A .log file without batches
// between others is a segment of its own, as to Kafka's retention.
//
// Writing goes through stream.Writer only: each segment file with batches
// becomes one COMMITTED generation of objects of about 1 MiB, the last one
// stays the open segment. The stream id is derived from the topic, the
// partition and the digest of the imported bytes, so an interrupted import
// resumes into the same stream (what it finds there must be what it
// writes); the binding is created last (IfAbsent), only after a full
// replay of the written stream reproduced the state derived from the
// files. An existing binding is never touched: one made from the same
// bytes is "already imported", any other is refused.
//
// The importer never changes the Kafka directory and never writes outside
// the new stream and its binding.
package importer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

var (
	// ErrRefused reports input the importer will not read: a symlink, a
	// non-regular file, a name that breaks Kafka's rules, a file over its
	// cap, a malformed checkpoint file, or an option out of range.
	ErrRefused = errors.New("input refused")
	// ErrBindingExists reports that the partition is already bound in the
	// store; the importer only creates new bindings.
	ErrBindingExists = errors.New("binding already exists")
	// ErrNeedsRecovery marks a segment defect that Kafka's log recovery
	// would truncate (LogSegment.recover) and that the import refuses
	// without --recover.
	ErrNeedsRecovery = errors.New("kafka's recovery would truncate it")
	// ErrStreamConflict: the store holds, under the stream id these bytes
	// derive, a half-written stream that is not this import's (another
	// build's, or written by something else); nothing more is written.
	ErrStreamConflict = errkind.New(errkind.Conflict, "the stream is not the one this import writes")
)

// DefaultObjectBytes is the size the importer aims at for each stream
// object; a single larger batch gets an object of its own.
const DefaultObjectBytes = 1 << 20

// internalSegmentBytes is the segment.bytes Kafka gives __consumer_offsets
// and __transaction_state (offsets.topic.segment.bytes,
// transaction.state.log.segment.bytes).
const internalSegmentBytes = 100 << 20

// Options say what to import and how.
type Options struct {
	// Dir is the partition directory, e.g. /var/lib/kafka/orders-0.
	Dir string
	// Topic and Partition name the partition; with Topic empty they come
	// from Dir's name (TOPIC-PARTITION, split at the last '-').
	Topic     string
	Partition int32
	// CleanupPolicy overrides the binding's cleanup.policy: "delete",
	// "compact" or "compact,delete". Empty: compact for __consumer_offsets
	// and __transaction_state, delete otherwise.
	CleanupPolicy string
	// SegmentBytes overrides the binding's segment.bytes (0: Kafka's
	// default for the topic).
	SegmentBytes int64
	// TopicConfig are --topic-config KEY=VALUE settings (Kafka's names),
	// applied last.
	TopicConfig []retention.KV
	// ConfigFileData is the content of --topic-config-file, the output of
	// kafka-configs --describe (retention.ParseKafkaConfigs), named
	// ConfigFileName; applied first.
	ConfigFileData []byte
	ConfigFileName string
	// DryRun reads and reports everything but writes nothing.
	DryRun bool
	// Recover does what Kafka's log loader does after an unclean
	// shutdown (LogLoader.recoverLog, LogSegment.recover): the segments
	// from the recovery point on are truncated at their first invalid
	// batch, and every segment after the first truncated one is dropped.
	Recover bool
	// MaxSegmentBytes caps one .log file (0: DefaultMaxSegmentBytes).
	MaxSegmentBytes int64
	// ObjectBytes is the target object size (0: DefaultObjectBytes).
	ObjectBytes int
	// Progress, when set, is told the segment bytes written (or found
	// already written by an interrupted import) as they go.
	Progress func(n int64)
	// Now is the import clock producer snapshots are loaded at, and
	// ProducerIDExpirationMs producer.id.expiration.ms (0: Kafka's
	// default); IgnoreSnapshots rebuilds the producer state from the log
	// start, as Kafka's loader does without a snapshot (snapshot.go).
	Now                    time.Time
	ProducerIDExpirationMs int64
	IgnoreSnapshots        bool
}

// SegmentReport says what one segment file gave.
type SegmentReport struct {
	File       string `json:"file"`
	BaseOffset int64  `json:"base_offset"`
	// Size is the file's size; Bytes what was kept; DroppedBytes what
	// recovery dropped from its end, with the position and the reason.
	Size         int64  `json:"size"`
	Bytes        int64  `json:"bytes"`
	DroppedBytes int64  `json:"bytes_dropped"`
	DropPosition *int64 `json:"drop_position"`
	DropReason   string `json:"drop_reason,omitempty"`
	Batches      int64  `json:"batches"`
	Records      int64  `json:"records"`
	// LegacyBatches counts the legacy message sets (magic 0 or 1) among
	// Batches, stored up-converted to RecordBatch v2; StoredBytes is what
	// the stream holds for the segment (Bytes when there is none).
	LegacyBatches int64 `json:"legacy_batches"`
	StoredBytes   int64 `json:"stored_bytes"`
	// FirstOffset is the first batch's base offset (null: no batch);
	// NextOffset the offset after the last batch.
	FirstOffset *int64 `json:"first_offset"`
	NextOffset  int64  `json:"next_offset"`
	Objects     int    `json:"objects"`
	// Generation is the COMMITTED generation the segment became; null for
	// the last segment (the open segment) and for a segment without
	// batches.
	Generation *int64 `json:"generation"`
	// EmptySegmentEnd, for a file without batches that a batch follows,
	// is the end of the segment of its own it became, [base_offset,
	// empty_segment_end) (the next file's name), aged by its file's mtime
	// (docs/kafka-retention-rules.md R6); null otherwise.
	EmptySegmentEnd *int64 `json:"empty_segment_end"`
}

// Gap is a range of offsets no batch holds.
type Gap struct {
	From int64  `json:"from"`
	To   int64  `json:"to"`
	File string `json:"file"`
	// Where is "within" (between two batches of File) or "before the first
	// batch of" File.
	Where string `json:"where"`
}

// Result is the import report.
type Result struct {
	Topic     string             `json:"topic"`
	Partition int32              `json:"partition"`
	TopicID   string             `json:"topic_id"`
	Dir       string             `json:"dir"`
	DryRun    bool               `json:"dry_run"`
	Resumed   bool               `json:"resumed"`
	StreamID  string             `json:"stream_id"`
	Binding   string             `json:"binding"`
	Config    layout.TopicConfig `json:"config"`
	// ConfigSource is where Config came from (the binding's config_source).
	ConfigSource string `json:"config_source"`
	// ConfigDefaulted lists the retention keys no config gave, with the
	// value import chose: retention is never invented, it is off (-1).
	ConfigDefaulted []string `json:"config_defaulted"`
	// RetentionOff: retention.ms and retention.bytes are both -1, so a
	// retention run never trims this partition by time or size.
	RetentionOff bool `json:"retention_off"`
	// SHA256 is the digest of the imported bytes: SHA-256 over, per
	// segment, its base offset and kept length (8 bytes big-endian each)
	// and the SHA-256 of its kept bytes. The stream id derives from it.
	SHA256 string `json:"sha256"`
	// Start is the stream's first offset (the first segment's base);
	// Head the next offset after the last batch; LogStart the durable
	// log start (the head's trim) and LogStartSource where it came from.
	Start          int64  `json:"start"`
	Head           int64  `json:"head"`
	LogStart       int64  `json:"log_start"`
	LogStartSource string `json:"log_start_source"`
	// KafkaLogEnd is Kafka's log end offset: Head, or the base offset of
	// an empty last segment above it.
	KafkaLogEnd  int64           `json:"kafka_log_end"`
	Segments     []SegmentReport `json:"segments"`
	Batches      int64           `json:"batches"`
	Records      int64           `json:"records"`
	Bytes        int64           `json:"bytes"`
	BytesDropped int64           `json:"bytes_dropped"`
	Objects      int             `json:"objects"`
	Generations  int             `json:"generations"`
	// Gaps lists the first offset gaps (at most 100); GapsTotal and
	// GapOffsets count all of them.
	Gaps        []Gap      `json:"gaps"`
	GapsTotal   int64      `json:"gaps_total"`
	GapOffsets  int64      `json:"gap_offsets"`
	Epochs      EpochCheck `json:"epochs_check"`
	StateDigest string     `json:"state_digest"`
	// HeadDoc is the stream head as written (nil on a dry run).
	HeadDoc *layout.Head `json:"stream_head"`

	// Recover: --recover was given. RecoveryPoint is the offset Kafka's
	// recovery starts from (recovery-point-offset-checkpoint; 0 without
	// one, or without --recover).
	Recover       bool  `json:"recover"`
	RecoveryPoint int64 `json:"recovery_point"`
	// Snapshot is what the producer snapshots gave (null: the directory
	// has none).
	Snapshot *SnapshotReport `json:"producer_snapshot"`
	// AlreadyImported: the binding exists and points at the stream these
	// same bytes give; nothing was written.
	AlreadyImported bool     `json:"already_imported"`
	Notes           []string `json:"notes"`
}

// Import is a prepared import: the directory, its name and its segment
// files are checked, nothing has been read from the segments yet.
type Import struct {
	opt       Options
	dir       string
	topic     string
	partition int32
	cfg       layout.TopicConfig
	cfgSource string
	defaulted []string
	segs      []segmentFile
	notes     []string
}

// Prepare checks what can be checked without reading the segments or
// touching a store: options, the directory (no symlink), its name or
// opt.Topic, the topic config, and the directory listing (regular files
// only, segment names, at least one segment).
func Prepare(opt Options) (*Import, error) {
	if opt.MaxSegmentBytes == 0 {
		opt.MaxSegmentBytes = DefaultMaxSegmentBytes
	}
	if opt.ObjectBytes == 0 {
		opt.ObjectBytes = DefaultObjectBytes
	}
	if opt.MaxSegmentBytes < 0 || opt.ObjectBytes < 0 || opt.Partition < 0 {
		return nil, refused("import kafka-log: negative size cap, object size or partition")
	}
	dir := filepath.Clean(opt.Dir)
	info, err := os.Lstat(dir)
	if err != nil {
		return nil, refused("import kafka-log: %v", err)
	}
	if info.Mode()&os.ModeSymlink != 0 {
		return nil, refused("import kafka-log: %s is a symbolic link (links are never followed; name the directory itself)", dir)
	}
	if !info.IsDir() {
		return nil, refused("import kafka-log: %s is not a directory", dir)
	}
	topic, partition := opt.Topic, opt.Partition
	if topic == "" {
		if topic, partition, err = kafka.ParseTopicPartition(filepath.Base(dir)); err != nil {
			return nil, refused("import kafka-log: %s: the directory name does not name a partition (%v); give --topic and --partition", dir, err)
		}
	} else if err := kafka.ValidateTopic(topic); err != nil {
		return nil, refused("import kafka-log: --topic: %v", err)
	}
	cfg, source, defaulted, cfgNotes, err := topicConfig(topic, opt)
	if err != nil {
		return nil, refusedConfig{err}
	}
	name := kafka.TopicPartitionDir(topic, partition)
	segs, notes, err := listSegments(dir)
	if err != nil {
		return nil, fmt.Errorf("import kafka-log %s: %w", name, err)
	}
	if len(segs) == 0 {
		// A log whose every segment is gone but whose producer snapshot
		// remains (snapshot.go) imports as an empty log.
		if snaps, err := listSnapshots(dir); err != nil || len(snaps) == 0 || opt.IgnoreSnapshots {
			return nil, refused("import kafka-log %s: no segment files (*.log) in %s", name, dir)
		}
	}
	return &Import{opt: opt, dir: dir, topic: topic, partition: partition, cfg: cfg, cfgSource: source, defaulted: defaulted,
		segs: segs, notes: append(cfgNotes, notes...)}, nil
}

// CheckConfig checks the options that do not depend on a directory: the
// topic config (--topic-config-file, --cleanup-policy, --segment-bytes,
// --topic-config), as Prepare would for a topic of opt.Topic's name (or an
// ordinary topic's when none is given). Its error is Prepare's.
func CheckConfig(opt Options) error {
	topic := opt.Topic
	if topic == "" {
		topic = "topic"
	}
	if _, _, _, _, err := topicConfig(topic, opt); err != nil {
		if opt.Topic == "" && errors.Is(err, retention.ErrNoTopicSection) {
			// The topic comes from each directory's name: Prepare looks
			// its section up then.
			return nil
		}
		return refusedConfig{err}
	}
	return nil
}

// SetProgress sets the function told the bytes written as they go.
func (im *Import) SetProgress(f func(n int64)) { im.opt.Progress = f }

// Size is the bytes of the segment files to import (progress's total).
func (im *Import) Size() int64 {
	var n int64
	for _, s := range im.segs {
		n += s.size
	}
	return n
}

// Run reads, recovers and (unless a dry run) writes the import into st.
// With a dry run st may be nil: then the check that the binding does not
// exist is skipped, and said so.
func (im *Import) Run(ctx context.Context, st store.Store) (*Result, error) {
	opt, dir, topic, partition, cfg, segs := im.opt, im.dir, im.topic, im.partition, im.cfg, im.segs
	if st == nil && !opt.DryRun {
		return nil, errors.New("import kafka-log: no store")
	}
	res := &Result{Topic: topic, Partition: partition, Dir: dir, DryRun: opt.DryRun, Config: cfg,
		ConfigSource: im.cfgSource, ConfigDefaulted: append([]string{}, im.defaulted...),
		RetentionOff: cfg.RetentionMs == -1 && cfg.RetentionBytes == -1,
		Binding:      layout.BindingKey(topic, partition), Segments: []SegmentReport{}, Gaps: []Gap{}, Notes: []string{}}
	name := kafka.TopicPartitionDir(topic, partition)
	var existing *layout.Binding
	if st != nil {
		b, err := existingBinding(ctx, st, topic, partition)
		if err != nil {
			return nil, err
		}
		existing = b
	} else {
		res.Notes = append(res.Notes, "no store opened: the check that the binding does not exist yet was skipped")
	}
	res.Notes = append(res.Notes, im.notes...)
	res.Recover = opt.Recover
	if opt.Recover {
		rp, err := recoveryPoint(dir, topic, partition, res)
		if err != nil {
			return nil, fmt.Errorf("import kafka-log %s: %w", name, err)
		}
		res.RecoveryPoint = rp
	}
	p, err := planImport(dir, topic, partition, segs, res, opt)
	if err != nil {
		return nil, fmt.Errorf("import kafka-log %s: %w", name, err)
	}
	for _, s := range res.Segments {
		res.Batches += s.Batches
		res.Records += s.Records
		res.Bytes += s.Bytes
		res.BytesDropped += s.DroppedBytes
		res.Objects += s.Objects
		if s.Generation != nil {
			res.Generations++
		}
		if s.LegacyBatches > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: %d legacy message sets (magic 0 or 1) imported as Kafka reads them, each stored as a RecordBatch v2 with its offsets, timestamps, keys and values (no producer, no leader epoch): %d bytes in the file, %d in the stream (docs/formats/legacy.md)", s.File, s.LegacyBatches, s.Bytes, s.StoredBytes))
		}
		if s.EmptySegmentEnd != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("%s holds no batches: it is a segment of its own [%d, %d), as in Kafka, aged by its file's modification time (the manifest before it records it: empty_segments)", s.File, s.BaseOffset, *s.EmptySegmentEnd))
		}
	}
	res.Start, res.Head, res.KafkaLogEnd = p.start, p.dataEnd, p.kafkaEnd
	if p.kafkaEnd > p.dataEnd {
		res.Notes = append(res.Notes, fmt.Sprintf("Kafka's log end offset is %d (the empty last segment's base), but the data ends at %d: a stream head cannot move past its data, so the stream head is %d and offsets [%d, %d) would be handed out again",
			p.kafkaEnd, p.dataEnd, p.dataEnd, p.dataEnd, p.kafkaEnd))
	}

	// The log start: Kafka's is max(log-start-offset-checkpoint, first
	// segment base). Above the stream start it becomes the head's trim.
	if err := logStart(dir, topic, partition, p, res); err != nil {
		return nil, fmt.Errorf("import kafka-log %s: %w", name, err)
	}
	ckpt, err := readEpochCheckpoint(dir)
	if err != nil {
		return nil, fmt.Errorf("import kafka-log %s: %w", name, err)
	}
	merge := p.mergeEpochFile(ckpt)
	// The producer state Kafka's log loader rebuilds from the snapshots
	// (snapshot.go), and the genesis checkpoint that holds it.
	var bases []int64
	for _, sp := range p.segs {
		bases = append(bases, sp.file.base)
	}
	ch, err := chooseSnapshot(dir, bases, res.LogStart, p.kafkaEnd, opt)
	if err != nil {
		return nil, fmt.Errorf("import kafka-log %s: %w", name, err)
	}
	if err := p.loaderState(ch, p.seedEpochs, res.LogStart, opt); err != nil {
		return nil, fmt.Errorf("import kafka-log %s: %w", name, err)
	}
	res.Snapshot = ch.rep
	if ch.rep != nil && !ch.used {
		res.Notes = append(res.Notes, fmt.Sprintf("no producer snapshot survives Kafka's loader rules (%d ignored): the producer state is rebuilt from the log start %d, as the broker does", len(ch.rep.Ignored), res.LogStart))
	}
	if res.LogStart > p.start {
		p.part.ApplyLogStart(res.LogStart)
	}
	if b, err := readOptional(filepath.Join(dir, "partition.metadata")); err != nil {
		return nil, fmt.Errorf("import kafka-log %s: %w", name, err)
	} else if b != nil {
		if id, err := parsePartitionMetadata(b); err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("partition.metadata ignored: %v", err))
		} else {
			res.TopicID = id
		}
	}
	res.SHA256 = p.digest
	res.StreamID = StreamID(topic, partition, p.digest)
	expected := state.Digest(p.part)
	binding := &layout.Binding{Topic: topic, TopicID: res.TopicID, Partition: partition, StreamID: res.StreamID, Config: cfg,
		ObservedLogStart: res.LogStart, Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1, ConfigSource: im.cfgSource}
	if last := len(p.segs) - 1; last >= 0 && p.segs[last].rep.Batches > 0 && p.segs[last].maxTs < 0 {
		// The open segment without timestamps: retention ages it by its
		// .log file's mtime while it holds only what the import wrote.
		sp := p.segs[last]
		binding.Import = &layout.ImportRecord{OpenSegment: &layout.ImportedSegment{Base: p.openBase(), End: p.dataEnd, LastModifiedMs: max(sp.file.mtimeMs, 0)}}
	}
	if err := binding.Validate(); err != nil {
		return nil, refused("import kafka-log %s: binding: %v", name, err)
	}
	if existing != nil {
		res.Epochs = epochCheck(ckpt, p.part.Epochs, merge, res, p)
		return alreadyImported(existing, binding, res, name, expected)
	}

	if opt.DryRun {
		res.StateDigest = expected
		res.Epochs = epochCheck(ckpt, p.part.Epochs, merge, res, p)
		return res, nil
	}

	if err := write(ctx, st, p, res, opt); err != nil {
		return nil, fmt.Errorf("import kafka-log %s into stream %s: %w", name, res.StreamID, err)
	}
	genesis, err := p.writeGenesis(ctx, st, binding)
	if err != nil {
		return nil, fmt.Errorf("import kafka-log %s into stream %s: %w", name, res.StreamID, err)
	}
	if genesis != nil {
		if binding.Import == nil {
			binding.Import = &layout.ImportRecord{}
		}
		binding.Import.Genesis = genesis
		if res.Snapshot != nil && p.genesis.producers {
			res.Snapshot.Checkpoint = genesis.Key
		}
	}
	// A full replay of what was written must give the state the files
	// give; only then is the binding created.
	rr, err := recovery.Replay(ctx, st, binding, recovery.Options{Full: true, VerifyCRC: true})
	if err != nil {
		return nil, fmt.Errorf("import kafka-log %s: replay stream %s: %w", name, res.StreamID, err)
	}
	res.StateDigest = rr.Digest()
	if rr.Digest() != expected {
		return nil, fmt.Errorf("import kafka-log %s: a replay of stream %s gives state digest %s, the segment files give %s; the binding was not created: %w",
			name, res.StreamID, rr.Digest(), expected, kafka.ErrCorrupt)
	}
	res.Epochs = epochCheck(ckpt, rr.State.Epochs, merge, res, p)
	if merge.fromFile > 0 && genesis != nil {
		res.Epochs.GenesisCheckpoint = genesis.Key
	}
	if _, err := layout.Create(ctx, st, res.Binding, binding); err != nil {
		if errors.Is(err, store.ErrPreconditionFailed) {
			return nil, fmt.Errorf("import kafka-log %s: %s was created by someone else meanwhile: %w", name, res.Binding, ErrBindingExists)
		}
		return nil, fmt.Errorf("import kafka-log %s: create %s: %w", name, res.Binding, err)
	}
	return res, nil
}

// refusedConfig is a topic config error that is also ErrRefused.
type refusedConfig struct{ err error }

func (e refusedConfig) Error() string        { return e.err.Error() }
func (e refusedConfig) Unwrap() error        { return e.err }
func (e refusedConfig) Is(target error) bool { return target == ErrRefused }

// topicConfig builds the binding's config snapshot. Import never invents a
// retention policy: retention.ms and retention.bytes are -1 (off) unless
// the kafka-configs file or a --topic-config flag gives them. cleanup.policy
// is compact for __consumer_offsets and __transaction_state, else delete;
// the other keys are Kafka's defaults. The file applies first, then the
// --cleanup-policy and --segment-bytes flags, then --topic-config.
func topicConfig(topic string, opt Options) (cfg layout.TopicConfig, source string, defaulted, notes []string, err error) {
	cfg = layout.DefaultTopicConfig()
	cfg.RetentionMs, cfg.RetentionBytes = -1, -1
	if topic == "__consumer_offsets" || topic == "__transaction_state" {
		cfg.CleanupPolicy = "compact"
		cfg.SegmentBytes = internalSegmentBytes
	}
	given := map[string]bool{}
	var sources []string
	set := func(k, v string) error {
		if err := retention.SetTopicConfig(&cfg, k, v); err != nil {
			return err
		}
		given[k] = true
		return nil
	}
	if opt.ConfigFileData != nil {
		name := filepath.Base(opt.ConfigFileName)
		kc, err := retention.ParseKafkaConfigs(opt.ConfigFileData, topic)
		if err != nil {
			return cfg, "", nil, nil, fmt.Errorf("import kafka-log: --topic-config-file %s: %w", name, err)
		}
		for _, kv := range kc.Settings {
			if err := set(kv.Key, kv.Value); err != nil {
				return cfg, "", nil, nil, fmt.Errorf("import kafka-log: --topic-config-file %s: %w", name, err)
			}
		}
		if len(kc.Ignored) > 0 {
			notes = append(notes, fmt.Sprintf("--topic-config-file %s: ignored %d configs nereusctl does not use: %s", name, len(kc.Ignored), strings.Join(kc.Ignored, ", ")))
		}
		sources = append(sources, retention.SourceFilePrefix+name)
	}
	flags := false
	if opt.CleanupPolicy != "" {
		if err := set("cleanup.policy", opt.CleanupPolicy); err != nil {
			return cfg, "", nil, nil, fmt.Errorf("import kafka-log: --cleanup-policy: %w", err)
		}
		flags = true
	}
	if opt.SegmentBytes != 0 {
		if err := set("segment.bytes", strconv.FormatInt(opt.SegmentBytes, 10)); err != nil {
			return cfg, "", nil, nil, fmt.Errorf("import kafka-log: --segment-bytes: %w", err)
		}
		flags = true
	}
	for _, kv := range opt.TopicConfig {
		if err := set(kv.Key, kv.Value); err != nil {
			return cfg, "", nil, nil, fmt.Errorf("import kafka-log: --topic-config: %w", err)
		}
		flags = true
	}
	if flags {
		sources = append(sources, retention.SourceFlags)
	}
	source = strings.Join(sources, "+")
	for _, k := range []string{"retention.ms", "retention.bytes"} {
		if !given[k] {
			defaulted = append(defaulted, k+"=-1")
		}
	}
	if len(sources) == 0 {
		source = retention.SourceImportDefault
	}
	if err := cfg.Validate(); err != nil {
		return cfg, "", nil, nil, fmt.Errorf("import kafka-log: topic config: %w: %v", retention.ErrBadTopicConfig, err)
	}
	return cfg, source, defaulted, notes, nil
}

// existingBinding loads the partition's binding, nil when there is none.
func existingBinding(ctx context.Context, st store.Store, topic string, partition int32) (*layout.Binding, error) {
	key := layout.BindingKey(topic, partition)
	_, err := st.Head(ctx, key)
	switch {
	case err == nil:
		b, _, err := layout.LoadBinding(ctx, st, topic, partition)
		if err != nil {
			return nil, fmt.Errorf("import kafka-log %s: %s already exists and cannot be read: %w", kafka.TopicPartitionDir(topic, partition), key, err)
		}
		return b, nil
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	}
	return nil, fmt.Errorf("import kafka-log: check %s: %w", key, err)
}

// alreadyImported answers an import over an existing binding: when the
// binding points at the stream these bytes give (the stream id derives
// from them), the partition was imported from the same bytes already and
// nothing is written (AlreadyImported); otherwise the binding is someone
// else's and the import refuses, naming both streams.
func alreadyImported(existing, want *layout.Binding, res *Result, name, expected string) (*Result, error) {
	if existing.StreamID != want.StreamID {
		return nil, fmt.Errorf("import kafka-log %s: %s already exists and points at stream %s, but these files give stream %s (imported bytes sha256 %s): it was made from other bytes: %w",
			name, res.Binding, existing.StreamID, want.StreamID, res.SHA256, ErrBindingExists)
	}
	res.AlreadyImported = true
	res.StateDigest = expected
	res.Notes = append(res.Notes, fmt.Sprintf("already imported (same bytes): %s points at stream %s, the stream these files give; nothing was written", res.Binding, want.StreamID))
	if existing.Config != want.Config {
		res.Notes = append(res.Notes, fmt.Sprintf("the binding's config (source %s) differs from the one this import would give (source %s); it was kept: change it with 'nereusctl config set'", existing.ConfigSource, want.ConfigSource))
	}
	return res, nil
}

// planImport reads the directory: the segments (analyze, with the
// stream's objects cut where Kafka's loader may start replaying:
// snapshotCuts), or an empty log when there is no segment file.
func planImport(dir, topic string, partition int32, segs []segmentFile, res *Result, opt Options) (*plan, error) {
	if len(segs) == 0 {
		start, err := emptyStart(dir, topic, partition)
		if err != nil {
			return nil, err
		}
		res.Notes = append(res.Notes, fmt.Sprintf("no segment file: the log is empty at offset %d, the highest offset the broker's checkpoint files and snapshot names record", start))
		return emptyPlan(start), nil
	}
	cuts, err := snapshotCuts(dir, topic, partition, opt)
	if err != nil {
		return nil, err
	}
	return analyze(segs, res, opt, res.RecoveryPoint, cuts)
}

// openBase is the base of the open segment (the last one), or the end of
// the data when every segment is sealed.
func (p *plan) openBase() int64 {
	if n := len(p.part.Segments); n > 0 && p.part.Segments[n-1].Open() {
		return p.part.Segments[n-1].Base
	}
	return p.dataEnd
}

// logStart reads the partition's entry of the log-start-offset-checkpoint
// in the directory above dir (the broker's log directory).
func logStart(dir, topic string, partition int32, p *plan, res *Result) error {
	res.LogStart = p.start
	path := filepath.Join(filepath.Dir(dir), "log-start-offset-checkpoint")
	b, err := readOptional(path)
	if err != nil {
		return err
	}
	if b == nil {
		res.LogStartSource = "the first segment's base offset (no log-start-offset-checkpoint next to the directory)"
		return nil
	}
	m, err := parseOffsetCheckpoint(b)
	if err != nil {
		return refused("%s: %v", path, err)
	}
	v, ok := m[tpKey{topic, partition}]
	switch {
	case !ok:
		res.LogStartSource = "the first segment's base offset (log-start-offset-checkpoint has no entry for the partition)"
	case v <= p.start:
		res.LogStartSource = fmt.Sprintf("the first segment's base offset (log-start-offset-checkpoint says %d, not above it)", v)
	case v > p.dataEnd:
		return fmt.Errorf("%s puts the log start at %d, above the end of the data %d: %w", path, v, p.dataEnd, kafka.ErrCorrupt)
	default:
		res.LogStart = v
		res.LogStartSource = "log-start-offset-checkpoint (set as the stream head's trim)"
	}
	return nil
}

// recoveryPoint reads the partition's entry of the
// recovery-point-offset-checkpoint in the broker's log directory: Kafka's
// recovery (LogLoader.recoverLog) reads the segments from the one holding
// it on. Without the file or an entry it is 0, as for Kafka (every segment
// is recovered).
func recoveryPoint(dir, topic string, partition int32, res *Result) (int64, error) {
	path := filepath.Join(filepath.Dir(dir), "recovery-point-offset-checkpoint")
	b, err := readOptional(path)
	if err != nil || b == nil {
		res.Notes = append(res.Notes, "--recover: no recovery-point-offset-checkpoint next to the directory: every segment is recovered (Kafka's recovery point 0)")
		return 0, err
	}
	m, err := parseOffsetCheckpoint(b)
	if err != nil {
		return 0, refused("%s: %v", path, err)
	}
	v, ok := m[tpKey{topic, partition}]
	if !ok || v < 0 {
		res.Notes = append(res.Notes, "--recover: recovery-point-offset-checkpoint has no entry for the partition: every segment is recovered")
		return 0, nil
	}
	res.Notes = append(res.Notes, fmt.Sprintf("--recover: recovery point %d (recovery-point-offset-checkpoint): the segments from the one holding it on are recovered", v))
	return v, nil
}

// epochFile is the partition's leader-epoch-checkpoint as read.
type epochFile struct {
	present  bool
	entries  []kafka.EpochEntry
	parseErr error
}

func readEpochCheckpoint(dir string) (epochFile, error) {
	b, err := readOptional(filepath.Join(dir, "leader-epoch-checkpoint"))
	if err != nil || b == nil {
		return epochFile{}, err
	}
	es, err := kafka.ReadEpochCheckpoint(b)
	return epochFile{present: true, entries: es, parseErr: err}, nil
}

// mergeEpochFile makes the imported state's leader-epoch cache: the
// batches' (analyze left them in p.part), merged with the
// leader-epoch-checkpoint where the batches are gone (mergeEpochs). When
// the file gave entries the batches do not, the genesis checkpoint holds
// them (p.seedEpochs), as it holds a broker snapshot's producers. A
// missing or unreadable file gives nothing (the check reports it).
func (p *plan) mergeEpochFile(f epochFile) epochMerge {
	p.batchEpochs = slices.Clone(p.part.Epochs)
	if !f.present || f.parseErr != nil {
		return epochMerge{}
	}
	first := p.dataEnd
	if len(p.covered) > 0 {
		first = p.covered[0].from
	}
	m := mergeEpochs(f.entries, p.part.Epochs, p.carried, p.start, first, p.dataEnd, p.covered)
	p.part.Epochs = slices.Clone(m.cache)
	if m.fromFile > 0 {
		p.seedEpochs = slices.Clone(m.seed)
	}
	return m
}

// epochCheck compares the file with the batches' epochs (truncated at the
// log start, as the state's are) and reports the imported cache.
func epochCheck(f epochFile, imported []state.EpochEntry, m epochMerge, res *Result, p *plan) EpochCheck {
	bt := &state.Partition{Epochs: slices.Clone(p.batchEpochs)}
	bt.TruncateEpochsFromStart(res.LogStart)
	var c EpochCheck
	switch {
	case !f.present:
		c = EpochCheck{Status: EpochsNoCheckpoint}
	case f.parseErr != nil:
		c = EpochCheck{Status: EpochsUnreadable, Notes: []string{f.parseErr.Error() + "; the imported leader epochs come from the batches alone"}}
	default:
		c = compareEpochs(f.entries, bt.Epochs, res.LogStart, p.dataEnd, p.covered)
	}
	c.Checkpoint = nonNilEpochs(c.Checkpoint)
	c.Derived = nonNilEpochs(slices.Clone(bt.Epochs))
	c.Notes = nonNilStrings(c.Notes)
	c.Source = "LogSegment.recover's rule from the batches"
	c.Imported = nonNilEpochs(slices.Clone(imported))
	c.FromFile = m.fromFile
	c.Disagreements = append([]EpochDisagreement{}, m.disagreements...)
	return c
}

func nonNilEpochs(es []state.EpochEntry) []state.EpochEntry {
	if es == nil {
		return []state.EpochEntry{}
	}
	return es
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// write is pass 2: create (or resume) the stream, append every planned
// object, roll after every segment but the last, and set the trim.
//
// An import stopped before its binding was created (killed, a lost
// response, a failed binding create) left the stream its rerun derives
// again (the id comes from the bytes): the rerun resumes it. Every object
// already there must be the object this import writes (same key and
// ETag), every generation already sealed the generation it seals (same
// range, objects, next_segment_base and empty segments); then only what
// is missing is written. Anything else is ErrStreamConflict, and nothing
// more is written.
func write(ctx context.Context, st store.Store, p *plan, res *Result, opt Options) error {
	sid := res.StreamID
	p.objSHA = map[int64]string{}
	err := stream.CreateStream(ctx, st, sid, p.start)
	switch {
	case errors.Is(err, store.ErrPreconditionFailed):
		// The same bytes of the same partition were being imported and the
		// run stopped before creating the binding: finish it.
		res.Resumed = true
		res.Notes = append(res.Notes, fmt.Sprintf("stream %s already existed without a binding (an interrupted import of these same bytes); resumed it", sid))
	case err != nil:
		return err
	}
	existing := map[string]string{}
	sealed := map[int64]bool{}
	if res.Resumed {
		h, _, err := layout.LoadHead(ctx, st, sid)
		if err != nil {
			return err
		}
		if h.Start != p.start {
			return fmt.Errorf("stream %s starts at %d, this import at %d: %w", sid, h.Start, p.start, ErrStreamConflict)
		}
		objs, err := layout.ListObjects(ctx, st, sid)
		if err != nil {
			return err
		}
		for _, o := range objs {
			existing[o.Key] = o.ETag
		}
		if sealed, err = p.checkSealed(ctx, st, sid); err != nil {
			return err
		}
	}
	wcfg := res.Config
	// Kafka's segment files decide the rolls, not the writer.
	wcfg.SegmentBytes, wcfg.SegmentMs = math.MaxInt64, math.MaxInt64
	w, err := stream.OpenWriter(ctx, st, sid, wcfg)
	if err != nil {
		return err
	}
	for i := range p.segs {
		sp := &p.segs[i]
		last := i == len(p.segs)-1
		w.NowMs = func() int64 { return sealTime(sp) }
		if len(sp.objects) > 0 {
			data, err := p.storedBytes(sp, opt)
			if err != nil {
				return err
			}
			for _, po := range sp.objects {
				key := layout.ObjectKey(sid, po.base, po.next)
				body := data[po.start:po.end]
				p.objSHA[po.next] = store.SHA256Of(body)
				if po.next <= w.Next() {
					etag, ok := existing[key]
					if ok && etag == "" {
						// The listing had no ETag (file://): ask for it.
						if info, err := st.Head(ctx, key); err == nil {
							etag = info.ETag
						}
					}
					if !ok || etag != store.ETagOf(body) {
						return fmt.Errorf("stream %s already reaches offset %d but %s is not the object this import writes: %w", sid, w.Next(), key, ErrStreamConflict)
					}
					if opt.Progress != nil {
						opt.Progress(int64(len(body)))
					}
					continue
				}
				if po.base != w.Next() {
					return fmt.Errorf("stream %s is at offset %d, the import's next object starts at %d: the stream was written by something else: %w", sid, w.Next(), po.base, ErrStreamConflict)
				}
				batches, err := splitBatches(body)
				if err != nil {
					return fmt.Errorf("%s: %w", sp.file.path, err)
				}
				if err := w.Append(ctx, batches); err != nil {
					return err
				}
				if opt.Progress != nil {
					opt.Progress(int64(len(body)))
				}
			}
		}
		if !last && sp.gen >= 0 && !sealed[sp.gen] {
			next := int64(-1)
			if sp.hasNext {
				next = sp.nextBase
			}
			if err := w.RollWith(ctx, next, sp.empties); err != nil {
				return err
			}
		}
	}
	if w.Next() != p.dataEnd {
		return fmt.Errorf("stream %s ends at %d after the import, the data at %d: %w", sid, w.Next(), p.dataEnd, ErrStreamConflict)
	}
	h, err := setTrim(ctx, st, sid, res.LogStart)
	if err != nil {
		return err
	}
	res.HeadDoc = h
	gens, err := layout.ListGenerations(ctx, st, sid)
	if err != nil {
		return err
	}
	if len(gens) != res.Generations {
		return fmt.Errorf("stream %s has %d generations, the import made %d: %w", sid, len(gens), res.Generations, ErrStreamConflict)
	}
	if res.Resumed {
		// What the interrupted run sealed was checked before; what this
		// run sealed must be the import's too.
		_, err = p.checkSealed(ctx, st, sid)
	}
	return err
}

// checkSealed compares the stream's generations with the ones the import
// seals (gen numbers in file order) and returns those already there; a
// generation that is not the import's is ErrStreamConflict.
func (p *plan) checkSealed(ctx context.Context, st store.Store, sid string) (map[int64]bool, error) {
	gens, err := layout.ListGenerations(ctx, st, sid)
	if err != nil {
		return nil, err
	}
	want := map[int64]*segPlan{}
	for i := range p.segs {
		if sp := &p.segs[i]; sp.gen >= 0 {
			want[sp.gen] = sp
		}
	}
	out := map[int64]bool{}
	for _, n := range gens {
		sp := want[n]
		g, _, err := layout.LoadGeneration(ctx, st, sid, n)
		if err != nil {
			return nil, err
		}
		if sp == nil {
			return nil, fmt.Errorf("stream %s holds generation %d, which this import does not make: %w", sid, n, ErrStreamConflict)
		}
		if why := sp.sameGeneration(g, sid); why != "" {
			return nil, fmt.Errorf("stream %s generation %d is not the one this import seals for %s: %s: %w", sid, n, sp.file.name, why, ErrStreamConflict)
		}
		out[n] = true
	}
	return out, nil
}

// sameGeneration says how g differs from the generation sp is sealed as
// ("" when it does not).
func (sp *segPlan) sameGeneration(g *layout.Generation, sid string) string {
	if g.Kind != layout.KindCommitted {
		return "it is " + g.Kind
	}
	if len(g.Objects) != len(sp.objects) {
		return fmt.Sprintf("%d objects, the import writes %d", len(g.Objects), len(sp.objects))
	}
	for i, po := range sp.objects {
		if g.Objects[i].Key != layout.ObjectKey(sid, po.base, po.next) {
			return fmt.Sprintf("object %d is %s, the import writes %s", i, g.Objects[i].Key, layout.ObjectKey(sid, po.base, po.next))
		}
	}
	next := int64(-1)
	if g.NextSegmentBase != nil {
		next = *g.NextSegmentBase
	}
	want := int64(-1)
	if sp.hasNext {
		want = sp.nextBase
	}
	if next != want {
		return fmt.Sprintf("next_segment_base %d, the import's %d", next, want)
	}
	if !slices.Equal(g.EmptySegments, sp.empties) {
		return fmt.Sprintf("empty segments %v, the import's %v", g.EmptySegments, sp.empties)
	}
	return ""
}

// sealTime is the seal time (the generation's created_ms) a segment
// file's COMMITTED generation gets: its largest batch timestamp, or, when
// no batch carries one (every max timestamp is -1, NO_TIMESTAMP), the .log
// file's last-modified time. That is Kafka's LogSegment.largestTimestamp
// (storage/.../log/LogSegment.java: maxTimestampSoFar() when >= 0, else
// lastModified()), which retention.ms (UnifiedLog.deleteRetentionMsBreachedSegments)
// and min.compaction.lag.ms measure; the planner reads created_ms for a
// segment without timestamps (docs/kafka-retention-rules.md R6). A seal
// time of 0 would make such a segment look 56 years old: retention.ms
// would delete it at once.
func sealTime(sp *segPlan) int64 {
	if sp.maxTs >= 0 {
		return sp.maxTs
	}
	return max(sp.file.mtimeMs, 0)
}

// setTrim raises the head's trim to the Kafka log start: a CAS (IfMatch)
// of streams/<sid>/head.json with trim = logStart and version + 1, then a
// read back. It is a no-op when the trim is already there.
func setTrim(ctx context.Context, st store.Store, sid string, logStart int64) (*layout.Head, error) {
	h, etag, err := layout.LoadHead(ctx, st, sid)
	if err != nil {
		return nil, err
	}
	if h.Trim >= logStart {
		return h, nil
	}
	nh := *h
	nh.Trim = logStart
	nh.Version++
	if err := nh.Validate(); err != nil {
		return nil, fmt.Errorf("set trim of stream %s to %d: %w", sid, logStart, err)
	}
	if _, err := layout.Replace(ctx, st, layout.HeadKey(sid), &nh, etag); err != nil {
		return nil, fmt.Errorf("set trim of stream %s to %d: %w", sid, logStart, err)
	}
	got, _, err := layout.LoadHead(ctx, st, sid)
	if err != nil {
		return nil, err
	}
	if got.Trim != logStart || got.Head != h.Head {
		return nil, fmt.Errorf("set trim of stream %s to %d: read back trim %d, head %d", sid, logStart, got.Trim, got.Head)
	}
	return got, nil
}

func splitBatches(b []byte) ([][]byte, error) {
	sc := kafka.NewScanner(b)
	var out [][]byte
	for sc.Next() {
		out = append(out, sc.Batch())
	}
	return out, sc.Err()
}
