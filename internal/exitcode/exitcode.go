// Package exitcode owns nereusctl's exit codes (docs/exit-codes.md) and the
// one table from kinds of failure (internal/errkind) to them. It is the
// command layer's: only package cmd imports it. Operations return errors
// marked with a kind; cmd.Execute turns the error into the process status
// here.
package exitcode

import (
	"context"
	"errors"

	"github.com/nereusctl/nereusctl/internal/errkind"
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

// OperatorHint makes the hint visible to errkind.HintOf.
func (e *Err) OperatorHint() string { return e.Hint }

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
// interruption; then the error's kind (errkind.Of): usage and refused
// input 2, blocked and a lost precondition 4, corrupt or missing data 3;
// everything else is Error.
func Of(err error) Code {
	if err == nil {
		return OK
	}
	var e *Err
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.Canceled) {
		return Interrupted
	}
	return OfKind(errkind.Of(err))
}

// OfKind is the exit code of a kind of failure: the one table.
func OfKind(k errkind.Kind) Code {
	switch k {
	case errkind.Usage, errkind.Refused:
		return Usage
	case errkind.Blocked, errkind.Conflict:
		return Blocked
	case errkind.Corrupt, errkind.Missing:
		return Verify
	}
	return Error
}

// IsCorruption reports errors that mean stored bytes are wrong or missing
// (errkind Corrupt or Missing): a batch, checkpoint, view, document or
// state that fails its checks, or stream data the head promises that is
// missing or ambiguous.
func IsCorruption(err error) bool { return errkind.IsData(err) }

// HintOf returns the first non-empty hint attached to err, searching its
// whole tree (errkind.HintOf: this package's Err and errkind's marks).
func HintOf(err error) string { return errkind.HintOf(err) }

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

// ListMax is how many items a one-line list in a message shows.
const ListMax = errkind.ListMax

// List joins items for a one-line message (errkind.List).
func List(items []string, sep string) string { return errkind.List(items, sep) }

// Worse returns the more severe of two exit codes for a run over many
// partitions: interrupted, then verification failed (corruption), then
// blocked, then error, then usage.
func Worse(a, b Code) Code {
	rank := func(c Code) int {
		switch c {
		case OK:
			return 0
		case Usage:
			return 1
		case Error:
			return 2
		case Blocked:
			return 3
		case Verify:
			return 4
		case Interrupted:
			return 5
		}
		return 2
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}
