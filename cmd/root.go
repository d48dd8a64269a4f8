// Package cmd is nereusctl's command line: one file per command. A command
// parses flags, calls one function in internal/, and renders the result. No
// business logic lives here.
package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/storeprobe"
)

// Version is set by goreleaser: -X github.com/nereusctl/nereusctl/cmd.Version=...
var (
	Version = "dev"
	Commit  = "none"
	Date    = "unknown"
)

// Config is the resolved global configuration (flag > env > file > default).
type Config struct {
	Store                string        `mapstructure:"store"`
	Output               string        `mapstructure:"output"`
	LogLevel             string        `mapstructure:"log-level"`
	S3Endpoint           string        `mapstructure:"s3-endpoint"`
	S3Region             string        `mapstructure:"s3-region"`
	S3PathStyle          bool          `mapstructure:"s3-path-style"`
	S3AllowHTTP          bool          `mapstructure:"s3-allow-http"`
	MaxRequestsPerSecond float64       `mapstructure:"max-requests-per-second"`
	Parallel             int           `mapstructure:"parallel"`
	LeaseWait            time.Duration `mapstructure:"lease-wait"`
	LeaseTTL             time.Duration `mapstructure:"lease-ttl"`
	Stats                bool          `mapstructure:"stats"`
	Quiet                bool          `mapstructure:"quiet"`
	NoProgress           bool          `mapstructure:"no-progress"`
	RequestTimeout       time.Duration `mapstructure:"request-timeout"`
	Timeout              time.Duration `mapstructure:"timeout"`
	ProbeMaxAge          time.Duration `mapstructure:"probe-max-age"`
	SkipStoreProbe       bool          `mapstructure:"skip-store-probe"`
	// PushGateway and PushGatewayLabels: where the scheduled commands push
	// their metrics (cmd/metrics.go).
	PushGateway       string   `mapstructure:"push-gateway"`
	PushGatewayLabels []string `mapstructure:"push-gateway-label"`
}

// DefaultRequestTimeout bounds one store request (its body included): far
// above what a healthy endpoint needs for the largest object, so that it
// only cuts a request nobody answers.
const DefaultRequestTimeout = 5 * time.Minute

// DefaultStore is the embedded default: a local directory.
const DefaultStore = "file://./nereus-data"

// globals is what every command gets: the resolved config, the writers, the
// logger and the store (opened on first use).
type globals struct {
	cfg     Config
	v       *viper.Viper
	stdout  io.Writer
	stderr  io.Writer
	log     *slog.Logger
	st      store.Store
	counter *store.Counter
	// meter counts the HTTP attempts, bytes and retries (--stats) and
	// holds the request budget of s3:// (--max-requests-per-second).
	meter *store.Meter
	// http is set when the store is s3:// (the meter's HTTP figures apply).
	http bool
	// isTTY reports whether stdout is a terminal (colours, maps).
	isTTY bool
	// stderrTTY reports whether stderr is a terminal: progress is drawn
	// there only then (tests set it to drive the bar into a buffer).
	stderrTTY bool
	// resolved is set once the configuration is resolved.
	resolved bool
	// createStore lets the store be created (a missing file:// root).
	createStore bool
	// foreignS3Settings lets a file:// store open with an --s3-endpoint
	// (support-bundle: it is taken when the configuration is wrong, and
	// reports the endpoint rather than refuse to run).
	foreignS3Settings bool
	// deadline is the --timeout context of the command (nil without one)
	// and cancelDeadline its cancel.
	deadline       context.Context
	cancelDeadline context.CancelFunc
	// probeNoted is set once the stored store probe result was looked at
	// this run, and proved once a mutation's gate passed (probegate.go).
	probeNoted, proved bool
	// noMetrics: a command run inside another (support-bundle) writes and
	// pushes no metrics, whatever the settings.
	noMetrics bool
	// probeNote delivers the read-only warning noteStoreProbe reads (""
	// for none); nil when no read is under way.
	probeNote chan string
	// metrics is the run of a scheduled command with a metrics output
	// (--metrics-file, --push-gateway), written when it ends.
	metrics *metricsRun
}

