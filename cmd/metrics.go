package cmd

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/localfile"
	"github.com/nereusctl/nereusctl/internal/metrics"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/status"
	"github.com/nereusctl/nereusctl/internal/store"
)

// scheduledCommands are the commands a scheduler runs, which write metrics
// (--metrics-file, --push-gateway), with their command label
// (docs/deploy/README.md, "Metrics"). The label has no space: the push
// package sends a grouping value without "/" URL-query-escaped ("+" for a
// space), which the Pushgateway's router does not turn back into a space.
var scheduledCommands = map[string]string{
	"status":            "status",
	"verify":            "verify",
	"retention run":     "retention_run",
	"gc":                "gc",
	"compact":           "compact",
	"checkpoint create": "checkpoint_create",
}

// metricsFileFlag is the per-command flag of the scheduled commands.
const metricsFileFlag = "metrics-file"

// commandPath is c's path without "nereusctl ".
func commandPath(c *cobra.Command) string {
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// addMetricsFlags gives every scheduled command its --metrics-file.
func addMetricsFlags(c *cobra.Command) {
	if _, ok := scheduledCommands[commandPath(c)]; ok {
		c.Flags().String(metricsFileFlag, "", "write this run's Prometheus metrics to this file, for node_exporter's textfile collector (atomically; its folder must exist; not on a dry run)")
	}
	for _, sub := range c.Commands() {
		addMetricsFlags(sub)
	}
}

// metricsRun is a scheduled command's run whose metrics are written when
// it ends (globals.finishMetrics).
type metricsRun struct {
	name   string
	target metrics.Target
	run    metrics.Run
	dryRun bool
}

// checkMetricsSettings checks the push settings (usage errors, before the
// run).
func checkMetricsSettings(cfg *Config) (*metrics.Gateway, error) {
	if cfg.PushGateway == "" {
		if len(cfg.PushGatewayLabels) > 0 {
			return nil, exitcode.UsageErr(errors.New("--push-gateway-label goes with --push-gateway"))
		}
		return nil, nil
	}
	u, err := metrics.ParseGatewayURL(cfg.PushGateway)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err, "give the Pushgateway's base URL, such as http://pushgateway.monitoring:9091")
	}
	labels, err := metrics.ParseLabels(cfg.PushGatewayLabels)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err, "give --push-gateway-label KEY=VALUE, KEY a Prometheus label name other than job, command and shard")
	}
	return &metrics.Gateway{URL: u, Labels: labels, Timeout: metrics.DefaultPushTimeout}, nil
}

// startMetrics is run before a command: for a scheduled command with a
// metrics output, it checks the file's folder (before any work: a cron
// line with a wrong path fails at once, exit 2) and starts the run's
// clock. Another command refuses the push flags on its command line (the
// settings from the environment or a config file are for the scheduled
// commands and ignored elsewhere).
func (g *globals) startMetrics(cmd *cobra.Command) error {
	if g.noMetrics {
		return nil // a run inside support-bundle: the scheduled job's metrics are not its own
	}
	path := commandPath(cmd)
	label, scheduled := scheduledCommands[path]
	if !scheduled {
		for _, name := range []string{"push-gateway", "push-gateway-label"} {
			if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
				return exitcode.UsageErr(fmt.Errorf("--%s: %s writes no metrics; the scheduled commands do (%s)", name, path, scheduledList()))
			}
		}
		return nil
	}
	gw, err := checkMetricsSettings(&g.cfg)
	if err != nil {
		return err
	}
	file, _ := cmd.Flags().GetString(metricsFileFlag)
	if file == "" && gw == nil {
		return nil
	}
	if file != "" {
		if err := localfile.CheckWritable(file); err != nil {
			return exitcode.Wrap(exitcode.Usage, fmt.Errorf("%s: --metrics-file: %w", path, err),
				"create the folder (node_exporter's textfile directory) or fix the path; nothing was done")
		}
	}
	m := &metricsRun{name: path, target: metrics.Target{File: file, Gateway: gw, Log: g.logger()}}
	m.run.Command = label
	m.run.Start = time.Now()
	if fl := cmd.Flags().Lookup("shard"); fl != nil {
		m.run.Shard = fl.Value.String()
	}
	if fl := cmd.Flags().Lookup("dry-run"); fl != nil {
		m.dryRun = fl.Value.String() == "true"
	}
	g.metrics = m
	return nil
}

