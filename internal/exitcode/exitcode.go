// Package exitcode owns nereusctl's exit codes (docs/exit-codes.md) and the
// one mapping from errors to them. Operations return errors wrapped with a
// Kind; cmd.Execute turns the first kind it finds into the process status.
package exitcode

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// Code is a process exit status.
type Code int

// The exit codes. Scripts rely on them; never renumber.
const (
	OK          Code = 0   // success
	Error       Code = 1   // any other failure
	Usage       Code = 2   // bad flags, arguments or input files
	Verify      Code = 3   // verification failed: corruption or mismatch found
	Blocked     Code = 4   // blocked: quarantined coverage, lease held, lost precondition
	Interrupted Code = 130 // SIGINT/SIGTERM
)

// Name returns the code's name for docs and logs.
func (c Code) Name() string {
	switch c {
	case OK:
		return "ok"
	case Error:
		return "error"
	case Usage:
		return "usage"
	case Verify:
		return "verification-failed"
	case Blocked:
		return "blocked"
	case Interrupted:
		return "interrupted"
	}
	return "unknown"
}

// All lists the codes with their meaning, for docs and help texts.
var All = []struct {
	Code    Code
	Meaning string
}{
	{OK, "success"},
	{Error, "error: I/O, store or internal failure; nothing was left half-done"},
	{Usage, "usage: bad flags, arguments or input file (e.g. delete-records JSON)"},
	{Verify, "verification failed: corruption, digest or CRC mismatch, replay digests differ"},
	{Blocked, "blocked: quarantined compacted coverage, lease held by another run, or a guarded write lost its precondition"},
	{Interrupted, "interrupted by SIGINT or SIGTERM; rerun to finish"},
}

// Err carries an exit code and an optional operator hint.
type Err struct {
	Code Code
	Err  error
	Hint string
}

func (e *Err) Error() string { return e.Err.Error() }
func (e *Err) Unwrap() error { return e.Err }

// Wrap attaches a code (and hint) to err; nil stays nil.
func Wrap(code Code, err error, hint string) error {
	if err == nil {
		return nil
	}
	return &Err{Code: code, Err: err, Hint: hint}
}

// UsageErr marks err as a usage error.
func UsageErr(err error) error { return Wrap(Usage, err, "") }

// VerifyErr marks err as a verification failure.
func VerifyErr(err error) error { return Wrap(Verify, err, "") }

// BlockedErr marks err as blocked.
func BlockedErr(err error, hint string) error { return Wrap(Blocked, err, hint) }

// Of maps an error to its exit code: an explicit Err wins; then
// interruption, lost preconditions and blocked coverage, corruption, and
// everything else is Error.
func Of(err error) Code {
	if err == nil {
		return OK
	}
	var e *Err
	if errors.As(err, &e) {
		return e.Code
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Interrupted
	case errors.Is(err, store.ErrPreconditionFailed), errors.Is(err, layout.ErrBlocked):
		return Blocked
	case IsCorruption(err):
		return Verify
	}
	return Error
}

// IsCorruption reports errors that mean stored bytes are wrong: a batch,
// checkpoint, view or state encoding that fails its checks, or stream data
// the head promises that is missing or ambiguous.
func IsCorruption(err error) bool {
	for _, e := range []error{kafka.ErrCorrupt, nkc1.ErrCorrupt, ntc2.ErrCorrupt, state.ErrMalformed, stream.ErrMissing, stream.ErrAmbiguous, layout.ErrCorruptDocument, layout.ErrObjectMismatch, layout.ErrInvariant} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Finding names what an error is about: the object (a store key or a
// local file) and the check that failed, where an operation knows them.
// Under -o json they become the error document's "object" and "check"
// (docs/json-output.md, "Errors"). It carries no exit code of its own.
type Finding struct {
	Object string
	Check  string
	Err    error
}

func (f *Finding) Error() string { return f.Err.Error() }
func (f *Finding) Unwrap() error { return f.Err }

// About attaches the object and the check to err; nil stays nil.
func About(err error, object, check string) error {
	if err == nil {
		return nil
	}
	return &Finding{Object: object, Check: check, Err: err}
}

// FindingOf returns the object and check of the first Finding in err.
func FindingOf(err error) (object, check string) {
	var f *Finding
	if errors.As(err, &f) {
		return f.Object, f.Check
	}
	return "", ""
}

// HintOf returns the first non-empty hint attached to err, searching its
// whole tree (an outer Err that only pins a code hides no inner hint).
func HintOf(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := err.(*Err); ok && e.Hint != "" {
		return e.Hint
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return HintOf(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			if h := HintOf(inner); h != "" {
				return h
			}
		}
	}
	return ""
}

// The runbooks (docs/runbooks) a hint points to, by what failed.
const (
	// RunbookRestore: committed objects, bindings, heads or open segments
	// that are missing or damaged.
	RunbookRestore = "docs/runbooks/restore-from-replica.md"
	// RunbookSlowRestart: checkpoints replay has to skip.
	RunbookSlowRestart = "docs/runbooks/broker-restart-is-slow.md"
	// RunbookBlocked: quarantined compacted coverage.
	RunbookBlocked = "docs/runbooks/coordinator-blocked.md"
)

// The finding scopes of docs/json-output.md ("verify"), as FindingHint
// reads them.
const (
	scopeCoverage   = "compacted-coverage"
	scopeCheckpoint = "checkpoint"
)

// FindingHint is the hint for verification findings in the given scopes
// (verify's "scope" field): each failed check points to its own runbook,
// and only quarantined coverage to 'nereusctl quarantine list'. Repeated
// scopes count once; the hints keep the order of the scopes' first
// appearance, joined with "; ".
func FindingHint(scopes ...string) string {
	var out []string
	seen := map[string]bool{}
	for _, s := range scopes {
		h := scopeHint(s)
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		out = append(out, h)
	}
	return strings.Join(out, "; ")
}

func scopeHint(scope string) string {
	switch scope {
	case "":
		return ""
	case scopeCoverage:
		return "a compacted set is quarantined: see 'nereusctl quarantine list' and " + RunbookBlocked
	case scopeCheckpoint:
		return "replay skips a damaged checkpoint (a longer restart): create a new one with 'nereusctl checkpoint create', see " + RunbookSlowRestart
	}
	// committed, binding, stream, open-segment: stored bytes a replica has
	return "restore the missing or damaged objects from a replica: see " + RunbookRestore
}

// ListMax is how many items a one-line list in a message shows.
const ListMax = 20

// List joins items with sep for a one-line message, showing at most
// ListMax of them and then "… and 249,988 more": a list of failing
// partitions stays readable (and a 250,000-partition input does not make
// a megabytes-long stderr line). Every message that lists partitions or
// keys joins them here.
func List(items []string, sep string) string {
	if len(items) <= ListMax {
		return strings.Join(items, sep)
	}
	return strings.Join(items[:ListMax], sep) + sep + "… and " + Count(len(items)-ListMax) + " more"
}

// Count writes n with thousands separators: 249,988.
func Count(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
