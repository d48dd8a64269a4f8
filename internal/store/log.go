package store

import (
	"context"
	"log/slog"
	"time"
)

// Logged is the request-logging decorator; see WithLog.
type Logged struct {
	s   Store
	log *slog.Logger
}

var _ Store = (*Logged)(nil)

// WithLog logs every call to s at debug level on log: the operation, the
// key (or prefix), the guard of a write, the bytes moved, how long it took
// and the error. Placed directly over a backend (under WithRetry), it logs
// every attempt. It never logs object contents or credentials.
func WithLog(s Store, log *slog.Logger) *Logged {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Logged{s: s, log: log}
}

func (l *Logged) String() string { return l.s.String() }

// Unwrap returns the decorated store.
func (l *Logged) Unwrap() Store { return l.s }

func (l *Logged) done(ctx context.Context, op, key string, start time.Time, err error, attrs ...any) {
	if !l.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs = append([]any{"op", op, "key", key}, attrs...)
	attrs = append(attrs, "duration", time.Since(start).Round(time.Microsecond))
	if err != nil {
		attrs = append(attrs, "error", err)
	}
	l.log.DebugContext(ctx, "store request", attrs...)
}

func (l *Logged) Head(ctx context.Context, key string) (ObjectInfo, error) {
	start := time.Now()
	info, err := l.s.Head(ctx, key)
	l.done(ctx, "head", key, start, err, "size", info.Size)
	return info, err
}

func (l *Logged) Get(ctx context.Context, key string, r *Range) ([]byte, error) {
	start := time.Now()
	b, err := l.s.Get(ctx, key, r)
	if r != nil {
		l.done(ctx, "get", key, start, err, "offset", r.Offset, "length", r.Length, "bytes", len(b))
	} else {
		l.done(ctx, "get", key, start, err, "bytes", len(b))
	}
	return b, err
}

func (l *Logged) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	start := time.Now()
	b, err := GetInto(ctx, l.s, key, buf)
	l.done(ctx, "get", key, start, err, "bytes", len(b))
	return b, err
}

func (l *Logged) Put(ctx context.Context, key string, data []byte, g Guard) (ObjectInfo, error) {
	start := time.Now()
	info, err := l.s.Put(ctx, key, data, g)
	l.done(ctx, "put", key, start, err, "guard", g.String(), "bytes", len(data))
	return info, err
}

func (l *Logged) Delete(ctx context.Context, key string, g Guard) error {
	start := time.Now()
	err := l.s.Delete(ctx, key, g)
	l.done(ctx, "delete", key, start, err, "guard", g.String())
	return err
}

func (l *Logged) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	start := time.Now()
	out, err := l.s.List(ctx, prefix)
	l.done(ctx, "list", prefix, start, err, "objects", len(out))
	return out, err
}

func (l *Logged) ListAfter(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error) {
	start := time.Now()
	out, err := l.s.ListAfter(ctx, prefix, startAfter)
	l.done(ctx, "list", prefix, start, err, "start_after", startAfter, "objects", len(out))
	return out, err
}

// ListRange logs like ListAfter (RangeLister).
func (l *Logged) ListRange(ctx context.Context, prefix, startAfter, before string) ([]ObjectInfo, error) {
	start := time.Now()
	out, err := ListRange(ctx, l.s, prefix, startAfter, before)
	l.done(ctx, "list", prefix, start, err, "start_after", startAfter, "before", before, "objects", len(out))
	return out, err
}
