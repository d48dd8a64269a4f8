package layout

import (
	"strings"
	"testing"
)

func sampleRetentionProgress() *RetentionProgress {
	return &RetentionProgress{Selection: "--all ", Targets: 10, TargetsSHA256: strings.Repeat("a", 64), NowMs: 5, StartedMs: 1, UpdatedMs: 2, Holder: "h",
		Watermark: 6, Failed: []int{2, 4}, Ahead: []int{7, 9}, Trimmed: 3, Unchanged: 3, GarbageBytes: 100}
}

// TestRetentionProgressRefuses: a document whose counts, watermark or
// positions disagree is corrupt, naming the key and the check.
func TestRetentionProgressRefuses(t *testing.T) {
	good := sampleRetentionProgress()
	if _, err := DecodeRetentionProgress("k", Encode(good)); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(p *RetentionProgress){
		"counts":             func(p *RetentionProgress) { p.Trimmed++ },
		"watermark past end": func(p *RetentionProgress) { p.Watermark = 11 },
		"failed unsorted":    func(p *RetentionProgress) { p.Failed = []int{4, 2} },
		"failed past":        func(p *RetentionProgress) { p.Failed = []int{2, 6} },
		"ahead behind":       func(p *RetentionProgress) { p.Ahead = []int{6, 9} },
		"ahead past end":     func(p *RetentionProgress) { p.Ahead = []int{7, 10} },
		"ahead twice":        func(p *RetentionProgress) { p.Ahead, p.Trimmed = []int{7, 7}, 3 },
		"complete early":     func(p *RetentionProgress) { p.Complete = true },
		"negative garbage":   func(p *RetentionProgress) { p.GarbageBytes = -1 },
	} {
		p := *good
		edit(&p)
		_, err := DecodeRetentionProgress("tasks/retention/x.json", Encode(&p))
		if err == nil || !strings.Contains(err.Error(), "tasks/retention/x.json") {
			t.Errorf("%s: err %v, want corrupt naming the key", name, err)
		}
	}
	var n int
	for i := range good.Targets {
		if good.IsDone(i) {
			n++
		}
	}
	if n != good.DoneCount() || good.IsDone(2) || !good.IsDone(5) || good.IsDone(8) || !good.IsDone(9) {
		t.Fatalf("IsDone: %d positions done, DoneCount %d", n, good.DoneCount())
	}
}

// FuzzRetentionProgress: the decoder of both shapes refuses garbage with
// an error, never a panic; what it accepts of the current shape encodes
// to a document it accepts again, whose positions done are DoneCount; of
// the old shape, its records are each a distinct partition, at most the
// targets.
func FuzzRetentionProgress(f *testing.F) {
	f.Add(Encode(sampleRetentionProgress()))
	f.Add(Encode(&retentionProgressV1{Selection: "--all ", Targets: 2, TargetsSHA256: strings.Repeat("b", 64), StartedMs: 1, UpdatedMs: 1, Holder: "h",
		Done: []RetentionDone{{Partition: "orders-1", NewLogStart: 4, HW: 4, GarbageBytes: 10}}}))
	f.Add([]byte(`{"selection":"x","watermark":1,"done":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodeRetentionProgress("fuzz", data)
		if err != nil {
			return
		}
		if p.Legacy != nil {
			seen := map[string]bool{}
			for _, d := range p.Legacy {
				if seen[d.Partition] {
					t.Fatalf("old shape accepted with %s twice", d.Partition)
				}
				seen[d.Partition] = true
			}
			if len(p.Legacy) > p.Targets {
				t.Fatalf("old shape accepted with %d records of %d targets", len(p.Legacy), p.Targets)
			}
			return
		}
		q, err := DecodeRetentionProgress("fuzz", Encode(p))
		if err != nil {
			t.Fatalf("accepted, but its re-encoding is refused: %v", err)
		}
		if string(Encode(q)) != string(Encode(p)) {
			t.Fatal("does not round-trip")
		}
		if p.Targets <= 1<<16 {
			n := 0
			for i := range p.Targets {
				if p.IsDone(i) {
					n++
				}
			}
			if n != p.DoneCount() {
				t.Fatalf("%d positions done, DoneCount %d", n, p.DoneCount())
			}
		}
	})
}
