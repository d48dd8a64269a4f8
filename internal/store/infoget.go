package store

import (
	"context"
	"time"
)

// getInfoGeneral is Head then the general read, for what the fast read in
// the folder did not take.
func (f *File) getInfoGeneral(key string) ([]byte, ObjectInfo, error) {
	info, err := f.stat("head", key)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	data, err := f.getGeneral(key, nil)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	return data, info, nil
}

// SizedGetter is implemented by stores (and decorators) that can read a
// whole object with its size and modification time in one step without
// computing digests, for a caller that hashes the bytes itself (verify
// --deep checks the SHA-256 of what it read, so the digests file:// would
// compute for the info, a second SHA-256 and an MD5, are work done twice).
type SizedGetter interface {
	// GetSizedInto reads the whole object into buf[:0] (grown when too
	// small; the result may alias buf) and returns its size and
	// modification time as Head does, and maybe not its digests: SHA256
	// may be empty, and ETag is empty only where the backend's ETag is
	// the hex MD5 of the bytes returned (file://), for the caller to
	// compute from them if it needs it.
	GetSizedInto(ctx context.Context, key string, buf []byte) ([]byte, ObjectInfo, error)
}

// GetSizedInto reads key with its size in one step, digests left to the
// caller, when s can (SizedGetter), else with Head then GetInto. The
// result may alias buf. An empty ETag in the info is the hex MD5 of the
// bytes (ETagOf).
func GetSizedInto(ctx context.Context, s Store, key string, buf []byte) ([]byte, ObjectInfo, error) {
	if g, ok := s.(SizedGetter); ok {
		return g.GetSizedInto(ctx, key, buf)
	}
	info, err := s.Head(ctx, key)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	data, err := GetInto(ctx, s, key, buf)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	return data, info, nil
}

// GetSizedInto counts one HEAD and one GET: what it stands for, and what
// a backend without the one-step read sends.
func (c *Counter) GetSizedInto(ctx context.Context, key string, buf []byte) ([]byte, ObjectInfo, error) {
	c.head.Add(1)
	c.get.Add(1)
	return GetSizedInto(ctx, c.s, key, buf)
}

// GetSizedInto retries like Get.
func (r *Retry) GetSizedInto(ctx context.Context, key string, buf []byte) (b []byte, info ObjectInfo, err error) {
	_, err = r.do(ctx, "get", key, func() error {
		b, info, err = GetSizedInto(ctx, r.s, key, buf)
		return err
	})
	return b, info, err
}

// GetSizedInto waits for two calls' turns (a HEAD and a GET).
func (r *RateLimit) GetSizedInto(ctx context.Context, key string, buf []byte) ([]byte, ObjectInfo, error) {
	for range 2 {
		if err := r.wait(ctx, "get", key); err != nil {
			return nil, ObjectInfo{}, err
		}
	}
	return GetSizedInto(ctx, r.s, key, buf)
}

// GetSizedInto logs like GetInto.
func (l *Logged) GetSizedInto(ctx context.Context, key string, buf []byte) ([]byte, ObjectInfo, error) {
	start := time.Now()
	b, info, err := GetSizedInto(ctx, l.s, key, buf)
	l.done(ctx, "get", key, start, err, "bytes", len(b), "with_info", true)
	return b, info, err
}

// GetSizedInto cuts like GetInto.
func (t *Timeout) GetSizedInto(ctx context.Context, key string, buf []byte) (b []byte, info ObjectInfo, err error) {
	err = t.call(ctx, "get", key, func(ctx context.Context) error {
		b, info, err = GetSizedInto(ctx, t.s, key, buf)
		return err
	})
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	return b, info, nil
}

// GetSizedInto opens the object once and hashes nothing (SizedGetter);
// what the fast read in its folder does not take goes through Head and
// the general read (the info then has its digests).
func (f *File) GetSizedInto(ctx context.Context, key string, buf []byte) ([]byte, ObjectInfo, error) {
	if err := fileKey(key); err != nil {
		return nil, ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ObjectInfo{}, err
	}
	if data, info, ok := f.readSizedInFolder(key, buf); ok {
		return data, info, nil
	}
	return f.getInfoGeneral(key)
}
