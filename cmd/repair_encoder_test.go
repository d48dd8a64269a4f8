package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/store"
)

// encoderStore is a demo store whose __consumer_offsets-0 compacted set's
// manifest edit changed (as if another build had compacted it: the
// binding's member digest and set id follow, so the store verifies clean),
// then one member damaged and the set quarantined by verify. It returns the
// run function, the store folder, the manifest, the damaged member and a
// file holding its right bytes.
func encoderStore(t *testing.T, edit func(*layout.CompactionParams)) (func(...string) (int, string, string), string, *layout.Generation, layout.ObjectRef, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	storeURL := "file://" + dir
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := execute(ctx, &globals{stderr: &errb}, append([]string{"--store", storeURL}, args...), &out)
		return code, out.String(), errb.String()
	}
	if code, _, e := run("demo", "--records", "3000", "--partitions", "1", "--no-tour", "-q"); code != 0 {
		t.Fatalf("demo: %d: %s", code, e)
	}
	st, err := store.Open(ctx, storeURL, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, etag, err := layout.LoadBinding(ctx, st, "__consumer_offsets", 0)
	if err != nil || b.Coverage.State != layout.CoverageActive || len(b.Coverage.Members) != 1 {
		t.Fatalf("demo coverage: %+v %v", b, err)
	}
	g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, b.Coverage.Members[0].Gen)
	if err != nil {
		t.Fatal(err)
	}
	edit(g.Compaction)
	if _, err := st.Put(ctx, layout.GenerationKey(b.StreamID, g.Gen), layout.Encode(g), store.None()); err != nil {
		t.Fatal(err)
	}
	b.Coverage.Members[0].ManifestSHA256 = layout.DocSHA256(g)
	b.Coverage.SetID = layout.SetID(b.Coverage.Members)
	if _, err := layout.Replace(ctx, st, layout.BindingKey(b.Topic, b.Partition), b, etag); err != nil {
		t.Fatal(err)
	}
	ref := g.Objects[0]
	good, err := st.Get(ctx, ref.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(t.TempDir(), "member.ntc2")
	if err := os.WriteFile(saved, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, o, e := run("verify", "--all", "--deep"); code != 0 {
		t.Fatalf("the rewritten store does not verify clean: %d\n%s%s", code, o, e)
	}
	bad := bytes.Clone(good)
	bad[100] ^= 0xff
	if _, err := st.Put(ctx, ref.Key, bad, store.None()); err != nil {
		t.Fatal(err)
	}
	if code, o, e := run("verify", "__consumer_offsets-0"); code != int(exitcode.Verify) || !strings.Contains(o, "QUARANTINED") {
		t.Fatalf("verify: %d\n%s%s", code, o, e)
	}
	return run, dir, g, ref, saved
}

// TestRepairRegenerateRefusesAnotherEncoder: the compacted set of
// __consumer_offsets-0 looks as another build wrote it (its manifest
// records another encoder), one member is damaged and quarantined;
// 'repair --regenerate' exits 1 (the store is not corrupt: this build
// cannot do it), names both identities, hints at --from and --from-file,
// and changes nothing, dry run or not; --from-file then repairs.
func TestRepairRegenerateRefusesAnotherEncoder(t *testing.T) {
	const other = "ntc2 v1 zstd klauspost/compress@v0.0.1 level default"
	run, dir, g, ref, saved := encoderStore(t, func(p *layout.CompactionParams) { p.Encoder = other })
	before := storeFiles(t, dir)
	for _, dry := range []string{"--dry-run", ""} {
		args := []string{"repair", "__consumer_offsets-0", "--digest", "sha256:" + ref.SHA256, "--regenerate"}
		if dry != "" {
			args = append(args, dry)
		}
		code, o, e := run(args...)
		if code != int(exitcode.Error) {
			t.Fatalf("repair --regenerate %s: exit %d, want 1\n%s%s", dry, code, o, e)
		}
		for _, w := range []string{
			fmt.Sprintf("nereusctl: repair __consumer_offsets-0: regenerate: generation %d was written by the encoder %q and this build's is %q: this build cannot reproduce", g.Gen, other, ntc2.EncoderIdentity()),
			"\nhint: nothing was changed.",
			"--from URL", "--from-file PATH",
		} {
			if !strings.Contains(e, w) {
				t.Fatalf("repair --regenerate %s: stderr lacks %q:\n%s", dry, w, e)
			}
		}
		if strings.Contains(o, "restored") || strings.Contains(o, "would restore") {
			t.Fatalf("repair --regenerate %s: %s", dry, o)
		}
	}
	if after := storeFiles(t, dir); after != before {
		t.Fatal("the refused repair changed the store")
	}
	if code, o, e := run("repair", "__consumer_offsets-0", "--digest", "sha256:"+ref.SHA256, "--from-file", saved); code != 0 || !strings.Contains(o, "ACTIVE again") {
		t.Fatalf("repair --from-file: %d\n%s%s", code, o, e)
	}
}

// TestRepairRegenerateLegacyWrongBytes: a manifest that records no encoder
// (written before it was recorded) and whose bytes this build does not
// reproduce (another object split stands in for another encoder): the
// regenerate is tried, refused as wrong bytes (exit 3), the message says
// the manifest does not record its encoder, the hint points at --from and
// --from-file, and nothing changed.
func TestRepairRegenerateLegacyWrongBytes(t *testing.T) {
	run, dir, _, ref, _ := encoderStore(t, func(p *layout.CompactionParams) { p.Encoder, p.ObjectBytes = "", 1 })
	before := storeFiles(t, dir)
	code, o, e := run("repair", "__consumer_offsets-0", "--digest", "sha256:"+ref.SHA256, "--regenerate")
	if code != int(exitcode.Verify) {
		t.Fatalf("exit %d, want 3\n%s%s", code, o, e)
	}
	for _, w := range []string{"candidate bytes refused", "the manifest does not record the encoder that wrote it", ntc2.EncoderIdentity(), "\nhint: nothing was changed; ", "--from URL", "--from-file PATH"} {
		if !strings.Contains(e, w) {
			t.Fatalf("stderr lacks %q:\n%s", w, e)
		}
	}
	if storeFiles(t, dir) != before {
		t.Fatal("the refused repair changed the store")
	}
}

// storeFiles lists every file under dir with its SHA-256.
func storeFiles(t *testing.T, dir string) string {
	t.Helper()
	var sb strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(&sb, "%s %s\n", path, store.SHA256Of(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}
