package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/dumplog"
	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
)

type dumpOptions struct {
	from        int64
	count       int64
	deep        bool
	decoder     string
	verifyCRC   bool
	raw         bool
	printData   bool
	showObjects bool
	group       string
	txn         string
	partCount   int32
	since       string
	until       string
}

func (o *dumpOptions) addFlags(c *cobra.Command) {
	c.Flags().Int64Var(&o.from, "from", -1, "first offset to show (default: the log start); the batch holding it is shown whole")
	c.Flags().Int64Var(&o.count, "count", 0, "show at most N batches, or N records with --deep (0: no limit)")
	c.Flags().BoolVar(&o.deep, "deep", false, "decode every batch and print one line per record (kafka-dump-log --deep-iteration)")
	c.Flags().StringVar(&o.decoder, "decoder", "", "decode record keys and values: offsets (__consumer_offsets) or txn (__transaction_state); implies --deep")
	c.Flags().BoolVar(&o.verifyCRC, "verify-crc", true, "check every batch CRC, as kafka-dump-log does (isvalid); --verify-crc=false reads headers only and prints isvalid: unchecked (--deep always checks)")
	c.Flags().BoolVar(&o.showObjects, "show-objects", false, "add each batch's stream object (\"object: KEY\") after kafka-dump-log's fields")
	c.Flags().BoolVar(&o.printData, "print-data-log", false, "print each record's key and value as text (kafka-dump-log's flag: \"key: … payload: …\"; bytes that are not UTF-8 escaped as \\xNN); implies --deep")
	c.Flags().BoolVar(&o.raw, "raw", false, "for a compacted partition: dump the COMMITTED batches instead of the READ_COMMITTED view")
	c.Flags().StringVar(&o.group, "group", "", "dump __consumer_offsets: only this consumer group's records, from the partition its coordinator uses (Utils.abs(group.hashCode()) % partitions); implies --deep --decoder offsets")
	c.Flags().StringVar(&o.txn, "txn", "", "dump __transaction_state: only this transactional id's records, from the partition its coordinator uses; implies --deep --decoder txn")
	c.Flags().Int32Var(&o.partCount, "partition-count", 0, "with --group or --txn: the coordinator topic's partition count (offsets.topic.num.partitions, transaction.state.log.num.partitions; default: the topic's bindings in the store, 0 to N-1)")
	c.Flags().StringVar(&o.since, "since", "", "only records with a timestamp at or after TIME (RFC3339, or ms since the epoch); batches without one are not shown")
	c.Flags().StringVar(&o.until, "until", "", "only records with a timestamp before TIME (RFC3339, or ms since the epoch)")
}

func (o *dumpOptions) validate() (dumplog.Options, error) {
	if o.from < -1 {
		return dumplog.Options{}, exitcode.UsageErr(fmt.Errorf("--from %d: want an offset >= 0", o.from))
	}
	if o.count < 0 {
		return dumplog.Options{}, exitcode.UsageErr(fmt.Errorf("--count %d: want >= 0", o.count))
	}
	dec, err := dumplog.ParseDecoder(o.decoder)
	if err != nil {
		return dumplog.Options{}, exitcode.UsageErr(fmt.Errorf("--%w", err))
	}
	var f dumplog.Filter
	switch {
	case o.group != "" && o.txn != "":
		return dumplog.Options{}, exitcode.UsageErr(fmt.Errorf("--group and --txn: give one (a group lives in __consumer_offsets, a transactional id in __transaction_state)"))
	case o.group != "":
		f.Group = o.group
		if dec == dumplog.DecoderTxn {
			return dumplog.Options{}, exitcode.UsageErr(fmt.Errorf("--group with --decoder txn: a group's records are __consumer_offsets records (--decoder offsets)"))
		}
		dec = dumplog.DecoderOffsets
	case o.txn != "":
		f.TransactionalID = o.txn
		if dec == dumplog.DecoderOffsets {
			return dumplog.Options{}, exitcode.UsageErr(fmt.Errorf("--txn with --decoder offsets: a transactional id's records are __transaction_state records (--decoder txn)"))
		}
		dec = dumplog.DecoderTxn
	case o.partCount != 0:
		return dumplog.Options{}, exitcode.UsageErr(fmt.Errorf("--partition-count is for --group or --txn"))
	}
	if o.partCount < 0 {
		return dumplog.Options{}, exitcode.UsageErr(fmt.Errorf("--partition-count %d: want at least 1", o.partCount))
	}
	if o.since != "" {
		ms, err := parseTimeFlag("since", o.since)
		if err != nil {
			return dumplog.Options{}, err
		}
		f.Since = &ms
	}
	if o.until != "" {
		ms, err := parseTimeFlag("until", o.until)
		if err != nil {
			return dumplog.Options{}, err
		}
		f.Until = &ms
	}
	if f.Since != nil && f.Until != nil && *f.Until <= *f.Since {
		return dumplog.Options{}, exitcode.UsageErr(fmt.Errorf("--until %s is not after --since %s: no record can be in between", o.until, o.since))
	}
	return dumplog.Options{From: o.from, Count: o.count, Deep: o.deep || o.printData || dec != dumplog.DecoderNone, Decoder: dec, VerifyCRC: o.verifyCRC, PrintData: o.printData, ShowObjects: o.showObjects, Filter: f}, nil
}

