// Package s3lax is a small S3 endpoint for tests of the store probe
// (internal/storeprobe): it stores objects (PutObject, GetObject with
// ranges, HeadObject with the stored SHA-256, DeleteObject, ListObjectsV2,
// path-style) but, unless told to honour them, ignores If-None-Match and
// If-Match, as a store or a gateway that does not support conditional
// writes does: every guarded write becomes a plain overwrite. It listens
// on 127.0.0.1 only, checks no signature, and keeps everything in memory.
//
// It also has a proxy (StartStripProxy) that drops the conditional headers
// on their way to a real S3 server and signs the request again, as a
// gateway holding its own credentials would.
package s3lax

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options choose what the server honours.
type Options struct {
	// HonourConditions makes PutObject and DeleteObject honour
	// If-None-Match: * and If-Match as S3 does (412 PreconditionFailed),
	// for a control run: the same server, with conditions.
	HonourConditions bool
}

// Server is a running endpoint.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	// Bucket is the one bucket it serves (any other is NoSuchBucket).
	Bucket string

	opt  Options
	srv  *http.Server
	mu   sync.Mutex
	objs map[string]object
	reqs map[string]int // requests by method
	// conditional counts the requests that carried If-None-Match or
	// If-Match.
	conditional int
}

type object struct {
	data     []byte
	modified time.Time
}

// Start runs a server for t on a free loopback port, stopped at cleanup.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("s3lax: listen: %v", err)
	}
	s := &Server{Endpoint: "http://" + ln.Addr().String(), Bucket: "lax", opt: o, objs: map[string]object{}, reqs: map[string]int{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

// SetEnv points the AWS default chain at throwaway credentials for the
// server (it checks none) and away from the developer's ~/.aws files,
// with t.Setenv (so t must not be parallel).
func (s *Server) SetEnv(t testing.TB) {
	t.Helper()
	empty := t.TempDir() + "/no-aws-config"
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "s3lax", "AWS_SECRET_ACCESS_KEY": "s3lax-not-a-secret", "AWS_SESSION_TOKEN": "",
		"AWS_REGION": "us-east-1", "AWS_PROFILE": "", "AWS_CONFIG_FILE": empty, "AWS_SHARED_CREDENTIALS_FILE": empty,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": "",
	} {
		t.Setenv(k, v)
	}
}

// URL is the store URL s3://BUCKET/prefix.
func (s *Server) URL(prefix string) string {
	return "s3://" + s.Bucket + "/" + strings.Trim(prefix, "/")
}

// Snapshot returns a copy of every stored object, by key (with the prefix
// of the store URL).
func (s *Server) Snapshot() map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]byte, len(s.objs))
	for k, o := range s.objs {
		out[k] = append([]byte(nil), o.data...)
	}
	return out
}

// Put stores an object directly (seeding a test), key with the prefix of
// the store URL.
func (s *Server) Put(key string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs[key] = object{data: append([]byte(nil), data...), modified: time.Now().UTC()}
}

// Requests returns the requests served by method, and how many of them
// carried a conditional header.
func (s *Server) Requests() (byMethod map[string]int, conditional int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.reqs))
	for k, v := range s.reqs {
		out[k] = v
	}
	return out, s.conditional
}

type apiError struct {
	XMLName xml.Name `xml:"Error"`
	Code    string   `xml:"Code"`
	Message string   `xml:"Message"`
}

func writeErr(w http.ResponseWriter, r *http.Request, status int, code string) {
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_ = xml.NewEncoder(w).Encode(apiError{Code: code, Message: code + " (s3lax)"})
}

func etagOf(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

func sha256B64(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(sum[:])
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ := strings.Cut(path, "/")
	s.mu.Lock()
	s.reqs[r.Method]++
	if r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Match") != "" {
		s.conditional++
	}
	s.mu.Unlock()
	if bucket != s.Bucket {
		writeErr(w, r, http.StatusNotFound, "NoSuchBucket")
		return
	}
	if key == "" {
		if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" {
			s.list(w, r)
			return
		}
		writeErr(w, r, http.StatusNotImplemented, "NotImplemented")
		return
	}
	switch r.Method {
	case http.MethodPut:
		s.put(w, r, key)
	case http.MethodGet:
		s.get(w, r, key)
	case http.MethodHead:
		s.head(w, r, key)
	case http.MethodDelete:
		s.delete(w, r, key)
	default:
		writeErr(w, r, http.StatusNotImplemented, "NotImplemented")
	}
}

func (s *Server) put(w http.ResponseWriter, r *http.Request, key string) {
	if r.Header.Get("Content-Encoding") == "aws-chunked" || strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-") {
		writeErr(w, r, http.StatusNotImplemented, "NotImplemented") // chunked uploads: not needed by nereusctl
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		writeErr(w, r, http.StatusBadRequest, "IncompleteBody")
		return
	}
	if want := r.Header.Get("X-Amz-Checksum-Sha256"); want != "" && want != sha256B64(data) {
		writeErr(w, r, http.StatusBadRequest, "BadDigest")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opt.HonourConditions {
		cur, exists := s.objs[key]
		if r.Header.Get("If-None-Match") == "*" && exists {
			writeErr(w, r, http.StatusPreconditionFailed, "PreconditionFailed")
			return
		}
		if m := r.Header.Get("If-Match"); m != "" {
			if !exists {
				writeErr(w, r, http.StatusNotFound, "NoSuchKey")
				return
			}
			if strings.Trim(m, `"`) != etagOf(cur.data) {
				writeErr(w, r, http.StatusPreconditionFailed, "PreconditionFailed")
				return
			}
		}
	}
	s.objs[key] = object{data: data, modified: time.Now().UTC()}
	w.Header().Set("ETag", `"`+etagOf(data)+`"`)
	w.Header().Set("X-Amz-Checksum-Sha256", sha256B64(data))
	w.WriteHeader(http.StatusOK)
}

