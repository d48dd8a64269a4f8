// Package storetest is the conformance suite every store.Store backend
// passes (mem://, file://, and s3:// against a real S3 server), in the manner
// of restic's backend test suite. It checks the contract written on
// store.Store: round trips, ranges, List order and prefixes, pagination,
// guards and their races, not-found and precondition errors, the
// lost-response rule through the Faulty and Retry decorators, hostile keys
// and size caps.
//
// It must never use a mock for the backend under test: newStore returns the
// real thing.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/storeprobe"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
)

// ManyKeys is how many objects the pagination test writes: more than one
// S3 ListObjectsV2 page (1000).
const ManyKeys = 1010

// Run runs the suite. newStore must return a fresh, empty store for each
// call (a new directory, bucket or prefix). Every store is wrapped in a
// store.Counter; the summed request counts are logged at the end.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	var (
		mu    sync.Mutex
		total = store.Counts{}
		name  string
	)
	mk := func(t *testing.T) *store.Counter {
		t.Helper()
		s := newStore(t)
		c := store.NewCounter(s)
		t.Cleanup(func() {
			mu.Lock()
			defer mu.Unlock()
			total = total.Add(c.Counts())
			if name == "" {
				name = scheme(s.String())
			}
		})
		return c
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, mk func(*testing.T) *store.Counter)
	}{
		{"RoundTrip", testRoundTrip},
		{"RangedGet", testRangedGet},
		{"GetInto", testGetInto},
		{"ListOrderAndPrefix", testList},
		{"ListAfter", testListAfter},
		{"ListDirs", testListDirs},
		{"ListPagination", testPagination},
		{"NotFound", testNotFound},
		{"Preconditions", testPreconditions},
		{"ConditionalDelete", testConditionalDelete},
		{"IfAbsentRace", testIfAbsentRace},
		{"IfMatchCASRace", testCASRace},
		{"LostResponseRetry", testLostResponse},
		{"RetryGivesUpOnPermanentErrors", testRetryStops},
		{"HostileKeys", testHostileKeys},
		{"GetCapped", testGetCapped},
		{"NoTornReads", testNoTornReads},
		{"Cancelled", testCancelled},
		{"StoreProbe", testStoreProbe},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, mk) })
	}
	t.Logf("conformance suite requests against %s: %s", name, total)
}

func scheme(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		return s[:i+3]
	}
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, s store.Store, key string, data []byte, g store.Guard) store.ObjectInfo {
	t.Helper()
	info, err := s.Put(ctxT(t), key, data, g)
	if err != nil {
		t.Fatalf("put %s (%s): %v", key, g, err)
	}
	return info
}

