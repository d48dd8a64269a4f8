// Command scale measures nereusctl across a fleet of partitions on a store
// that behaves like remote S3: versitygw on 127.0.0.1 behind a
// latency-injecting proxy (internal/testutil/latencyproxy, a fixed delay
// per request). For each command it reports partitions per second,
// requests per partition, peak RSS and the concurrency the proxy saw, at
// --parallel 1 and at the default when the binary has --parallel, and
// four `retention run --shard i/4` processes at once against one process.
// Figures are same-run ratios: the noise of the machine cancels.
//
//	bash bench/scale.sh                       # 2,001 partitions, 20 ms per request
//	go run ./bench/scale -bin ./nereusctl -partitions 300 -delay 20ms
//
// It only talks to loopback, and every loop it runs is bounded.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/nereusctl/nereusctl/internal/testutil/latencyproxy"
)

const (
	accessKey = "nereus-bench-root"
	secretKey = "nereus-bench-secret-not-a-real-key"
	bucket    = "nereus-scale"
)

// shardParallel is each process's --parallel in the shards comparison.
var shardParallel = flag.String("shard-parallel", "default,4", "comma-separated --parallel of each process in the shards comparison (\"default\": the store's default)")

// keepDir keeps the gateway's store across runs: the demo runs once, the
// next run with the same directory reuses it (only runs that do not trim
// can share it: SCALE_ONLY without "retention"). serve keeps the gateway
// and proxy up, printing how to reach them, until interrupted.
var restartTrace = flag.Bool("restart-trace", false, "print every request of the restart section's runs with its arrival time")

var restartFull = flag.Bool("restart-full", true, "the restart section also times a full replay")

var restartRecords = flag.Int("restart-records", 200000, "records of the one partition the restart section replays (-only restart)")

var (
	keepDir = flag.String("keep", "", "directory that keeps the store across runs (the demo runs once)")
	serve   = flag.Bool("serve", false, "after setup, keep the gateway and the proxy running and print their endpoints until interrupted (for profiling by hand)")
)

func main() {
	bin := flag.String("bin", "", "nereusctl binary to measure (required)")
	gw := flag.String("versitygw", "", "versitygw binary (default: $VERSITYGW, PATH, $(go env GOPATH)/bin)")
	partitions := flag.Int("partitions", 2001, "partitions in the store (3 user topics of N/3 each; the demo adds its coordinator partitions)")
	records := flag.Int("records", 0, "records across the demo cluster (default 30 per partition)")
	delay := flag.Duration("delay", 20*time.Millisecond, "delay the proxy adds to every request")
	only := flag.String("only", "", "comma-separated commands to run (status,retention-dry,retention,checkpoint-verify,verify,gc-dry,shards; restart only when named)")
	subset := flag.Int("subset", 100, "--parallel 1 runs cover only N partitions spread evenly over the store's (named on the command line) where the command takes a partition list: one at a time at 20 ms a request, the whole fleet would take hours")
	flag.Parse()
	if *bin == "" {
		fail(errors.New("-bin is required"))
	}
	if err := run(*bin, *gw, *partitions, *records, *delay, *only, *subset); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scale:", err)
	os.Exit(1)
}

type result struct {
	name       string
	parallel   string
	seconds    float64
	partitions int
	requests   int64
	peakRSSMiB float64
	inFlight   int64
	exit       int
	stdout     string
	// CPU seconds (user + system) over the run: the nereusctl
	// process(es), the gateway, and this process (the proxy).
	clientCPU, gatewayCPU, proxyCPU float64
}

// gatewayPID is the running versitygw's process id (its CPU is read from
// /proc).
var gatewayPID int

// cpuMeter samples the gateway's and this process's CPU time.
type cpuMeter struct{ gw, self float64 }

