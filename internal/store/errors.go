package store

import (
	"errors"
	"io/fs"
	"syscall"
)

// Permanent failures: the store refused the request for a reason no retry
// can change. Backends wrap them (with Permanent, so WithRetry gives up at
// once); callers test with errors.Is and the CLI exits 1 with a hint.
var (
	// ErrAccessDenied: the store refused access (file:// EACCES, EPERM or a
	// read-only file system; S3 403 AccessDenied and the like).
	ErrAccessDenied = errors.New("access denied")
	// ErrCredentials: the S3 credentials are missing, unknown, wrong or
	// expired (InvalidAccessKeyId, SignatureDoesNotMatch, ExpiredToken, no
	// credentials in the chain).
	ErrCredentials = errors.New("credentials refused")
	// ErrNoSuchBucket: the S3 bucket does not exist.
	ErrNoSuchBucket = errors.New("no such bucket")
)

// IsAccessDenied reports a permission failure: ErrAccessDenied, or an
// operating-system permission error (EACCES, EPERM, EROFS) that a backend
// passed on unmapped.
func IsAccessDenied(err error) bool {
	return errors.Is(err, ErrAccessDenied) || isFSPermission(err)
}

func isFSPermission(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// isPermanentFault reports what WithRetry never retries beyond Retryable's
// list: permission and credential failures, and the file system's answers
// that the same call gets again however often it is sent (isFSPermanent),
// however a backend wrapped them.
func isPermanentFault(err error) bool {
	return IsPermanent(err) || IsAccessDenied(err) || errors.Is(err, ErrCredentials) || errors.Is(err, ErrNoSuchBucket) || isFSPermanent(err)
}

// permanentErrnos are the file system's refusals no retry within a call's
// backoff changes: a file larger than the process may write (EFBIG,
// RLIMIT_FSIZE), a full disk or quota (ENOSPC, EDQUOT), a path that is a
// folder where a file is wanted or is not empty (EISDIR, ENOTEMPTY), a
// name too long or a symlink loop (ENAMETOOLONG, ELOOP), a special file
// where an object is wanted (ENXIO: a FIFO without a writer, opened
// without blocking).
var permanentErrnos = []syscall.Errno{syscall.EFBIG, syscall.ENOSPC, syscall.EDQUOT, syscall.EISDIR, syscall.ENOTEMPTY, syscall.ENAMETOOLONG, syscall.ELOOP, syscall.ENXIO}

func isFSPermanent(err error) bool {
	for _, e := range permanentErrnos {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// OpError is a store call's failure as the decorators see it: the
// operation and the key, around the backend's error (whose message already
// names both, so Error adds nothing).
type OpError struct {
	Op  string
	Key string
	Err error
}

func (e *OpError) Error() string { return e.Err.Error() }
func (e *OpError) Unwrap() error { return e.Err }

// KeyOf returns the key of the first store call that err comes from, or
// "".
func KeyOf(err error) string {
	var oe *OpError
	if errors.As(err, &oe) {
		return oe.Key
	}
	return ""
}

func opErr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var oe *OpError
	if errors.As(err, &oe) {
		return err
	}
	return &OpError{Op: op, Key: key, Err: err}
}
