package retention

import (
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/state"
)

// segs builds n segments of size bytes and width offsets each, the last
// open, all with timestamp ts.
func segs(n int, width, size, ts int64) []Segment {
	out := make([]Segment, n)
	for i := range out {
		out[i] = Segment{Base: int64(i) * width, End: int64(i+1) * width, Bytes: size, MaxTimestamp: ts, Gen: int64(i)}
	}
	out[n-1].Open = true
	out[n-1].Gen = -1
	return out
}

func cfg(policy string, ms, bytes int64) layout.TopicConfig {
	c := layout.DefaultTopicConfig()
	c.CleanupPolicy, c.RetentionMs, c.RetentionBytes = policy, ms, bytes
	return c
}

func i64(v int64) *int64 { return &v }

// Cases from Kafka's own tests (docs/kafka-retention-rules.md §12).
func TestPlannerKafkaCases(t *testing.T) {
	const r = 100 // bytes of 5 records
	cases := []struct {
		name      string
		in        Input
		wantStart int64
		wantSegs  int // segments made garbage
		wantErr   string
	}{
		{"T1 size-based deletes the oldest whole segment", Input{Config: cfg("delete", -1, 2*r), HW: 15, Segments: segs(3, 5, r, 10), Retention: true}, 5, 1, ""},
		{"T2 under retention.bytes deletes nothing", Input{Config: cfg("delete", -1, 3*r), HW: 15, Segments: segs(3, 5, r, 10), Retention: true}, 0, 0, ""},
		{"T4 every segment expired: the active one goes too, log start = head", Input{Config: cfg("delete", 10000, -1), HW: 15, Segments: segs(3, 5, r, 10), NowMs: 1_000_000, Retention: true}, 15, 3, ""},
		{"T5 none expired", Input{Config: cfg("delete", 10000000, -1), HW: 15, Segments: segs(3, 5, r, 1_000_000), NowMs: 1_000_000, Retention: true}, 0, 0, ""},
		{"T6 compact only: no time retention", Input{Config: cfg("compact", 10000, -1), HW: 15, Segments: segs(3, 5, r, 10), NowMs: 1_000_000, Retention: true}, 0, 0, ""},
		{"T7 compact,delete: time retention applies", Input{Config: cfg("compact,delete", 10000, -1), HW: 15, Segments: segs(3, 5, r, 10), NowMs: 1_000_000, Retention: true}, 15, 3, ""},
		{"T8 compact only: log-start breach after a moved start", Input{Config: cfg("compact", -1, -1), LogStart: 5, HW: 15, Segments: segs(3, 5, r, 10), Retention: true}, 5, 1, ""},
		{"T9a DeleteRecords to 1: no segment goes", Input{Config: cfg("delete", -1, -1), HW: 15, Segments: segs(3, 5, r, 10), DeleteRecords: i64(1)}, 1, 0, ""},
		{"T9b DeleteRecords to 6: first segment goes, start stays 6", Input{Config: cfg("delete", -1, -1), HW: 15, Segments: segs(3, 5, r, 10), DeleteRecords: i64(6)}, 6, 1, ""},
		{"T9c DeleteRecords to 15: last segment kept", Input{Config: cfg("delete", -1, -1), HW: 15, Segments: segs(3, 5, r, 10), DeleteRecords: i64(15)}, 15, 2, ""},
		{"T10 DeleteRecords unblocks the time pass", Input{Config: cfg("delete", 900, -1), HW: 3, NowMs: 1901, Retention: true, DeleteRecords: i64(1),
			Segments: []Segment{{Base: 0, End: 1, Bytes: r, MaxTimestamp: 1100}, {Base: 1, End: 2, Bytes: r, MaxTimestamp: 1000}, {Base: 2, End: 3, Bytes: r, MaxTimestamp: 1100, Open: true}}}, 2, 2, ""},
		{"T10' without DeleteRecords the first segment blocks", Input{Config: cfg("delete", 900, -1), HW: 3, NowMs: 1901, Retention: true,
			Segments: []Segment{{Base: 0, End: 1, Bytes: r, MaxTimestamp: 1100}, {Base: 1, End: 2, Bytes: r, MaxTimestamp: 1000}, {Base: 2, End: 3, Bytes: r, MaxTimestamp: 1100, Open: true}}}, 0, 0, ""},
		{"T11 HW 25 of 100: only segments below the HW", Input{Config: cfg("delete", 999, -1), HW: 25, Segments: segs(20, 5, r, 0), NowMs: 1000, Retention: true}, 25, 5, ""},
		{"T11 HW 27: the segment holding the HW stays", Input{Config: cfg("delete", 999, -1), HW: 27, Segments: segs(20, 5, r, 0), NowMs: 1000, Retention: true}, 25, 5, ""},
		{"T13 DeleteRecords past the HW", Input{Config: cfg("delete", -1, -1), HW: 25, Segments: segs(20, 5, r, 0), DeleteRecords: i64(26)}, 0, 0, ErrOffsetOutOfRange},
		{"DeleteRecords -1 is the HW", Input{Config: cfg("delete", -1, -1), HW: 12, Segments: segs(3, 5, r, 0), DeleteRecords: i64(-1)}, 12, 2, ""},
		{"DeleteRecords -2 is out of range", Input{Config: cfg("delete", -1, -1), HW: 12, Segments: segs(3, 5, r, 0), DeleteRecords: i64(-2)}, 0, 0, ErrOffsetOutOfRange},
		{"DeleteRecords on a compact topic", Input{Config: cfg("compact", -1, -1), HW: 12, Segments: segs(3, 5, r, 0), DeleteRecords: i64(5)}, 0, 0, ErrPolicyViolation},
		{"DeleteRecords on an internal topic", Input{Topic: "__consumer_offsets", Config: cfg("compact,delete", -1, -1), HW: 12, Segments: segs(3, 5, r, 0), DeleteRecords: i64(5)}, 0, 0, ErrInvalidTopic},
		{"T22 a lower DeleteRecords target is a no-op", Input{Config: cfg("delete", -1, -1), LogStart: 5, HW: 10, Segments: segs(2, 5, r, 0)[1:], DeleteRecords: i64(0)}, 5, 0, ""},
		{"future timestamp blocks everything after it", Input{Config: cfg("delete", 100, -1), HW: 20, NowMs: 10000, Retention: true,
			Segments: []Segment{{Base: 0, End: 5, Bytes: r, MaxTimestamp: 1}, {Base: 5, End: 10, Bytes: r, MaxTimestamp: 99999}, {Base: 10, End: 15, Bytes: r, MaxTimestamp: 1}, {Base: 15, End: 20, Bytes: r, MaxTimestamp: 1, Open: true}}}, 5, 1, ""},
		{"empty last segment is never deleted", Input{Config: cfg("delete", 100, -1), HW: 10, NowMs: 10000, Retention: true,
			Segments: []Segment{{Base: 0, End: 5, Bytes: r, MaxTimestamp: 1}, {Base: 5, End: 10, Bytes: r, MaxTimestamp: 1}, {Base: 10, End: 10, Bytes: 0, MaxTimestamp: -1, Open: true}}}, 10, 2, ""},
		{"retention.bytes boundary: diff - size == 0 deletes", Input{Config: cfg("delete", -1, 2*r), HW: 20, Retention: true, Segments: segs(4, 5, r, 0)}, 10, 2, ""},
		{"retention.bytes 0 deletes all, active included", Input{Config: cfg("delete", -1, 0), HW: 15, Retention: true, Segments: segs(3, 5, r, 0)}, 15, 3, ""},
		{"a consumer group's offset is never a floor (no input for it at all)", Input{Config: cfg("delete", 1, -1), HW: 15, NowMs: 100, Retention: true, Segments: segs(3, 5, r, 0)}, 15, 3, ""},
		{"retention not applied by a plain trim", Input{Config: cfg("delete", 1, -1), HW: 15, NowMs: 100, Segments: segs(3, 5, r, 0)}, 0, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Compute(c.in)
			if p.Error != c.wantErr {
				t.Fatalf("error %q (%s), want %q", p.Error, p.ErrorDetail, c.wantErr)
			}
			if c.wantErr != "" {
				if p.NewLogStart != c.in.LogStart {
					t.Fatalf("refused request moved the log start to %d", p.NewLogStart)
				}
				return
			}
			if p.NewLogStart != c.wantStart || len(p.Garbage) != c.wantSegs {
				t.Fatalf("log start %d with %d garbage segments, want %d with %d; candidates %+v", p.NewLogStart, len(p.Garbage), c.wantStart, c.wantSegs, p.Candidates)
			}
			if p.NewLogStart > c.in.HW {
				t.Fatalf("log start %d past the HW %d", p.NewLogStart, c.in.HW)
			}
		})
	}
}

