package lease

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
)

// The lease's life is logged at info level when a logger is given: taken,
// taken over (naming the previous holder), renewed, released.
func TestLeaseLogsItsLife(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	c := newClock()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := Acquire(ctx, st, "job", "host/pid-1/a", time.Minute, c.now, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	c.add(2 * time.Minute)
	b, err := Acquire(ctx, st, "job", "host/pid-2/b", time.Minute, c.now, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`msg="lease acquired" lease=job holder=host/pid-1/a`,
		`msg="lease renewed" lease=job holder=host/pid-1/a`,
		`msg="lease taken over" lease=job holder=host/pid-2/b from=host/pid-1/a`,
		`msg="lease released" lease=job holder=host/pid-2/b`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	// A lease without a logger (Acquire) lives the same life: a nil Log
	// is never called.
	q, err := Acquire(ctx, store.NewMem(t.Name()+"-quiet"), "job", "h", time.Minute, c.now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q.Log != nil {
		t.Fatal("Acquire set a logger")
	}
	if err := q.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