func sampleCPU() cpuMeter {
	var m cpuMeter
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", gatewayPID)); err == nil {
		// Fields after the command name (which may hold spaces): utime
		// and stime are the 12th and 13th, in clock ticks (100 a second
		// on Linux).
		if i := bytes.LastIndexByte(b, ')'); i > 0 {
			f := strings.Fields(string(b[i+1:]))
			if len(f) > 12 {
				u, _ := strconv.ParseFloat(f[11], 64)
				st, _ := strconv.ParseFloat(f[12], 64)
				m.gw = (u + st) / 100
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		m.self = tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
	}
	return m
}

func tvSeconds(tv syscall.Timeval) float64 {
	return float64(tv.Sec) + float64(tv.Usec)/1e6
}

// since fills r's gateway and proxy CPU from the sample taken before.
func (m cpuMeter) since(r *result) {
	now := sampleCPU()
	r.gatewayCPU, r.proxyCPU = now.gw-m.gw, now.self-m.self
}

func run(bin, gwBin string, partitions, records int, delay time.Duration, only string, subset int) error {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "nereus-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	gwDir := filepath.Join(work, "gw")
	if *keepDir != "" {
		gwDir = filepath.Join(*keepDir, "gw")
	}
	endpoint, stop, err := startGateway(gwBin, gwDir)
	if err != nil {
		return err
	}
	defer stop()
	if _, err := os.Stat(filepath.Join(gwDir, bucket)); err != nil {
		if err := createBucket(ctx, endpoint); err != nil {
			return err
		}
	}
	env := append(os.Environ(),
		"AWS_ACCESS_KEY_ID="+accessKey, "AWS_SECRET_ACCESS_KEY="+secretKey, "AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true",
		"XDG_CONFIG_HOME="+filepath.Join(work, "config"), "XDG_STATE_HOME="+filepath.Join(work, "state"))
	if onlyRestart(only) {
		return restart(bin, env, endpoint, delay)
	}
	perTopic := max(1, partitions/3)
	if records == 0 {
		records = 30 * 3 * perTopic
	}
	hasParallel := helpHas(bin, env, "--parallel")
	hasYes := helpHas(bin, env, "--yes", "retention", "run")

	// Two identical stores: the trimming retention run changes its store,
	// so each parallelism gets its own.
	prefixes := []string{"a", "b"}
	if !hasParallel || !wantsName(only, "retention") {
		// (the second store is for the trimming run at the default)
		prefixes = prefixes[:1]
	}
	fmt.Printf("scale: %s, %d partitions per user topic, %d records, %v per request, --parallel supported: %v\n", bin, perTopic, records, delay, hasParallel)
	for _, p := range prefixes {
		marker := filepath.Join(*keepDir, "demo-"+p+"-"+strconv.Itoa(perTopic)+"-"+strconv.Itoa(records))
		if *keepDir != "" {
			if _, err := os.Stat(marker); err == nil {
				fmt.Printf("setup: s3://%s/%s kept from an earlier run (%s)\n", bucket, p, *keepDir)
				continue
			}
		}
		t0 := time.Now()
		res := measure(bin, env, endpoint, p, nil, "demo", "--partitions", strconv.Itoa(perTopic), "--records", strconv.Itoa(records), "--checkpoints", "1", "--no-tour", "-q")
		if res.exit != 0 {
			return fmt.Errorf("demo into prefix %s failed (exit %d)", p, res.exit)
		}
		fmt.Printf("setup: demo into s3://%s/%s directly (no delay): %.1f s\n", bucket, p, time.Since(t0).Seconds())
		if *keepDir != "" {
			if err := os.WriteFile(marker, nil, 0o644); err != nil {
				return err
			}
		}
	}
	names, err := listBindings(bin, env, endpoint, prefixes[0])
	if err != nil {
		return err
	}
	n := len(names)
	first := spread(names, subset)
	proxy, err := latencyproxy.Start(endpoint, delay)
	if err != nil {
		return err
	}
	defer proxy.Close()
	if *serve {
		fmt.Printf("serving: gateway %s, proxy %s (%v per request)\n", endpoint, proxy.URL, delay)
		for _, kv := range env[len(os.Environ()):] {
			fmt.Printf("  export %s\n", kv)
		}
		fmt.Printf("  nereusctl --store s3://%s/%s --s3-endpoint %s --s3-path-style status --all\n", bucket, prefixes[0], proxy.URL)
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		return nil
	}

	want := func(name string) bool {
		if only == "" {
			return true
		}
		for _, o := range strings.Split(only, ",") {
			if o == name {
				return true
			}
		}
		return false
	}
	retentionArgs := []string{"retention", "run", "--all", "--now", "2100-01-01T00:00:00Z"}
	if hasYes {
		retentionArgs = append(retentionArgs, "--yes")
	}
	// lists: the command takes TOPIC-PARTITION... in place of its --all
	// (gc is store-wide: its --parallel 1 run covers every partition).
	cmds := []struct {
		name  string
		args  []string
		lists bool
	}{
		{"status", []string{"status", "--all"}, true},
		{"retention-dry", append(append([]string{}, retentionArgs...), "--dry-run"), true},
		{"checkpoint-verify", []string{"checkpoint", "verify", "--all"}, true},
		{"verify", []string{"verify", "--all"}, true},
		{"gc-dry", []string{"gc", "--dry-run"}, false},
		{"retention", append(append([]string{}, retentionArgs...), "-o", "json"), true},
	}
	fmt.Printf("--parallel 1 runs: %d partitions spread evenly over the %d (every topic's), named on the command line (gc: the whole store); the default runs: all %d\n", len(first), n, n)
	for _, c := range cmds {
		if !want(c.name) {
			continue
		}
		settings := [][]string{nil}
		labels := []string{"default"}
		if hasParallel {
			settings = [][]string{{"--parallel", "1"}, nil}
			labels = []string{"1", "default"}
		}
		var rates []float64
		for i, extra := range settings {
			prefix := prefixes[0]
			if c.name == "retention" {
				prefix = prefixes[i]
			}
			args, parts, label := c.args, n, labels[i]
			if labels[i] == "1" && c.lists {
				args, parts = withPartitions(c.args, first), len(first)
				label = fmt.Sprintf("1 (%d of them)", parts)
			}
			args = statusArgs(bin, env, args)
			proxy.ResetCounts()
			cpu := sampleCPU()
			r := measure(bin, env, proxy.URL, prefix, extra, args...)
			cpu.since(&r)
			r.name, r.parallel, r.partitions = c.name, label, parts
			r.requests, r.inFlight = proxy.Requests(), proxy.PeakInFlight()
			printResult(r)
			if c.name == "retention" {
				fmt.Printf("  retention trimmed %s\n", trimmed(r.stdout))
			}
			rates = append(rates, float64(r.partitions)/r.seconds)
		}
		if len(rates) == 2 && rates[0] > 0 {
			fmt.Printf("  %s: default / --parallel 1 = %.1fx partitions/s (same run)\n", c.name, rates[1]/rates[0])
		}
	}
	if want("shards") && !helpHas(bin, env, "--shard", "retention", "run") {
		fmt.Println("shards: this binary's retention run has no --shard: skipped")
	} else if want("shards") {
		// Four shard processes at once against one process, both dry runs
		// (they must not change the store between the two), at each
		// --parallel of -shard-parallel: at the default one process may
		// already use the whole machine (the cpu line says), at a small
		// one it waits on the delay, which four processes divide.
		for _, par := range strings.Split(*shardParallel, ",") {
			args := append(append([]string{}, retentionArgs...), "--dry-run")
			if par != "default" {
				args = append(args, "--parallel", par)
			}
			proxy.ResetCounts()
			cpu := sampleCPU()
			one := measure(bin, env, proxy.URL, prefixes[0], nil, args...)
			cpu.since(&one)
			one.name, one.parallel, one.partitions, one.requests, one.inFlight = "retention-dry 1 process", par, n, proxy.Requests(), proxy.PeakInFlight()
			printResult(one)
			proxy.ResetCounts()
			cpu = sampleCPU()
			t0 := time.Now()
			var wg sync.WaitGroup
			shards := make([]result, 4)
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					shards[i] = measure(bin, env, proxy.URL, prefixes[0], []string{"--shard", fmt.Sprintf("%d/4", i)}, args...)
				}()
			}
			wg.Wait()
			four := result{name: "retention-dry 4 shards at once", parallel: par, seconds: time.Since(t0).Seconds(), partitions: n,
				requests: proxy.Requests(), inFlight: proxy.PeakInFlight()}
			exits := make([]int, 4)
			for i, r := range shards {
				exits[i] = r.exit
				four.peakRSSMiB = max(four.peakRSSMiB, r.peakRSSMiB)
				four.clientCPU += r.clientCPU
			}
			four.exit = maxInt(exits)
			cpu.since(&four)
			printResult(four)
			if four.seconds > 0 {
				fmt.Printf("4 shards / 1 process speed-up at --parallel %s: %.2fx (exits %v)\n", par, one.seconds/four.seconds, exits)
			}
		}
	}
	return nil
}