func (s *Server) lookup(key string) (object, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[key]
	return o, ok
}

func (s *Server) objectHeaders(w http.ResponseWriter, o object) {
	w.Header().Set("ETag", `"`+etagOf(o.data)+`"`)
	w.Header().Set("Last-Modified", o.modified.Format(http.TimeFormat))
	w.Header().Set("Accept-Ranges", "bytes")
}

func (s *Server) head(w http.ResponseWriter, r *http.Request, key string) {
	o, ok := s.lookup(key)
	if !ok {
		writeErr(w, r, http.StatusNotFound, "NotFound")
		return
	}
	s.objectHeaders(w, o)
	if strings.EqualFold(r.Header.Get("X-Amz-Checksum-Mode"), "ENABLED") {
		w.Header().Set("X-Amz-Checksum-Sha256", sha256B64(o.data))
		w.Header().Set("X-Amz-Checksum-Type", "FULL_OBJECT")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(o.data)))
	w.WriteHeader(http.StatusOK)
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, key string) {
	o, ok := s.lookup(key)
	if !ok {
		writeErr(w, r, http.StatusNotFound, "NoSuchKey")
		return
	}
	s.objectHeaders(w, o)
	rg := r.Header.Get("Range")
	if rg == "" {
		w.Header().Set("Content-Length", strconv.Itoa(len(o.data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(o.data)
		return
	}
	from, to, ok := parseRange(rg, int64(len(o.data)))
	if !ok {
		writeErr(w, r, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
		return
	}
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to, len(o.data)))
	w.Header().Set("Content-Length", strconv.FormatInt(to-from+1, 10))
	w.WriteHeader(http.StatusPartialContent)
	_, _ = w.Write(o.data[from : to+1])
}

// parseRange reads "bytes=a-b" or "bytes=a-" against size; false when the
// range starts at or past the end.
func parseRange(h string, size int64) (from, to int64, ok bool) {
	spec, found := strings.CutPrefix(h, "bytes=")
	a, b, dash := strings.Cut(spec, "-")
	if !found || !dash {
		return 0, 0, false
	}
	from, err := strconv.ParseInt(a, 10, 64)
	if err != nil || from < 0 || from >= size {
		return 0, 0, false
	}
	to = size - 1
	if b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < from {
			return 0, 0, false
		}
		to = min(n, size-1)
	}
	return from, to, true
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := r.Header.Get("If-Match"); m != "" && s.opt.HonourConditions {
		cur, exists := s.objs[key]
		if !exists {
			writeErr(w, r, http.StatusNotFound, "NoSuchKey")
			return
		}
		if strings.Trim(m, `"`) != etagOf(cur.data) {
			writeErr(w, r, http.StatusPreconditionFailed, "PreconditionFailed")
			return
		}
	}
	delete(s.objs, key)
	w.WriteHeader(http.StatusNoContent)
}

type listResult struct {
	XMLName               xml.Name      `xml:"ListBucketResult"`
	Name                  string        `xml:"Name"`
	Prefix                string        `xml:"Prefix"`
	StartAfter            string        `xml:"StartAfter,omitempty"`
	KeyCount              int           `xml:"KeyCount"`
	MaxKeys               int           `xml:"MaxKeys"`
	IsTruncated           bool          `xml:"IsTruncated"`
	ContinuationToken     string        `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string        `xml:"NextContinuationToken,omitempty"`
	Contents              []listContent `xml:"Contents"`
}

type listContent struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	StorageClass string `xml:"StorageClass"`
}

// pageSize is ListObjectsV2's page, as S3's.
const pageSize = 1000

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	prefix, after, token := q.Get("prefix"), q.Get("start-after"), q.Get("continuation-token")
	if token != "" {
		after = token // the token is the last key of the previous page
	}
	s.mu.Lock()
	var keys []string
	for k := range s.objs {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	res := listResult{Name: s.Bucket, Prefix: prefix, StartAfter: q.Get("start-after"), MaxKeys: pageSize, ContinuationToken: token}
	if len(keys) > pageSize {
		keys = keys[:pageSize]
		res.IsTruncated = true
		res.NextContinuationToken = keys[len(keys)-1]
	}
	for _, k := range keys {
		o := s.objs[k]
		res.Contents = append(res.Contents, listContent{Key: k, LastModified: o.modified.Format("2006-01-02T15:04:05.000Z"),
			ETag: `"` + etagOf(o.data) + `"`, Size: int64(len(o.data)), StorageClass: "STANDARD"})
	}
	s.mu.Unlock()
	res.KeyCount = len(res.Contents)
	w.Header().Set("Content-Type", "application/xml")
	_, _ = io.WriteString(w, xml.Header)
	_ = xml.NewEncoder(w).Encode(res)
}
