package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nereusctl/nereusctl/internal/errkind"
)

// Job is the Pushgateway job of every push.
const Job = "nereusctl"

// DefaultPushTimeout bounds a push, the read of the group's previous
// metrics included.
const DefaultPushTimeout = 30 * time.Second

// Target is where a run's metrics go: a file, a Pushgateway, or both.
type Target struct {
	// File is --metrics-file ("" for none).
	File string
	// Gateway is --push-gateway (nil for none).
	Gateway *Gateway
	// Log gets the warnings (a previous output that could not be read);
	// nil discards them.
	Log *slog.Logger
}

// Gateway is a Pushgateway and the extra labels of the grouping key.
type Gateway struct {
	// URL is the gateway's base URL (ParseGatewayURL).
	URL string
	// Labels are --push-gateway-label's, after job, command and shard.
	Labels []Label
	// Client sends the requests (nil: a plain http.Client).
	Client push.HTTPDoer
	// Timeout bounds the push (0: DefaultPushTimeout).
	Timeout time.Duration
}

// Label is one extra grouping label (ParseLabel).
type Label struct{ Name, Value string }

// Write writes run's metrics to every output of t; the errors of both are
// joined.
func (t Target) Write(ctx context.Context, run *Run) error {
	log := t.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	if t.File != "" {
		errs = append(errs, writeFile(t.File, run, log))
	}
	if t.Gateway != nil {
		errs = append(errs, t.Gateway.push(ctx, run, log))
	}
	return errors.Join(errs...)
}

// fileGroup is a run's series labels on the file: command, and shard
// when given.
func fileGroup(run *Run) map[string]string {
	g := map[string]string{CommandLabel: run.Command}
	if run.Shard != "" {
		g[ShardLabel] = run.Shard
	}
	return g
}

// writeFile writes run's metrics to path (prometheus.WriteToTextfile: a
// temp file in path's folder, renamed over it), carrying over what the
// previous file held for the same command and shard where run has no
// newer value. A previous file that cannot be read or parsed is replaced
// all the same (it is logged).
func writeFile(path string, run *Run, log *slog.Logger) error {
	group := fileGroup(run)
	var prev *Previous
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		prev, err = ParsePrevious(bytes.NewReader(b), expfmt.NewFormat(expfmt.TypeTextPlain), group)
		if err != nil {
			log.Warn("metrics: the previous metrics file does not parse: replaced, without what it held (the last success time)", "file", path, "error", err)
			prev = nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		log.Warn("metrics: the previous metrics file cannot be read: replaced, without what it held (the last success time)", "file", path, "error", err)
	}
	reg, err := Registry(run, prev, prometheus.Labels(group), nil)
	if err != nil {
		return err
	}
	if err := prometheus.WriteToTextfile(path, reg); err != nil {
		return fmt.Errorf("metrics: write %s: %w", path, err)
	}
	return nil
}

// group is the push's grouping key, job included.
func (gw *Gateway) group(run *Run) map[string]string {
	g := map[string]string{"job": Job, CommandLabel: run.Command}
	if run.Shard != "" {
		g[ShardLabel] = run.Shard
	}
	for _, l := range gw.Labels {
		g[l.Name] = l.Value
	}
	return g
}

// push sends run's metrics to the gateway, in its group (job nereusctl,
// command, shard, the extra labels).
//
// A push replaces the whole group (PUT, push.Pusher.Push), so that series
// the run no longer has (a partition gone) go. A failed run, and every
// verify run, first read the group's current series from the gateway
// (GET /metrics) to carry over the last success time and the partitions'
// verification times. When that read fails, the run sends its metrics
// without those families with POST (push.Pusher.Add), which replaces only
// the families sent: the gateway keeps its last success time and
// verification times.
func (gw *Gateway) push(ctx context.Context, run *Run, log *slog.Logger) error {
	timeout := gw.Timeout
	if timeout <= 0 {
		timeout = DefaultPushTimeout
	}
	// The run's own context may be done (interrupted, --timeout): the
	// metrics of such a run are pushed all the same.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	client := gw.Client
	if client == nil {
		client = &http.Client{}
	}
	group := gw.group(run)
	var prev *Previous
	var skip func(string) bool
	add := false
	if !run.Success || run.Verify != nil {
		var err error
		prev, err = gw.previous(ctx, client, group)
		if err != nil {
			log.Warn("metrics: cannot read the group's previous metrics from the Pushgateway: pushing with POST without the last success time and verification times, which the gateway keeps", "gateway", gw.URL, "error", err)
			prev, add = nil, true
			skip = func(name string) bool { return carried(name) }
		}
	}
	reg, err := Registry(run, prev, nil, skip)
	if err != nil {
		return err
	}
	p := push.New(gw.URL, Job).Gatherer(reg).Client(client).Grouping(CommandLabel, run.Command)
	if run.Shard != "" {
		p = p.Grouping(ShardLabel, run.Shard)
	}
	for _, l := range gw.Labels {
		p = p.Grouping(l.Name, l.Value)
	}
	if add {
		err = p.AddContext(ctx)
	} else {
		err = p.PushContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("metrics: push to the Pushgateway %s: %w", gw.URL, err)
	}
	return nil
}