// errTimedOut is the cause of a --timeout deadline.
var errTimedOut = errors.New("--timeout reached")

// timedOut reports whether the run's --timeout ended it.
func (g *globals) timedOut() bool {
	return g.deadline != nil && errors.Is(context.Cause(g.deadline), errTimedOut)
}

// json reports a document output (-o json or -o yaml): the command
// writes its typed document with writeJSON, which renders YAML under -o
// yaml.
func (g *globals) json() bool { return g.machineOutput() }

// wide reports -o wide: tables with their extra columns.
func (g *globals) wide() bool { return g.cfg.Output == "wide" }

// machineOutput reports an output for programs (json, yaml): no progress.
func (g *globals) machineOutput() bool { return g.cfg.Output == "json" || g.cfg.Output == "yaml" }

// store opens the configured store once, wrapped in the decorators.
func (g *globals) store(ctx context.Context) (store.Store, error) {
	if g.st == nil {
		if err := g.openStore(ctx); err != nil {
			return nil, err
		}
	}
	g.noteStoreProbe(ctx)
	return g.st, nil
}

// openStore opens the configured store into g.st.
func (g *globals) openStore(ctx context.Context) error {
	if scheme, _, _ := strings.Cut(g.cfg.Store, "://"); strings.EqualFold(scheme, "file") && g.cfg.S3Endpoint != "" && !g.foreignS3Settings {
		// an endpoint meant for another store: the run would act on the
		// local directory while the operator thinks of the bucket (a
		// replica store of another scheme, repair --from, takes the S3
		// settings for itself)
		return exitcode.UsageErr(fmt.Errorf("open store %q: --s3-endpoint %s is for s3:// stores; a file:// store takes none (drop it, or give --store s3://BUCKET/PREFIX)", store.RedactURL(g.cfg.Store), store.RedactURL(g.cfg.S3Endpoint)))
	}
	g.meter = store.NewMeter(g.cfg.MaxRequestsPerSecond)
	st, err := openMeteredStore(ctx, g.cfg, g.createStore, g.logger(), g.meter)
	if err != nil {
		if h := errorHint(err); h != "" {
			// access or credentials refused: not a usage error
			return exitcode.Wrap(exitcode.Error, err, h)
		}
		return exitcode.Wrap(exitcode.Usage, err, "check --store (file:///dir, file://./dir, s3://bucket/prefix) and the S3 flags")
	}
	g.http = isHTTPStore(st)
	g.counter = store.NewCounter(st)
	g.st = g.counter
	return nil
}

// Execute runs nereusctl with args and returns the process exit status.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return execute(ctx, &globals{stderr: stderr, isTTY: isTerminal(stdout), stderrTTY: isTerminal(stderr)}, args, stdout)
}

// execute runs one command line with g (tests preset g.st and g.counter to
// run over a store of theirs).
func execute(ctx context.Context, g *globals, args []string, stdout io.Writer) int {
	stderr := g.stderr
	out := &trackedWriter{w: stdout}
	g.stdout = out
	root := newRootCmd(g)
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(stderr)
	failed, err := root.ExecuteContextC(ctx)
	g.finishStoreProbeNote()
	if g.cancelDeadline != nil {
		defer g.cancelDeadline()
	}
	if failed == nil {
		failed = root
	}
	if ctx.Err() == nil && g.timedOut() {
		// The deadline passed before the command returned: its verdict is
		// incomplete, whatever the step under way returned (never 0 — a
		// step may have taken the cut for an empty answer — and never a
		// finding or a block it could not finish checking).
		if err == nil {
			err = errors.New("the deadline passed before the command returned")
		}
		err = exitcode.Wrap(exitcode.Error, fmt.Errorf("%s: timed out after %s (--timeout): %w", strings.TrimPrefix(failed.CommandPath(), "nereusctl "), g.cfg.Timeout, err),
			"the work done so far is kept and every step is idempotent: rerun the same command, with a longer --timeout, to finish")
	}
	err = g.finishMetrics(ctx, err)
	if g.cfg.Stats && g.counter != nil {
		g.writeStats(stderr)
	}
	if g.st != nil {
		store.CloseStore(g.st)
	}
	if err == nil {
		return int(exitcode.OK)
	}
	code := codeOf(ctx, err)
	g.reportError(root, failed, args, out, err, code)
	return int(code)
}

