package store

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// PageKeys is how many keys one S3 LIST page holds at most.
const PageKeys = 1000

// PageLister is implemented by stores (and decorators) that list in pages
// (S3): ListFirstPage sends one LIST for the keys with prefix, at most max
// of them, and says whether that page held the whole listing. A prefix
// whose keys fit one page (a stream's checkpoints, generations, head and
// objects) is then listed in one request instead of one per sub-prefix.
type PageLister interface {
	ListFirstPage(ctx context.Context, prefix string, max int) (infos []ObjectInfo, complete bool, err error)
	// Pages says whether ListFirstPage sends a LIST: a decorator pages
	// when the store beneath it does.
	Pages() bool
}

// pages says whether s lists in pages.
func pages(s Store) bool {
	p, ok := s.(PageLister)
	return ok && p.Pages()
}

// ListFirstPage lists the first page of prefix when s lists in pages
// (PageLister). paged is false, and nothing is sent, when it does not
// (file://: a listing costs no request there, and the sub-prefixes are
// listed as before). infos are sorted by key; complete says the page was
// the whole listing, and only then may a caller use it as one.
func ListFirstPage(ctx context.Context, s Store, prefix string, max int) (infos []ObjectInfo, complete, paged bool, err error) {
	if !pages(s) {
		return nil, false, false, nil
	}
	infos, complete, err = s.(PageLister).ListFirstPage(ctx, prefix, max)
	return infos, complete, true, err
}

// ListFirstPage sends one ListObjectsV2 with MaxKeys max (PageLister).
func (s *S3) ListFirstPage(ctx context.Context, prefix string, max int) ([]ObjectInfo, bool, error) {
	if err := ValidatePrefix(prefix); err != nil {
		return nil, false, err
	}
	if s.direct != nil {
		page, err := s.directPage(ctx, fmt.Sprintf("%q", prefix), url.Values{"prefix": {s.full(prefix)}, "max-keys": {strconv.Itoa(max)}})
		if err != nil {
			return nil, false, err
		}
		infos := make([]ObjectInfo, 0, len(page.Contents))
		for _, o := range page.Contents {
			if k, ok := strings.CutPrefix(o.Key, s.prefix); ok {
				infos = append(infos, ObjectInfo{Key: k, Size: o.Size, ETag: strings.Trim(o.ETag, `"`), Modified: o.LastModified})
			}
		}
		sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
		return infos, !page.IsTruncated, nil
	}
	out, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket:  aws.String(s.bucket),
		Prefix:  aws.String(s.full(prefix)),
		MaxKeys: aws.Int32(int32(max)),
	})
	if err != nil {
		return nil, false, s.mapErr("list", fmt.Sprintf("%q", prefix), None(), err)
	}
	infos := make([]ObjectInfo, 0, len(out.Contents))
	for _, o := range out.Contents {
		k, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix)
		if !ok {
			continue
		}
		infos = append(infos, ObjectInfo{Key: k, Size: aws.ToInt64(o.Size), ETag: unquote(o.ETag), Modified: aws.ToTime(o.LastModified)})
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
	return infos, !aws.ToBool(out.IsTruncated), nil
}

// ListFirstPage lists like an S3 page of max keys (PageLister), so tests
// on mem:// take the one-request path S3 takes.
func (m *Mem) ListFirstPage(ctx context.Context, prefix string, max int) ([]ObjectInfo, bool, error) {
	all, err := m.ListAfter(ctx, prefix, "")
	if err != nil {
		return nil, false, err
	}
	if len(all) > max {
		return all[:max], false, nil
	}
	return all, true, nil
}

// ListFirstPage counts one LIST (PageLister).
func (c *Counter) ListFirstPage(ctx context.Context, prefix string, max int) ([]ObjectInfo, bool, error) {
	c.list.Add(1)
	infos, complete, _, err := ListFirstPage(ctx, c.s, prefix, max)
	return infos, complete, err
}

// ListFirstPage waits like a LIST (PageLister).
func (r *RateLimit) ListFirstPage(ctx context.Context, prefix string, max int) ([]ObjectInfo, bool, error) {
	if err := r.wait(ctx, "list", prefix); err != nil {
		return nil, false, err
	}
	infos, complete, _, err := ListFirstPage(ctx, r.s, prefix, max)
	return infos, complete, err
}

// ListFirstPage retries like a LIST (PageLister).
func (r *Retry) ListFirstPage(ctx context.Context, prefix string, max int) (infos []ObjectInfo, complete bool, err error) {
	_, err = r.do(ctx, "list", prefix, func() error {
		infos, complete, _, err = ListFirstPage(ctx, r.s, prefix, max)
		return err
	})
	return infos, complete, err
}

// ListFirstPage logs like a LIST (PageLister).
func (l *Logged) ListFirstPage(ctx context.Context, prefix string, max int) ([]ObjectInfo, bool, error) {
	start := time.Now()
	infos, complete, _, err := ListFirstPage(ctx, l.s, prefix, max)
	l.done(ctx, "list", prefix, start, err, "max_keys", max, "objects", len(infos), "complete", complete)
	return infos, complete, err
}

// ListFirstPage cuts like a LIST (PageLister).
func (t *Timeout) ListFirstPage(ctx context.Context, prefix string, max int) (infos []ObjectInfo, complete bool, err error) {
	err = t.call(ctx, "list", prefix, func(ctx context.Context) error {
		infos, complete, _, err = ListFirstPage(ctx, t.s, prefix, max)
		return err
	})
	return infos, complete, err
}

// Pages: S3 lists in pages.
func (s *S3) Pages() bool { return true }

// Pages: mem:// pages as S3 does (ListFirstPage).
func (m *Mem) Pages() bool { return true }

// Pages when the store beneath does.
func (c *Counter) Pages() bool { return pages(c.s) }

// Pages when the store beneath does.
func (r *RateLimit) Pages() bool { return pages(r.s) }

// Pages when the store beneath does.
func (r *Retry) Pages() bool { return pages(r.s) }

// Pages when the store beneath does.
func (l *Logged) Pages() bool { return pages(l.s) }

// Pages when the store beneath does.
func (t *Timeout) Pages() bool { return pages(t.s) }
