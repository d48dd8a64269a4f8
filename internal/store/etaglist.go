package store

import (
	"context"
	"time"
)

// ETagLister is implemented by stores (and decorators) that can fill the
// ETag of every listed object, as S3's listing always does: file:// takes
// each file's digest from memory or its digest attribute (trusted only
// while the file's size and time are the ones it was recorded for), else
// hashes the file. Meant for listings of a few small documents (a
// stream's generation manifests), whose ETags a checkpoint compares.
type ETagLister interface {
	// ListETags is List with ETag filled where known ("" otherwise).
	ListETags(ctx context.Context, prefix string) ([]ObjectInfo, error)
}

// ListETags lists prefix with ETags where s can fill them cheaply
// (ETagLister), else with List (S3 and mem:// list ETags anyway).
func ListETags(ctx context.Context, s Store, prefix string) ([]ObjectInfo, error) {
	if e, ok := s.(ETagLister); ok {
		return e.ListETags(ctx, prefix)
	}
	return s.List(ctx, prefix)
}

// ListETags fills each listed file's ETag (ETagLister).
func (f *File) ListETags(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	infos, err := f.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	for i := range infos {
		if infos[i].ETag == "" {
			infos[i].ETag = f.knownETag(infos[i].Key)
		}
	}
	return infos, nil
}

// knownETag is key's MD5 (File.digests: the digest cache, the file's
// digest attribute when fresh, else its bytes hashed); "" when the file
// cannot be read (then its GET says why).
func (f *File) knownETag(key string) string {
	fh, err := f.openRead(key)
	if err != nil {
		return ""
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	d, err := f.digests(key, fh, fi)
	if err != nil {
		return ""
	}
	return d.md5
}

// ListETags counts one LIST (ETagLister).
func (c *Counter) ListETags(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	c.list.Add(1)
	return ListETags(ctx, c.s, prefix)
}

// ListETags waits like a LIST (ETagLister).
func (r *RateLimit) ListETags(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if err := r.wait(ctx, "list", prefix); err != nil {
		return nil, err
	}
	return ListETags(ctx, r.s, prefix)
}

// ListETags retries like a LIST (ETagLister).
func (r *Retry) ListETags(ctx context.Context, prefix string) (out []ObjectInfo, err error) {
	_, err = r.do(ctx, "list", prefix, func() error {
		out, err = ListETags(ctx, r.s, prefix)
		return err
	})
	return out, err
}

// ListETags logs like a LIST (ETagLister).
func (l *Logged) ListETags(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	start := time.Now()
	out, err := ListETags(ctx, l.s, prefix)
	l.done(ctx, "list", prefix, start, err, "objects", len(out), "etags", true)
	return out, err
}

// ListETags cuts like a LIST (ETagLister).
func (t *Timeout) ListETags(ctx context.Context, prefix string) (out []ObjectInfo, err error) {
	err = t.call(ctx, "list", prefix, func(ctx context.Context) error {
		out, err = ListETags(ctx, t.s, prefix)
		return err
	})
	return out, err
}