// codeOf is the one decision of the exit status. A cancelled run context
// (SIGINT, SIGTERM) wins over whatever the interrupted step returned: a
// binding load or a store retry cut short may surface as any error.
// Everything else is decided by exitcode.Of from typed errors only.
func codeOf(ctx context.Context, err error) exitcode.Code {
	if err == nil {
		return exitcode.OK
	}
	if ctx.Err() != nil {
		return exitcode.Interrupted
	}
	return exitcode.Of(err)
}

// interruptedMessage is what an interrupted run says (on stderr, and as
// the JSON error's message).
const interruptedMessage = "interrupted: rerun the same command to resume"

// reportError writes the failure: always on stderr (the message and a
// hint line), and under -o json also as an error document on stdout,
// unless the command already wrote its document (docs/json-output.md,
// "Errors").
func (g *globals) reportError(root, failed *cobra.Command, args []string, out *trackedWriter, err error, code exitcode.Code) {
	msg := err.Error()
	hint := errorHint(err)
	if code == exitcode.Interrupted {
		g.logger().Info("interrupted", "error", msg)
		msg = interruptedMessage
		hint = ""
	} else if hint == "" && code == exitcode.Usage {
		hint = fmt.Sprintf("run '%s --help' for usage", failed.CommandPath())
	}
	fmt.Fprintf(g.stderr, "nereusctl: %s\n", msg)
	if hint != "" {
		fmt.Fprintf(g.stderr, "hint: %s\n", hint)
	}
	format := g.wantsDocument(root, args)
	if format == "" || out.n > 0 {
		return
	}
	doc := errorDocument{SchemaVersion: SchemaVersion, Error: newErrorBody(err, code, msg, hint)}
	writeJSON(&trackedWriter{w: out.w, yaml: format == "yaml"}, doc)
}

// newErrorBody is the "error" object of a failed run: the error document's,
// and the one a command's own document carries when the run fails after it
// (repair).
func newErrorBody(err error, code exitcode.Code, msg, hint string) errorBody {
	b := errorBody{Code: int(code), Name: code.Name(), Message: msg, Hint: hint}
	b.Object, b.Check = errkind.FindingOf(err)
	if b.Object == "" {
		b.Object = store.KeyOf(err)
	}
	return b
}

// runErrorBody is newErrorBody for an error a command returns (nil: none).
func runErrorBody(err error) *errorBody {
	if err == nil {
		return nil
	}
	b := newErrorBody(err, exitcode.Of(err), err.Error(), errorHint(err))
	return &b
}

// errorDocument is the JSON document of a failed run.
type errorDocument struct {
	SchemaVersion int       `json:"schema_version"`
	Error         errorBody `json:"error"`
}

