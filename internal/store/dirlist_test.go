package store

import (
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"
)

// ListDirs gives the names one level under a prefix on every backend and
// through every decorator, the same as derived from the whole listing,
// and the counter counts it as one LIST.
func TestListDirsThroughEveryDecorator(t *testing.T) {
	ctx := context.Background()
	file, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range []Store{NewMem("dirs"), file} {
		for _, k := range []string{"streams/a/head.json", "streams/a/objects/x.kb", "streams/b/head.json", "streams/c/d/e.json", "streams/top.json", "bindings/t/0.json"} {
			if _, err := base.Put(ctx, k, []byte("x"), None()); err != nil {
				t.Fatal(err)
			}
		}
		c := NewCounter(base)
		stores := []Store{base, c, WithRetry(base, RetryPolicy{}), WithRateLimit(base, 1000), WithLog(base, slog.New(slog.DiscardHandler)), WithTimeout(base, time.Minute)}
		for _, s := range stores {
			got, err := ListDirs(ctx, s, "streams/")
			if err != nil {
				t.Fatalf("%T over %s: %v", s, base, err)
			}
			if want := []string{"a", "b", "c"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("%T over %s: %v, want %v", s, base, got, want)
			}
			if _, ok := s.(DirLister); !ok {
				t.Fatalf("%T does not pass ListDirs through", s)
			}
		}
		if got := c.Counts()[VerbList]; got != 1 {
			t.Fatalf("counter: %d LISTs, want 1", got)
		}
		if got, err := ListDirs(ctx, base, ""); err != nil || !reflect.DeepEqual(got, []string{"bindings", "streams"}) {
			t.Fatalf("root: %v %v", got, err)
		}
		if got, err := ListDirs(ctx, base, "quarantine/"); err != nil || len(got) != 0 {
			t.Fatalf("missing prefix: %v %v", got, err)
		}
		if _, err := ListDirs(ctx, base, "streams"); err == nil {
			t.Fatal("a prefix without / accepted")
		}
	}
}