// target is the partition a dump reads: the argument, or with --group or
// --txn the coordinator topic's partition that holds the id's records.
func (o *dumpOptions) target(cmd *cobra.Command, g *globals, arg string) (string, *dumplog.Coordinator, error) {
	id := o.group + o.txn
	if id == "" {
		return arg, nil, nil
	}
	ctx := cmd.Context()
	st, err := g.store(ctx)
	if err != nil {
		return "", nil, err
	}
	topic := arg
	if o.group != "" && topic != "__consumer_offsets" || o.txn != "" && topic != "__transaction_state" {
		want := "__consumer_offsets --group G"
		if o.txn != "" {
			want = "__transaction_state --txn ID"
		}
		return "", nil, exitcode.UsageErr(fmt.Errorf("dump %s: with --%s give the topic alone: dump %s (the partition is the coordinator's)", arg, map[bool]string{true: "group", false: "txn"}[o.group != ""], want))
	}
	c, err := dumplog.CoordinatorPartition(ctx, st, topic, id, o.partCount)
	if err != nil {
		return "", nil, fmt.Errorf("dump %s: %w", topic, err)
	}
	fmt.Fprintf(g.stderr, "%s %q: %s-%d (Utils.abs(hashCode %d) %% %d partitions: the %s)\n", dumplog.CoordinatorTopics[topic], id, topic, c.Partition, c.HashCode, c.PartitionCount,
		map[string]string{"bindings": "count of the topic's bindings", "flag": "count given by --partition-count"}[c.CountSource])
	return fmt.Sprintf("%s-%d", topic, c.Partition), c, nil
}

func newDumpCmd(g *globals) *cobra.Command {
	o := &dumpOptions{}
	c := &cobra.Command{
		Use:   "dump TOPIC-PARTITION | dump __consumer_offsets --group G | dump __transaction_state --txn ID",
		Short: "Print a partition's batches and records, like kafka-dump-log",
		Long: `Walk the partition's COMMITTED objects from the log start (or --from) to the
head and print what kafka-dump-log prints for the partition's .log files,
one virtual segment after another: "Dumping TOPIC-PARTITION/BASE.log" and
"Log starting offset: BASE" (the segment's base offset, its file name), then
one line per batch with "position:" its byte position within the segment,
as in the .log file, so the text equals 'kafka-dump-log.sh --files
TOPIC-PARTITION/A.log,TOPIC-PARTITION/B.log,...' run in the broker's log
directory. --show-objects adds the stream object holding each batch after
Kafka's fields. nereusctl's own summary (the stream, the log start, the
head) goes to stderr. Batches wholly below the log start are skipped: after
DeleteRecords the records below it are unreadable.

--deep prints one line per record ("| offset: …"), with the end-transaction
marker of control records; --decoder offsets|txn adds the decoded
__consumer_offsets or __transaction_state key and value (kafka-dump-log's
--offsets-decoder and --transaction-log-decoder). --count stops after N
batches (N records with --deep). --print-data-log (kafka-dump-log's flag,
implies --deep) adds each record's key and value as text, "key: …
payload: …" (left out when null; a decoder's output takes its place):
UTF-8 as it is, a byte that is not UTF-8 as \xNN, a backslash as \\,
newline, carriage return and tab as \n, \r, \t, other control characters
as \xNN, so every record stays on one line and no byte is lost.

--group G (with TOPIC __consumer_offsets) and --txn ID (with
__transaction_state) read the partition Kafka's coordinator uses for the
id, Utils.abs(id.hashCode()) % the topic's partition count (Java's String
hashCode; Utils.abs maps Integer.MIN_VALUE to 0), and keep that id's
records only (implying --deep and the topic's decoder). The count is the
topic's bindings when they are partitions 0 to N-1; a store holding only
some of them (an import of a few) needs --partition-count N (the cluster's
offsets.topic.num.partitions or transaction.state.log.num.partitions,
Kafka's default 50). --since and --until (RFC3339, or ms since the epoch)
keep the records whose timestamp is in [since, until), on any topic; a
batch is shown when it holds a record kept (a batch that fails its CRC is
always shown).

Every batch's CRC is checked, as kafka-dump-log does; a batch that fails is
printed with isvalid: false and the dump goes on, then exits 3.
--verify-crc=false reads headers only and prints "isvalid: unchecked".

With -o json every line is one JSON object: first {"type":"dump",…} with
the bounds, then {"type":"batch",…} (with segment_base and
segment_position; position is within the object) and, with --deep,
{"type":"record",…} with key and value in base64 (null when absent).
Nothing is written.` + exitStatusHelp("1 --group/--txn: the coordinator partition has no binding in this store", "2 --group/--txn: the partition count is unknown (pass --partition-count), or a bad --since/--until", "3 a batch failed its CRC or could not be decoded, the stream's objects are missing or corrupt, a compacted member (object or manifest) is missing or altered, or the binding does not decode"),
		Example: `  nereusctl dump orders-0 --count 10
  nereusctl dump orders-0 --print-data-log --count 5
  nereusctl dump __consumer_offsets-18 --deep --decoder offsets
  nereusctl dump payments-0 --from 1200 --deep --verify-crc -o json
  # one group's commits, from its coordinator partition
  nereusctl dump __consumer_offsets --group billing --partition-count 50
  nereusctl dump __transaction_state --txn payments-tx-0-1
  nereusctl dump orders-0 --deep --since 2026-11-08T00:00:00Z --until 2026-11-08T01:00:00Z`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := o.validate()
			if err != nil {
				return err
			}
			arg, c, err := o.target(cmd, g, args[0])
			if err != nil {
				return err
			}
			return runDump(cmd, g, opt, arg, o.raw, c)
		},
	}
	o.addFlags(c)
	return c
}