type errorBody struct {
	Code    int    `json:"code"`
	Name    string `json:"name"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	Object  string `json:"object,omitempty"`
	Check   string `json:"check,omitempty"`
}

// wantsDocument is the format of the error document: "json" or "yaml"
// under -o json or -o yaml, else "" (none). Also when the run failed
// before the configuration was resolved (a flag error): then the parsed
// flag, NEREUSCTL_OUTPUT, or the raw arguments decide.
func (g *globals) wantsDocument(root *cobra.Command, args []string) string {
	doc := func(f string) string {
		if f == "json" || f == "yaml" {
			return f
		}
		return ""
	}
	if g.resolved {
		return doc(g.cfg.Output)
	}
	if fl := root.PersistentFlags().Lookup("output"); fl != nil && fl.Changed {
		return doc(fl.Value.String())
	}
	for i, a := range args {
		switch {
		case a == "--":
			return ""
		case strings.HasPrefix(a, "--output="):
			return doc(strings.TrimPrefix(a, "--output="))
		case strings.HasPrefix(a, "-o="):
			return doc(strings.TrimPrefix(a, "-o="))
		case strings.HasPrefix(a, "-o") && len(a) > 2:
			return doc(strings.TrimPrefix(a, "-o"))
		case (a == "-o" || a == "--output") && i+1 < len(args):
			if f := doc(args[i+1]); f != "" {
				return f
			}
		}
	}
	return doc(os.Getenv("NEREUSCTL_OUTPUT"))
}

// errorHint is the operator hint of err: the one attached to it, else one
// for a class of store failure.
func errorHint(err error) string {
	if h := exitcode.HintOf(err); h != "" {
		return h
	}
	switch {
	case errors.Is(err, store.ErrCredentials):
		return "check the AWS credentials: AWS_PROFILE, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or the shared config and credentials files (the AWS default credential chain)"
	case errors.Is(err, store.ErrNoSuchBucket):
		return "check the bucket in --store s3://BUCKET/PREFIX, and --s3-endpoint and --s3-region"
	case store.IsRequestTimeout(err):
		return "the store did not answer a request within --request-timeout, nor its retries: check the endpoint (--store, --s3-endpoint) and the network, or raise --request-timeout for very large objects on a slow link"
	case store.IsAccessDenied(err):
		return "the store refused access: check its permissions (file:// folder and file modes, the S3 bucket policy or IAM role) and that --store names the right place"
	}
	return ""
}

// trackedWriter counts what a command wrote to stdout, so that a failed
// run under -o json prints an error document only when the command wrote
// none of its own.
type trackedWriter struct {
	w io.Writer
	n int64
	// yaml is set under -o yaml (writeJSON renders YAML into it).
	yaml bool
}

func (t *trackedWriter) yamlOutput() bool { return t.yaml }

func (t *trackedWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.n += int64(n)
	return n, err
}

func newRootCmd(g *globals) *cobra.Command {
	v := viper.New()
	g.v = v
	root := &cobra.Command{
		Use:   "nereusctl",
		Short: "Operate Nereus: Kafka partition streams on object storage",
		Long: `nereusctl inspects and repairs the Nereus storage layer under Kafka: NKC1
recovery checkpoints, restart replay, DeleteRecords trims and retention,
offline key compaction into NTC2 views, and mandatory compacted coverage.

It works offline against the same store the brokers use. Every mutation is a
guarded, verifiable, idempotent step; every long job can be killed and rerun.` + exitStatusHelp(),
		Example: `  nereusctl demo                                  # a demo cluster in ./nereus-data, and a tour
  nereusctl status
  nereusctl --store s3://bucket/nereus --s3-endpoint http://127.0.0.1:7070 --s3-path-style verify --all`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			// cobra checks required flags and flag groups after this hook
			// and returns its errors untyped; checked here first, they are
			// usage errors like every other flag error.
			if err := cmd.ValidateRequiredFlags(); err != nil {
				return exitcode.UsageErr(err)
			}
			if err := cmd.ValidateFlagGroups(); err != nil {
				return exitcode.UsageErr(err)
			}
			if err := g.resolve(cmd); err != nil {
				out := cmd.Flags().Lookup("output")
				if !isVersionRun(cmd) || settingFlagGiven(cmd) || (out.Changed && !slices.Contains([]string{"table", "wide", "json", "yaml"}, out.Value.String())) {
					return err
				}
				// version answers whatever the configuration holds: it is
				// what an operator runs first when something is wrong.
				g.cfg = Config{Output: "table"}
				if o := out.Value.String(); out.Changed && (o == "json" || o == "yaml") {
					g.cfg.Output = o
				}
				if t, ok := g.stdout.(*trackedWriter); ok {
					t.yaml = g.cfg.Output == "yaml"
				}
				fmt.Fprintf(g.stderr, "warning: the configuration is not used: %v\n", err)
				return nil
			}
			g.startDeadline(cmd)
			return g.startMetrics(cmd)
		},
		// --version prints what `version` prints; nereusctl alone, its help.
		Args: unknownSubcommand,
		RunE: func(cmd *cobra.Command, args []string) error {
			if v, _ := cmd.Flags().GetBool("version"); v {
				return runVersion(g)
			}
			return cmd.Help()
		},
	}
	root.Flags().Bool("version", false, "print the version, as 'nereusctl version' does (-o json too)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// "checkpoint veriy --all": cobra found the parent and parsed
		// the flags meant for the subcommand against it; the mistyped
		// subcommand is the error to report.
		if c.HasSubCommands() && len(c.Flags().Args()) > 0 {
			if uerr := unknownSubcommand(c, c.Flags().Args()); uerr != nil {
				return uerr
			}
		}
		return exitcode.UsageErr(plainFlagError(err))
	})
	f := root.PersistentFlags()
	f.String("store", DefaultStore, "store URL: file:///dir (embedded default), s3://bucket/prefix, mem://name (env NEREUSCTL_STORE)")
	f.String("config", "", "config file (YAML; default $XDG_CONFIG_HOME/nereusctl/config.yaml if present)")
	f.StringP("output", "o", "table", "output format: table, wide (a table with more columns: status, checkpoint list, quarantine list), json, or yaml (the json document as YAML)")
	f.String("log-level", "warn", "log level on stderr: debug (every store request), info (retries), warn, error")
	f.String("s3-endpoint", "", "S3 endpoint URL for S3-compatible stores (http:// only on loopback unless --s3-allow-http)")
	f.String("s3-region", "", "S3 region (default from the AWS chain, else us-east-1)")
	f.Bool("s3-path-style", false, "use path-style S3 addressing (most S3-compatible servers need it)")
	f.Bool("s3-allow-http", false, "allow a plain http:// S3 endpoint that is not on loopback")
	f.Float64("max-requests-per-second", 0, "limit store requests per second, retries included: on s3:// every HTTP request (0: unlimited; else at least 0.01)")
	f.Int("parallel", 0, fmt.Sprintf("partitions worked on at once by commands over many partitions (0: the store's default, %d on s3://, %d on file://; at most %d)", fleet.DefaultS3, fleet.DefaultFile, fleet.Max))
	f.Duration("lease-ttl", lease.DefaultTTL, fmt.Sprintf("how long each partition lease lasts between renewals (renewed every third of it; the work under it stops a quarter of it before its expiry unless a renewal was confirmed); %s to %s", minLeaseTTL, maxLeaseTTL))
	f.Duration("lease-wait", lease.DefaultWait, "how long a command waits for a partition another job holds (its partition lease) before it reports that partition blocked (exit 4); 0s: not at all")
	f.Bool("stats", false, "print the store request counts to stderr at the end: store calls by verb, retries, and on s3:// the HTTP requests by method and the bytes sent and received (-o json: one JSON line)")
	f.BoolP("quiet", "q", false, "print no progress, no tour, and no report of a trim that succeeded (a dry run still reports); errors still go to stderr")
	f.Duration("request-timeout", DefaultRequestTimeout, "cut a store request (HEAD, GET with its body, PUT, DELETE, LIST) that has not finished after this long; it is retried like a transient failure. 0s: no limit")
	f.Duration("timeout", 0, "end the whole command after this long (exit 1, \"timed out\"); the work done so far is kept and a rerun resumes it. 0s: no limit")
	f.Bool("no-progress", false, "draw no progress bar (one is drawn on stderr only when stderr is a terminal, never under -o json)")
	f.Duration("probe-max-age", storeprobe.DefaultMaxAge, "trust the store probe result kept in an s3:// store for this long; an older or missing one is probed again before the first write of a mutating command (0s: probe before every mutating run)")
	f.Bool("skip-store-probe", false, "let mutating commands write without checking the store probe result (for a store known good); they say so on stderr")
	f.String("push-gateway", "", "push the run's Prometheus metrics to this Pushgateway (http[s]://HOST[:PORT][/PATH]), job nereusctl, grouped by command and shard; scheduled commands only: status, verify, retention run, gc, compact, checkpoint create (not on a dry run)")
	f.StringArray("push-gateway-label", nil, "with --push-gateway: one more grouping label KEY=VALUE (repeatable; the environment variable takes a comma-separated list)")

	root.AddCommand(
		newVersionCmd(g),
		newStoreCmd(g),
	)
	addCommands(root, g)
	addMetricsFlags(root)
	root.SetHelpCommand(newHelpCmd())
	strictCommands(root)
	registerCompletions(root, g)
	return root
}

