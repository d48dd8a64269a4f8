// Package metrics is the Prometheus metrics of a scheduled command's run
// (status, verify, retention run, gc, compact, checkpoint create): the
// metric names and their help, a registry built from a typed summary of
// one run (Run), and its two outputs: a file for node_exporter's textfile
// collector (prometheus.WriteToTextfile) and a push to a Prometheus
// Pushgateway (the client_golang push package). It never reads the store:
// the command fills the Run after its work is done.
//
// docs/deploy/README.md lists the names, their labels and the alerts over
// them (docs/deploy/prometheus-rules.yaml).
package metrics

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The metric names. Every series also has the label command (CommandLabel)
// and, when the run was given --shard, shard: on the file as labels of their
// own, on a push as the grouping key (the Pushgateway adds them to every
// series of the group, with job="nereusctl").
const (
	LastRun     = "nereusctl_last_run_timestamp_seconds"
	LastSuccess = "nereusctl_last_success_timestamp_seconds"
	Duration    = "nereusctl_run_duration_seconds"
	// Partitions has the label result (Result*); Findings the label check.
	Partitions    = "nereusctl_partitions"
	Findings      = "nereusctl_findings"
	StoreRequests = "nereusctl_store_requests_total"
	StoreRetries  = "nereusctl_store_retries_total"
	// From verify: per partition (topic, partition, level), and the bytes
	// hashed.
	PartitionLastVerified = "nereusctl_partition_last_verified_timestamp_seconds"
	VerifiedBytes         = "nereusctl_verified_bytes_total"
	// From verify's proof ledgers (deep runs and --max-age): the bytes of
	// immutable objects with no proof within the window, and the oldest
	// proof's age, over the run's partitions.
	UnprovedBytes  = "nereusctl_unproved_bytes"
	OldestProofAge = "nereusctl_oldest_proof_age_seconds"
	// From status: per partition (topic, partition).
	PartitionCheckpointAge = "nereusctl_partition_checkpoint_age_seconds"
	PartitionTailObjects   = "nereusctl_partition_tail_objects"
	PartitionDataLoss      = "nereusctl_partition_data_loss"
	PartitionBlocked       = "nereusctl_partition_blocked"
	PartitionLogStart      = "nereusctl_partition_log_start_offset"
	PartitionHighWatermark = "nereusctl_partition_high_watermark"
	// From retention run.
	RetentionGarbageBytes = "nereusctl_retention_garbage_bytes"
)

// The names retention run wrote before these metrics existed, still
// written by it for one release (deprecated: docs/deploy/README.md maps
// each to its replacement). They carry the command (and shard) label like
// every other series, so a selector written for them keeps matching.
const (
	DeprecatedRetentionPartitions  = "nereusctl_retention_partitions"
	DeprecatedRetentionErrors      = "nereusctl_retention_errors"
	DeprecatedRetentionDuration    = "nereusctl_retention_duration_seconds"
	DeprecatedRetentionLastRun     = "nereusctl_retention_last_run_timestamp_seconds"
	DeprecatedRetentionLastSuccess = "nereusctl_retention_last_success_timestamp_seconds"
)

// The label names.
const (
	CommandLabel   = "command"
	ShardLabel     = "shard"
	ResultLabel    = "result"
	CheckLabel     = "check"
	MethodLabel    = "method"
	TopicLabel     = "topic"
	PartitionLabel = "partition"
	LevelLabel     = "level"
)

// The values of the result label (each command has those it can report:
// docs/deploy/README.md).
const (
	ResultOK        = "ok"
	ResultTrimmed   = "trimmed"
	ResultUnchanged = "unchanged"
	ResultFailed    = "failed"
	ResultBlocked   = "blocked"
)

// The values of the level label of PartitionLastVerified.
const (
	LevelDefault = "default"
	LevelDeep    = "deep"
)

// Names lists every metric name this package writes, deprecated ones
// included (for the tests that hold the rules and the dashboard to them).
func Names() []string {
	return []string{
		LastRun, LastSuccess, Duration, Partitions, Findings, StoreRequests, StoreRetries,
		PartitionLastVerified, VerifiedBytes, UnprovedBytes, OldestProofAge,
		PartitionCheckpointAge, PartitionTailObjects, PartitionDataLoss, PartitionBlocked, PartitionLogStart, PartitionHighWatermark,
		RetentionGarbageBytes,
		DeprecatedRetentionPartitions, DeprecatedRetentionErrors, DeprecatedRetentionDuration, DeprecatedRetentionLastRun, DeprecatedRetentionLastSuccess,
	}
}

