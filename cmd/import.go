package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/importer"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/store"
)

func newImportCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "import",
		Short: "Bring data from elsewhere into the store",
		Long: `Bring data written by something else into the store as new streams and
bindings. Existing bindings are never touched.` + exitStatusHelp(),
		Example: `  nereusctl import kafka-log /var/lib/kafka/data/orders-0`,
	}
	c.AddCommand(newImportKafkaLogCmd(g))
	return c
}

type importOptions struct {
	importer.Options
	partition   int64
	topicConfig []string
	configFile  string
	clock       clockFlags
}

func (o *importOptions) addFlags(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&o.Topic, "topic", "", "topic name (default: from the directory name TOPIC-PARTITION); needs --partition")
	f.Int64Var(&o.partition, "partition", -1, "partition number; needs --topic")
	f.StringVar(&o.CleanupPolicy, "cleanup-policy", "", "the binding's cleanup.policy: delete, compact or compact,delete (default: compact for __consumer_offsets and __transaction_state, else delete); same as --topic-config cleanup.policy=")
	f.Int64Var(&o.SegmentBytes, "segment-bytes", 0, "the binding's segment.bytes (default: Kafka's: 100 MiB for the internal topics, else 1 GiB); same as --topic-config segment.bytes=")
	f.StringArrayVar(&o.topicConfig, "topic-config", nil, "a topic config KEY=VALUE with Kafka's name (repeatable): "+strings.Join(retention.TopicConfigKeys(), ", "))
	f.StringVar(&o.configFile, "topic-config-file", "", "a file holding 'kafka-configs --describe --entity-type topics --entity-name TOPIC [--all]' output (or KEY=VALUE lines)")
	f.BoolVar(&o.DryRun, "dry-run", false, "read, recover and report, but write nothing")
	f.Int64Var(&o.MaxSegmentBytes, "max-segment-bytes", importer.DefaultMaxSegmentBytes, "refuse a .log file larger than this")
	o.clock.add(c, true)
	f.BoolVar(&o.IgnoreSnapshots, "ignore-snapshots", false, "import without the broker's producer snapshots (.snapshot files): producers whose batches are gone are not imported")
}

func (o *importOptions) validate(c *cobra.Command) error {
	topicSet, partSet := c.Flags().Changed("topic"), c.Flags().Changed("partition")
	if topicSet != partSet {
		return exitcode.UsageErr(errors.New("--topic and --partition go together"))
	}
	if partSet {
		if o.partition < 0 || o.partition > 1<<31-1 {
			return exitcode.UsageErr(fmt.Errorf("--partition %d: want 0..2147483647", o.partition))
		}
		if err := kafka.ValidateTopic(o.Topic); err != nil {
			return exitcode.UsageErr(fmt.Errorf("--topic: %w", err))
		}
		o.Partition = int32(o.partition)
	}
	if o.SegmentBytes < 0 {
		return exitcode.UsageErr(fmt.Errorf("--segment-bytes %d: want > 0", o.SegmentBytes))
	}
	if o.MaxSegmentBytes <= 0 {
		return exitcode.UsageErr(fmt.Errorf("--max-segment-bytes %d: want > 0", o.MaxSegmentBytes))
	}
	// The import clock: producer snapshots are loaded at it.
	clock, err := o.clock.clock()
	if err != nil {
		return err
	}
	o.Now, o.ProducerIDExpirationMs = clock.Time(), clock.ExpirationMs
	kvs, err := retention.ParseKV(o.topicConfig)
	if err != nil {
		return exitcode.Wrap(exitcode.Usage, fmt.Errorf("import kafka-log: --topic-config: %w", err), topicConfigHint)
	}
	o.TopicConfig = kvs
	if o.configFile != "" {
		data, err := readCappedFile(o.configFile, 16<<20)
		if err != nil {
			return exitcode.UsageErr(fmt.Errorf("import kafka-log: --topic-config-file: %w", err))
		}
		o.ConfigFileData, o.ConfigFileName = data, o.configFile
	}
	return nil
}

