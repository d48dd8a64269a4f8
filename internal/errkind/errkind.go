// Package errkind owns the kinds of failure nereusctl's packages return
// (docs/exit-codes.md): what went wrong, as a value a caller can test with
// Of, never a process exit code. Library packages mark the errors they
// make (New for a sentinel, Mark for one error), attach an operator hint
// (Hint) or the object and check a failure is about (About); only the
// command layer (package cmd, through internal/exitcode) turns a kind into
// an exit status.
//
// It imports nothing of nereusctl's, so every package may use it.
package errkind

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is what a failure means to the operator.
type Kind uint8

// The kinds.
const (
	// None: no kind is known (an I/O or internal failure).
	None Kind = iota
	// Usage: the operator's input is wrong (flags, arguments, input files);
	// nothing was changed.
	Usage
	// Refused: the request is understood but not allowed (a policy, such as
	// trimming a coordinator topic); nothing was changed.
	Refused
	// Blocked: the partition cannot be acted on now (quarantined coverage,
	// a lease another run holds, mandatory coverage missing).
	Blocked
	// Conflict: a guarded write lost its precondition (another writer).
	Conflict
	// Corrupt: stored bytes fail their checks (a digest, CRC, size, a
	// document that does not decode, documents that contradict each other).
	Corrupt
	// Missing: data the store promises is missing (objects between the
	// trim and the head, a stream head, a member of a compacted set).
	Missing
)

// String is the kind's name, as docs/exit-codes.md and JSON errors give it.
func (k Kind) String() string {
	switch k {
	case None:
		return "error"
	case Usage:
		return "usage"
	case Refused:
		return "refused"
	case Blocked:
		return "blocked"
	case Conflict:
		return "conflict"
	case Corrupt:
		return "corrupt"
	case Missing:
		return "missing"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// kinded is an error that names its kind.
type kinded interface{ Kind() Kind }

// sentinel is an error value of a kind (New).
type sentinel struct {
	msg  string
	kind Kind
}

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) Kind() Kind    { return s.kind }

// New returns a sentinel error of kind k: errors.Is finds it by identity,
// Of finds its kind through any wrapping.
func New(k Kind, msg string) error { return &sentinel{msg: msg, kind: k} }

// marked is an error with a kind (and a hint) attached.
type marked struct {
	err  error
	kind Kind
	hint string
}

func (m *marked) Error() string { return m.err.Error() }
func (m *marked) Unwrap() error { return m.err }
func (m *marked) Kind() Kind    { return m.kind }

// OperatorHint is the hint attached to this error itself.
func (m *marked) OperatorHint() string { return m.hint }

// Mark gives err kind k, over any kind inside it; nil stays nil.
func Mark(err error, k Kind) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, kind: k}
}

// Markf is Mark over fmt.Errorf.
func Markf(k Kind, format string, args ...any) error { return Mark(fmt.Errorf(format, args...), k) }

// Hint attaches an operator hint (what to do next) to err, keeping its
// kind; nil stays nil.
func Hint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, kind: Of(err), hint: hint}
}

// MarkHint is Mark with a hint.
func MarkHint(err error, k Kind, hint string) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, kind: k, hint: hint}
}

// Of returns the kind of err: the outermost error in its tree that names
// one (Mark over a sentinel wins), else None.
func Of(err error) Kind {
	for err != nil {
		if k, ok := err.(kinded); ok && k.Kind() != None {
			return k.Kind()
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			k := None
			for _, inner := range u.Unwrap() {
				k = joined(k, Of(inner))
			}
			return k
		default:
			return None
		}
	}
	return None
}

// Is reports whether err is of kind k.
func Is(err error, k Kind) bool { return Of(err) == k }

// IsData reports whether err says stored data is wrong or missing
// (Corrupt or Missing): what verify reports as a finding, exit 3.
func IsData(err error) bool {
	k := Of(err)
	return k == Corrupt || k == Missing
}

// joined picks the kind of an error that joins several (errors.Join, or
// fmt.Errorf with more than one %w): a partition that cannot be acted on
// (Blocked, Conflict) names that first, then wrong or missing data, then
// the operator's input.
func joined(a, b Kind) Kind {
	rank := func(k Kind) int {
		switch k {
		case Blocked, Conflict:
			return 4
		case Corrupt, Missing:
			return 3
		case Refused:
			return 2
		case Usage:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// HintOf returns the first non-empty hint attached to err, searching its
// whole tree (an outer mark without a hint hides no inner one). Any error
// with an OperatorHint() string method carries a hint: Mark's, and the
// command layer's exit-code wrapper.
func HintOf(err error) string {
	if err == nil {
		return ""
	}
	if h, ok := err.(interface{ OperatorHint() string }); ok && h.OperatorHint() != "" {
		return h.OperatorHint()
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

// Finding names what an error is about: the object (a store key or a
// local file) and the check that failed. Under -o json they become the
// error document's "object" and "check" (docs/json-output.md, "Errors").
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