func TestPlannerTimeFallbacks(t *testing.T) {
	// A sealed segment without record timestamps uses its seal time (the
	// file mtime's analogue, R6); the open one never expires by time.
	p := state.New(0)
	p.NextOffset = 15
	p.Segments = []state.Segment{
		{Base: 0, End: 5, Bytes: 10, MaxTimestamp: -1, Gen: 0},
		{Base: 5, End: 10, Bytes: 10, MaxTimestamp: -1, Gen: 1},
		{Base: 10, End: -1, Bytes: 10, MaxTimestamp: -1, Gen: -1},
	}
	ss := SegmentsOf(p, map[int64]int64{0: 1000, 1: 5000})
	if ss[0].MaxTimestamp != 1000 || ss[1].MaxTimestamp != 5000 || ss[2].End != 15 || !ss[2].Open {
		t.Fatalf("segments %+v", ss)
	}
	plan := Compute(Input{Config: cfg("delete", 2000, -1), HW: 15, NowMs: 6000, Segments: ss, Retention: true})
	if plan.NewLogStart != 5 {
		t.Fatalf("log start %d, want 5 (seal time 5000 is not expired at 6000)", plan.NewLogStart)
	}
	plan = Compute(Input{Config: cfg("delete", 2000, -1), HW: 15, NowMs: 1 << 50, Segments: ss, Retention: true})
	if plan.NewLogStart != 10 {
		t.Fatalf("log start %d, want 10: the open segment without timestamps never expires", plan.NewLogStart)
	}
}