// maxExposition bounds the gateway's /metrics read.
const maxExposition = 1 << 30

// previous reads the gateway's /metrics and picks group's series.
func (gw *Gateway) previous(ctx context.Context, client push.HTTPDoer, group map[string]string) (*Previous, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, gw.URL+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: status %d: %s", req.URL, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	prev, err := ParsePrevious(io.LimitReader(resp.Body, maxExposition), expfmt.ResponseFormat(resp.Header), group)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL, err)
	}
	return prev, nil
}

// ParseGatewayURL checks --push-gateway: http:// or https://, a host, an
// optional path (a gateway behind a prefix), no user information (no
// credentials in settings), query or fragment, and not a group's URL. It
// returns the URL without a trailing slash.
func ParseGatewayURL(s string) (string, error) {
	bad := func(why string) error {
		return errkind.Markf(errkind.Usage, "--push-gateway %q: %s", s, why)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", bad("not a URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", bad("want http://HOST[:PORT] or https://HOST[:PORT]")
	case u.Host == "" || u.Hostname() == "":
		return "", bad("no host")
	case u.User != nil:
		return "", bad("user information in the URL: credentials are never settings")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", bad("a query or fragment: want the gateway's base URL")
	case strings.Contains(u.Path+"/", "/metrics/"):
		return "", bad("the URL of a group: want the gateway's base URL (nereusctl adds /metrics/job/nereusctl/...)")
	}
	return strings.TrimSuffix(s, "/"), nil
}

// reservedLabels are the label names an extra grouping label must not
// take: the job and the grouping labels nereusctl sets, and the labels of
// its series (a push refuses a series holding a grouping label).
var reservedLabels = map[string]bool{
	"job": true, CommandLabel: true, ShardLabel: true,
	ResultLabel: true, CheckLabel: true, MethodLabel: true, TopicLabel: true, PartitionLabel: true, LevelLabel: true, "dry_run": true,
}

// ParseLabel checks one --push-gateway-label KEY=VALUE: KEY a Prometheus
// label name ([a-zA-Z_][a-zA-Z0-9_]*), not reserved (__ prefix) and none
// of nereusctl's; VALUE not empty, valid UTF-8, with no space, control
// character or comma (the environment variable's separator).
func ParseLabel(s string) (Label, error) {
	bad := func(why string) error {
		return errkind.Markf(errkind.Usage, "--push-gateway-label %q: %s", s, why)
	}
	name, value, ok := strings.Cut(s, "=")
	switch {
	case !ok:
		return Label{}, bad("want KEY=VALUE")
	case !model.LegacyValidation.IsValidLabelName(name):
		return Label{}, bad("KEY is not a label name: want [a-zA-Z_][a-zA-Z0-9_]*")
	case strings.HasPrefix(name, model.ReservedLabelPrefix):
		return Label{}, bad("KEY starts with __, which Prometheus reserves")
	case reservedLabels[name]:
		return Label{}, bad(fmt.Sprintf("%s is a label nereusctl sets itself", name))
	case value == "":
		return Label{}, bad("empty VALUE")
	case !utf8.ValidString(value):
		return Label{}, bad("VALUE is not valid UTF-8")
	}
	for _, r := range value {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == ',' {
			return Label{}, bad(fmt.Sprintf("VALUE holds %q: spaces, control characters and commas are refused", r))
		}
	}
	return Label{Name: name, Value: value}, nil
}

// ParseLabels parses every KEY=VALUE; a KEY given twice is refused.
func ParseLabels(kvs []string) ([]Label, error) {
	var out []Label
	seen := map[string]bool{}
	for _, kv := range kvs {
		l, err := ParseLabel(kv)
		if err != nil {
			return nil, err
		}
		if seen[l.Name] {
			return nil, errkind.Markf(errkind.Usage, "--push-gateway-label %q: %s given twice", kv, l.Name)
		}
		seen[l.Name] = true
		out = append(out, l)
	}
	return out, nil
}
