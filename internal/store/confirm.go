package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// Verbs name the five request kinds the Counter, the Faulty injector and the
// request reports use.
const (
	VerbGet    = "GET"
	VerbHead   = "HEAD"
	VerbList   = "LIST"
	VerbPut    = "PUT"
	VerbDelete = "DELETE"
)

// Verbs lists the verbs in the order reports print them.
var Verbs = []string{VerbGet, VerbHead, VerbList, VerbPut, VerbDelete}

// ConfirmIfAbsent applies the lost-response rule of docs/design.md §2 in one place.
//
// It is called after an IfAbsent Put of data under key met
// ErrPreconditionFailed (cause). The first attempt may have written the
// object and lost its response, so the stored bytes decide: when key holds
// exactly data, ConfirmIfAbsent returns the object's info and nil (the Put
// succeeded, idempotently); otherwise it returns cause unchanged.
//
// The check costs one HEAD, plus one GET when size and ETag agree; the bytes
// are compared in full, never by digest alone, so a colliding MD5 cannot pass
// for our object. Backends (file://, s3://) call it on every IfAbsent 412,
// because their own retries (the AWS SDK's) can hide a lost response; the
// WithRetry decorator calls it after an ambiguous attempt, for any Store.
func ConfirmIfAbsent(ctx context.Context, s Store, key string, data []byte, cause error) (ObjectInfo, error) {
	return confirmStored(ctx, s, key, data, cause)
}

// ConfirmIfMatch is the same rule for an IfMatch Put of data under key that
// met ErrPreconditionFailed (cause): a first attempt may have replaced the
// object and lost its response, and a retry (ours, or one the backend's own
// client made without telling, as the AWS SDK does) then finds the ETag
// moved on — to our bytes. When key holds exactly data, the Put succeeded;
// otherwise cause is returned unchanged, and a missing key is a lost
// precondition too. Callers that CAS documents (layout.Replace) call it on
// every If-Match 412, so a lost response is never reported as a competing
// writer. Equal bytes from another writer are the same CAS result (every
// mutable document carries a version and a digest), so they count as ours.
func ConfirmIfMatch(ctx context.Context, s Store, key string, data []byte, cause error) (ObjectInfo, error) {
	return confirmStored(ctx, s, key, data, cause)
}

func confirmStored(ctx context.Context, s Store, key string, data []byte, cause error) (ObjectInfo, error) {
	info, err := s.Head(ctx, key)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			// Deleted since: still a lost condition, the caller decides.
			return ObjectInfo{}, cause
		}
		return ObjectInfo{}, fmt.Errorf("%w (confirming stored bytes: %w)", cause, err)
	}
	if info.Size != int64(len(data)) {
		return ObjectInfo{}, cause
	}
	if isPlainETag(info.ETag) && info.ETag != ETagOf(data) {
		return ObjectInfo{}, cause
	}
	got, err := s.Get(ctx, key, &Range{Offset: 0, Length: int64(len(data)) + 1})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return ObjectInfo{}, cause
		}
		return ObjectInfo{}, fmt.Errorf("%w (confirming stored bytes: %w)", cause, err)
	}
	if !bytes.Equal(got, data) {
		return ObjectInfo{}, cause
	}
	info.Key = key
	info.SHA256 = SHA256Of(data)
	return info, nil
}

// isPlainETag reports a single-part ETag: 32 lowercase hex digits (an MD5).
func isPlainETag(etag string) bool {
	if len(etag) != 32 {
		return false
	}
	for i := 0; i < len(etag); i++ {
		c := etag[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Permanent marks err as not worth retrying (bad credentials, missing
// bucket, malformed request). WithRetry gives up at once on it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsPermanent reports an error marked by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// Retryable reports whether WithRetry retries err: transient failures and
// ErrConflict are retried; ErrNotFound, ErrPreconditionFailed,
// ErrInvalidKey, ErrTooLarge, context cancellation or deadline, and errors
// marked Permanent are not.
func Retryable(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, ErrNotFound),
		errors.Is(err, ErrPreconditionFailed),
		errors.Is(err, ErrInvalidKey),
		errors.Is(err, ErrTooLarge),
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded),
		IsPermanent(err):
		return false
	}
	return true
}
