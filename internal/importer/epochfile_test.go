package importer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
)

func epochs(pairs ...int64) []state.EpochEntry {
	var out []state.EpochEntry
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, state.EpochEntry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
	}
	return out
}

// cleanedDir writes a partition whose first batches are gone: the first
// segment is named 100 but its first batch is at 110 (epoch 4), a second
// segment at 113 carries epoch 4 then 6 from 114; leader-epoch-checkpoint
// holds ckpt.
func cleanedDir(t *testing.T, name, ckpt string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	writeSegments(t, dir, map[int64][]byte{
		100: segment(t, []int64{110, 111, 112}, []int32{4, 4, 4}),
		113: segment(t, []int64{113, 114, 115}, []int32{4, 6, 6}),
	})
	if err := os.WriteFile(filepath.Join(dir, "leader-epoch-checkpoint"), []byte(ckpt), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// replays returns the full replay and the checkpoint-path replay of the
// imported partition, after checking they agree (replay --compare).
func replays(t *testing.T, st store.Store, res *Result) (full, ckpt *recovery.Result) {
	t.Helper()
	ctx := context.Background()
	b := loadBinding(t, st, res)
	full, err := recovery.Replay(ctx, st, b, recovery.Options{Full: true, VerifyCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	ckpt, err = recovery.Replay(ctx, st, b, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if full.Digest() != ckpt.Digest() || full.Digest() != res.StateDigest {
		t.Fatalf("full replay %s, checkpoint path %s, import %s", full.Digest(), ckpt.Digest(), res.StateDigest)
	}
	return full, ckpt
}

func ptrText(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

func disagreementsText(ds []EpochDisagreement) string {
	var s []string
	for _, d := range ds {
		s = append(s, fmt.Sprintf("%d:%s/%s/%s", d.Epoch, ptrText(d.FileStartOffset), ptrText(d.BatchStartOffset), ptrText(d.ImportedStartOffset)))
	}
	return strings.Join(s, " ")
}

// The leader-epoch-checkpoint is the authority where the batches are gone
// (LeaderEpochFileCache loaded from the file, then extended by recovered
// batches): epoch 2, which no surviving batch carries, and epoch 4's start
// at 105, below the first surviving batch at 110, come from the file; the
// file's 2@50 is truncated to the log start 100. Every replay sees them
// (the genesis checkpoint holds them), and both paths agree.
func TestImportEpochFileCoversGoneBatches(t *testing.T) {
	dir := cleanedDir(t, "orders-0", "0\n3\n2 50\n4 105\n6 114\n")
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: dir})
	want := epochs(2, 100, 4, 105, 6, 114)
	if res.Start != 100 || res.Segments[0].FirstOffset == nil || *res.Segments[0].FirstOffset != 110 {
		t.Fatalf("start %d, first batch %v", res.Start, res.Segments[0].FirstOffset)
	}
	e := res.Epochs
	if fmt.Sprint(e.Imported) != fmt.Sprint(want) || e.FromFile != 2 || fmt.Sprint(e.Derived) != fmt.Sprint(epochs(4, 110, 6, 114)) {
		t.Fatalf("imported %v (%d from the file), derived %v", e.Imported, e.FromFile, e.Derived)
	}
	if got := disagreementsText(e.Disagreements); got != "2:100/none/100 4:105/110/105" {
		t.Fatalf("disagreements %s: %+v", got, e.Disagreements)
	}
	if !strings.Contains(e.Disagreements[0].Reason, "no batch carries it") || !strings.Contains(e.Disagreements[1].Reason, "[105, 110) hold no batch") {
		t.Fatalf("reasons %+v", e.Disagreements)
	}
	if e.GenesisCheckpoint == "" || !strings.Contains(e.GenesisCheckpoint, "/checkpoints/00000000000000000100-") || res.Snapshot != nil {
		t.Fatalf("genesis %q, snapshot %+v", e.GenesisCheckpoint, res.Snapshot)
	}
	if _, err := st.Head(context.Background(), e.GenesisCheckpoint); err != nil {
		t.Fatal(err)
	}
	full, ckpt := replays(t, st, res)
	if fmt.Sprint(full.State.Epochs) != fmt.Sprint(want) || fmt.Sprint(ckpt.State.Epochs) != fmt.Sprint(want) || !full.Genesis {
		t.Fatalf("full replay %v (genesis %v), checkpoint path %v", full.State.Epochs, full.Genesis, ckpt.State.Epochs)
	}
	// A dry run gives the same cache and the same state digest.
	dry := run(t, nil, Options{Dir: dir, DryRun: true})
	if fmt.Sprint(dry.Epochs.Imported) != fmt.Sprint(want) || dry.StateDigest != res.StateDigest || dry.Epochs.GenesisCheckpoint != "" {
		t.Fatalf("dry run %v %s %q", dry.Epochs.Imported, dry.StateDigest, dry.Epochs.GenesisCheckpoint)
	}
}

// Where the surviving batches contradict the file (epoch 6 at 114 where
// the file starts it at 115), the batches' start is imported and the
// disagreement is reported; epoch 4's start below the first batch still
// comes from the file.
func TestImportEpochFileDisagreementReported(t *testing.T) {
	dir := cleanedDir(t, "orders-1", "0\n2\n4 105\n6 115\n")
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: dir})
	e := res.Epochs
	want := epochs(4, 105, 6, 114)
	if e.Status != EpochsDiffer || fmt.Sprint(e.Imported) != fmt.Sprint(want) || e.FromFile != 1 {
		t.Fatalf("status %s, imported %v (%d from the file)", e.Status, e.Imported, e.FromFile)
	}
	if got := disagreementsText(e.Disagreements); got != "4:105/110/105 6:115/114/114" {
		t.Fatalf("disagreements %s", got)
	}
	if r := e.Disagreements[1].Reason; !strings.Contains(r, "contradicts the file") || !strings.Contains(r, "the batches' start is used") {
		t.Fatalf("reason %q", r)
	}
	full, _ := replays(t, st, res)
	if fmt.Sprint(full.State.Epochs) != fmt.Sprint(want) {
		t.Fatalf("full replay %v", full.State.Epochs)
	}
	// The file agreeing with the batches: nothing from it, no genesis.
	dir2 := cleanedDir(t, "orders-2", "0\n2\n4 110\n6 114\n")
	st2 := store.NewMem("t2")
	res2 := run(t, st2, Options{Dir: dir2})
	if res2.Epochs.FromFile != 0 || len(res2.Epochs.Disagreements) != 0 || res2.Epochs.GenesisCheckpoint != "" || res2.Epochs.Status != EpochsMatch {
		t.Fatalf("%+v", res2.Epochs)
	}
	cps, err := st2.List(context.Background(), layout.CheckpointsPrefix(res2.StreamID))
	if err != nil || len(cps) != 0 {
		t.Fatalf("checkpoints %v %v", cps, err)
	}
}

// The real fixture __consumer_offsets-39 is a cleaned log whose first
// batches (offsets 0-3) are gone: the file's 0@0 is imported, held by a
// genesis checkpoint at offset 0 that a full replay starts from.
func TestImportFixtureEpochFromFile(t *testing.T) {
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: filepath.Join(fixtureRoot, "kafka-2.7-compacted", "__consumer_offsets-39")})
	e := res.Epochs
	if e.Status != EpochsExplained || fmt.Sprint(e.Imported) != fmt.Sprint(epochs(0, 0)) || e.FromFile != 1 || disagreementsText(e.Disagreements) != "0:0/4/0" {
		t.Fatalf("%+v", e)
	}
	full, _ := replays(t, st, res)
	if fmt.Sprint(full.State.Epochs) != fmt.Sprint(epochs(0, 0)) || !full.Genesis {
		t.Fatalf("full replay %v genesis %v", full.State.Epochs, full.Genesis)
	}
}
