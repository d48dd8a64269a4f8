package cmd

import (
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/retention"
)

type deleteRecordsOptions struct {
	file   string
	dryRun bool
	yes    bool
	strict bool
	clock  clockFlags
}

func newDeleteRecordsCmd(g *globals) *cobra.Command {
	o := &deleteRecordsOptions{}
	c := &cobra.Command{
		Use:   "delete-records --offset-json-file FILE [--dry-run]",
		Short: "DeleteRecords from kafka-delete-records.sh's JSON, with the durable trim sequence",
		Long: `Read Kafka's delete-records JSON and trim every partition it names, exactly
as 'nereusctl trim' does (same rules, same durable sequence):

  {"partitions": [{"topic": "orders", "partition": 0, "offset": 1200}], "version": 1}

Keys are case-sensitive, as in Kafka's tool; a partition entry holds exactly
topic, partition and offset (another key, "Offset" included, is refused;
unknown top-level keys are ignored, as Kafka does), the version must be 1,
and duplicate partitions are an error (nothing is trimmed then).
--offset-json-file - reads the JSON from standard input. The output is kafka-delete-records.sh's
(DeleteRecordsCommand): 'Executing records delete operation', then
'Records delete operation completed:', then per partition, sorted by topic
and partition, 'partition: T-P<TAB>low_watermark: N' or
'partition: T-P<TAB>error: <exception>: <message>' with Kafka's exception and
default message (nereusctl's own explanation goes to stderr). As with
kafka-delete-records.sh, a partition's Kafka error (OFFSET_OUT_OF_RANGE,
POLICY_VIOLATION, INVALID_TOPIC_EXCEPTION, UNKNOWN_TOPIC_OR_PARTITION) still
exits 0; --strict makes it exit 1 (for cron). A failure of nereusctl itself
(store, corrupt or missing data, a lease) keeps its exit code. -o json gives
the trim contract. A dry run prints 'Dry run: records delete operation
planned, nothing deleted:' and 'partition: T-P<TAB>would_be_low_watermark: N'
lines instead.

When any partition would lose EVERY record (offset -1, or the HW), the
command needs --yes: on a terminal it asks (y/N on stdin) before trimming
anything; otherwise it is refused with exit 2 and nothing is trimmed.` + exitStatusHelp("1 with --strict when any partition reports an error; without it only when nereusctl itself failed for a partition (a Kafka error per partition exits 0, as kafka-delete-records.sh does)", "2 for a malformed JSON file or a duplicate partition, or a trim removing every record not confirmed (--yes) (nothing is changed)", "4 when a partition's lease is held by another job past --lease-wait (the message names the holder; the other partitions are still done)"),
		Example: `  nereusctl delete-records --offset-json-file offsets.json --dry-run
  # destructive: the records below each offset become unreadable
  nereusctl delete-records --offset-json-file offsets.json -o json
  echo '{"partitions":[{"topic":"orders","partition":0,"offset":1200}]}' | nereusctl delete-records --offset-json-file - --dry-run`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.file == "" {
				return exitcode.UsageErr(fmt.Errorf("--offset-json-file is required"))
			}
			now, clock, err := o.clock.nowAndClock()
			if err != nil {
				return err
			}
			data, err := readOffsetJSON(cmd.InOrStdin(), o.file)
			if err != nil {
				return exitcode.UsageErr(err)
			}
			targets, err := retention.ParseOffsetJSON(data)
			if err != nil {
				name := o.file
				if name == "-" {
					name = "standard input"
				}
				return exitcode.Wrap(exitcode.Usage, fmt.Errorf("%s: %w", name, err), "see 'nereusctl delete-records --help' for the format")
			}
			ctx := cmd.Context()
			st, err := g.mutatingStore(ctx, o.dryRun)
			if err != nil {
				return err
			}
			nowMs := now.UnixMilli()
			var confirmed fullTrims
			if !o.dryRun && !o.yes {
				// Plan every partition first: trims that remove every
				// record are confirmed (or refused) before any is done.
				var full []string
				for _, t := range targets {
					off := t.Offset
					r := retention.RunPartition(ctx, st, retention.Request{TP: t.TP, DeleteRecords: &off, NowMs: nowMs, Clock: clock, PlanOnly: true})
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if r.RemovesEverything() {
						full = append(full, fmt.Sprintf("%s-%d (log start %d -> HW %d)", r.Topic, r.Partition, r.CurrentLogStart, r.HW))
					}
				}
				if confirmed, err = confirmFull(g, "delete-records", full); err != nil {
					return err
				}
			}
			if !o.dryRun && !g.json() {
				// DeleteRecordsCommand prints it before it sends the request.
				fmt.Fprintln(g.stdout, "Executing records delete operation")
			}
			var rs []*retention.Result
			for _, t := range targets {
				off := t.Offset
				req := retention.Request{TP: t.TP, DeleteRecords: &off, NowMs: nowMs, Clock: clock, DryRun: o.dryRun, Hooks: crashHooks()}
				if confirmed != nil {
					req.ConfirmFull = confirmed.check
				}
				rs = append(rs, g.trimLeased(ctx, st, req))
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
			return renderDeleteRecords(g, o.dryRun, o.strict, rs)
		},
	}
	c.Flags().StringVar(&o.file, "offset-json-file", "", "Kafka's delete-records JSON file (- reads standard input)")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the outcome per partition; write nothing")
	c.Flags().BoolVar(&o.yes, "yes", false, "trim partitions whose every record goes (offset -1 or the HW) without asking")
	c.Flags().BoolVar(&o.strict, "strict", false, "exit 1 when any partition reports an error (kafka-delete-records.sh exits 0; for cron)")
	o.clock.add(c, true)
	return c
}