// Run is one run of a scheduled command, what its metrics are made of.
type Run struct {
	// Command is the command label: status, verify, retention_run, gc,
	// compact, checkpoint_create. Shard is --shard's i/n, "" without it.
	Command, Shard string
	// Start and End bound the run (End is the last-run time, and the
	// last-success time when Success).
	Start, End time.Time
	// Success: the run exited 0.
	Success bool
	// Partitions counts the partitions by result (a Result* value); every
	// result the command can report is present, zeros included. Nil when
	// the run ended before it had partitions (the series is left out).
	Partitions map[string]int
	// Findings counts findings by check, for the commands that check
	// (verify, status); nil for the others.
	Findings map[string]int
	// Requests are the store calls by verb (GET, HEAD, LIST, PUT, DELETE),
	// each try counted; Retries the calls tried again.
	Requests map[string]int64
	Retries  int64

	Verify    *Verify
	Status    []PartitionStatus
	Retention *Retention
}

// Verify is what verify adds to its run.
type Verify struct {
	// Level is LevelDefault or LevelDeep (a --deep --sample run hashes a
	// slice only: it is LevelDefault).
	Level       string
	BytesHashed int64
	// Partitions are those the run looked at: OK ones were verified clean
	// at End; the others keep the time they last were.
	Partitions []VerifiedPartition
	// Complete: the run took its whole selection (--all, within its
	// shard), so a partition it did not look at is gone and its previous
	// series is dropped; a run over named partitions keeps the others'.
	Complete bool
	// Proof is what the proof ledgers said after the run (nil: the run
	// read none, and UnprovedBytes and OldestProofAge are left out).
	Proof *Proof
}

// Proof is the freshness of a verify run's partitions.
type Proof struct {
	// UnprovedBytes are the bytes of immutable objects with no proof
	// within the window (never proved ones included).
	UnprovedBytes int64
	// OldestProofAgeSeconds is the age of the oldest proof of the
	// partitions' objects (0 when none is proved).
	OldestProofAgeSeconds int64
}

// VerifiedPartition is one partition of a verify run.
type VerifiedPartition struct {
	Topic     string
	Partition int32
	// OK: verified with no finding, not blocked, no error.
	OK bool
}

// PartitionStatus is one status row.
type PartitionStatus struct {
	Topic     string
	Partition int32
	// Read: the partition's state was read; when not (an error row) only
	// DataLoss and Blocked are written for it.
	Read bool
	// CheckpointAgeSeconds is the newest valid checkpoint's age; nil when
	// the partition has none (its series is left out).
	CheckpointAgeSeconds *int64
	TailObjects          int
	DataLoss, Blocked    bool
	LogStart, HW         int64
}

// Retention is what retention run adds to its run.
type Retention struct {
	// GarbageBytes are the bytes of whole segments the run made garbage.
	GarbageBytes int64
	// Trimmed, Unchanged and Errors are the deprecated
	// nereusctl_retention_partitions' counts (Errors: failed and blocked).
	Trimmed, Unchanged, Errors int
}

