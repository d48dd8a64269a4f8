package exitcode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

func TestOf(t *testing.T) {
	wrap := func(e error) error { return fmt.Errorf("op on key: %w", e) }
	cases := []struct {
		err  error
		want Code
	}{
		{nil, OK},
		{errors.New("boom"), Error},
		{wrap(context.Canceled), Interrupted},
		{wrap(store.ErrPreconditionFailed), Blocked},
		{wrap(layout.ErrBlocked), Blocked},
		{wrap(kafka.ErrCorrupt), Verify},
		{wrap(kafka.ErrCRC), Verify},
		{wrap(nkc1.ErrCorrupt), Verify},
		{wrap(ntc2.ErrCorrupt), Verify},
		{wrap(state.ErrMalformed), Verify},
		{wrap(stream.ErrMissing), Verify},
		{wrap(stream.ErrAmbiguous), Verify},
		{UsageErr(wrap(kafka.ErrCorrupt)), Usage}, // an explicit code wins
		{wrap(BlockedErr(errors.New("lease"), "wait")), Blocked},
		{wrap(layout.ErrCorruptDocument), Verify},
		{wrap(layout.ErrHeadMissing), Verify},
		{wrap(layout.ErrHeadRollback), Verify},
		{wrap(&stream.MissingError{Ranges: [][2]int64{{1, 2}}}), Verify},
		{fmt.Errorf("%w: %w", layout.ErrInvariant, layout.ErrBlocked), Blocked}, // a coordinator's contradiction blocks it
		{wrap(errkind.Markf(errkind.Refused, "internal topic")), Usage},
		{wrap(errkind.Mark(wrap(kafka.ErrCorrupt), errkind.Blocked)), Blocked}, // the outer mark wins
		{wrap(store.ErrNotFound), Error},
	}
	for _, c := range cases {
		if got := Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if HintOf(wrap(BlockedErr(errors.New("x"), "do this"))) != "do this" {
		t.Error("hint lost through wrapping")
	}
}

// About names the object and check of a failure without changing its code
// or message; the outermost Finding wins.
func TestFinding(t *testing.T) {
	base := VerifyErr(errors.New("sha256 mismatch"))
	err := fmt.Errorf("verify orders-0: %w", errkind.About(base, "streams/s/objects/0-9.kb", "sha256"))
	if obj, check := errkind.FindingOf(err); obj != "streams/s/objects/0-9.kb" || check != "sha256" {
		t.Fatalf("FindingOf = %q, %q", obj, check)
	}
	if Of(err) != Verify || err.Error() != "verify orders-0: sha256 mismatch" {
		t.Fatalf("code %d, message %q", Of(err), err)
	}
	if obj, check := errkind.FindingOf(errors.New("plain")); obj != "" || check != "" {
		t.Fatalf("FindingOf(plain) = %q, %q", obj, check)
	}
	if errkind.About(nil, "x", "y") != nil {
		t.Fatal("About(nil) is not nil")
	}
}

// An outer Err that only pins a code does not hide an inner hint.
func TestHintOfSearchesTheTree(t *testing.T) {
	inner := Wrap(Error, errors.New("access denied"), "check the folder's permissions")
	err := Wrap(Verify, fmt.Errorf("1 of 2 failed: %w", inner), "")
	if h := HintOf(err); h != "check the folder's permissions" {
		t.Fatalf("HintOf = %q", h)
	}
	if h := HintOf(errors.Join(errors.New("a"), inner)); h != "check the folder's permissions" {
		t.Fatalf("HintOf(joined) = %q", h)
	}
	if Of(err) != Verify {
		t.Fatalf("code %d", Of(err))
	}
	if HintOf(errors.New("plain")) != "" || HintOf(nil) != "" {
		t.Fatal("hint from nowhere")
	}
}

// Each failed check points to its own runbook; only coverage names
// 'quarantine list'; a scope repeated counts once.
func TestListTruncates(t *testing.T) {
	items := make([]string, 250008)
	for i := range items {
		items[i] = fmt.Sprintf("t-%d", i)
	}
	got := List(items, ", ")
	if !strings.HasPrefix(got, "t-0, t-1, ") || !strings.HasSuffix(got, "t-19, … and 249,988 more") || strings.Contains(got, "t-20,") {
		t.Fatalf("List = %q", got)
	}
	if got := List(items[:ListMax], "; "); got != strings.Join(items[:ListMax], "; ") {
		t.Fatalf("List of %d = %q", ListMax, got)
	}
	if List(nil, ", ") != "" {
		t.Fatal("List(nil)")
	}
}

// TestWorse: a run over many partitions exits with its most severe
// outcome: interrupted, then verification failed, then blocked, then
// error, then usage, then success, whatever the order they came in.
func TestWorse(t *testing.T) {
	order := []Code{OK, Usage, Error, Blocked, Verify, Interrupted}
	for i, a := range order {
		for j, b := range order {
			want := order[max(i, j)]
			if got := Worse(a, b); got != want {
				t.Errorf("Worse(%d, %d) = %d, want %d", a, b, got, want)
			}
		}
	}
}