func runDump(cmd *cobra.Command, g *globals, opt dumplog.Options, arg string, raw bool, c *dumplog.Coordinator) error {
	ctx := cmd.Context()
	st, err := g.store(ctx)
	if err != nil {
		return err
	}
	b, _, err := loadBinding(ctx, st, arg)
	if err != nil {
		return err
	}
	if err := b.CheckNotBlocked(); err != nil {
		return exitcode.BlockedErr(fmt.Errorf("dump: %w", err), "nothing is served from COMMITTED data under quarantined coverage; see docs/runbooks/coordinator-blocked.md")
	}
	// The partition's health: a blocked partition (mandatory coverage
	// missing) is never served from COMMITTED data compaction superseded;
	// one with findings is dumped as far as it can be, then exits 3.
	hrep, _, err := health.Gather(ctx, st, b, health.Prior{})
	if err != nil {
		return fmt.Errorf("dump %s: %w", b.Name(), err)
	}
	if hrep.Blocked {
		return exitcode.BlockedErr(fmt.Errorf("dump %s: %w: %s", b.Name(), layout.ErrBlocked, hrep.BlockedReason), "nothing is served from COMMITTED data compaction superseded; see docs/runbooks/coordinator-blocked.md")
	}
	if err := runDumpSource(cmd, g, opt, b, raw, c); err != nil {
		if herr := hrep.Err(); herr != nil && exitcode.HintOf(err) == "" && ctx.Err() == nil {
			// the dump stopped at what the health check had found (a
			// manifest that does not decode): its hint says what to do
			return exitcode.Wrap(exitcode.Of(err), err, exitcode.HintOf(herr))
		}
		return err
	}
	return healthErr("dump", hrep)
}

func runDumpSource(cmd *cobra.Command, g *globals, opt dumplog.Options, b *layout.Binding, raw bool, c *dumplog.Coordinator) error {
	ctx := cmd.Context()
	st, err := g.store(ctx)
	if err != nil {
		return err
	}
	if b.Coverage.State == layout.CoverageActive && !raw {
		return runDumpView(cmd, g, opt, b, c)
	}
	src, note, err := dumplog.SourceFor(ctx, st, b)
	if err != nil {
		return err
	}
	if note != "" && !raw {
		fmt.Fprintf(g.stderr, "note: %s\n", note)
	}
	w := newStreamWriter(g)
	logStart, head := src.Bounds()
	fromPastHead(g, opt, head)
	if g.json() {
		err = writeJSONLine(w, dumpHeaderJSON{Coordinator: c, Head: head, LogStart: logStart, Partition: b.Partition, SchemaVersion: SchemaVersion,
			Source: src.Describe(), StreamID: b.StreamID, Topic: b.Topic, Type: "dump", Since: opt.Filter.Since, Until: opt.Filter.Until})
	} else {
		// stdout holds kafka-dump-log's text alone: nereusctl's summary
		// goes to stderr.
		fmt.Fprintf(g.stderr, "dumping %s (%s): log start %d, head %d\n", b.Name(), src.Describe(), logStart, head)
	}
	if err != nil {
		return err
	}
	var buf []byte
	emit := func(l dumplog.Line) error {
		if g.json() {
			if _, ok := l.(*dumplog.SegmentLine); ok {
				return nil // batch lines carry segment_base and segment_position
			}
			return writeJSONLine(w, l)
		}
		buf = append(l.AppendLine(buf[:0]), '\n')
		_, err := w.Write(buf)
		return err
	}
	sum, runErr := dumplog.Run(ctx, src, opt, emit)
	if err := w.Flush(); err != nil {
		return err
	}
	if sum != nil && sum.Clamped {
		fmt.Fprintf(g.stderr, "note: --from %d is below the log start %d; dumped from the log start\n", opt.From, sum.LogStart)
	}
	if runErr != nil {
		return fmt.Errorf("dump %s: %w", b.Name(), runErr)
	}
	return nil
}