// The help texts: one per name, the same for every command (the
// Pushgateway merges the groups' families under one HELP).
var help = map[string]string{
	LastRun:                        "When the command's last run ended (Unix seconds), whatever its outcome.",
	LastSuccess:                    "When the command's last successful run (exit 0) ended (Unix seconds); kept from the previous output by a failed run.",
	Duration:                       "Wall time of the command's last run.",
	Partitions:                     "Partitions of the last run by result.",
	Findings:                       "Findings of the last run by check.",
	StoreRequests:                  "Store calls of the last run by method, each try counted.",
	StoreRetries:                   "Store calls the last run tried again.",
	PartitionLastVerified:          "When verify last found the partition clean at this level (Unix seconds).",
	VerifiedBytes:                  "Bytes verify hashed in its last run.",
	UnprovedBytes:                  "Bytes of immutable objects the last verify run found with no proof within its window (never proved ones included).",
	OldestProofAge:                 "Age of the oldest proof of an immutable object when verify last read the proof ledgers.",
	PartitionCheckpointAge:         "Age of the partition's newest valid checkpoint when status last ran.",
	PartitionTailObjects:           "Objects after the partition's newest checkpoint (a restart replays them) when status last ran.",
	PartitionDataLoss:              "1 when status found offsets between the partition's trim and head that no object holds.",
	PartitionBlocked:               "1 when the partition's coordinator is blocked (quarantined or missing mandatory coverage).",
	PartitionLogStart:              "The partition's log start offset when status last ran.",
	PartitionHighWatermark:         "The partition's high watermark (head) when status last ran.",
	RetentionGarbageBytes:          "Bytes of whole segments the last retention run made garbage for gc.",
	DeprecatedRetentionPartitions:  "Deprecated: use nereusctl_partitions{command=\"retention_run\"}. Partitions of the last retention run by result.",
	DeprecatedRetentionErrors:      "Deprecated: use nereusctl_partitions{command=\"retention_run\",result=~\"failed|blocked\"}. Partitions that failed in the last retention run.",
	DeprecatedRetentionDuration:    "Deprecated: use nereusctl_run_duration_seconds{command=\"retention_run\"}. Wall time of the last retention run.",
	DeprecatedRetentionLastRun:     "Deprecated: use nereusctl_last_run_timestamp_seconds{command=\"retention_run\"}. When the last retention run finished.",
	DeprecatedRetentionLastSuccess: "Deprecated: use nereusctl_last_success_timestamp_seconds{command=\"retention_run\"}. When the last successful retention run finished.",
}

// carried reports the families a run may have to take from the previous
// output: the last success after a failed run, the per-partition
// verification times.
func carried(name string) bool {
	return name == LastSuccess || name == DeprecatedRetentionLastSuccess || name == PartitionLastVerified
}

// builder registers the run's metrics in one registry.
type builder struct {
	reg  prometheus.Registerer
	skip func(name string) bool
	err  error
}

func (b *builder) register(name string, c prometheus.Collector) {
	if b.err == nil {
		if err := b.reg.Register(c); err != nil {
			b.err = fmt.Errorf("metrics: register %s: %w", name, err)
		}
	}
}

func (b *builder) gauge(name string, v float64) {
	if b.skip(name) {
		return
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help[name]})
	g.Set(v)
	b.register(name, g)
}

func (b *builder) counter(name string, v float64) {
	if b.skip(name) {
		return
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help[name]})
	c.Add(v)
	b.register(name, c)
}

// gaugeVec registers a labelled gauge unless skipped; nil when skipped.
func (b *builder) gaugeVec(name string, labels ...string) *prometheus.GaugeVec {
	if b.skip(name) {
		return nil
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help[name]}, labels)
	b.register(name, g)
	return g
}