func newImportKafkaLogCmd(g *globals) *cobra.Command {
	o := &importOptions{}
	c := &cobra.Command{
		Use:   "kafka-log DIR",
		Short: "Import a Kafka partition directory into a new stream and binding",
		Long: `Read a partition directory written by a Kafka broker (NNNNNNNNNNNNNNNNNNNN.log
segment files) and write it into a NEW stream with a new binding. Topic and
partition come from the directory name (TOPIC-PARTITION, split at the last
'-') unless --topic and --partition are given. An existing binding is never
touched: the import refuses and says which stream it points to.

The directory is untrusted: symlinks and non-regular files are refused, and
every file is read with a size cap. Recovery follows Kafka's log loader: in
the LAST segment, a batch whose header claims more bytes than the file
holds (a torn write) is dropped with everything after it, and a zero-filled
preallocated tail (log.preallocate=true) ends the log; the bytes dropped are
reported per file. A torn or zero tail in an earlier segment, a CRC mismatch
anywhere, offsets going back or overlapping segments stop the import with
exit 3, naming the file and the byte position. Offset gaps, normal after
compaction, are reported.

Each segment file becomes one sealed COMMITTED generation of objects of
about 1 MiB; the last one stays the open segment. The stream starts at the
first segment's base offset. When the log directory above DIR has a
log-start-offset-checkpoint whose entry for the partition is above that,
it becomes the stream head's trim (a guarded CAS of head.json, read back)
and the binding's observed_log_start. The stream id derives from the
topic, partition and the SHA-256 of the imported bytes, so rerunning an
interrupted import resumes it. A full replay of the written stream must
reproduce the state derived from the files before the binding is created.
The partition's leader-epoch-checkpoint is compared with the replayed
leader epochs: match, explained (e.g. the first batches of an epoch were
compacted away) or differ.

Producers whose batches are gone are known only from the broker's producer
snapshot (NNNNNNNNNNNNNNNNNNNN.snapshot): import hydrates them from the
newest snapshot at or below the stream's first offset, drops those expired
at --now (producer.id.expiration.ms, --producer-id-expiration-ms), replays
the segments on top and writes the state as the stream's first checkpoint
(docs/kafka-retention-rules.md §14.1). A directory with a snapshot but no
segment file imports as an empty log. A corrupt snapshot is exit 3 naming
the file; --ignore-snapshots imports without snapshots.

The binding's config snapshot is what retention and compaction plan with,
so import never invents a retention policy. Give the topic's config with
--topic-config-file (the output of 'kafka-configs --describe --entity-type
topics --entity-name TOPIC', best with --all; plain KEY=VALUE lines work
too; other configs Kafka lists are ignored and named) and/or --topic-config
KEY=VALUE (repeatable; Kafka's names, types and ranges), applied in that
order. A key no config gives takes Kafka's default, except retention.ms and
retention.bytes: they are -1, retention OFF, and import says so on stderr
and in its report. cleanup.policy is compact for __consumer_offsets and
__transaction_state, else delete, unless given. The binding records where
its config came from (config_source); change it later with 'nereusctl config
set'. --dry-run reads, recovers and reports everything but writes nothing.` + exitStatusHelp(
			"1 the binding exists already",
			"2 the directory, a file in it or its name is refused (symlink, non-regular file, bad name, too large)",
			"3 a segment file is corrupt (CRC, torn or zero tail in a non-last segment, overlapping offsets)"),
		Example: `  nereusctl import kafka-log /var/lib/kafka/data/__consumer_offsets-18
  nereusctl import kafka-log ./backup/orders-0 --dry-run
  nereusctl import kafka-log ./restore/p0 --topic orders --partition 0 --topic-config cleanup.policy=compact,delete -o json
  kafka-configs.sh --bootstrap-server kafka:9092 --describe --all --entity-type topics --entity-name orders > orders.cfg
  nereusctl import kafka-log /var/lib/kafka/data/orders-0 --topic-config-file orders.cfg`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(cmd); err != nil {
				return err
			}
			o.Dir = args[0]
			return runImport(cmd, g, o)
		},
	}
	o.addFlags(c)
	return c
}

func runImport(cmd *cobra.Command, g *globals, o *importOptions) error {
	ctx := cmd.Context()
	// Check the directory before the store is opened (and, for a real
	// import, created).
	im, err := importer.Prepare(o.Options)
	if err != nil {
		return importErr(err)
	}
	var st store.Store
	if o.DryRun {
		// A dry run checks the binding when the store is there, but never
		// creates it.
		if s, err := g.store(ctx); err == nil {
			st = s
		}
	} else {
		g.createStore = true
		if st, err = g.store(ctx); err != nil {
			return err
		}
	}
	res, err := im.Run(ctx, st)
	if err != nil {
		return importErr(err)
	}
	if len(res.ConfigDefaulted) > 0 {
		name := fmt.Sprintf("%s-%d", res.Topic, res.Partition)
		off := "retention is OFF"
		if !res.RetentionOff {
			off = "that retention limit is off"
		}
		fmt.Fprintf(g.stderr, "import kafka-log %s: %s: no topic config gave them, so %s (config source: %s)\n",
			name, strings.Join(res.ConfigDefaulted, ", "), off, res.ConfigSource)
		fmt.Fprintf(g.stderr, "hint: give the topic's config with --topic-config-file or --topic-config, or later: nereusctl config set %s retention.ms=VALUE\n", res.Topic)
	}
	if g.json() {
		return writeJSON(g.stdout, importJSON{SchemaVersion: SchemaVersion, Result: res})
	}
	return renderImport(g.stdout, res)
}

// importJSON is import kafka-log's -o json document: the import report
// with schema_version first.
type importJSON struct {
	SchemaVersion int `json:"schema_version"`
	*importer.Result
}