// fromPastHead says on stderr when --from is at or past the head: no
// offset there exists yet, so nothing is dumped.
func fromPastHead(g *globals, opt dumplog.Options, head int64) {
	if opt.From >= 0 && opt.From >= head {
		last := "the partition is empty"
		if head > 0 {
			last = fmt.Sprintf("the last offset is %d", head-1)
		}
		fmt.Fprintf(g.stderr, "note: --from %d is at or past the head %d (%s): nothing to dump\n", opt.From, head, last)
	}
}

// runDumpView prints the READ_COMMITTED view of a compacted partition.
func runDumpView(cmd *cobra.Command, g *globals, opt dumplog.Options, b *layout.Binding, c *dumplog.Coordinator) error {
	ctx := cmd.Context()
	st, err := g.store(ctx)
	if err != nil {
		return err
	}
	if opt.From >= 0 {
		h, _, err := layout.LoadHead(ctx, st, b.StreamID)
		if err != nil {
			return fmt.Errorf("dump %s: %w", b.Name(), err)
		}
		fromPastHead(g, opt, h.Head)
	}
	w := newStreamWriter(g)
	if g.json() {
		err = writeJSONLine(w, dumpViewHeaderJSON{CompactedEnd: b.Coverage.End, CompactedStart: b.Coverage.Start, Coordinator: c, Partition: b.Partition, SchemaVersion: SchemaVersion,
			Source: "read_committed_view", StreamID: b.StreamID, Topic: b.Topic, Type: "dump", Since: opt.Filter.Since, Until: opt.Filter.Until})
	} else {
		_, err = fmt.Fprintf(w, "Dumping %s as a READ_COMMITTED fetch sees it: compacted view [%d, %d) (set %s), then the COMMITTED tail (--raw for the stored batches)\n",
			b.Name(), b.Coverage.Start, b.Coverage.End, b.Coverage.SetID[:16])
	}
	if err != nil {
		return err
	}
	var buf []byte
	_, n, runErr := dumplog.RunView(ctx, st, b, opt, func(l dumplog.Line) error {
		if g.json() {
			return writeJSONLine(w, l)
		}
		rl := l.(*dumplog.RecordLine)
		buf = append(rl.AppendLine(buf[:0]), " source: "...)
		buf = append(append(buf, rl.Source...), '\n')
		_, err := w.Write(buf)
		return err
	})
	if err := w.Flush(); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("dump %s: %w", b.Name(), runErr)
	}
	if !g.json() {
		fmt.Fprintf(g.stdout, "%d records\n", n)
	}
	return nil
}

// dumpHeaderJSON is the first line of dump -o json over COMMITTED batches
// (docs/json-output.md); fields in name order, as the line always had them.
type dumpHeaderJSON struct {
	// Coordinator is set with --group or --txn: the partition the
	// coordinator uses and how it was found.
	Coordinator   *dumplog.Coordinator `json:"coordinator,omitempty"`
	Head          int64                `json:"head"`
	LogStart      int64                `json:"log_start"`
	Partition     int32                `json:"partition"`
	SchemaVersion int                  `json:"schema_version"`
	Since         *int64               `json:"since,omitempty"`
	Source        string               `json:"source"`
	StreamID      string               `json:"stream_id"`
	Topic         string               `json:"topic"`
	Type          string               `json:"type"`
	Until         *int64               `json:"until,omitempty"`
}

// dumpViewHeaderJSON is the first line of dump -o json over a compacted
// partition's READ_COMMITTED view.
type dumpViewHeaderJSON struct {
	CompactedEnd   int64                `json:"compacted_end"`
	CompactedStart int64                `json:"compacted_start"`
	Coordinator    *dumplog.Coordinator `json:"coordinator,omitempty"`
	Partition      int32                `json:"partition"`
	SchemaVersion  int                  `json:"schema_version"`
	Since          *int64               `json:"since,omitempty"`
	Source         string               `json:"source"`
	StreamID       string               `json:"stream_id"`
	Topic          string               `json:"topic"`
	Type           string               `json:"type"`
	Until          *int64               `json:"until,omitempty"`
}