// Registry builds run's metrics. constLabels go on every series (the file's
// command and shard; none for a push, whose grouping key holds them); prev
// is what the previous output held for the same group (nil: nothing);
// skip leaves families out (a push that could not read the previous ones).
// A family with no series is not written.
func Registry(run *Run, prev *Previous, constLabels prometheus.Labels, skip func(name string) bool) (*prometheus.Registry, error) {
	if skip == nil {
		skip = func(string) bool { return false }
	}
	reg := prometheus.NewPedanticRegistry()
	b := &builder{reg: prometheus.WrapRegistererWith(constLabels, reg), skip: skip}
	end := float64(run.End.Unix())
	secs := run.End.Sub(run.Start).Seconds()
	if secs < 0 {
		secs = 0
	}
	b.gauge(LastRun, end)
	lastSuccess := func(name string) {
		switch {
		case run.Success:
			b.gauge(name, end)
		case prev != nil:
			if v, ok := prev.lastSuccess[name]; ok {
				b.gauge(name, v)
			}
		}
	}
	lastSuccess(LastSuccess)
	b.gauge(Duration, secs)
	if run.Partitions != nil {
		if g := b.gaugeVec(Partitions, ResultLabel); g != nil {
			for _, r := range sortedKeys(run.Partitions) {
				g.WithLabelValues(r).Set(float64(run.Partitions[r]))
			}
		}
	}
	if len(run.Findings) > 0 {
		if g := b.gaugeVec(Findings, CheckLabel); g != nil {
			for _, c := range sortedKeys(run.Findings) {
				g.WithLabelValues(c).Set(float64(run.Findings[c]))
			}
		}
	}
	if !skip(StoreRequests) {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: StoreRequests, Help: help[StoreRequests]}, []string{MethodLabel})
		for _, m := range sortedKeys(run.Requests) {
			c.WithLabelValues(m).Add(float64(run.Requests[m]))
		}
		b.register(StoreRequests, c)
	}
	b.counter(StoreRetries, float64(run.Retries))
	if v := run.Verify; v != nil {
		b.counter(VerifiedBytes, float64(v.BytesHashed))
		if p := v.Proof; p != nil {
			b.gauge(UnprovedBytes, float64(p.UnprovedBytes))
			b.gauge(OldestProofAge, float64(p.OldestProofAgeSeconds))
		}
		verified(b, run, prev)
	}
	if len(run.Status) > 0 {
		status(b, run.Status)
	}
	if r := run.Retention; r != nil {
		b.gauge(RetentionGarbageBytes, float64(r.GarbageBytes))
		if g := b.gaugeVec(DeprecatedRetentionPartitions, ResultLabel, "dry_run"); g != nil {
			// dry_run is always false: a dry run writes no metrics.
			g.WithLabelValues("trimmed", "false").Set(float64(r.Trimmed))
			g.WithLabelValues("unchanged", "false").Set(float64(r.Unchanged))
			g.WithLabelValues("error", "false").Set(float64(r.Errors))
		}
		b.gauge(DeprecatedRetentionErrors, float64(r.Errors))
		b.gauge(DeprecatedRetentionDuration, secs)
		b.gauge(DeprecatedRetentionLastRun, end)
		lastSuccess(DeprecatedRetentionLastSuccess)
	}
	if b.err != nil {
		return nil, b.err
	}
	return reg, nil
}

// verified writes PartitionLastVerified: End for the partitions verified
// clean at the run's level; the previous time for every other series the
// group had (the run's failed partitions, the other level's, and with
// partitions named, those not named), except, on a complete run, the
// series of partitions it did not look at.
func verified(b *builder, run *Run, prev *Previous) {
	g := b.gaugeVec(PartitionLastVerified, TopicLabel, PartitionLabel, LevelLabel)
	if g == nil {
		return
	}
	v := run.Verify
	seen := map[partKey]bool{}
	set := map[verifiedKey]bool{}
	for _, p := range v.Partitions {
		pk := partKey{p.Topic, strconv.Itoa(int(p.Partition))}
		seen[pk] = true
		if p.OK {
			k := verifiedKey{pk, v.Level}
			g.WithLabelValues(k.topic, k.partition, k.level).Set(float64(run.End.Unix()))
			set[k] = true
		}
	}
	if prev == nil {
		return
	}
	for _, k := range prev.verifiedKeys() {
		if set[k] || (v.Complete && !seen[k.partKey]) {
			continue
		}
		g.WithLabelValues(k.topic, k.partition, k.level).Set(prev.verified[k])
	}
}

// status writes the per-partition series of a status run.
func status(b *builder, rows []PartitionStatus) {
	age := b.gaugeVec(PartitionCheckpointAge, TopicLabel, PartitionLabel)
	tail := b.gaugeVec(PartitionTailObjects, TopicLabel, PartitionLabel)
	loss := b.gaugeVec(PartitionDataLoss, TopicLabel, PartitionLabel)
	blocked := b.gaugeVec(PartitionBlocked, TopicLabel, PartitionLabel)
	logStart := b.gaugeVec(PartitionLogStart, TopicLabel, PartitionLabel)
	hw := b.gaugeVec(PartitionHighWatermark, TopicLabel, PartitionLabel)
	set := func(g *prometheus.GaugeVec, r PartitionStatus, v float64) {
		if g != nil {
			g.WithLabelValues(r.Topic, strconv.Itoa(int(r.Partition))).Set(v)
		}
	}
	for _, r := range rows {
		set(loss, r, flag(r.DataLoss))
		set(blocked, r, flag(r.Blocked))
		if !r.Read {
			continue
		}
		if r.CheckpointAgeSeconds != nil {
			set(age, r, float64(*r.CheckpointAgeSeconds))
		}
		set(tail, r, float64(r.TailObjects))
		set(logStart, r, float64(r.LogStart))
		set(hw, r, float64(r.HW))
	}
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