func printResult(r result) {
	pps := float64(r.partitions) / r.seconds
	fmt.Printf("%-32s parallel=%-8s %8.1f s  %8.1f partitions/s  %6.1f requests/partition  peak RSS %6.1f MiB  peak in flight %4d  exit %d\n",
		r.name, r.parallel, r.seconds, pps, float64(r.requests)/float64(r.partitions), r.peakRSSMiB, r.inFlight, r.exit)
	// What the machine gave the run: CPU seconds of each part against
	// the wall time times the cores, so a run bound by the CPU shows as
	// one (a 2-core machine gives 2 CPU-seconds a second).
	total := r.clientCPU + r.gatewayCPU + r.proxyCPU
	fmt.Printf("  cpu: nereusctl %.1f s, gateway %.1f s, proxy %.1f s = %.1f s of %.1f s (%d cores x wall): %.0f%%\n",
		r.clientCPU, r.gatewayCPU, r.proxyCPU, total, r.seconds*float64(runtime.NumCPU()), runtime.NumCPU(), 100*total/(r.seconds*float64(runtime.NumCPU())))
}

func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// measure runs the binary on s3://bucket/prefix through endpoint and
// reports its wall time, exit code and peak RSS.
func measure(bin string, env []string, endpoint, prefix string, extra []string, args ...string) result {
	full := append([]string{"--store", "s3://" + bucket + "/" + prefix, "--s3-endpoint", endpoint, "--s3-path-style", "-q"}, args...)
	if len(extra) > 0 {
		full = append(full, extra...)
	}
	cmd := exec.Command(bin, full...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	t0 := time.Now()
	err := cmd.Run()
	r := result{seconds: time.Since(t0).Seconds(), stdout: stdout.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.exit = ee.ExitCode()
	} else if err != nil {
		r.exit = -1
	}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.peakRSSMiB = float64(ru.Maxrss) / 1024
			r.clientCPU = tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
		}
	}
	if r.exit != 0 && r.exit != 3 && r.exit != 4 {
		fmt.Fprintf(os.Stderr, "nereusctl %s: exit %d\n%s", strings.Join(args, " "), r.exit, lastLines(stderr.String(), 5))
	}
	return r
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

