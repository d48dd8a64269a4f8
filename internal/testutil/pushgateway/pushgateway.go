// Package pushgateway is a Pushgateway for tests: a loopback HTTP listener
// that takes pushes the way the Pushgateway's README describes them
// (https://github.com/prometheus/pushgateway#url): PUT
// /metrics/job/J{/LABEL/VALUE} replaces the group, POST replaces only the
// families it sends, a LABEL@base64 component carries a base64url value
// ("=" the empty one), and GET /metrics exposes every group's series with
// the grouping labels added (instance="" where the key has none). Every
// push is recorded, its body decoded with expfmt.
package pushgateway

import (
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// Gateway is one test's Pushgateway.
type Gateway struct {
	t   testing.TB
	srv *httptest.Server

	mu     sync.Mutex
	groups map[string]*group
	pushes []Pushed
	// failGet makes GET /metrics answer 503.
	failGet bool
}

type group struct {
	labels map[string]string
	fams   map[string]*dto.MetricFamily
}

// Pushed is one push as received.
type Pushed struct {
	Method string
	// Path is the request's escaped path.
	Path string
	// Labels is the grouping key decoded from the path, job included.
	Labels map[string]string
	// Families are the pushed metric families by name.
	Families map[string]*dto.MetricFamily
}

// Start starts a gateway on 127.0.0.1, stopped when t ends.
func Start(t testing.TB) *Gateway {
	t.Helper()
	g := &Gateway{t: t, groups: map[string]*group{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(g.serve)}}
	g.srv.Start()
	t.Cleanup(g.srv.Close)
	return g
}

// URL is the gateway's base URL, http://127.0.0.1:PORT.
func (g *Gateway) URL() string { return g.srv.URL }

// FailGet makes GET /metrics fail (503) from now on, or work again.
func (g *Gateway) FailGet(fail bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failGet = fail
}

// groupLabels decodes the grouping key of a push path.
func groupLabels(path string) (map[string]string, error) {
	rest, ok := strings.CutPrefix(path, "/metrics/")
	if !ok {
		return nil, errors.New("not under /metrics/")
	}
	parts := strings.Split(rest, "/")
	if len(parts)%2 != 0 {
		return nil, errors.New("odd number of components")
	}
	out := map[string]string{}
	for i := 0; i < len(parts); i += 2 {
		name, value := parts[i], parts[i+1]
		if n, ok := strings.CutSuffix(name, "@base64"); ok {
			b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(value, "="))
			if err != nil {
				return nil, err
			}
			name, value = n, string(b)
		}
		if _, dup := out[name]; dup {
			return nil, errors.New("label " + name + " twice")
		}
		out[name] = value
	}
	if out["job"] == "" {
		return nil, errors.New("no job")
	}
	return out, nil
}

func groupID(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + labels[k] + "\x00")
	}
	return b.String()
}

func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r.Method == http.MethodGet && r.URL.Path == "/metrics" {
		if g.failGet {
			http.Error(w, "exposition unavailable", http.StatusServiceUnavailable)
			return
		}
		g.expose(w)
		return
	}
	labels, err := groupLabels(r.URL.EscapedPath())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fams := map[string]*dto.MetricFamily{}
	dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fams[mf.GetName()] = mf
	}
	g.pushes = append(g.pushes, Pushed{Method: r.Method, Path: r.URL.EscapedPath(), Labels: labels, Families: fams})
	id := groupID(labels)
	switch r.Method {
	case http.MethodPut:
		g.groups[id] = &group{labels: labels, fams: fams}
	case http.MethodPost:
		gr := g.groups[id]
		if gr == nil {
			gr = &group{labels: labels, fams: map[string]*dto.MetricFamily{}}
			g.groups[id] = gr
		}
		for n, mf := range fams {
			gr.fams[n] = mf
		}
	default:
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// expose writes every group's series, grouping labels added, as the
// gateway's /metrics does (instance="" where the key has no instance).
func (g *Gateway) expose(w http.ResponseWriter) {
	merged := map[string]*dto.MetricFamily{}
	for _, gr := range g.groups {
		for n, mf := range gr.fams {
			out := merged[n]
			if out == nil {
				out = &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type}
				merged[n] = out
			}
			for _, m := range mf.Metric {
				m = proto.Clone(m).(*dto.Metric)
				for k, v := range gr.labels {
					m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(k), Value: proto.String(v)})
				}
				if _, ok := gr.labels["instance"]; !ok {
					m.Label = append(m.Label, &dto.LabelPair{Name: proto.String("instance"), Value: proto.String("")})
				}
				sort.Slice(m.Label, func(i, j int) bool { return m.Label[i].GetName() < m.Label[j].GetName() })
				out.Metric = append(out.Metric, m)
			}
		}
	}
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	w.Header().Set("Content-Type", string(format))
	enc := expfmt.NewEncoder(w, format)
	names := make([]string, 0, len(merged))
	for n := range merged {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := enc.Encode(merged[n]); err != nil {
			g.t.Errorf("gateway: encode %s: %v", n, err)
		}
	}
}

// Pushes are the pushes received so far.
func (g *Gateway) Pushes() []Pushed {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Pushed(nil), g.pushes...)
}

// Last is the last push received (the test fails without one).
func (g *Gateway) Last(t testing.TB) Pushed {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pushes) == 0 {
		t.Fatal("nothing was pushed")
	}
	return g.pushes[len(g.pushes)-1]
}

// Stored is the family name of the group with labels (job included), as
// the gateway holds it; nil when it has none.
func (g *Gateway) Stored(labels map[string]string, name string) *dto.MetricFamily {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr := g.groups[groupID(labels)]
	if gr == nil {
		return nil
	}
	return gr.fams[name]
}