// readOffsetJSON reads the offset JSON file, or standard input for "-",
// capped at retention.MaxOffsetJSONBytes.
func readOffsetJSON(stdin io.Reader, path string) ([]byte, error) {
	if path != "-" {
		return readCappedFile(path, retention.MaxOffsetJSONBytes)
	}
	b, err := io.ReadAll(io.LimitReader(stdin, retention.MaxOffsetJSONBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read standard input: %w", err)
	}
	if int64(len(b)) > retention.MaxOffsetJSONBytes {
		return nil, fmt.Errorf("standard input: more than %d bytes", retention.MaxOffsetJSONBytes)
	}
	return b, nil
}

// renderDeleteRecords prints kafka-delete-records.sh's lines
// (DeleteRecordsCommand.execute: "Executing records delete operation",
// then "Records delete operation completed:", then one line per
// partition; Kafka's order is a hash map's, nereusctl sorts by topic and
// partition). Kafka's per-partition errors exit 0 unless strict; a failure
// of nereusctl itself keeps its code. -o json is the trim contract.
// maxDetailLines bounds the per-partition error details delete-records
// writes to stderr (every partition's line is on stdout).
const maxDetailLines = 20

func renderDeleteRecords(g *globals, dryRun, strict bool, rs []*retention.Result) error {
	sorted := append([]*retention.Result(nil), rs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Topic != sorted[j].Topic {
			return sorted[i].Topic < sorted[j].Topic
		}
		return sorted[i].Partition < sorted[j].Partition
	})
	var failed, own []*retention.Result
	for _, r := range sorted {
		if r.OK() {
			continue
		}
		if _, kafka := retention.KafkaErrorText(r.Error); kafka {
			failed = append(failed, r)
		} else {
			own = append(own, r)
		}
	}
	if g.json() {
		if err := writeJSON(g.stdout, trimJSON{SchemaVersion: SchemaVersion, DryRun: dryRun, Partitions: nonNil(sorted)}); err != nil {
			return err
		}
	} else {
		if dryRun {
			fmt.Fprintln(g.stdout, "Dry run: records delete operation planned, nothing deleted:")
		} else {
			fmt.Fprintln(g.stdout, "Records delete operation completed:")
		}
		detailed := 0 // per-partition details on stderr, at most maxDetailLines
		for _, r := range sorted {
			name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
			switch text, kafka := retention.KafkaErrorText(r.Error); {
			case r.OK() && dryRun:
				fmt.Fprintf(g.stdout, "partition: %s\twould_be_low_watermark: %d\n", name, r.NewLogStart)
			case r.OK():
				fmt.Fprintf(g.stdout, "partition: %s\tlow_watermark: %d\n", name, r.NewLogStart)
			case kafka:
				fmt.Fprintf(g.stdout, "partition: %s\terror: %s\n", name, text)
				if detailed < maxDetailLines {
					fmt.Fprintf(g.stderr, "delete-records %s: %s: %s\n", name, r.Error, r.ErrorDetail)
				}
				detailed++
			default:
				fmt.Fprintf(g.stdout, "partition: %s\terror: %s: %s\n", name, r.Error, r.ErrorDetail)
			}
		}
	}
	if n := len(failed) - maxDetailLines; n > 0 && !g.json() {
		fmt.Fprintf(g.stderr, "delete-records: … and %d more partitions report an error (their partition: lines are on stdout)\n", n)
	}
	// One line for every failing partition, the list truncated
	// (exitcode.List); the first failure's detail names why.
	summary := func(what string) error {
		names := make([]string, 0, len(own)+len(failed))
		for _, r := range sorted {
			if !r.OK() {
				names = append(names, fmt.Sprintf("%s-%d", r.Topic, r.Partition))
			}
		}
		first := failed
		if len(own) > 0 {
			first = own
		}
		r := first[0]
		return fmt.Errorf("delete-records: %d of %d partitions %s (%s); first: %s-%d: %s: %s",
			len(names), len(rs), what, exitcode.List(names, ", "), r.Topic, r.Partition, r.Error, r.ErrorDetail)
	}
	if len(own) > 0 {
		err := summary("failed")
		if r := own[0]; r.Err != nil {
			return exitcode.Wrap(exitcode.Of(r.Err), err, exitcode.HintOf(r.Err))
		}
		return err
	}
	if len(failed) > 0 {
		err := summary("report an error")
		if strict {
			return exitcode.Wrap(exitcode.Error, fmt.Errorf("%w (--strict)", err),
				"the other partitions were done; fix the offsets of those that failed and rerun")
		}
		if !g.json() {
			// exit 0, as kafka-delete-records.sh; the detail on stderr
			fmt.Fprintf(g.stderr, "nereusctl: %v\n", err)
		}
	}
	return nil
}