// settingFlagGiven reports a setting given as a flag on the command line
// (but -o and --config): version ignores a broken config file or
// environment, not a flag the operator typed.
func settingFlagGiven(cmd *cobra.Command) bool {
	given := false
	cmd.Root().PersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Changed && isSetting(fl.Name) && fl.Name != "output" {
			given = true
		}
	})
	return given
}

// isVersionRun reports `nereusctl version` and `nereusctl --version`.
func isVersionRun(cmd *cobra.Command) bool {
	if !cmd.HasParent() {
		v, _ := cmd.Flags().GetBool("version")
		return v
	}
	return cmd.Name() == "version" && !cmd.Parent().HasParent()
}

// resolve binds flags, env and the config file into g.cfg, once.
func (g *globals) resolve(cmd *cobra.Command) error {
	v := g.v
	v.SetEnvPrefix("NEREUSCTL")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	var bindErr error
	cmd.Root().PersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if !isSetting(fl.Name) {
			return
		}
		if err := v.BindPFlag(fl.Name, fl); err != nil && bindErr == nil {
			bindErr = err
		}
	})
	if bindErr != nil {
		return bindErr
	}
	if err := checkEnv(cmd.Root().PersistentFlags(), os.Environ()); err != nil {
		return exitcode.Wrap(exitcode.Usage, err, "the variables are NEREUSCTL_ and a global flag's long name, upper-cased, - as _ (docs/configuration.md)")
	}
	cfgFile, _ := cmd.Root().PersistentFlags().GetString("config")
	if cfgFile == "" {
		cfgFile = os.Getenv("NEREUSCTL_CONFIG")
	}
	explicit := cfgFile != ""
	if !explicit {
		dir := os.Getenv("XDG_CONFIG_HOME")
		if dir == "" {
			if home, err := os.UserHomeDir(); err == nil {
				dir = filepath.Join(home, ".config")
			}
		}
		if dir != "" {
			cfgFile = filepath.Join(dir, "nereusctl", "config.yaml")
		}
	}
	fileKeys := map[string]bool{}
	if cfgFile != "" {
		if _, err := os.Stat(cfgFile); err == nil || explicit {
			keys, data, err := checkConfigFile(cmd.Root().PersistentFlags(), cfgFile)
			if err != nil {
				if exitcode.HintOf(err) != "" {
					return err
				}
				return exitcode.Wrap(exitcode.Usage, err, "the config file's keys are the global flags' long names without the leading -- (docs/configuration.md)")
			}
			fileKeys = keys
			v.SetConfigType("yaml")
			if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
				return exitcode.UsageErr(fmt.Errorf("read config file %s: %w", cfgFile, err))
			}
		}
	}
	cfg, err := decodeConfig(v, cmd.Root().PersistentFlags(), cfgFile, fileKeys)
	if err != nil {
		return exitcode.UsageErr(err)
	}
	g.cfg = cfg
	switch g.cfg.Output {
	case "table", "wide", "json", "yaml":
	default:
		if name, _, _ := strings.Cut(g.cfg.Output, "="); slices.Contains([]string{"jsonpath", "go-template", "template", "custom-columns", "name"}, name) {
			// kubectl's; the JSON document and jq do that here
			return exitcode.Wrap(exitcode.Usage, fmt.Errorf("-o %q: nereusctl has no %s output: want table, wide, json or yaml", g.cfg.Output, name),
				"select fields from -o json with jq, e.g. nereusctl status -o json | jq -r '.partitions[] | .topic + \"-\" + (.partition|tostring)' (docs/json-output.md)")
		}
		return exitcode.UsageErr(fmt.Errorf("-o %q: want table, wide, json or yaml", g.cfg.Output))
	}
	if t, ok := g.stdout.(*trackedWriter); ok {
		t.yaml = g.cfg.Output == "yaml"
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.cfg.LogLevel)); err != nil {
		return exitcode.UsageErr(fmt.Errorf("--log-level %q: want debug, info, warn or error", g.cfg.LogLevel))
	}
	if err := checkRate(g.cfg.MaxRequestsPerSecond); err != nil {
		return exitcode.UsageErr(err)
	}
	if g.cfg.Parallel < 0 || g.cfg.Parallel > fleet.Max {
		return exitcode.UsageErr(fmt.Errorf("--parallel %d: want 0 (the store's default) to %d", g.cfg.Parallel, fleet.Max))
	}
	if g.cfg.LeaseTTL < minLeaseTTL || g.cfg.LeaseTTL > maxLeaseTTL {
		return exitcode.UsageErr(fmt.Errorf("--lease-ttl %s: want %s to %s", g.cfg.LeaseTTL, minLeaseTTL, maxLeaseTTL))
	}
	if g.cfg.LeaseWait < 0 {
		return exitcode.UsageErr(fmt.Errorf("--lease-wait %s: want 0s or more", g.cfg.LeaseWait))
	}
	if g.cfg.RequestTimeout < 0 {
		return exitcode.UsageErr(fmt.Errorf("--request-timeout %s: want 0s (no limit) or more", g.cfg.RequestTimeout))
	}
	if g.cfg.Timeout < 0 {
		return exitcode.UsageErr(fmt.Errorf("--timeout %s: want 0s (no limit) or more", g.cfg.Timeout))
	}
	if g.cfg.ProbeMaxAge < 0 {
		return exitcode.UsageErr(fmt.Errorf("--probe-max-age %s: want 0s (probe every mutating run) or more", g.cfg.ProbeMaxAge))
	}
	g.log = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
	g.resolved = true
	return nil
}

