package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// slowStore delays the Gets of the keys delay names (later keys finish
// first), fails those fail names, and records the most Gets in flight.
type slowStore struct {
	store.Store
	delay    func(key string) time.Duration
	fail     func(key string) bool
	inFlight atomic.Int64
	peak     atomic.Int64
}

func (s *slowStore) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		old := s.peak.Load()
		if n <= old || s.peak.CompareAndSwap(old, n) {
			break
		}
	}
	if d := s.delay(key); d > 0 {
		time.Sleep(d)
	}
	if s.fail(key) {
		return nil, fmt.Errorf("get %s: %w", key, store.Permanent(fmt.Errorf("injected read failure")))
	}
	return s.Store.Get(ctx, key, r)
}

// TestCheckpointListAllParallel: checkpoint list --all lists up to
// --parallel partitions at once (peak in flight above 1), prints them in
// partition order although the later ones finish first, and one partition
// whose binding cannot be read is a row with its error while every other
// is still listed (exit 1).
func TestCheckpointListAllParallel(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMem("")
	var out, errb bytes.Buffer
	if code := execute(ctx, &globals{stderr: &errb, st: mem}, []string{"demo", "--records", "300", "--partitions", "2", "--no-tour", "-q"}, &out); code != 0 {
		t.Fatalf("demo: exit %d\n%s", code, errb.String())
	}
	tps, err := layout.ListBindings(ctx, mem)
	if err != nil || len(tps) < 4 {
		t.Fatalf("bindings %v, %v", tps, err)
	}
	rank := map[string]int{}
	for i, tp := range tps {
		rank[layout.BindingKey(tp.Topic, tp.Partition)] = i
	}
	broken := tps[1]
	s := &slowStore{Store: mem,
		delay: func(key string) time.Duration {
			if i, ok := rank[key]; ok {
				return time.Duration(len(tps)-i) * 15 * time.Millisecond
			}
			return 0
		},
		fail: func(key string) bool { return key == layout.BindingKey(broken.Topic, broken.Partition) },
	}
	out.Reset()
	errb.Reset()
	code := execute(ctx, &globals{stderr: &errb, st: s}, []string{"checkpoint", "list", "--all", "--parallel", "4", "-o", "json"}, &out)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (one partition unreadable)\n%s%s", code, out.String(), errb.String())
	}
	var doc checkpointListAllJSON
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(doc.Partitions) != len(tps) {
		t.Fatalf("%d partitions listed, want %d", len(doc.Partitions), len(tps))
	}
	for i, p := range doc.Partitions {
		if p.Topic != tps[i].Topic || p.Partition != tps[i].Partition {
			t.Fatalf("row %d is %s-%d, want %s (partition order)", i, p.Topic, p.Partition, tps[i])
		}
		if tps[i] == broken {
			if !strings.Contains(p.Error, "injected read failure") || len(p.Checkpoints) != 0 {
				t.Fatalf("the unreadable partition: %+v", p)
			}
			continue
		}
		if p.Error != "" || len(p.Checkpoints) == 0 {
			t.Fatalf("partition %s was not listed: %+v", tps[i], p)
		}
	}
	if s.peak.Load() < 2 {
		t.Fatalf("peak %d store reads in flight with --parallel 4: the partitions were listed one at a time", s.peak.Load())
	}
	if !strings.Contains(errb.String(), "1 of") {
		t.Fatalf("stderr does not count the failed partition: %s", errb.String())
	}
}

// TestQuarantineListParallel: quarantine list reads up to --parallel
// records at once, lists them in key order although the later ones finish
// first, and a record that cannot be read is listed as a failure while
// every other record is still listed.
func TestQuarantineListParallel(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMem("")
	var keys []string
	for i := range 8 {
		q := &layout.Quarantine{SetID: fmt.Sprintf("%064x", i+1), Topic: "orders", Partition: int32(i), StreamID: "s-abc",
			Findings: []layout.QuarantineFinding{{Gen: 1, Object: "streams/s-abc/compacted/x.ntc2", Check: "sha256", Expected: "x", Found: "y"}}, CreatedMs: 9}
		key := layout.QuarantineKey(q.SetID)
		if _, err := layout.Create(ctx, mem, key, q); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	rank := map[string]int{}
	for i, k := range keys {
		rank[k] = i
	}
	s := &slowStore{Store: mem,
		delay: func(key string) time.Duration { return time.Duration(len(keys)-rank[key]) * 10 * time.Millisecond },
		fail:  func(key string) bool { return key == keys[2] },
	}
	var out, errb bytes.Buffer
	code := execute(ctx, &globals{stderr: &errb, st: s}, []string{"quarantine", "list", "--parallel", "4", "-o", "json"}, &out)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out.String(), errb.String())
	}
	var doc quarantineListJSON
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(doc.Records) != len(keys)-1 || len(doc.Errors) != 1 || doc.Errors[0].Key != keys[2] {
		t.Fatalf("records %d, errors %+v", len(doc.Records), doc.Errors)
	}
	j := 0
	for i, k := range keys {
		if i == 2 {
			continue
		}
		if got := layout.QuarantineKey(doc.Records[j].SetID); got != k {
			t.Fatalf("record %d is %s, want %s (key order)", j, got, k)
		}
		j++
	}
	if s.peak.Load() < 2 {
		t.Fatalf("peak %d reads in flight with --parallel 4: the records were read one at a time", s.peak.Load())
	}
}