func helpHas(bin string, env []string, flagName string, sub ...string) bool {
	cmd := exec.Command(bin, append(sub, "--help")...)
	cmd.Env = env
	out, _ := cmd.CombinedOutput()
	return bytes.Contains(out, []byte(flagName+" "))
}

// listBindings returns the store's partitions (TOPIC-PARTITION), in the
// order of their binding keys.
func listBindings(bin string, env []string, endpoint, prefix string) ([]string, error) {
	cmd := exec.Command(bin, "--store", "s3://"+bucket+"/"+prefix, "--s3-endpoint", endpoint, "--s3-path-style", "store", "ls", "bindings/")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("store ls bindings/: %w", err)
	}
	var names []string
	for _, f := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(f, "bindings/")
		if !ok || !strings.HasSuffix(rest, ".json") {
			continue
		}
		topic, part, ok := strings.Cut(strings.TrimSuffix(rest, ".json"), "/")
		if !ok {
			continue
		}
		names = append(names, topic+"-"+part)
	}
	if len(names) == 0 {
		return nil, errors.New("no bindings after the demo")
	}
	return names, nil
}

// spread picks k of names evenly (all of them when k >= len(names)), so
// that a subset has partitions of every topic (the coordinator topics come
// first in key order, and they are not the ones retention trims).
func spread(names []string, k int) []string {
	if k >= len(names) || k <= 0 {
		return names
	}
	out := make([]string, 0, k)
	for i := range k {
		out = append(out, names[i*len(names)/k])
	}
	return out
}

// withPartitions is args with --all replaced by the partitions named.
func withPartitions(args, names []string) []string {
	var out []string
	for _, a := range args {
		if a == "--all" {
			out = append(out, names...)
			continue
		}
		out = append(out, a)
	}
	return out
}

// statusArgs drops status's --all where the binary's status has none
// (status alone covers every partition there).
func statusArgs(bin string, env []string, args []string) []string {
	if len(args) == 0 || args[0] != "status" || helpHas(bin, env, "--all", "status") {
		return args
	}
	return withPartitions(args, nil)
}

// trimmed reads retention run's -o json summary: partitions trimmed and
// unchanged.
func trimmed(stdout string) string {
	var doc struct {
		Summary struct {
			Trimmed, Unchanged, Errors int
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		return "(no JSON summary: " + err.Error() + ")"
	}
	return fmt.Sprintf("%d partitions, %d unchanged, %d errors", doc.Summary.Trimmed, doc.Summary.Unchanged, doc.Summary.Errors)
}

func gatewayBinary(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p := os.Getenv("VERSITYGW"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(dir, "bin", "versitygw")
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	return "", errors.New("versitygw not found: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0")
}

// startGateway starts versitygw on a free 127.0.0.1 port.
func startGateway(flagValue, dir string) (string, func(), error) {
	bin, err := gatewayBinary(flagValue)
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--port", addr, "--quiet", "--keep-alive", "posix", dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+accessKey, "ROOT_SECRET_ACCESS_KEY="+secretKey)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	gatewayPID = cmd.Process.Pid
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
		}
	}
	for i := 0; i < 100; i++ {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return "http://" + addr, stop, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	return "", nil, fmt.Errorf("versitygw did not listen on %s: %s", addr, out.String())
}

func createBucket(ctx context.Context, endpoint string) error {
	c := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	})
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	return err
}