// MinRequestsPerSecond is the smallest --max-requests-per-second accepted
// (besides 0, unlimited): one request every 100 seconds. Anything slower
// is a typo that would make a job look hung.
const MinRequestsPerSecond = 0.01

// checkRate refuses a request rate that is not a finite number of at
// least MinRequestsPerSecond (0 means unlimited).
func checkRate(r float64) error {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0):
		return fmt.Errorf("--max-requests-per-second %v: want a finite number", r)
	case r < 0:
		return fmt.Errorf("--max-requests-per-second %v: want 0 (unlimited) or at least %v", r, MinRequestsPerSecond)
	case r > 0 && r < MinRequestsPerSecond:
		return fmt.Errorf("--max-requests-per-second %v: below the floor of %v (one request every 100 s); want 0 (unlimited) or at least %v", r, MinRequestsPerSecond, MinRequestsPerSecond)
	}
	return nil
}

// logger is the run's logger; before the configuration is resolved, one
// at the default level (warn).
func (g *globals) logger() *slog.Logger {
	if g.log != nil {
		return g.log
	}
	return slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// exactArgs is cobra.ExactArgs with a usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return exitcode.UsageErr(cobra.ExactArgs(n)(cmd, args))
	}
}

// rangeArgs is cobra.RangeArgs with a usage exit code.
func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return exitcode.UsageErr(cobra.RangeArgs(lo, hi)(cmd, args))
	}
}

// exitStatusHelp is appended to every command's long help.
func exitStatusHelp(extra ...string) string {
	var b strings.Builder
	b.WriteString("\n\nEXIT STATUS\n")
	for _, c := range exitcode.All {
		fmt.Fprintf(&b, "  %-3d %s\n", int(c.Code), c.Meaning)
	}
	for _, e := range extra {
		b.WriteString("  " + e + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// parallel is how many partitions a command over many partitions works on
// at once: --parallel, or the store's default.
func (g *globals) parallel() int {
	if g.cfg.Parallel > 0 {
		return g.cfg.Parallel
	}
	return fleet.DefaultFor(g.cfg.Store)
}

// startDeadline gives the command's context the --timeout deadline.
func (g *globals) startDeadline(cmd *cobra.Command) {
	if g.cfg.Timeout <= 0 || g.deadline != nil {
		return
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	g.deadline, g.cancelDeadline = context.WithTimeoutCause(ctx, g.cfg.Timeout, errTimedOut)
	cmd.SetContext(g.deadline)
}