func TestParseOffsetJSON(t *testing.T) {
	good := []string{
		`{"partitions":[{"topic":"t","partition":0,"offset":5}],"version":1}`,
		`{"partitions":[{"topic":"t","partition":0,"offset":-1}]}`,
		`{"partitions":[{"topic":"t","partition":0,"offset":5}],"version":1,"extra":true}`,
	}
	for _, g := range good {
		if _, err := ParseOffsetJSON([]byte(g)); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
	bad := map[string]string{
		`{"partitions":[{"topic":"t","partition":0,"offset":1},{"topic":"t","partition":0,"offset":2}],"version":1}`: "duplicate topic partitions: t-0",
		`{"version":2,"partitions":[]}`:                "not supported version field value 2",
		`{"version":1}`:                                "missing partitions field",
		`{"version":"string"}`:                         "version is a JSON string; want a whole number",
		`{"partitions":2}`:                             "partitions is a JSON number; want a list",
		`{"partitions":[{"topic":"t"}]}`:               `missing "partition"`,
		`{"partitions":[{"topic":"t","partition":0}]}`: `missing "offset"`,
		`{"partitions":[{"topic":"bad name","partition":0,"offset":1}]}`: "topic",
		`{"partitions":[]}`:    "no partitions",
		`{`:                    "malformed",
		`{"partitions":[]} {}`: "trailing",
		// keys are case-sensitive, as in Kafka's tool, and a partition
		// entry holds only its three keys
		`{"partitions":[{"topic":"t","partition":0,"Offset":5}]}`:              `partitions[0]: unknown key "Offset"`,
		`{"partitions":[{"topic":"t","partition":0,"offset":5,"extra":true}]}`: `partitions[0]: unknown key "extra"`,
		`{"Partitions":[{"topic":"t","partition":0,"offset":5}]}`:              "missing partitions field",
		`{"partitions":[{"topic":"t","partition":0,"offset":5}],"version":2}`:  "not supported version field value 2",
		`{"partitions":[{"topic":"t","partition":0,"offset":5}],"VERSION":2}`:  "",
	}
	for in, want := range bad {
		_, err := ParseOffsetJSON([]byte(in))
		if want == "" {
			// an unknown top-level key, ignored as Kafka's tool does
			if err != nil {
				t.Errorf("%s: %v", in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to mention %q", in, err, want)
		}
	}
}

func FuzzParseOffsetJSON(f *testing.F) {
	f.Add([]byte(`{"partitions":[{"topic":"t","partition":0,"offset":5}],"version":1}`))
	f.Add([]byte(`{"version":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		targets, err := ParseOffsetJSON(b)
		if err == nil && len(targets) == 0 {
			t.Fatal("no error and no targets")
		}
		// Accepted means Kafka's tool would accept it too: valid topic
		// names, no partition below 0, no duplicate partition. (Offsets
		// are checked against the HW later, per partition.)
		seen := map[layout.TopicPartition]bool{}
		for _, tg := range targets {
			if seen[tg.TP] || tg.TP.Partition < 0 || kafka.ValidateTopic(tg.TP.Topic) != nil {
				t.Fatalf("accepted target %+v (duplicate: %v)", tg, seen[tg.TP])
			}
			seen[tg.TP] = true
		}
	})
}

// When every segment is due the open one goes too (as Kafka rolls and
// deletes the active segment), but its bytes are not garbage: gc collects
// only sealed segments, so they are OpenSegmentBytes, freed on the roll.
func TestPlanOpenSegmentIsNotGarbage(t *testing.T) {
	cfg := layout.DefaultTopicConfig()
	cfg.RetentionBytes, cfg.RetentionMs = 0, -1
	p := Compute(Input{Topic: "orders", Config: cfg, LogStart: 0, HW: 30, Retention: true, NowMs: 1,
		Segments: []Segment{{Base: 0, End: 10, Bytes: 100, Gen: 0}, {Base: 10, End: 20, Bytes: 200, Gen: 1}, {Base: 20, End: 30, Bytes: 40, Gen: -1, Open: true}}})
	if p.NewLogStart != 30 || len(p.Garbage) != 3 {
		t.Fatalf("new log start %d, %d garbage segments; want 30 and all 3", p.NewLogStart, len(p.Garbage))
	}
	if p.GarbageSize != 300 || p.OpenSegmentBytes != 40 {
		t.Fatalf("garbage %d, open segment %d; want 300 (sealed only) and 40", p.GarbageSize, p.OpenSegmentBytes)
	}
	// the sealed segments alone: no open-segment bytes
	p = Compute(Input{Topic: "orders", Config: cfg, LogStart: 0, HW: 30, Retention: true, NowMs: 1,
		Segments: []Segment{{Base: 0, End: 10, Bytes: 100, Gen: 0}, {Base: 10, End: 30, Bytes: 200, Gen: 1}, {Base: 30, End: 30, Bytes: 0, Gen: -1, Open: true}}})
	if p.GarbageSize != 300 || p.OpenSegmentBytes != 0 {
		t.Fatalf("garbage %d, open segment %d; want 300 and 0", p.GarbageSize, p.OpenSegmentBytes)
	}
}
