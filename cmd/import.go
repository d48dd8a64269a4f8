package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/importer"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
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
	f.BoolVar(&o.Recover, "recover", false, "recover as Kafka's log loader does after an unclean shutdown: truncate each segment from the recovery point on at its first invalid batch (CRC, garbage, torn), drop the segments after it, report every byte dropped")
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
	// The topic config is checked here, before any directory is read: a
	// bad value is exit 2 even when no directory is imported.
	if err := importer.CheckConfig(o.Options); err != nil {
		return importErr(err)
	}
	return nil
}

func newImportKafkaLogCmd(g *globals) *cobra.Command {
	o := &importOptions{}
	c := &cobra.Command{
		Use:   "kafka-log DIR...",
		Short: "Import Kafka partition directories (or a whole log.dirs folder) into new streams and bindings",
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

--recover does what Kafka's log loader does after an unclean shutdown
(LogLoader.recoverLog, LogSegment.recover): every segment from the one
holding the recovery point (recovery-point-offset-checkpoint in the log
directory above DIR; 0 without it) on is truncated at its first invalid
batch (a CRC failure, garbage, a torn batch), the first segment truncated
becomes the last one, and every segment after it is dropped whole. Each
byte dropped is reported (table, Dropped lines, bytes_dropped in JSON). A
defect below the recovery point still stops the import.

Each segment file becomes one sealed COMMITTED generation of objects of
about 1 MiB; the last one stays the open segment. The stream starts at the
first segment's base offset. When the log directory above DIR has a
log-start-offset-checkpoint whose entry for the partition is above that,
it becomes the stream head's trim (a guarded CAS of head.json, read back)
and the binding's observed_log_start. The stream id derives from the
topic, partition and the SHA-256 of the imported bytes, so rerunning an
interrupted import resumes it. A full replay of the written stream must
reproduce the state derived from the files before the binding is created.
The partition's leader-epoch-checkpoint is the authority where the
batches are gone: its entries below the first surviving batch, for epochs
no batch carries, or whose opening batches were removed are imported (a
checkpoint at the stream's first offset holds them, so every replay sees
them); the batches give the rest. The file is compared with the batches'
epochs (match, explained, e.g. the first batches of an epoch were
compacted away, or differ) and each disagreement is listed.

Producer snapshots (NNNNNNNNNNNNNNNNNNNN.snapshot) are used as Kafka's log
loader uses them (docs/kafka-retention-rules.md §16.1): a snapshot not at
a segment base (except the largest, at or above the last base: the one a
clean shutdown writes at the log end), at or below the log start, or above
the log end is discarded; the newest remaining one is loaded, a corrupt one
passed over for the next; producers expired at --now
(producer.id.expiration.ms, --producer-id-expiration-ms) are dropped; only
the segments from the snapshot's offset on are replayed on top (without a
snapshot, from the log start). That state is written as the stream's
genesis checkpoint, anchored where the replay starts, and the binding
names it, so every replay starts from it as the broker does. The report
names the snapshot used, every one ignored and why, and each producer the
snapshot and the segments it covers describe differently (the snapshot
wins). A directory with a snapshot but no segment file imports as an empty
log. --ignore-snapshots rebuilds the producer state from the log start, as
the loader does without a snapshot.

Legacy message sets (magic 0 and 1, compressed wrappers included) are
imported as Kafka reads them: each is stored as the RecordBatch v2 holding
its offsets, timestamps, timestamp type, keys and values, with no producer
and no leader epoch (docs/formats/legacy.md); a legacy message that fails
its CRC is what Kafka's recovery truncates, one whose CRC passes but whose
contents cannot be read stops the import (exit 3; --recover does not drop
it). A .log file without batches that is not the last is a segment of its
own, aged by its file's mtime, as in Kafka; an open segment without
timestamps is aged by its file's mtime too.

A rerun of an interrupted import resumes its own half-written stream; a
rerun over the binding it made from the same bytes reports "already
imported (same bytes)" and exits 0.

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
set'. --dry-run reads, recovers and reports everything but writes nothing.

Several DIRs, or a DIR that is a Kafka log.dirs folder (it holds no
segment files itself; every TOPIC-PARTITION subdirectory is a partition),
import each partition --parallel at once, each holding its partition lease
while it writes (a lease another job holds past --lease-wait: exit 4 for
that partition). A subdirectory that is not a partition (its name is not
TOPIC-PARTITION, e.g. a deleted partition's "-delete" folder, or a symbolic
link) is reported on stderr and skipped; the others are imported; a folder
with no partition directory at all is exit 2 (nothing to import), and so
are two directories naming one partition, before anything is written. The
reports come in directory order; one partition's failure never stops the
others, and the exit status is the worst partition's. --topic and
--partition name one partition only. -o json then prints {"schema_version",
"imports": [{"dir", "report" (the one-directory document) or "error"}],
"skipped": [{"dir", "reason"}]}.` + exitStatusHelp(
			"1 the binding exists already, made from other bytes",
			"2 the directory, a file in it or its name is refused (symlink, non-regular file, bad name, too large); two directories name one partition; nothing to import",
			"3 a segment file is corrupt (CRC, torn or zero tail in a non-last segment, overlapping offsets)",
			"4 the partition's lease is held by another job past --lease-wait (the message names the holder); the store holds a half-written stream under this import's id that another writer made"),
		Example: `  nereusctl import kafka-log /var/lib/kafka/data/__consumer_offsets-18
  nereusctl import kafka-log ./backup/orders-0 --dry-run
  nereusctl import kafka-log ./restore/p0 --topic orders --partition 0 --topic-config cleanup.policy=compact,delete -o json
  kafka-configs.sh --bootstrap-server kafka:9092 --describe --all --entity-type topics --entity-name orders > orders.cfg
  nereusctl import kafka-log /var/lib/kafka/data/orders-0 --topic-config-file orders.cfg`,
		Args: func(cmd *cobra.Command, args []string) error {
			return exitcode.UsageErr(cobra.MinimumNArgs(1)(cmd, args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(cmd); err != nil {
				return err
			}
			dirs, skipped, single := expandImportDirs(args)
			if single {
				o.Dir = dirs[0]
				return runImport(cmd, g, o)
			}
			return runImportMany(cmd, g, o, dirs, skipped)
		},
	}
	o.addFlags(c)
	return c
}

// importSkip is a directory of a log.dirs folder that is not a partition.
type importSkip struct {
	Dir    string `json:"dir"`
	Reason string `json:"reason"`
}

// expandImportDirs turns the DIR arguments into partition directories: a
// DIR holding segment files (or nothing to tell) is one; a DIR with no
// segment file but with subdirectories is a Kafka log.dirs folder, whose
// TOPIC-PARTITION subdirectories are the partitions (sorted) and whose
// other subdirectories are skipped with the reason. single is one DIR that
// is itself a partition directory (the one-partition output).
func expandImportDirs(args []string) (dirs []string, skipped []importSkip, single bool) {
	for _, a := range args {
		ents, err := os.ReadDir(a)
		if err != nil || isPartitionDir(ents) {
			// importer.Prepare checks (and refuses) it.
			dirs = append(dirs, a)
			continue
		}
		var subs []string
		skippedBefore := len(skipped)
		for _, e := range ents {
			path := filepath.Join(a, e.Name())
			switch {
			case e.Type()&os.ModeSymlink != 0:
				skipped = append(skipped, importSkip{Dir: path, Reason: "a symbolic link (links are never followed)"})
			case !e.IsDir():
				// meta.properties, the checkpoint files: not partitions.
			default:
				if _, _, err := kafka.ParseTopicPartition(e.Name()); err != nil {
					skipped = append(skipped, importSkip{Dir: path, Reason: "not a partition directory: its name is not TOPIC-PARTITION"})
					continue
				}
				subs = append(subs, path)
			}
		}
		if len(subs) == 0 && len(skipped) == skippedBefore {
			dirs = append(dirs, a) // Prepare says what is wrong with it
			continue
		}
		sort.Strings(subs)
		dirs = append(dirs, subs...)
	}
	return dirs, skipped, len(args) == 1 && len(dirs) == 1 && dirs[0] == args[0] && len(skipped) == 0
}

// isPartitionDir: the listing holds a segment file (*.log), or no
// subdirectory at all.
func isPartitionDir(ents []os.DirEntry) bool {
	subdirs := false
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".log") {
			return true
		}
		if e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			subdirs = true
		}
	}
	return !subdirs
}

// importManyJSON is import kafka-log's -o json document for several
// partition directories (docs/json-output.md).
type importManyJSON struct {
	SchemaVersion int              `json:"schema_version"`
	Imports       []importManyItem `json:"imports"`
	Skipped       []importSkip     `json:"skipped"`
}

// importManyItem is one directory's outcome: the one-directory report, or
// the error.
type importManyItem struct {
	Dir    string      `json:"dir"`
	Report *importJSON `json:"report,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// runImportMany imports several partition directories, --parallel at once,
// each under its partition lease (in runImportOne); the reports in
// directory order, one failure never stopping the others.
// importStore opens the store an import writes (creating a missing
// file:// root); a dry run checks the binding when the store is there, but
// never creates it (nil store when there is none).
func importStore(ctx context.Context, g *globals, dryRun bool) (store.Store, error) {
	if dryRun {
		if s, err := g.store(ctx); err == nil {
			return s, nil
		}
		return nil, nil
	}
	g.createStore = true
	return g.mutatingStore(ctx, false)
}

func runImportMany(cmd *cobra.Command, g *globals, o *importOptions, dirs []string, skipped []importSkip) error {
	ctx := cmd.Context()
	if o.Topic != "" {
		return exitcode.UsageErr(fmt.Errorf("import kafka-log: --topic and --partition name one partition, and %d directories were given", len(dirs)))
	}
	if len(dirs) == 0 {
		var why []string
		for _, sk := range skipped {
			why = append(why, fmt.Sprintf("%s (%s)", sk.Dir, sk.Reason))
		}
		return exitcode.Wrap(exitcode.Usage, fmt.Errorf("import kafka-log: nothing to import: no TOPIC-PARTITION directory in %s; skipped: %s", strings.Join(cmd.Flags().Args(), ", "), strings.Join(why, "; ")),
			"point DIR at a partition directory (NNNNNNNNNNNNNNNNNNNN.log files) or at a Kafka log.dirs folder holding TOPIC-PARTITION directories")
	}
	// Two directories naming one partition would import into one binding
	// twice: refused before anything is written.
	seen := map[layout.TopicPartition]string{}
	for _, d := range dirs {
		topic, p, err := kafka.ParseTopicPartition(filepath.Base(filepath.Clean(d)))
		if err != nil {
			continue // importer.Prepare refuses it
		}
		tp := layout.TopicPartition{Topic: topic, Partition: p}
		if first, dup := seen[tp]; dup {
			return exitcode.Wrap(exitcode.Usage, fmt.Errorf("import kafka-log: %s and %s both name the partition %s", first, d, kafka.TopicPartitionDir(topic, p)),
				"import one directory per partition; give the other with --topic/--partition in a run of its own, or into another store")
		}
		seen[tp] = d
	}
	for _, sk := range skipped {
		fmt.Fprintf(g.stderr, "import kafka-log: skipped %s: %s\n", sk.Dir, sk.Reason)
	}
	st, err := importStore(ctx, g, o.DryRun)
	if err != nil {
		return err
	}
	type outcome struct {
		res *importer.Result
		err error
	}
	outs, err := fleet.Map(ctx, g.parallel(), dirs, func(ctx context.Context, _ int, dir string) (outcome, error) {
		one := *o
		one.Dir = dir
		res, err := runImportOne(ctx, g, st, &one)
		return outcome{res: res, err: err}, nil
	})
	if err != nil {
		return err
	}
	var fails failures
	doc := importManyJSON{SchemaVersion: SchemaVersion, Imports: []importManyItem{}, Skipped: []importSkip{}}
	doc.Skipped = append(doc.Skipped, skipped...)
	for i, dir := range dirs {
		it := importManyItem{Dir: dir}
		if e := outs[i].err; e != nil {
			fails.add(e)
			it.Error = e.Error()
		} else {
			warnConfigDefaulted(g, outs[i].res)
			it.Report = &importJSON{SchemaVersion: SchemaVersion, Result: outs[i].res}
		}
		doc.Imports = append(doc.Imports, it)
	}
	if g.json() {
		if err := writeJSON(g.stdout, doc); err != nil {
			return err
		}
	} else {
		for _, it := range doc.Imports {
			if it.Error != "" {
				fmt.Fprintf(g.stdout, "%s: error: %s\n\n", it.Dir, it.Error)
				continue
			}
			if err := renderImport(g.stdout, it.Report.Result); err != nil {
				return err
			}
			fmt.Fprintln(g.stdout)
		}
		fmt.Fprintf(g.stdout, "import kafka-log: %d of %d partition directories imported, %d failed, %d skipped\n", len(dirs)-fails.n, len(dirs), fails.n, len(skipped))
	}
	return fails.err("import kafka-log", len(dirs))
}

// runImportOne imports one partition directory into st (nil in a dry run
// without a store), holding the partition's lease while it writes.
func runImportOne(ctx context.Context, g *globals, st store.Store, o *importOptions) (*importer.Result, error) {
	im, err := importer.Prepare(o.Options)
	if err != nil {
		return nil, importErr(err)
	}
	return runPrepared(ctx, g, st, im, o)
}

// runPrepared runs a prepared import: a dry run as it is, a real one under
// the lease of the partition it writes.
func runPrepared(ctx context.Context, g *globals, st store.Store, im *importer.Import, o *importOptions) (*importer.Result, error) {
	if o.DryRun {
		res, err := im.Run(ctx, st)
		if err != nil {
			return nil, importErr(err)
		}
		return res, nil
	}
	var res *importer.Result
	err := g.withPartition(ctx, st, importTP(o), func(ctx context.Context) error {
		var err error
		res, err = im.Run(ctx, st)
		return err
	})
	if err != nil {
		return nil, importErr(err)
	}
	return res, nil
}

// warnConfigDefaulted says on stderr which retention limits no topic
// config gave.
func warnConfigDefaulted(g *globals, res *importer.Result) {
	if len(res.ConfigDefaulted) == 0 {
		return
	}
	name := fmt.Sprintf("%s-%d", res.Topic, res.Partition)
	off := "retention is OFF"
	if !res.RetentionOff {
		off = "that retention limit is off"
	}
	fmt.Fprintf(g.stderr, "import kafka-log %s: %s: no topic config gave them, so %s (config source: %s)\n",
		name, strings.Join(res.ConfigDefaulted, ", "), off, res.ConfigSource)
	fmt.Fprintf(g.stderr, "hint: give the topic's config with --topic-config-file or --topic-config, or later: nereusctl config set %s retention.ms=VALUE\n", res.Topic)
}

func runImport(cmd *cobra.Command, g *globals, o *importOptions) error {
	ctx := cmd.Context()
	// Check the directory before the store is opened (and, for a real
	// import, created).
	im, err := importer.Prepare(o.Options)
	if err != nil {
		return importErr(err)
	}
	st, err := importStore(ctx, g, o.DryRun)
	if err != nil {
		return err
	}
	var prog *progress // a dry run writes nothing
	if !o.DryRun {
		prog = newProgress(g, "importing", im.Size())
	}
	defer prog.done()
	im.SetProgress(prog.add)
	res, err := runPrepared(ctx, g, st, im, o)
	prog.done()
	if err != nil {
		return err
	}
	warnConfigDefaulted(g, res)
	if g.json() {
		return writeJSON(g.stdout, importJSON{SchemaVersion: SchemaVersion, Result: res})
	}
	return renderImport(g.stdout, res)
}

// importTP is the partition an import writes: --topic/--partition, else
// the directory's name (TOPIC-PARTITION, as importer.Prepare reads it,
// which has accepted it by now).
func importTP(o *importOptions) layout.TopicPartition {
	if o.Topic != "" {
		return layout.TopicPartition{Topic: o.Topic, Partition: o.Partition}
	}
	topic, p, _ := kafka.ParseTopicPartition(filepath.Base(filepath.Clean(o.Dir)))
	return layout.TopicPartition{Topic: topic, Partition: p}
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
		return exitcode.Wrap(exitcode.Error, err, "the partition is bound already, to a stream imported from other bytes; import into another store (--store) or choose another --topic/--partition")
	case errors.Is(err, importer.ErrRefused):
		return exitcode.Wrap(exitcode.Usage, err, "point DIR at the partition directory itself (a real directory of regular files) and check its name")
	case errors.Is(err, importer.ErrStreamConflict):
		return exitcode.Wrap(exitcode.Blocked, err, "the store holds a half-written stream under this import's id that another build or writer made: delete its keys (nereusctl store ls streams/<id>/) or import into another store (--store)")
	case errors.Is(err, kafka.ErrLegacyUnreadable):
		return exitcode.Wrap(exitcode.Verify, err, "Kafka keeps this legacy message set (its CRC passes) but no reader can read it; --recover would not drop it either: restore the partition from a replica, or import a copy cut at the named byte")
	case errors.Is(err, importer.ErrNeedsRecovery):
		return exitcode.Wrap(exitcode.Verify, err, "Kafka's own log recovery would truncate the segment there: rerun with --recover to do the same (every byte dropped is reported; try --dry-run first), or restore the partition from a replica")
	case errors.Is(err, kafka.ErrCRC):
		return exitcode.Wrap(exitcode.Verify, err, "restore the partition from a replica; if this is the torn tail of a crashed broker, import a copy cut at the named byte")
	case exitcode.IsCorruption(err):
		return exitcode.Wrap(exitcode.Verify, err, "the segment files are damaged; restore the partition from a replica")
	}
	return err
}