func get(t *testing.T, s store.Store, key string) []byte {
	t.Helper()
	b, err := s.Get(ctxT(t), key, nil)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return b
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func checkInfo(t *testing.T, what string, info store.ObjectInfo, key string, data []byte, needSHA bool) {
	t.Helper()
	checkInfoETag(t, what, info, key, data, needSHA, true)
}

// checkInfoETag is checkInfo where the ETag may be optional: a List
// carries it only where the backend has it for free (Store.List).
func checkInfoETag(t *testing.T, what string, info store.ObjectInfo, key string, data []byte, needSHA, needETag bool) {
	t.Helper()
	if info.Key != key {
		t.Errorf("%s: key %q, want %q", what, info.Key, key)
	}
	if info.Size != int64(len(data)) {
		t.Errorf("%s: size %d, want %d", what, info.Size, len(data))
	}
	if (needETag || info.ETag != "") && info.ETag != store.ETagOf(data) {
		t.Errorf("%s: etag %q, want hex md5 %q", what, info.ETag, store.ETagOf(data))
	}
	if (needSHA || info.SHA256 != "") && info.SHA256 != store.SHA256Of(data) {
		t.Errorf("%s: sha256 %q, want %q", what, info.SHA256, store.SHA256Of(data))
	}
}

func testRoundTrip(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	all := make([]byte, 256*3)
	for i := range all {
		all[i] = byte(i)
	}
	cases := map[string][]byte{
		"streams/s1/objects/0-10.kb":    all,
		"empty":                         {},
		"dir with space/ü+%=&.json":     []byte(`{"x":1}`),
		"bindings/topic.with.dots/0":    []byte("b"),
		"streams/s1/head.json":          []byte(`{"epoch":1}`),
		strings.Repeat("k", 200) + "/x": []byte("long segment"),
	}
	for key, data := range cases {
		info := put(t, s, key, data, store.None())
		checkInfo(t, "put "+key, info, key, data, true)
		h, err := s.Head(ctx, key)
		if err != nil {
			t.Fatalf("head %s: %v", key, err)
		}
		checkInfo(t, "head "+key, h, key, data, false)
		if got := get(t, s, key); !bytes.Equal(got, data) {
			t.Fatalf("get %s: %d bytes, want %d (%q…)", key, len(got), len(data), got[:min(len(got), 16)])
		}
	}
	// Overwrite: new bytes, new ETag.
	key := "streams/s1/head.json"
	info := put(t, s, key, []byte(`{"epoch":2}`), store.None())
	if info.ETag == store.ETagOf([]byte(`{"epoch":1}`)) {
		t.Fatalf("overwrite kept the old etag")
	}
	if got := get(t, s, key); string(got) != `{"epoch":2}` {
		t.Fatalf("after overwrite: %q", got)
	}
	if s.String() == "" {
		t.Fatal("String() is empty")
	}
}

func testRangedGet(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	data := make([]byte, 100)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	put(t, s, "r/obj", data, store.None())
	put(t, s, "r/empty", nil, store.None())
	cases := []struct {
		r    store.Range
		want []byte
	}{
		{store.Range{Offset: 0, Length: 10}, data[:10]},
		{store.Range{Offset: 10, Length: -1}, data[10:]},
		{store.Range{Offset: 90, Length: 10}, data[90:]},
		{store.Range{Offset: 95, Length: 10}, data[95:]}, // truncated at the end
		{store.Range{Offset: 99, Length: 1}, data[99:]},  // last byte
		{store.Range{Offset: 100, Length: 5}, []byte{}},  // at the end
		{store.Range{Offset: 250, Length: 5}, []byte{}},  // past the end
		{store.Range{Offset: 250, Length: -1}, []byte{}}, // past the end, open
		{store.Range{Offset: 30, Length: 0}, []byte{}},   // empty range
		{store.Range{Offset: 0, Length: 1000}, data},     // longer than the object
		{store.Range{Offset: -5, Length: 3}, data[:3]},   // negative offset: from 0
	}
	for _, c := range cases {
		r := c.r
		got, err := s.Get(ctx, "r/obj", &r)
		if err != nil {
			t.Fatalf("get range %+v: %v", r, err)
		}
		if !bytes.Equal(got, c.want) {
			t.Fatalf("get range %+v: %q, want %q", r, got, c.want)
		}
	}
	for _, r := range []store.Range{{Offset: 0, Length: 10}, {Offset: 5, Length: -1}, {Offset: 0, Length: 0}} {
		got, err := s.Get(ctx, "r/empty", &r)
		if err != nil || len(got) != 0 {
			t.Fatalf("get empty object range %+v: %q, %v", r, got, err)
		}
	}
	_, err := s.Get(ctx, "r/missing", &store.Range{Offset: 0, Length: 10})
	wantErr(t, "ranged get of a missing key", err, store.ErrNotFound)
	_, err = s.Get(ctx, "r/missing", &store.Range{Offset: 0, Length: 0})
	wantErr(t, "empty ranged get of a missing key", err, store.ErrNotFound)
}

// testGetInto: reading into a caller's buffer (nil, too small, large
// enough, holding older bytes) gives exactly Get's bytes, through the
// counter and retry decorators too, and a missing key is ErrNotFound.
func testGetInto(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	big := bytes.Repeat([]byte("0123456789"), 5000)
	put(t, s, "gi/big", big, store.None())
	put(t, s, "gi/small", []byte("small"), store.None())
	put(t, s, "gi/empty", nil, store.None())
	retry := store.WithRetry(s, fastRetry())
	buf := []byte(nil)
	for _, st := range []store.Store{s, retry} {
		for _, key := range []string{"gi/big", "gi/small", "gi/big", "gi/empty", "gi/small"} {
			got, err := store.GetInto(ctx, st, key, buf)
			if err != nil {
				t.Fatalf("get into %s: %v", key, err)
			}
			if want := get(t, s, key); !bytes.Equal(got, want) {
				t.Fatalf("get into %s: %d bytes differ from Get's %d", key, len(got), len(want))
			}
			buf = got
		}
		_, err := store.GetInto(ctx, st, "gi/missing", buf)
		wantErr(t, "get into a missing key", err, store.ErrNotFound)
	}
	if c := s.Counts(); c["GET"] < 10 {
		t.Fatalf("the counter saw %d GETs", c["GET"])
	}
}

func testList(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	// Byte order, not walk order: '-' (0x2d) < '.' (0x2e) < '/' (0x2f) <
	// '0' < 'B' < 'b' < 0xc3 (é).
	// (No key is both an object and a folder of others, like "a/b" and
	// "a/b/c": file:// keeps keys as paths.)
	keys := []string{"a/b", "a.c", "a-", "a/b0", "a/c/d", "a/B", "ab", "b/é", "b/z"}
	for _, k := range keys {
		put(t, s, k, []byte("v:"+k), store.None())
	}
	for _, prefix := range []string{"", "a", "a/", "a/b", "a/c/", "b/", "ab", "zzz", "a/c/d", "a/c/d/"} {
		got, err := s.List(ctx, prefix)
		if err != nil {
			t.Fatalf("list %q: %v", prefix, err)
		}
		var want []string
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				want = append(want, k)
			}
		}
		sort.Strings(want)
		var gotKeys []string
		for _, o := range got {
			gotKeys = append(gotKeys, o.Key)
			checkInfoETag(t, "list "+o.Key, o, o.Key, []byte("v:"+o.Key), false, false)
		}
		if !slices.Equal(gotKeys, want) {
			t.Fatalf("list %q:\n got %q\nwant %q", prefix, gotKeys, want)
		}
	}
	_, err := s.List(ctx, "../")
	wantErr(t, "list ../", err, store.ErrInvalidKey)
}