func importErr(err error) error {
	if exitcode.HintOf(err) != "" {
		// The importer named the way out already (a corrupt producer
		// snapshot: --ignore-snapshots).
		return err
	}
	switch {
	case errors.Is(err, retention.ErrBadTopicConfig):
		return exitcode.Wrap(exitcode.Usage, err, topicConfigHint)
	case errors.Is(err, importer.ErrBindingExists):
		return exitcode.Wrap(exitcode.Error, err, "the partition is bound already; import into another store (--store) or choose another --topic/--partition")
	case errors.Is(err, importer.ErrRefused):
		return exitcode.Wrap(exitcode.Usage, err, "point DIR at the partition directory itself (a real directory of regular files) and check its name")
	case errors.Is(err, kafka.ErrCRC):
		return exitcode.Wrap(exitcode.Verify, err, "restore the partition from a replica; if this is the torn tail of a crashed broker, import a copy cut at the named byte")
	case exitcode.IsCorruption(err):
		return exitcode.Wrap(exitcode.Verify, err, "the segment files are damaged; restore the partition from a replica")
	}
	return err
}

func renderImport(w io.Writer, r *importer.Result) error {
	verb := "Imported"
	if r.DryRun {
		verb = "Dry run: would import"
	}
	fmt.Fprintf(w, "%s %s as %s-%d into stream %s (%s)\n", verb, r.Dir, r.Topic, r.Partition, r.StreamID, r.Binding)
	fmt.Fprintf(w, "Segments: %d, batches %d, records %d, %d bytes kept, %d dropped\n", len(r.Segments), r.Batches, r.Records, r.Bytes, r.BytesDropped)
	fmt.Fprintf(w, "Stream: start %d, head %d, log start %d from %s\n", r.Start, r.Head, r.LogStart, r.LogStartSource)
	fmt.Fprintf(w, "        %d objects, %d sealed generations, the last segment open\n", r.Objects, r.Generations)
	fmt.Fprintf(w, "Config: cleanup.policy=%s retention.ms=%d retention.bytes=%d segment.bytes=%d (source: %s)\n", r.Config.CleanupPolicy, r.Config.RetentionMs, r.Config.RetentionBytes, r.Config.SegmentBytes, r.ConfigSource)
	if r.GapsTotal == 0 {
		fmt.Fprintln(w, "Gaps: none")
	} else {
		fmt.Fprintf(w, "Gaps: %d, %d offsets without a batch:\n", r.GapsTotal, r.GapOffsets)
		for _, gp := range r.Gaps {
			fmt.Fprintf(w, "  [%d, %d) %s %s\n", gp.From, gp.To, gp.Where, gp.File)
		}
		if int64(len(r.Gaps)) < r.GapsTotal {
			fmt.Fprintf(w, "  … %d more\n", r.GapsTotal-int64(len(r.Gaps)))
		}
	}
	e := r.Epochs
	fmt.Fprintf(w, "Leader epochs: %s (leader-epoch-checkpoint: %s; derived by %s: %s)\n", e.Status, importer.EpochsText(e.Checkpoint), e.Source, importer.EpochsText(e.Derived))
	for _, n := range e.Notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
	if sn := r.Snapshot; sn != nil {
		fmt.Fprintf(w, "Producer snapshot: %s (offset %d): %d producers, %d expired at %s (producer.id.expiration.ms %d), %d hydrated", sn.File, sn.Offset, sn.Entries, sn.Expired, sn.Clock, sn.ExpirationMs, sn.Producers)
		if sn.Checkpoint != "" {
			fmt.Fprintf(w, " into %s", sn.Checkpoint)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "Producer snapshot: none used")
	}
	fmt.Fprintf(w, "Imported bytes: sha256 %s\n", r.SHA256)
	fmt.Fprintf(w, "State digest: %s\n", r.StateDigest)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	fmt.Fprintln(w)
	rows := make([][]string, 0, len(r.Segments))
	for _, s := range r.Segments {
		offs := "-"
		if s.FirstOffset != nil {
			offs = fmt.Sprintf("[%d, %d)", *s.FirstOffset, s.NextOffset)
		}
		gen := "open"
		if s.Generation != nil {
			gen = fmt.Sprint(*s.Generation)
		} else if s.Objects == 0 {
			gen = "-"
		}
		rows = append(rows, []string{s.File, fmt.Sprint(s.BaseOffset), fmt.Sprint(s.Size), fmt.Sprint(s.Bytes), fmt.Sprint(s.DroppedBytes), fmt.Sprint(s.Batches), fmt.Sprint(s.Records), offs, fmt.Sprint(s.Objects), gen})
	}
	if err := writeTable(w, []string{"SEGMENT", "BASE", "SIZE", "KEPT", "DROPPED", "BATCHES", "RECORDS", "OFFSETS", "OBJECTS", "GEN"}, rows); err != nil {
		return err
	}
	var drops []string
	for _, s := range r.Segments {
		if s.DroppedBytes > 0 {
			drops = append(drops, fmt.Sprintf("Dropped %d bytes of %s: %s", s.DroppedBytes, s.File, s.DropReason))
		}
	}
	if len(drops) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(drops, "\n"))
	}
	return nil
}

// topicConfigHint lists what a topic config may say.
var topicConfigHint = "topic configs use Kafka's names: " + strings.Join(retention.TopicConfigKeys(), ", ") +
	"; cleanup.policy is delete, compact or compact,delete; numbers are decimal (-1 for no limit on retention.ms and retention.bytes)"
