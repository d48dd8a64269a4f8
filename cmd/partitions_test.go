package cmd

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

func TestFailuresTakeTheWorstCode(t *testing.T) {
	var f failures
	if f.err("op", 3) != nil {
		t.Fatal("no failures must be no error")
	}
	f.add(errors.New("an I/O failure"))
	f.add(exitcode.BlockedErr(errors.New("blocked"), ""))
	f.add(fmt.Errorf("load binding x-0: %w", fmt.Errorf("%w: bad json", layout.ErrCorruptDocument)))
	err := f.err("op", 5)
	if exitcode.Of(err) != exitcode.Verify {
		t.Fatalf("1, 4 and a malformed document: want exit 3, got %d (%v)", exitcode.Of(err), err)
	}
	if want := "op: 3 of 5 partitions failed; first: an I/O failure"; err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
	var g failures
	g.add(errors.New("an I/O failure"))
	g.add(exitcode.BlockedErr(errors.New("blocked"), "a hint"))
	if c := exitcode.Of(g.err("op", 2)); c != exitcode.Blocked {
		t.Fatalf("1 and 4: want 4, got %d", c)
	}
}

func TestResolveAllOnAnEmptyStore(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	s := partitionSel{all: true}
	_, err := s.resolve(ctx, st, nil)
	if exitcode.Of(err) != exitcode.Error || exitcode.HintOf(err) == "" {
		t.Fatalf("--all on an empty store: want exit 1 with a hint, got %v", err)
	}
	s.allowEmpty = true
	if tps, err := s.resolve(ctx, st, nil); err != nil || len(tps) != 0 {
		t.Fatalf("--all --allow-empty: %v %v", tps, err)
	}
	// an empty shard of a non-empty store is not an empty store
	b := &layout.Binding{Topic: "t", Partition: 0, StreamID: "s-1", Config: layout.DefaultTopicConfig(), Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1}
	if _, err := layout.Create(ctx, st, layout.BindingKey("t", 0), b); err != nil {
		t.Fatal(err)
	}
	s = partitionSel{all: true, shard: "1/2"}
	if tps, err := s.resolve(ctx, st, nil); err != nil || len(tps) != 0 {
		t.Fatalf("an empty shard: %v %v", tps, err)
	}
	s = partitionSel{allowEmpty: true}
	if _, err := s.resolve(ctx, st, []string{"t-0"}); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("--allow-empty without --all: want usage, got %v", err)
	}
}
