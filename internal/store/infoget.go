package store

import (
	"context"
	"time"
)

// InfoGetter is implemented by stores (and decorators) that can read a
// whole object together with what Head reports of it in one step: file://
// opens the object once (fstat, the remembered digests, pread into the
// caller's buffer) where Head and Get would open it twice. A job that
// checks many small objects (verify --deep) pays the per-object system
// calls once.
type InfoGetter interface {
	// GetInfoInto reads the whole object into buf[:0] (grown when too
	// small; the result may alias buf) and returns its info as Head does
	// (size, ETag, SHA-256 when the backend knows it, modification time).
	GetInfoInto(ctx context.Context, key string, buf []byte) ([]byte, ObjectInfo, error)
}

// GetInfoInto reads key and its info in one step when s can (InfoGetter),
// else with Head then GetInto. The result may alias buf.
func GetInfoInto(ctx context.Context, s Store, key string, buf []byte) ([]byte, ObjectInfo, error) {
	if g, ok := s.(InfoGetter); ok {
		return g.GetInfoInto(ctx, key, buf)
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

// GetInfoInto counts one HEAD and one GET: what it stands for, and what a
// backend without the one-step read sends.
func (c *Counter) GetInfoInto(ctx context.Context, key string, buf []byte) ([]byte, ObjectInfo, error) {
	c.head.Add(1)
	c.get.Add(1)
	return GetInfoInto(ctx, c.s, key, buf)
}

// GetInfoInto retries like Get.
func (r *Retry) GetInfoInto(ctx context.Context, key string, buf []byte) (b []byte, info ObjectInfo, err error) {
	_, err = r.do(ctx, "get", key, func() error {
		b, info, err = GetInfoInto(ctx, r.s, key, buf)
		return err
	})
	return b, info, err
}

// GetInfoInto waits for two calls' turns (a HEAD and a GET).
func (r *RateLimit) GetInfoInto(ctx context.Context, key string, buf []byte) ([]byte, ObjectInfo, error) {
	for range 2 {
		if err := r.wait(ctx, "get", key); err != nil {
			return nil, ObjectInfo{}, err
		}
	}
	return GetInfoInto(ctx, r.s, key, buf)
}

// GetInfoInto logs like GetInto.
func (l *Logged) GetInfoInto(ctx context.Context, key string, buf []byte) ([]byte, ObjectInfo, error) {
	start := time.Now()
	b, info, err := GetInfoInto(ctx, l.s, key, buf)
	l.done(ctx, "get", key, start, err, "bytes", len(b), "with_info", true)
	return b, info, err
}

// GetInfoInto opens the object once (InfoGetter); what the fast read in
// its folder does not take goes through Head and the general read.
func (f *File) GetInfoInto(ctx context.Context, key string, buf []byte) ([]byte, ObjectInfo, error) {
	if err := fileKey(key); err != nil {
		return nil, ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ObjectInfo{}, err
	}
	if data, info, ok := f.readInfoInFolder(key, buf); ok {
		return data, info, nil
	}
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

// GetInfoInto cuts like GetInto: without it the one-step read of the store
// beneath (file://: one open) fell back to Head then GetInto under every
// --request-timeout (two opens and a digest-attribute read per object).
func (t *Timeout) GetInfoInto(ctx context.Context, key string, buf []byte) (b []byte, info ObjectInfo, err error) {
	err = t.call(ctx, "get", key, func(ctx context.Context) error {
		b, info, err = GetInfoInto(ctx, t.s, key, buf)
		return err
	})
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	return b, info, nil
}