func renderImport(w io.Writer, r *importer.Result) error {
	verb := "Imported"
	switch {
	case r.AlreadyImported:
		verb = "Already imported (same bytes):"
	case r.DryRun:
		verb = "Dry run: would import"
	}
	fmt.Fprintf(w, "%s %s as %s-%d into stream %s (%s)\n", verb, r.Dir, r.Topic, r.Partition, r.StreamID, r.Binding)
	fmt.Fprintf(w, "Segments: %d, batches %d, records %d, %d bytes kept, %d dropped\n", len(r.Segments), r.Batches, r.Records, r.Bytes, r.BytesDropped)
	fmt.Fprintf(w, "Stream: start %d, head %d, log start %d from %s\n", r.Start, r.Head, r.LogStart, r.LogStartSource)
	fmt.Fprintf(w, "        %d objects, %d sealed generations, the last segment open\n", r.Objects, r.Generations)
	if r.Recover {
		fmt.Fprintf(w, "Recovery: --recover from recovery point %d (Kafka's LogSegment.recover), %d bytes dropped\n", r.RecoveryPoint, r.BytesDropped)
	}
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
	fmt.Fprintf(w, "Imported leader epochs: %s (%d from leader-epoch-checkpoint", importer.EpochsText(e.Imported), e.FromFile)
	if e.GenesisCheckpoint != "" {
		fmt.Fprintf(w, ", held by %s", e.GenesisCheckpoint)
	}
	fmt.Fprintln(w, ")")
	for _, d := range e.Disagreements {
		fmt.Fprintf(w, "  disagreement: epoch %d: file %s, batches %s, imported %s: %s\n", d.Epoch, offOrNone(d.FileStartOffset), offOrNone(d.BatchStartOffset), offOrNone(d.ImportedStartOffset), d.Reason)
	}
	renderSnapshot(w, r)
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

// renderSnapshot prints what the producer snapshots gave: the one Kafka's
// log loader uses (or none), every other with the rule that discards it,
// and where the snapshot and the segments it covers disagree.
func renderSnapshot(w io.Writer, r *importer.Result) {
	sn := r.Snapshot
	switch {
	case sn == nil:
		fmt.Fprintln(w, "Producer snapshot: none (no .snapshot file)")
		return
	case sn.File == "":
		fmt.Fprintf(w, "Producer snapshot: none used (%d ignored): the producer state is rebuilt from the log start %d\n", len(sn.Ignored), sn.ReplayFrom)
	default:
		fmt.Fprintf(w, "Producer snapshot: %s (offset %d): %d producers, %d expired at %s (producer.id.expiration.ms %d), %d loaded", sn.File, sn.Offset, sn.Entries, sn.Expired, sn.Clock, sn.ExpirationMs, sn.Producers)
		if sn.Checkpoint != "" {
			fmt.Fprintf(w, " into %s", sn.Checkpoint)
		}
		fmt.Fprintf(w, "; the segments from %d on are replayed\n", sn.ReplayFrom)
	}
	for _, ig := range sn.Ignored {
		fmt.Fprintf(w, "  ignored %s: %s\n", ig.File, ig.Reason)
	}
	view := func(v *importer.ProducerView) string {
		if v == nil {
			return "none"
		}
		return fmt.Sprintf("epoch %d, last sequence %d at offset %d, txn %d", v.Epoch, v.LastSequence, v.LastOffset, v.CurrentTxnFirstOffset)
	}
	for _, d := range sn.Disagreements {
		fmt.Fprintf(w, "  disagreement: producer %d: snapshot %s; segments %s: %s\n", d.ProducerID, view(d.Snapshot), view(d.Segments), d.Reason)
	}
	if n := sn.DisagreementsTotal - len(sn.Disagreements); n > 0 {
		fmt.Fprintf(w, "  … %d more disagreements\n", n)
	}
}

// offOrNone renders an optional offset ("none" when absent).
func offOrNone(o *int64) string {
	if o == nil {
		return "none"
	}
	return fmt.Sprint(*o)
}

// topicConfigHint lists what a topic config may say.
var topicConfigHint = "topic configs use Kafka's names: " + strings.Join(retention.TopicConfigKeys(), ", ") +
	"; cleanup.policy is delete, compact or compact,delete; numbers are decimal (-1 for no limit on retention.ms and retention.bytes)"
