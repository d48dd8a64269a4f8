package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// store cat on a terminal (a fake one: isTTY as Execute sets it from
// stdout) refuses binary bytes without --force, exit 2 with nothing
// written; text still shows, and a pipe or file gets the bytes unchanged.
func TestStoreCatRefusesBinaryOnATerminal(t *testing.T) {
	dir := t.TempDir()
	storeURL := "file://" + dir
	run := func(tty bool, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := execute(context.Background(), &globals{stderr: &errb, isTTY: tty}, append([]string{"--store", storeURL}, args...), &out)
		return code, out.String(), errb.String()
	}
	if code, _, e := run(false, "demo", "--records", "300", "--partitions", "1", "--no-tour", "-q"); code != 0 {
		t.Fatalf("demo: %d: %s", code, e)
	}
	objs, err := filepath.Glob(filepath.Join(dir, "streams", "*", "objects", "*.kb"))
	if err != nil || len(objs) == 0 {
		t.Fatalf("no batch objects: %v", err)
	}
	rel, _ := filepath.Rel(dir, objs[0])
	key := filepath.ToSlash(rel)
	want, err := os.ReadFile(objs[0])
	if err != nil {
		t.Fatal(err)
	}

	code, out, errs := run(true, "store", "cat", key)
	if code != 2 || out != "" {
		t.Fatalf("binary on a terminal: exit %d, %d bytes written; want 2 and none", code, len(out))
	}
	if !strings.Contains(errs, "nereusctl: cat "+key+": ") || !strings.Contains(errs, "binary data: not written to the terminal") || !strings.Contains(errs, "hint: redirect stdout") || !strings.Contains(errs, "--force") {
		t.Fatalf("stderr: %s", errs)
	}
	if code, out, errs = run(true, "store", "cat", key, "--force"); code != 0 || out != string(want) {
		t.Fatalf("--force: exit %d (%s), %d bytes, want %d", code, errs, len(out), len(want))
	}
	if code, out, errs = run(false, "store", "cat", key); code != 0 || out != string(want) {
		t.Fatalf("not a terminal: exit %d (%s), %d bytes, want %d", code, errs, len(out), len(want))
	}
	// a JSON document is text: shown on the terminal as it is
	doc, _ := os.ReadFile(filepath.Join(dir, "bindings", "orders", "0.json"))
	if code, out, errs = run(true, "store", "cat", "bindings/orders/0.json"); code != 0 || out != string(doc) {
		t.Fatalf("text on a terminal: exit %d (%s), %q", code, errs, out)
	}
}

func TestIsBinary(t *testing.T) {
	for s, want := range map[string]bool{
		"{\n\t\"a\": 1\r\n}\n": false,
		"héllo":                false,
		"":                     false,
		"a\x00b":               true,
		"\x1b[2J":              true,
		"\xff\xfe":             true,
		"del\x7f":              true,
	} {
		if got := isBinary([]byte(s)); got != want {
			t.Errorf("isBinary(%q) = %v, want %v", s, got, want)
		}
	}
}
