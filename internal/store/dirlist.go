package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// DirLister is implemented by stores (and decorators) that can list the
// names one level under a prefix without listing every key beneath it
// (S3's Delimiter "/", a folder read on file://): the streams of a store
// are found in one request a thousand streams, not one per object.
type DirLister interface {
	// ListDirs returns the distinct names n such that some key starts
	// with prefix+n+"/", sorted; prefix is "" or ends with "/".
	ListDirs(ctx context.Context, prefix string) ([]string, error)
}

// ListDirs lists the names one level under prefix (a "folder" is any
// name some key continues with a "/"): with DirLister where s has it,
// else from the whole listing of prefix.
func ListDirs(ctx context.Context, s Store, prefix string) ([]string, error) {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("list dirs %q: %w: the prefix must end with /", prefix, ErrInvalidKey)
	}
	if d, ok := s.(DirLister); ok {
		return d.ListDirs(ctx, prefix)
	}
	infos, err := ListKeys(ctx, s, prefix)
	if err != nil {
		return nil, err
	}
	return dirsOf(prefix, infos), nil
}

// dirsOf is the names one level under prefix that the keys continue with a "/".
func dirsOf(prefix string, infos []ObjectInfo) []string {
	var out []string
	for _, in := range infos {
		rest := strings.TrimPrefix(in.Key, prefix)
		if name, _, ok := strings.Cut(rest, "/"); ok && name != "" && (len(out) == 0 || out[len(out)-1] != name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return compactSorted(out)
}

func compactSorted(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// ListDirs sends ListObjectsV2 with Delimiter "/" and keeps the common
// prefixes (DirLister).
func (s *S3) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	if err := ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket:    aws.String(s.bucket),
		Prefix:    aws.String(s.full(prefix)),
		Delimiter: aws.String("/"),
	})
	var out []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.mapErr("list", fmt.Sprintf("%q", prefix), None(), err)
		}
		for _, cp := range page.CommonPrefixes {
			k, ok := strings.CutPrefix(aws.ToString(cp.Prefix), s.full(prefix))
			if name, ok2 := strings.CutSuffix(k, "/"); ok && ok2 && name != "" {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return compactSorted(out), nil
}

// ListDirs reads the prefix's folder (DirLister): an entry that is a
// folder is a name; a file beside them is not. A folder that holds no
// object (left empty by a delete) is a name here where S3 would list none;
// callers treat a name as "may hold keys".
func (f *File) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	if err := ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir := strings.TrimSuffix(prefix, "/")
	if dir == "" {
		dir = "."
	}
	d, err := f.root.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr("list", prefix, err)
	}
	defer d.Close()
	des, err := d.ReadDir(-1)
	if err != nil {
		return nil, mapErr("list", prefix, err)
	}
	var out []string
	for _, de := range des {
		if de.IsDir() && !strings.HasPrefix(de.Name(), ".") {
			out = append(out, de.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// ListDirs derives the names from the keys (DirLister).
func (m *Mem) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	infos, err := m.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	return dirsOf(prefix, infos), nil
}

// ListDirs counts one LIST (DirLister).
func (c *Counter) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	c.list.Add(1)
	return ListDirs(ctx, c.s, prefix)
}

// ListDirs waits like a LIST (DirLister).
func (r *RateLimit) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	if err := r.wait(ctx, "list", prefix); err != nil {
		return nil, err
	}
	return ListDirs(ctx, r.s, prefix)
}

// ListDirs retries like a LIST (DirLister).
func (r *Retry) ListDirs(ctx context.Context, prefix string) (out []string, err error) {
	_, err = r.do(ctx, "list", prefix, func() error {
		out, err = ListDirs(ctx, r.s, prefix)
		return err
	})
	return out, err
}

// ListDirs logs like a LIST (DirLister).
func (l *Logged) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	start := time.Now()
	out, err := ListDirs(ctx, l.s, prefix)
	l.done(ctx, "list", prefix, start, err, "delimiter", "/", "names", len(out))
	return out, err
}

// ListDirs cuts like a LIST (DirLister).
func (t *Timeout) ListDirs(ctx context.Context, prefix string) (out []string, err error) {
	err = t.call(ctx, "list", prefix, func(ctx context.Context) error {
		out, err = ListDirs(ctx, t.s, prefix)
		return err
	})
	return out, err
}
