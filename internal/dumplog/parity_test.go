package dumplog

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/importer"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/importrun"
)

const dumpLogRoot = "../../testdata/kafka-dump-log"

// TestDumpMatchesKafkaDumpLog: the text of a dump of an imported partition
// is, line for line, what kafka-dump-log prints for the partition's .log
// files (`kafka-dump-log.sh [--deep-iteration] [--print-data-log] --files
// DIR/A.log,DIR/B.log`): the "Dumping FILE" and "Log starting offset: N"
// lines of each segment (N its file name, also for a segment whose first
// batch lies above it), then its batches with "position:" the byte
// position within the .log file, whatever object of the stream holds
// them. The expected files were derived from the .log bytes by an
// independent decoder that follows DumpLogSegments' printing code
// (testdata/kafka-dump-log/README.md). Each partition is imported twice:
// with the default object size and with objects of a single batch, so
// that positions run across objects.
func TestDumpMatchesKafkaDumpLog(t *testing.T) {
	cases := []struct {
		dir, expected string
		opt           Options
	}{
		{filepath.Join(dumpLogRoot, "crafted-0"), "crafted-0.txt", Options{}},
		{filepath.Join(dumpLogRoot, "crafted-0"), "crafted-0.print-data-log.txt", Options{Deep: true, PrintData: true}},
		{filepath.Join(fixtureRoot, "kafka-2.7-compacted", "__consumer_offsets-39"), "__consumer_offsets-39.deep-iteration.txt", Options{Deep: true}},
		{filepath.Join(fixtureRoot, "kafka-uncompacted", "new_topic-0"), "new_topic-0.print-data-log.txt", Options{Deep: true, PrintData: true}},
	}
	for _, c := range cases {
		want, err := os.ReadFile(filepath.Join(dumpLogRoot, c.expected))
		if err != nil {
			t.Fatal(err)
		}
		for _, objectBytes := range []int{0, 1} {
			ctx := context.Background()
			st := store.NewMem("parity")
			res, err := importrun.Run(ctx, st, importer.Options{Dir: c.dir, ObjectBytes: objectBytes})
			if err != nil {
				t.Fatalf("%s: import: %v", c.dir, err)
			}
			b, _, err := layout.LoadBinding(ctx, st, res.Topic, res.Partition)
			if err != nil {
				t.Fatal(err)
			}
			opt := c.opt
			opt.From, opt.VerifyCRC = -1, true
			var got strings.Builder
			if _, err := Run(ctx, open(t, st, b), opt, func(l Line) error {
				got.Write(l.AppendLine(nil))
				got.WriteByte('\n')
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if got.String() != string(want) {
				t.Errorf("%s (object bytes %d): the dump differs from kafka-dump-log's output %s:\n%s", c.dir, objectBytes, c.expected, lineDiff(string(want), got.String()))
			}
		}
	}
}

// lineDiff names the first line where two texts differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + itoa(i+1) + ":\nwant: " + wl + "\ngot:  " + gl
		}
	}
	return "(no difference)"
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestDumpFromKeepsKafkaPositions: a dump that starts inside a segment
// (--from) still opens it with kafka-dump-log's two lines and prints each
// batch's position within the .log file, also when the segment's first
// object is not read (its base is then read from its first batch's header)
// and when its base is a recorded file name (crafted-0's segment 7). The
// expected lines are kafka-dump-log's for the whole files, less the
// batches that end below --from.
func TestDumpFromKeepsKafkaPositions(t *testing.T) {
	cases := []struct {
		dir, expected string
		from          int64
	}{
		{filepath.Join(dumpLogRoot, "crafted-0"), "crafted-0.txt", 4},
		{filepath.Join(dumpLogRoot, "crafted-0"), "crafted-0.txt", 11},
		{filepath.Join(fixtureRoot, "kafka-2.7-compacted", "__consumer_offsets-17"), "__consumer_offsets-17.txt", 2},
	}
	for _, c := range cases {
		full, err := os.ReadFile(filepath.Join(dumpLogRoot, c.expected))
		if err != nil {
			t.Fatal(err)
		}
		want := fromOffset(t, string(full), c.from)
		ctx := context.Background()
		st := store.NewMem("from")
		res, err := importrun.Run(ctx, st, importer.Options{Dir: c.dir, ObjectBytes: 1})
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := layout.LoadBinding(ctx, st, res.Topic, res.Partition)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		if _, err := Run(ctx, open(t, st, b), Options{From: c.from, VerifyCRC: true}, func(l Line) error {
			got.Write(l.AppendLine(nil))
			got.WriteByte('\n')
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if got.String() != want {
			t.Errorf("%s --from %d:\n%s", c.dir, c.from, lineDiff(want, got.String()))
		}
	}
}

// fromOffset keeps the lines of a kafka-dump-log text (batch lines only)
// that a dump from offset from shows: the batches whose last offset is at
// or above it, each segment's two opening lines when it keeps a batch.
func fromOffset(t *testing.T, text string, from int64) string {
	t.Helper()
	var out, header []string
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "Dumping "):
			header = []string{l}
		case strings.HasPrefix(l, "Log starting offset: "):
			header = append(header, l)
		case strings.HasPrefix(l, "baseOffset: "):
			f := strings.Fields(l)
			last, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil || f[2] != "lastOffset:" {
				t.Fatalf("batch line %q", l)
			}
			if last >= from {
				out = append(out, header...)
				header = nil
				out = append(out, l)
			}
		default:
			t.Fatalf("unexpected line %q", l)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// TestControlTypeLine: a control record that is no transaction marker is
// printed as DumpLogSegments' default branch of printControlRecord does,
// " controlType: $controlType($controlTypeId)": an unknown type id 9 is
// ControlRecordType.UNKNOWN, "UNKNOWN(9)"; LEADER_CHANGE (id 2), which
// Kafka before its JSON rendering printed the same way, "LEADER_CHANGE(2)".
func TestControlTypeLine(t *testing.T) {
	for _, c := range []struct {
		id   int16
		want string
	}{{9, " controlType: UNKNOWN(9)"}, {2, " controlType: LEADER_CHANGE(2)"}} {
		key := kafka.ControlRecordKey(kafka.ControlType(c.id))
		l := &RecordLine{Offset: 1, TimestampType: "CreateTime", KeySize: len(key), ValueSize: -1, Sequence: -1,
			Control: controlInfo(&kafka.Record{Key: key})}
		if got := l.Text(); !strings.HasSuffix(got, "headerKeys: []"+c.want) {
			t.Errorf("type %d: %q, want it to end with %q", c.id, got, c.want)
		}
	}
}
