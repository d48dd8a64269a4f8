package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

// The direct GET and LIST (s3direct.go) answer every read as the SDK's
// GetObject and ListObjectsV2 do, on each server: whole objects, ranges
// inside, across and past the end, empty objects, keys that need escaping,
// missing keys, GetInto with a buffer too small and one large enough (each
// one metered GET); listings by prefix, after a key, before a key, and a
// first page cut at one key.
func TestS3DirectGetAnswersAsTheSDK(t *testing.T) { s3server.Each(t, testS3DirectGetAnswersAsTheSDK) }

func testS3DirectGetAnswersAsTheSDK(t *testing.T, impl *s3server.Impl) {
	ctx := context.Background()
	srv := impl.Start(t)
	meter := store.NewMeter(0)
	open := func(sdk bool, m *store.Meter) *store.S3 {
		s, err := store.NewS3(ctx, store.S3Config{Bucket: srv.Bucket, Prefix: "p/q", Endpoint: srv.Endpoint, Region: srv.Region, SDKReads: sdk, Meter: m})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	direct, sdk := open(false, meter), open(true, nil)
	if !direct.Direct() || sdk.Direct() {
		t.Fatalf("direct reads on: %v (want true), with SDKReads: %v (want false)", direct.Direct(), sdk.Direct())
	}
	big := make([]byte, 70_000)
	for i := range big {
		big[i] = byte(rand.N(256))
	}
	objects := map[string][]byte{
		"objects/00000000000000000000.bin":    big,
		"objects/empty.bin":                   {},
		"objects/a b+c=d,e;f&g~h$'(1)!*@.bin": []byte("needs escaping"),
		"objects/ünï-cødé.bin":                []byte("utf-8"),
	}
	for k, v := range objects {
		if _, err := sdk.Put(ctx, k, v, store.None()); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	ranges := []*store.Range{
		nil,
		{Offset: 0, Length: 10},
		{Offset: 3, Length: 1},
		{Offset: 69_990, Length: 100}, // across the end
		{Offset: 500, Length: -1},     // to the end
		{Offset: 70_000, Length: 10},  // at the end
		{Offset: 90_000, Length: -1},  // past it
		{Offset: 5, Length: 0},
	}
	keys := []string{"objects/missing.bin"}
	for k := range objects {
		keys = append(keys, k)
	}
	for _, k := range keys {
		for _, r := range ranges {
			name := fmt.Sprintf("%s %+v", k, r)
			before := meter.Stats().HTTP
			want, werr := sdk.Get(ctx, k, r)
			got, gerr := direct.Get(ctx, k, r)
			if (werr == nil) != (gerr == nil) || errors.Is(werr, store.ErrNotFound) != errors.Is(gerr, store.ErrNotFound) ||
				store.Retryable(werr) != store.Retryable(gerr) {
				t.Fatalf("%s: sdk error %v, direct %v", name, werr, gerr)
			}
			if gerr != nil && !strings.Contains(gerr.Error(), "get "+k) {
				t.Fatalf("%s: the error does not name the key: %v", name, gerr)
			}
			if !bytes.Equal(want, got) || (want == nil) != (got == nil) {
				t.Fatalf("%s: sdk read %d bytes, direct %d (equal: %v)", name, len(want), len(got), bytes.Equal(want, got))
			}
			if n := meter.Stats().HTTP - before; n != 1 {
				t.Fatalf("%s: %d metered requests, want 1", name, n)
			}
		}
	}
	// Listings, whole and in ranges, and a first page cut short.
	for _, c := range []struct{ prefix, after, before string }{
		{"", "", ""}, {"objects/", "", ""}, {"objects/", "objects/a", ""}, {"objects/", "", "objects/empty.bin"},
		{"objects/ü", "", ""}, {"nothing/", "", ""},
	} {
		want, werr := sdk.ListRange(ctx, c.prefix, c.after, c.before)
		got, gerr := direct.ListRange(ctx, c.prefix, c.after, c.before)
		if werr != nil || gerr != nil || fmt.Sprint(want) != fmt.Sprint(got) {
			t.Fatalf("list %+v: sdk %v (%v), direct %v (%v)", c, want, werr, got, gerr)
		}
		for _, max := range []int{1, 1000} {
			want, wc, werr := sdk.ListFirstPage(ctx, c.prefix, max)
			got, gc, gerr := direct.ListFirstPage(ctx, c.prefix, max)
			if werr != nil || gerr != nil || wc != gc || fmt.Sprint(want) != fmt.Sprint(got) {
				t.Fatalf("first page of %q, %d: sdk %v %v (%v), direct %v %v (%v)", c.prefix, max, want, wc, werr, got, gc, gerr)
			}
		}
	}
	for _, size := range []int{0, 16, 200_000} {
		buf := make([]byte, 0, size)
		got, err := direct.GetInto(ctx, "objects/00000000000000000000.bin", buf)
		if err != nil || !bytes.Equal(got, big) {
			t.Fatalf("GetInto with a buffer of %d: %d bytes, %v", size, len(got), err)
		}
		if size >= len(big) && &got[0] != &buf[:1][0] {
			t.Fatalf("GetInto did not read into a buffer large enough")
		}
	}
	if _, err := direct.GetInto(ctx, "objects/missing.bin", nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetInto of a missing key: %v", err)
	}
}

// A refused direct GET is classified as the SDK's is: a wrong secret is a
// permanent credentials error that shows no secret, a missing bucket a
// permanent ErrNoSuchBucket, and neither is retried.
func TestS3DirectGetRefusals(t *testing.T) { s3server.Each(t, testS3DirectGetRefusals) }

func testS3DirectGetRefusals(t *testing.T, impl *s3server.Impl) {
	ctx := context.Background()
	_, srv := newS3(t, impl, "")
	nobucket, err := store.NewS3(ctx, store.S3Config{Bucket: "no-such-bucket-here", Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nobucket.Get(ctx, "streams/s/head.json", nil); !nobucket.Direct() || !store.IsPermanent(err) || !errors.Is(err, store.ErrNoSuchBucket) {
		t.Fatalf("direct get in a missing bucket (direct: %v): %v", nobucket.Direct(), err)
	}
	const secret = "wrong-secret-Zq8Xv"
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	wrong, err := store.NewS3(ctx, store.S3Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	c := store.NewCounter(wrong)
	r := store.WithRetry(c, store.RetryPolicy{Attempts: 5, Initial: time.Millisecond, Max: time.Millisecond})
	_, err = r.Get(ctx, "streams/s/head.json", nil)
	if !store.IsPermanent(err) || !errors.Is(err, store.ErrCredentials) {
		t.Fatalf("direct get with a wrong secret: %v", err)
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "Signature=") {
		t.Fatalf("error shows credentials: %v", err)
	}
	if n := c.Counts()[store.VerbGet]; n < 1 || n >= 5 {
		t.Fatalf("a permanent error was retried: %d GETs", n)
	}
}

// What a GET costs the client, the direct path against the SDK's, on
// versitygw in the same run: wall time per GET (the gateway's work
// included), and the client process's own CPU per GET (user + system, from
// getrusage: the gateway is another process). The ratio of cpu-us/op is
// the figure (docs/performance.md):
//
//	go test -run '^$' -bench BenchmarkS3Get -benchtime 2000x ./internal/store/
func BenchmarkS3Get(b *testing.B) {
	ctx := context.Background()
	srv := s3server.Start(b)
	data := bytes.Repeat([]byte("nereus batch "), 1300) // ~16 KiB, a demo object's size
	for _, mode := range []struct {
		name string
		sdk  bool
	}{{"sdk", true}, {"direct", false}} {
		b.Run(mode.name, func(b *testing.B) {
			s, err := store.NewS3(ctx, store.S3Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: srv.Region, SDKReads: mode.sdk})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Put(ctx, "objects/o.bin", data, store.None()); err != nil {
				b.Fatal(err)
			}
			var buf []byte
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for b.Loop() {
				if buf, err = s.GetInto(ctx, "objects/o.bin", buf); err != nil || len(buf) != len(data) {
					b.Fatalf("%d bytes, %v", len(buf), err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}