// wantsName reports whether -only is empty or names name.
func wantsName(only, name string) bool {
	if only == "" {
		return true
	}
	for _, o := range strings.Split(only, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// onlyRestart: -only names the restart section (it runs alone: its store
// is one long partition, not the fleet).
func onlyRestart(only string) bool {
	for _, o := range strings.Split(only, ",") {
		if o == "restart" {
			return true
		}
	}
	return false
}

// restart measures one long partition's restart through the proxy: the
// demo's orders-0 with -restart-records records and a checkpoint every 1%
// of its life, so the newest checkpoint leaves a 1% tail. It reports the
// restart (replay from the newest checkpoint) and a full replay in round
// trips of wall time (wall / delay, process start measured apart and
// shown), the requests by method, the waves of requests the proxy saw
// (arrivals more than three quarters of a delay after the first of a wave start a new
// wave: dependent round trips), and the full replay's speed-up over one
// request at a time (requests x delay / wall).
func restart(bin string, env []string, endpoint string, delay time.Duration) error {
	prefix := "restart-" + strconv.Itoa(*restartRecords)
	marker := filepath.Join(*keepDir, "demo-"+prefix)
	kept := false
	if *keepDir != "" {
		_, err := os.Stat(marker)
		kept = err == nil
	}
	if !kept {
		t0 := time.Now()
		res := measure(bin, env, endpoint, prefix, nil, "demo", "--topics", "orders", "--partitions", "1", "--records", strconv.Itoa(*restartRecords), "--checkpoints", "99", "--no-tour", "-q")
		if res.exit != 0 {
			return fmt.Errorf("demo into prefix %s failed (exit %d)", prefix, res.exit)
		}
		fmt.Printf("setup: %d records of orders-0, 99 checkpoints, into s3://%s/%s directly (no delay): %.1f s\n", *restartRecords, bucket, prefix, time.Since(t0).Seconds())
		if *keepDir != "" {
			if err := os.WriteFile(marker, nil, 0o644); err != nil {
				return err
			}
		}
	}
	proxy, err := latencyproxy.Start(endpoint, delay)
	if err != nil {
		return err
	}
	defer proxy.Close()
	// Process start and flag parsing, no request: what a round-trip count
	// of wall time does not owe the store.
	startup := 1e9
	for range 3 {
		r := measure(bin, env, proxy.URL, prefix, nil, "version")
		startup = min(startup, r.seconds)
	}
	fmt.Printf("restart: process start (nereusctl version, best of 3): %.3f s\n", startup)
	for _, c := range []struct {
		name string
		args []string
		runs int
	}{
		{"restart (newest checkpoint, 1% tail)", []string{"replay", "orders-0"}, 5},
		{"full replay", []string{"replay", "orders-0", "--full"}, 1},
	} {
		if c.runs == 1 && !*restartFull {
			continue
		}
		var best result
		var bestStats latencyproxy.Stats
		for i := range c.runs {
			proxy.ResetCounts()
			cpu := sampleCPU()
			r := measure(bin, env, proxy.URL, prefix, nil, c.args...)
			cpu.since(&r)
			if r.exit != 0 {
				return fmt.Errorf("%s: exit %d", strings.Join(c.args, " "), r.exit)
			}
			if i == 0 || r.seconds < best.seconds {
				best, bestStats = r, proxy.Stats()
				best.inFlight = proxy.PeakInFlight()
			}
		}
		s := bestStats
		rt := (best.seconds - startup) / delay.Seconds()
		fmt.Printf("%-38s %7.3f s (best of %d) = %5.1f round trips of %v after process start; %d requests %v, %d of the GETs LISTs; %d waves; peak in flight %d; nereusctl cpu %.2f s, gateway %.2f s\n",
			c.name, best.seconds, c.runs, rt, delay, s.Requests, s.Methods, s.Lists(), s.Waves(delay), best.inFlight, best.clientCPU, best.gatewayCPU)
		if *restartTrace && len(s.Arrivals) > 0 && len(s.Arrivals) < 500 {
			for i, a := range s.Arrivals {
				fmt.Printf("  %7.1f ms  +%6.1f ms  %s\n", float64(a.Sub(s.Arrivals[0]).Microseconds())/1000, float64(s.Served[i].Microseconds())/1000, s.Targets[i])
			}
		}
		if c.runs == 1 && best.seconds > 0 {
			fmt.Printf("  one request at a time would take %d x %v = %.1f s: %.1fx faster (same run)\n", s.Requests, delay, float64(s.Requests)*delay.Seconds(), float64(s.Requests)*delay.Seconds()/best.seconds)
		}
	}
	return nil
}
