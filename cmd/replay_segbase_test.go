package cmd

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// TestReplayCompareOldSegmentBases: replay --compare over a checkpoint
// whose segment bases an older build derived (after an offset gap, at the
// previous segment's end) is still a mismatch (exit 3, the digests
// differ), but says that only those bases differ and names the action;
// checkpoint create --full publishes today's derivation and replay
// --compare then matches.
func TestReplayCompareOldSegmentBases(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	const sid = "s-oldbases"
	if err := stream.CreateStream(ctx, st, sid, 0); err != nil {
		t.Fatal(err)
	}
	cfg := layout.DefaultTopicConfig()
	b := &layout.Binding{Topic: "t", TopicID: "tid", Partition: 0, StreamID: sid, Config: cfg, Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1}
	if _, err := layout.Create(ctx, st, layout.BindingKey("t", 0), b); err != nil {
		t.Fatal(err)
	}
	w, err := stream.OpenWriter(ctx, st, sid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	appendAt := func(offs ...int64) {
		t.Helper()
		var bs [][]byte
		for _, off := range offs {
			s := kafka.NewBatchSpec(off, []kafka.Record{{Offset: off, Timestamp: 1_700_000_000_000 + off, Key: []byte(fmt.Sprint("k", off)), Value: []byte("v")}})
			data, err := kafka.EncodeBatch(s)
			if err != nil {
				t.Fatal(err)
			}
			bs = append(bs, data)
		}
		if err := w.Append(ctx, bs); err != nil {
			t.Fatal(err)
		}
	}
	appendAt(0, 1, 2, 3, 4)
	if err := w.Roll(ctx); err != nil {
		t.Fatal(err)
	}
	appendAt(10, 11) // a segment after a gap: today it starts at 10
	b, etag, err := layout.LoadBinding(ctx, st, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := recovery.Replay(ctx, st, b, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.State.Segments; len(s) != 2 || s[1].Base != 10 {
		t.Fatalf("segments %+v", s)
	}
	res.State.Segments[1].Base = 5 // as a build before the segment base rule derived it
	if _, err := recovery.CreateFrom(ctx, st, b, etag, res, false); err != nil {
		t.Fatal(err)
	}
	appendAt(12)

	run := func(want int, args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Execute(ctx, append([]string{"--store", "file://" + dir}, args...), &out, &errb); code != want {
			t.Fatalf("%v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	out, errs := run(3, "replay", "t-0", "--compare")
	for _, re := range []string{
		`(?m)^Full replay digest: [0-9a-f]{64} \(MISMATCH: only segment bases the checkpoint derived before the segment base rule;`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("stdout does not match %s:\n%s", re, out)
		}
	}
	for _, re := range []string{
		`only the base of the segment after an offset gap at 10 differs: checkpoint streams/s-oldbases/checkpoints/0{18}12-[0-9a-f]{12}\.nkc1 holds segment bases derived before`,
		`(?m)^hint: nothing is lost; publish a checkpoint from a full replay \(nereusctl checkpoint create --full t-0\), then replay --compare matches$`,
	} {
		if !regexp.MustCompile(re).MatchString(errs) {
			t.Fatalf("stderr does not match %s:\n%s", re, errs)
		}
	}
	run(0, "checkpoint", "create", "--full", "t-0")
	out, _ = run(0, "replay", "t-0", "--compare")
	if !regexp.MustCompile(`(?m)^Full replay digest: [0-9a-f]{64} \(MATCH;`).MatchString(out) {
		t.Fatalf("after checkpoint create --full:\n%s", out)
	}
}