func scheduledList() string {
	names := make([]string, 0, len(scheduledCommands))
	for n := range scheduledCommands {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// finishMetrics writes the run's metrics once the command returned err: a
// success is exit 0. A dry run writes and pushes nothing. When the metrics
// cannot be written, a run that succeeded fails (exit 1); a failed run
// keeps its own error and the metrics error is logged.
func (g *globals) finishMetrics(ctx context.Context, err error) error {
	m := g.metrics
	if m == nil {
		return err
	}
	g.metrics = nil
	if m.dryRun {
		fmt.Fprintf(g.stderr, "%s: dry run: no metrics written or pushed (a dry run never replaces the metrics of real runs)\n", m.name)
		return err
	}
	m.run.End = time.Now()
	m.run.Success = err == nil
	m.run.Requests = store.Counts{}
	for _, v := range store.Verbs {
		m.run.Requests[v] = 0
	}
	if g.counter != nil {
		m.run.Requests = g.counter.Counts()
	}
	m.run.Retries = g.meter.Stats().Retries
	werr := m.target.Write(ctx, &m.run)
	if werr == nil {
		return err
	}
	if err == nil {
		return exitcode.Wrap(exitcode.Error, fmt.Errorf("%s: %w", m.name, werr),
			"the run itself succeeded; fix --metrics-file or --push-gateway, or rerun (every step is idempotent)")
	}
	g.logger().Warn("the run's metrics were not written", "command", m.name, "error", werr)
	return err
}

// observe gives the run's metrics their partition results (a no-op
// without a metrics output).
func (g *globals) observe(fill func(*metrics.Run)) {
	if g.metrics != nil {
		fill(&g.metrics.run)
	}
}

// partitionResult is a failed partition's result: blocked (a held lease,
// quarantined coverage: exit 4) or failed.
func partitionResult(err error) string {
	if exitcode.Of(err) == exitcode.Blocked {
		return metrics.ResultBlocked
	}
	return metrics.ResultFailed
}

func results(names ...string) map[string]int {
	m := map[string]int{}
	for _, n := range names {
		m[n] = 0
	}
	return m
}

// observeStatusStart, observeStatusRow and observeStatusStore are a
// status run's metrics, row by row as the rows are printed: ok, blocked,
// failed (unreadable, or data loss); findings by check: data_loss,
// corrupt, checkpoint_unusable (a checkpoint replay skipped),
// binding_lags_trim; and every row's series.
func (g *globals) observeStatusStart() {
	g.observe(func(r *metrics.Run) {
		r.Partitions = results(metrics.ResultOK, metrics.ResultBlocked, metrics.ResultFailed)
		r.Findings = results("data_loss", "corrupt", "checkpoint_unusable", "binding_lags_trim")
	})
}

// observeStatusStore counts the store's own findings (orphan streams,
// stray keys) by check.
func (g *globals) observeStatusStore(storeFindings []health.Finding) {
	g.observe(func(r *metrics.Run) {
		for _, f := range storeFindings {
			r.Findings[f.Check]++
		}
	})
}

// observeStatusRow counts one row: its health findings by check (a
// skipped checkpoint counts once, as checkpoint_unusable), its result,
// and its series.
func (g *globals) observeStatusRow(p status.Partition) {
	g.observe(func(r *metrics.Run) {
		for _, f := range p.Findings {
			if f.Scope != health.ScopeCheckpoint {
				r.Findings[f.Check]++
			}
		}
		switch {
		case p.DataLoss != nil || p.Error != "" || len(p.Findings) > 0:
			r.Partitions[metrics.ResultFailed]++
		case p.Blocked:
			r.Partitions[metrics.ResultBlocked]++
		default:
			r.Partitions[metrics.ResultOK]++
		}
		if p.DataLoss != nil {
			r.Findings["data_loss"]++
		} else if p.Err != nil && exitcode.Of(p.Err) == exitcode.Verify {
			r.Findings["corrupt"]++
		}
		r.Findings["checkpoint_unusable"] += len(p.SkippedCheckpoints)
		if p.BindingLagsTrim {
			r.Findings["binding_lags_trim"]++
		}
		r.Status = append(r.Status, metrics.PartitionStatus{
			Topic: p.Topic, Partition: p.Partition, Read: p.Error == "",
			CheckpointAgeSeconds: p.CheckpointAgeSec, TailObjects: p.TailObjects,
			DataLoss: p.DataLoss != nil, Blocked: p.Blocked, LogStart: p.LogStart, HW: p.Head,
		})
	})
}

// countRetention wraps a retention run's Emit to count its partitions:
// trimmed, unchanged, failed, blocked (a lease held past --lease-wait).
func (g *globals) countRetention(emit func(*retention.Result) error) func(*retention.Result) error {
	if g.metrics == nil {
		return emit
	}
	counts := results(metrics.ResultTrimmed, metrics.ResultUnchanged, metrics.ResultFailed, metrics.ResultBlocked)
	g.metrics.run.Partitions = counts
	return func(r *retention.Result) error {
		switch {
		case !r.OK():
			counts[partitionResult(leaseErr(layout.TopicPartition{Topic: r.Topic, Partition: r.Partition}, r.Err))]++
		case r.Trimmed():
			counts[metrics.ResultTrimmed]++
		default:
			counts[metrics.ResultUnchanged]++
		}
		return emit(r)
	}
}

// observeRetention adds the garbage bytes and the deprecated counts.
func (g *globals) observeRetention(rep *retention.JobReport) {
	g.observe(func(r *metrics.Run) {
		r.Retention = &metrics.Retention{GarbageBytes: rep.GarbageBytes, Trimmed: rep.Trimmed, Unchanged: rep.Unchanged, Errors: rep.Errors}
	})
}

// observeGC: ok, failed, blocked (its partitions' outcomes; the lean
// report lists the failed ones only).
func (g *globals) observeGC(rep *retention.GCReport) {
	g.observe(func(r *metrics.Run) {
		r.Partitions = results(metrics.ResultOK, metrics.ResultFailed, metrics.ResultBlocked)
		bad := 0
		for _, p := range rep.Partitions {
			if err := p.Err(); err != nil {
				r.Partitions[partitionResult(err)]++
				bad++
			}
		}
		r.Partitions[metrics.ResultOK] = max(0, rep.Done()-bad)
	})
}

// observeOutcomes counts the partitions of a command whose results are
// ok, unchanged (nothing to do: compact's up to date, checkpoint create's
// reused checkpoint), failed and blocked: outcome gives each item's error
// and whether it was unchanged.
func observeOutcomes[T any](g *globals, items []T, outcome func(T) (err error, unchanged bool)) {
	g.observe(func(r *metrics.Run) {
		r.Partitions = results(metrics.ResultOK, metrics.ResultUnchanged, metrics.ResultFailed, metrics.ResultBlocked)
		for _, it := range items {
			err, unchanged := outcome(it)
			switch {
			case err != nil:
				r.Partitions[partitionResult(err)]++
			case unchanged:
				r.Partitions[metrics.ResultUnchanged]++
			default:
				r.Partitions[metrics.ResultOK]++
			}
		}
	})
}