// testListDirs: store.ListDirs names the folders one level under a
// prefix (S3's Delimiter "/" common prefixes), the same set a whole
// listing gives, in one LIST; a file beside the folders is not one.
func testListDirs(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	for _, k := range []string{"streams/s1/head.json", "streams/s1/objects/0-1.kb", "streams/s2/head.json", "streams/s3/x/y.json", "streams/readme", "other/s9/head.json"} {
		put(t, s, k, []byte("v"), store.None())
	}
	before := s.Counts()[store.VerbList]
	got, err := store.ListDirs(ctx, s, "streams/")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"s1", "s2", "s3"}; !slices.Equal(got, want) {
		t.Fatalf("ListDirs(streams/) = %q, want %q", got, want)
	}
	if n := s.Counts()[store.VerbList] - before; n != 1 {
		t.Fatalf("ListDirs sent %d LISTs, want 1", n)
	}
	if got, err := store.ListDirs(ctx, s, "nothing/"); err != nil || len(got) != 0 {
		t.Fatalf("ListDirs(nothing/) = %q, %v", got, err)
	}
}

// testListAfter: ListAfter(prefix, k) is exactly List(prefix) after k,
// for every k in the listing, between listed keys and outside them.
func testListAfter(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	keys := []string{"s/o/00-05.kb", "s/o/05-09.kb", "s/o/09-20.kb", "s/o/20-21.kb", "s/p/x", "s/o0", "s/o/sub/a", "t"}
	for _, k := range keys {
		if _, err := s.Put(ctx, k, []byte(k), store.None()); err != nil {
			t.Fatal(err)
		}
	}
	for _, prefix := range []string{"", "s/", "s/o/", "s/o"} {
		all, err := s.List(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		afters := []string{"", "a", "s/o/", "s/o/05", "s/o/05-09.kb", "s/o/1", "s/o/sub", "s/o/zz", "zz"}
		for _, o := range all {
			afters = append(afters, o.Key)
		}
		for _, after := range afters {
			got, err := s.ListAfter(ctx, prefix, after)
			if err != nil {
				t.Fatal(err)
			}
			var want, have []string
			for _, o := range all {
				if after == "" || o.Key > after {
					want = append(want, o.Key)
				}
			}
			for _, o := range got {
				have = append(have, o.Key)
			}
			if !slices.Equal(have, want) {
				t.Fatalf("ListAfter(%q, %q) = %q, want %q", prefix, after, have, want)
			}
		}
	}
}

func testPagination(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	keys := make([]string, ManyKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("many/%05d", i)
	}
	parallel(t, 32, len(keys), func(i int) error {
		_, err := s.Put(ctx, keys[i], []byte(strconv.Itoa(i)), store.None())
		return err
	})
	put(t, s, "manz", []byte("outside"), store.None())
	put(t, s, "man", []byte("outside"), store.None())
	before := s.Counts()[store.VerbList]
	got, err := s.List(ctx, "many/")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(keys) {
		t.Fatalf("list many/: %d objects, want %d", len(got), len(keys))
	}
	for i, o := range got {
		if o.Key != keys[i] {
			t.Fatalf("list many/[%d] = %q, want %q", i, o.Key, keys[i])
		}
		if o.Size != int64(len(strconv.Itoa(i))) {
			t.Fatalf("list %s: size %d", o.Key, o.Size)
		}
	}
	if n := s.Counts()[store.VerbList] - before; n != 1 {
		t.Fatalf("one List call counted %d times", n)
	}
	got, err = s.List(ctx, "many/0010")
	if err != nil || len(got) != 10 || got[0].Key != "many/00100" || got[9].Key != "many/00109" {
		t.Fatalf("list many/0010: %d objects (%v)", len(got), err)
	}
	// ListFirstPage: on a store that lists in pages, one LIST of at most
	// max keys, in order, complete only when it holds the whole prefix;
	// on one that does not, nothing sent.
	before = s.Counts()[store.VerbList]
	for _, r := range []struct {
		prefix   string
		max, n   int
		complete bool
	}{
		{"many/", store.PageKeys, store.PageKeys, false},
		{"many/", 7, 7, false},
		{"many/0010", store.PageKeys, 10, true},
		{"many/00100", 10, 1, true},
		{"nothing/", store.PageKeys, 0, true},
	} {
		got, complete, paged, err := store.ListFirstPage(ctx, s, r.prefix, r.max)
		if err != nil {
			t.Fatal(err)
		}
		if !paged {
			if got != nil || s.Counts()[store.VerbList] != before {
				t.Fatalf("ListFirstPage on a store that does not page: %d keys, %d LISTs", len(got), s.Counts()[store.VerbList]-before)
			}
			continue
		}
		if len(got) != r.n || complete != r.complete || (r.n > 0 && !strings.HasPrefix(got[0].Key, r.prefix)) {
			t.Fatalf("ListFirstPage(%q, %d): %d keys, complete=%v, want %d, %v", r.prefix, r.max, len(got), complete, r.n, r.complete)
		}
		for i := 1; i < len(got); i++ {
			if got[i-1].Key >= got[i].Key {
				t.Fatalf("ListFirstPage(%q): %q before %q", r.prefix, got[i-1].Key, got[i].Key)
			}
		}
		if r.prefix == "many/" && got[0].Key != keys[0] {
			t.Fatalf("ListFirstPage(many/): first key %q, want %q", got[0].Key, keys[0])
		}
		before++
		if n := s.Counts()[store.VerbList]; n != before {
			t.Fatalf("ListFirstPage counted %d LISTs, want one", n-before+1)
		}
	}
	// ListRange: exactly the keys in (startAfter, before), across page
	// boundaries, and no end with before "".
	for _, r := range []struct {
		after, before string
		first, n      int
	}{
		{"many/00005", "many/00017", 6, 11},
		{"many/00990", "many/01005", 991, 14},
		{"many/0099", "many/01000", 990, 10},
		{"", "many/00003", 0, 3},
		{"many/01005", "", 1006, len(keys) - 1006},
		{"many/00500", "many/00500", 0, 0},
	} {
		got, err := store.ListRange(ctx, s, "many/", r.after, r.before)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != r.n || (r.n > 0 && (got[0].Key != keys[r.first] || got[r.n-1].Key != keys[r.first+r.n-1])) {
			t.Fatalf("ListRange(%q, %q): %d keys, want %d from %s", r.after, r.before, len(got), r.n, keys[min(r.first, len(keys)-1)])
		}
	}
}

// parallel runs fn(0..n-1) on workers goroutines and fails on any error.
func parallel(t *testing.T, workers, n int, fn func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func testNotFound(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	_, err := s.Head(ctx, "nope/x")
	wantErr(t, "head missing", err, store.ErrNotFound)
	if err != nil && !strings.Contains(err.Error(), "nope/x") {
		t.Errorf("head missing: error %q does not name the key", err)
	}
	_, err = s.Get(ctx, "nope/x", nil)
	wantErr(t, "get missing", err, store.ErrNotFound)
	if err := s.Delete(ctx, "nope/x", store.None()); err != nil {
		t.Fatalf("unconditional delete of a missing key: %v", err)
	}
	err = s.Delete(ctx, "nope/x", store.IfMatch(store.ETagOf([]byte("x"))))
	wantErr(t, "if-match delete of a missing key", err, store.ErrPreconditionFailed)
	_, err = s.Put(ctx, "nope/x", []byte("x"), store.IfMatch(store.ETagOf([]byte("x"))))
	wantErr(t, "if-match put of a missing key", err, store.ErrPreconditionFailed)
	if _, err := s.Head(ctx, "nope/x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a failed if-match put created the key: %v", err)
	}
	// A prefix of a key is not an object.
	put(t, s, "dir/obj", []byte("x"), store.None())
	_, err = s.Head(ctx, "dir")
	wantErr(t, "head of a key's folder", err, store.ErrNotFound)
	_, err = s.Get(ctx, "dir", nil)
	wantErr(t, "get of a key's folder", err, store.ErrNotFound)
	got, err := s.List(ctx, "nope/")
	if err != nil || len(got) != 0 {
		t.Fatalf("list of an empty prefix: %v, %v", got, err)
	}
}

func testPreconditions(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	key := "streams/s1/objects/0-5.kb"
	v1 := []byte("version one")
	info := put(t, s, key, v1, store.IfAbsent())
	checkInfo(t, "if-absent create", info, key, v1, true)

	// Same bytes again: the idempotent retry of a lost response.
	again, err := s.Put(ctx, key, v1, store.IfAbsent())
	if err != nil {
		t.Fatalf("if-absent put of the same bytes: %v", err)
	}
	if again.ETag != info.ETag {
		t.Fatalf("if-absent retry: etag %s, want %s", again.ETag, info.ETag)
	}
	// Different bytes: a real conflict.
	_, err = s.Put(ctx, key, []byte("version two"), store.IfAbsent())
	wantErr(t, "if-absent put of different bytes", err, store.ErrPreconditionFailed)
	if err != nil && !strings.Contains(err.Error(), key) {
		t.Errorf("precondition error %q does not name the key", err)
	}
	// Same length, different bytes (the ETag, not the size, decides).
	_, err = s.Put(ctx, key, []byte("version ONE"), store.IfAbsent())
	wantErr(t, "if-absent put of same-size different bytes", err, store.ErrPreconditionFailed)
	if got := get(t, s, key); !bytes.Equal(got, v1) {
		t.Fatalf("failed if-absent changed the object: %q", got)
	}

	head := "streams/s1/head.json"
	h1 := put(t, s, head, []byte(`{"head":1}`), store.IfAbsent())
	_, err = s.Put(ctx, head, []byte(`{"head":2}`), store.IfMatch(store.ETagOf([]byte("stale"))))
	wantErr(t, "if-match with a wrong etag", err, store.ErrPreconditionFailed)
	h2, err := s.Put(ctx, head, []byte(`{"head":2}`), store.IfMatch(h1.ETag))
	if err != nil {
		t.Fatalf("if-match with the current etag: %v", err)
	}
	checkInfo(t, "if-match put", h2, head, []byte(`{"head":2}`), true)
	_, err = s.Put(ctx, head, []byte(`{"head":3}`), store.IfMatch(h1.ETag))
	wantErr(t, "if-match with the previous etag", err, store.ErrPreconditionFailed)
	if got := get(t, s, head); string(got) != `{"head":2}` {
		t.Fatalf("head after CAS: %q", got)
	}
}

func testConditionalDelete(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	key := "tasks/t1/lease"
	info := put(t, s, key, []byte("holder=a"), store.IfAbsent())
	err := s.Delete(ctx, key, store.IfMatch(store.ETagOf([]byte("holder=b"))))
	wantErr(t, "delete with a wrong etag", err, store.ErrPreconditionFailed)
	if _, err := s.Head(ctx, key); err != nil {
		t.Fatalf("a failed conditional delete removed the object: %v", err)
	}
	if err := s.Delete(ctx, key, store.IfMatch(info.ETag)); err != nil {
		t.Fatalf("delete with the current etag: %v", err)
	}
	_, err = s.Head(ctx, key)
	wantErr(t, "head after delete", err, store.ErrNotFound)
	err = s.Delete(ctx, key, store.IfMatch(info.ETag))
	wantErr(t, "conditional delete of a deleted key", err, store.ErrPreconditionFailed)
	if err := s.Delete(ctx, key, store.IfAbsent()); err == nil {
		t.Fatal("delete with if-absent was accepted")
	}
	// Unconditional delete, then the key can be created again.
	put(t, s, key, []byte("x"), store.None())
	if err := s.Delete(ctx, key, store.None()); err != nil {
		t.Fatal(err)
	}
	put(t, s, key, []byte("holder=c"), store.IfAbsent())
}

func testIfAbsentRace(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	const writers, rounds = 8, 4
	for round := range rounds {
		key := fmt.Sprintf("race/%d/lease", round)
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make([]error, writers)
		for w := range writers {
			wg.Go(func() {
				<-start
				data := fmt.Appendf(nil, "writer-%02d", w)
				for {
					_, err := s.Put(ctx, key, data, store.IfAbsent())
					if errors.Is(err, store.ErrConflict) {
						continue // 409: a definite "not applied", ask again
					}
					results[w] = err
					return
				}
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for w, err := range results {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: writers %d and %d both created %s", round, winner, w, key)
				}
				winner = w
			case errors.Is(err, store.ErrPreconditionFailed):
			default:
				t.Fatalf("round %d writer %d: %v", round, w, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody created %s", round, key)
		}
		if got, want := string(get(t, s, key)), fmt.Sprintf("writer-%02d", winner); got != want {
			t.Fatalf("round %d: stored %q, winner wrote %q", round, got, want)
		}
	}
}

// Increment is one CAS increment of a decimal counter object: read, then
// Put IfMatch the ETag of the bytes read (their MD5), re-reading on
// ErrPreconditionFailed or ErrConflict. It returns the value written.
// Exported for the cross-process tests.
func Increment(ctx context.Context, s store.Store, key string) (int, error) {
	for {
		b, err := s.Get(ctx, key, nil)
		if err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(string(b))
		if err != nil {
			return 0, fmt.Errorf("counter %s holds %q", key, b)
		}
		_, err = s.Put(ctx, key, []byte(strconv.Itoa(n+1)), store.IfMatch(store.ETagOf(b)))
		switch {
		case err == nil:
			return n + 1, nil
		case errors.Is(err, store.ErrPreconditionFailed), errors.Is(err, store.ErrConflict):
			continue
		default:
			return 0, err
		}
	}
}

// CheckIncrements verifies that the values written by all increments are
// exactly 1..n: no increment was lost or applied twice.
func CheckIncrements(t testing.TB, written []int, n int) {
	t.Helper()
	sort.Ints(written)
	if len(written) != n {
		t.Fatalf("%d increments succeeded, want %d", len(written), n)
	}
	for i, v := range written {
		if v != i+1 {
			t.Fatalf("increments wrote %v…, want 1..%d each once (lost or duplicate update at %d)", written[:min(len(written), 20)], n, i+1)
		}
	}
}

func testCASRace(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	const key = "cas/counter"
	const workers, each = 6, 8
	put(t, s, key, []byte("0"), store.IfAbsent())
	var mu sync.Mutex
	var written []int
	parallel(t, workers, workers*each, func(int) error {
		v, err := Increment(ctx, s, key)
		if err != nil {
			return err
		}
		mu.Lock()
		written = append(written, v)
		mu.Unlock()
		return nil
	})
	CheckIncrements(t, written, workers*each)
	if got := string(get(t, s, key)); got != strconv.Itoa(workers*each) {
		t.Fatalf("counter = %s, want %d", got, workers*each)
	}
}

// fastRetry is a retry policy for tests: enough attempts, tiny waits.
func fastRetry() store.RetryPolicy {
	return store.RetryPolicy{Attempts: 5, Initial: time.Millisecond, Max: 5 * time.Millisecond}
}

func testLostResponse(t *testing.T, mk func(*testing.T) *store.Counter) {
	base := mk(t)
	ctx := ctxT(t)
	f := faultstore.New(base)
	r := store.WithRetry(f, fastRetry())

	// IfAbsent whose response is lost: the retry meets 412, the stored
	// bytes are ours, so it is a success.
	data := []byte("checkpoint bytes")
	f.LoseResponseNth(store.VerbPut, 1, "lost/a")
	info, err := r.Put(ctx, "lost/a", data, store.IfAbsent())
	if err != nil {
		t.Fatalf("if-absent put with a lost response: %v", err)
	}
	checkInfo(t, "if-absent put with a lost response", info, "lost/a", data, true)
	if f.Fired() != 1 {
		t.Fatalf("fault fired %d times, want 1", f.Fired())
	}
	if n := base.Counts()[store.VerbPut]; n != 2 {
		t.Fatalf("backend saw %d PUTs, want 2 (the lost one and its retry)", n)
	}

	// Different bytes whose response is lost: still a conflict.
	f.LoseResponseNth(store.VerbPut, 1, "lost/a")
	_, err = r.Put(ctx, "lost/a", []byte("other bytes"), store.IfAbsent())
	wantErr(t, "if-absent put of other bytes with a lost response", err, store.ErrPreconditionFailed)
	if got := get(t, base, "lost/a"); !bytes.Equal(got, data) {
		t.Fatalf("object changed: %q", got)
	}

	// IfMatch whose response is lost: the retry meets 412, but the object
	// now holds our bytes.
	v1 := put(t, base, "lost/cas", []byte("1"), store.None())
	f.LoseResponseNth(store.VerbPut, 1, "lost/cas")
	if _, err := r.Put(ctx, "lost/cas", []byte("2"), store.IfMatch(v1.ETag)); err != nil {
		t.Fatalf("if-match put with a lost response: %v", err)
	}
	if got := string(get(t, base, "lost/cas")); got != "2" {
		t.Fatalf("after lost if-match: %q", got)
	}

	// Conditional delete whose response is lost.
	v := put(t, base, "lost/del", []byte("x"), store.None())
	f.LoseResponseNth(store.VerbDelete, 1, "lost/del")
	if err := r.Delete(ctx, "lost/del", store.IfMatch(v.ETag)); err != nil {
		t.Fatalf("conditional delete with a lost response: %v", err)
	}
	_, err = base.Head(ctx, "lost/del")
	wantErr(t, "head after lost delete", err, store.ErrNotFound)

	// Transient failures are retried; the caller sees success.
	f.FailNth(store.VerbGet, 1, "lost/a", nil)
	f.FailNth(store.VerbHead, 1, "lost/a", nil)
	f.FailNth(store.VerbList, 1, "lost/", nil)
	if got, err := r.Get(ctx, "lost/a", nil); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get after a transient failure: %q, %v", got, err)
	}
	if _, err := r.Head(ctx, "lost/a"); err != nil {
		t.Fatalf("head after a transient failure: %v", err)
	}
	if l, err := r.List(ctx, "lost/"); err != nil || len(l) != 2 {
		t.Fatalf("list after a transient failure: %d, %v", len(l), err)
	}

	// A lost response with no retry layer is an error the caller sees.
	f.LoseResponseNth(store.VerbPut, 1, "lost/plain")
	_, err = f.Put(ctx, "lost/plain", data, store.IfAbsent())
	wantErr(t, "lost response without retry", err, faultstore.ErrInjected)
	if got := get(t, base, "lost/plain"); !bytes.Equal(got, data) {
		t.Fatal("the lost write did not happen")
	}
}

func testRetryStops(t *testing.T, mk func(*testing.T) *store.Counter) {
	base := mk(t)
	ctx := ctxT(t)
	f := faultstore.New(base)
	r := store.WithRetry(f, fastRetry())
	for _, sentinel := range []error{store.ErrNotFound, store.ErrPreconditionFailed, store.ErrInvalidKey, context.Canceled, context.DeadlineExceeded, store.Permanent(errors.New("access denied"))} {
		f.Clear()
		before := f.Fired()
		f.FailNth(store.VerbGet, 0, "stop/", sentinel)
		_, err := r.Get(ctx, "stop/x", nil)
		if !errors.Is(err, sentinel) && !store.IsPermanent(err) {
			t.Fatalf("injected %v, got %v", sentinel, err)
		}
		if n := f.Fired() - before; n != 1 {
			t.Fatalf("%v was tried %d times, want 1 (never retried)", sentinel, n)
		}
	}
	// ErrConflict and transient errors are retried, up to the limit.
	f.Clear()
	before := f.Fired()
	f.FailNth(store.VerbPut, 0, "stop/", store.ErrConflict)
	_, err := r.Put(ctx, "stop/x", []byte("x"), store.IfAbsent())
	wantErr(t, "put under endless conflicts", err, store.ErrConflict)
	if n := f.Fired() - before; n != fastRetry().Attempts {
		t.Fatalf("conflicts tried %d times, want %d attempts", n, fastRetry().Attempts)
	}
	f.Clear()
	f.FailNth(store.VerbPut, 1, "stop/", nil)
	f.FailNth(store.VerbPut, 2, "stop/", store.ErrConflict)
	if _, err := r.Put(ctx, "stop/y", []byte("y"), store.IfAbsent()); err != nil {
		t.Fatalf("put after a transient failure and a conflict: %v", err)
	}
	if n := base.Counts()[store.VerbPut]; n != 1 {
		t.Fatalf("backend saw %d PUTs, want 1 (injected failures never reach it)", n)
	}
	if base.Counts()[store.VerbGet] != 0 {
		t.Fatalf("failed calls reached the backend: %s", base.Counts())
	}
}

// HostileKeys are keys every backend must refuse before any I/O.
var HostileKeys = []string{
	"../x", "/etc/passwd", "a/../../b", "a\x00b", "a\x01b", "a\nb", "a\x7fb", "a\\b",
	"./x", "a/./b", "a//b", "a/", "", "\xff\xfe", "..", ".", strings.Repeat("k", 2000),
}

func testHostileKeys(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	for _, k := range HostileKeys {
		_, err := s.Put(ctx, k, []byte("pwned"), store.None())
		wantErr(t, fmt.Sprintf("put %q", k), err, store.ErrInvalidKey)
		_, err = s.Put(ctx, k, []byte("pwned"), store.IfAbsent())
		wantErr(t, fmt.Sprintf("put if-absent %q", k), err, store.ErrInvalidKey)
		_, err = s.Get(ctx, k, nil)
		wantErr(t, fmt.Sprintf("get %q", k), err, store.ErrInvalidKey)
		_, err = s.Head(ctx, k)
		wantErr(t, fmt.Sprintf("head %q", k), err, store.ErrInvalidKey)
		err = s.Delete(ctx, k, store.None())
		wantErr(t, fmt.Sprintf("delete %q", k), err, store.ErrInvalidKey)
		if k != "" && k != "a/" { // "a/" is a fine List prefix
			_, err = s.List(ctx, k)
			wantErr(t, fmt.Sprintf("list %q", k), err, store.ErrInvalidKey)
		}
		if err != nil && strings.ContainsRune(err.Error(), 0) {
			t.Fatalf("error for %q carries a NUL byte", k)
		}
	}
	l, err := s.List(ctx, "")
	if err != nil || len(l) != 0 {
		t.Fatalf("after hostile keys the store holds %v (%v)", l, err)
	}
}

func testGetCapped(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	doc := bytes.Repeat([]byte("x"), 100)
	put(t, s, "docs/big.json", doc, store.None())
	b, err := store.GetCapped(ctx, s, "docs/big.json", 100)
	if err != nil || !bytes.Equal(b, doc) {
		t.Fatalf("capped get at the limit: %d bytes, %v", len(b), err)
	}
	_, err = store.GetCapped(ctx, s, "docs/big.json", 99)
	wantErr(t, "capped get over the limit", err, store.ErrTooLarge)
	if err != nil && (!strings.Contains(err.Error(), "docs/big.json") || !strings.Contains(err.Error(), "99")) {
		t.Fatalf("size-cap error %q does not name the object and the limit", err)
	}
	_, err = store.GetCapped(ctx, s, "docs/missing.json", 99)
	wantErr(t, "capped get of a missing key", err, store.ErrNotFound)
}

func testNoTornReads(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	a := bytes.Repeat([]byte("A"), 64<<10)
	b := bytes.Repeat([]byte("B"), 96<<10)
	put(t, s, "torn/x", a, store.None())
	const writes, reads = 40, 40
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range writes {
			data := a
			if i%2 == 0 {
				data = b
			}
			if _, err := s.Put(ctx, "torn/x", data, store.None()); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range reads {
		got, err := s.Get(ctx, "torn/x", nil)
		if err != nil {
			t.Fatalf("read during overwrites: %v", err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("torn read: %d bytes", len(got))
		}
	}
	wg.Wait()
}

func testCancelled(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Put(ctx, "c/x", []byte("x"), store.None()); !errors.Is(err, context.Canceled) {
		t.Fatalf("put with a cancelled context: %v", err)
	}
	if _, err := s.Get(ctx, "c/x", nil); !errors.Is(err, context.Canceled) && !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get with a cancelled context: %v", err)
	}
	if _, err := s.Head(ctxT(t), "c/x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a cancelled put left an object: %v", err)
	}
}

// testStoreProbe: the backend passes the store probe (package storeprobe)
// that mutating commands run before they trust an s3:// store, every check
// of it, and the probe leaves nothing behind.
func testStoreProbe(t *testing.T, mk func(*testing.T) *store.Counter) {
	s := mk(t)
	ctx := ctxT(t)
	nonce := storeprobe.NewNonce()
	res, err := storeprobe.Run(ctx, s, storeprobe.Options{Nonce: nonce, KeepsSHA256: storeprobe.KeepsSHA256(s)})
	if err != nil {
		t.Fatalf("store probe: %v", err)
	}
	if names := storeprobe.CheckNames(); len(res.Checks) != len(names) {
		t.Fatalf("store probe made %d checks, want %d (%v)", len(res.Checks), len(names), names)
	}
	for _, c := range res.Checks {
		if !c.OK {
			t.Errorf("store probe: %s failed: %s", c.Name, c.Detail)
		}
	}
	if !res.OK() {
		t.Fatalf("store probe failed on %s", s)
	}
	left, err := s.List(ctx, storeprobe.ScratchPrefix(nonce))
	if err != nil || len(left) != 0 {
		t.Fatalf("the probe left %v under %s (%v)", left, storeprobe.ScratchPrefix(nonce), err)
	}
	t.Logf("store probe of %s: %s", s, s.Counts())
}
