// Package cmd is nereusctl's command line: one file per command. A command
// parses flags, calls one function in internal/, and renders the result. No
// business logic lives here.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Version is set by goreleaser: -X github.com/nereusctl/nereusctl/cmd.Version=...
var (
	Version = "dev"
	Commit  = "none"
	Date    = "unknown"
)

// Config is the resolved global configuration (flag > env > file > default).
type Config struct {
	Store                string  `mapstructure:"store"`
	Output               string  `mapstructure:"output"`
	LogLevel             string  `mapstructure:"log-level"`
	S3Endpoint           string  `mapstructure:"s3-endpoint"`
	S3Region             string  `mapstructure:"s3-region"`
	S3PathStyle          bool    `mapstructure:"s3-path-style"`
	S3AllowHTTP          bool    `mapstructure:"s3-allow-http"`
	MaxRequestsPerSecond float64 `mapstructure:"max-requests-per-second"`
	Stats                bool    `mapstructure:"stats"`
	Quiet                bool    `mapstructure:"quiet"`
}

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
	// isTTY reports whether stdout is a terminal (progress, colours, maps).
	isTTY bool
	// createStore lets the store be created (a missing file:// root).
	createStore bool
}

func (g *globals) json() bool { return g.cfg.Output == "json" }

// store opens the configured store once, wrapped in the decorators.
func (g *globals) store(ctx context.Context) (store.Store, error) {
	if g.st != nil {
		return g.st, nil
	}
	st, err := openStore(ctx, g.cfg, g.createStore)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err, "check --store (file:///dir, s3://bucket/prefix) and the S3 flags")
	}
	g.counter = store.NewCounter(st)
	g.st = g.counter
	return g.st, nil
}

// Execute runs nereusctl with args and returns the process exit status.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr, isTTY: isTerminal(stdout)}
	root := newRootCmd(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if g.cfg.Stats && g.counter != nil {
		fmt.Fprintf(stderr, "requests: %s\n", g.counter.Counts())
	}
	if err == nil {
		return int(exitcode.OK)
	}
	if ctx.Err() != nil && !errors.Is(err, context.Canceled) {
		err = fmt.Errorf("%w (%w)", err, context.Canceled)
	}
	code := exitcode.Of(err)
	if code == exitcode.Error && isCobraUsageError(err) {
		code = exitcode.Usage
	}
	fmt.Fprintf(stderr, "nereusctl: %v\n", err)
	if h := exitcode.HintOf(err); h != "" {
		fmt.Fprintf(stderr, "hint: %s\n", h)
	} else if code == exitcode.Usage {
		fmt.Fprintf(stderr, "hint: run '%s --help' for usage\n", root.CommandPath())
	}
	return int(code)
}

// isCobraUsageError recognises cobra's own argument and command errors.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
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
			return g.resolve(cmd)
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitcode.UsageErr(err)
	})
	f := root.PersistentFlags()
	f.String("store", DefaultStore, "store URL: file:///dir (embedded default), s3://bucket/prefix, mem://name (env NEREUSCTL_STORE)")
	f.String("config", "", "config file (YAML; default $XDG_CONFIG_HOME/nereusctl/config.yaml if present)")
	f.StringP("output", "o", "table", "output format: table or json")
	f.String("log-level", "warn", "log level: debug, info, warn, error")
	f.String("s3-endpoint", "", "S3 endpoint URL for S3-compatible stores (http:// only on loopback unless --s3-allow-http)")
	f.String("s3-region", "", "S3 region (default from the AWS chain, else us-east-1)")
	f.Bool("s3-path-style", false, "use path-style S3 addressing (most S3-compatible servers need it)")
	f.Bool("s3-allow-http", false, "allow a plain http:// S3 endpoint that is not on loopback")
	f.Float64("max-requests-per-second", 0, "limit store requests per second (0: unlimited)")
	f.Bool("stats", false, "print the store request counts (GET/PUT/LIST/HEAD/DELETE) to stderr at the end")
	f.BoolP("quiet", "q", false, "print no progress and no tour; errors still go to stderr")

	root.AddCommand(
		newVersionCmd(g),
		newStoreCmd(g),
	)
	addCommands(root, g)
	return root
}

// resolve binds flags, env and the config file into g.cfg, once.
func (g *globals) resolve(cmd *cobra.Command) error {
	v := g.v
	v.SetEnvPrefix("NEREUSCTL")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	var bindErr error
	cmd.Root().PersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Name == "config" || fl.Name == "help" {
			return
		}
		if err := v.BindPFlag(fl.Name, fl); err != nil && bindErr == nil {
			bindErr = err
		}
	})
	if bindErr != nil {
		return bindErr
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
	if cfgFile != "" {
		if _, err := os.Stat(cfgFile); err == nil || explicit {
			v.SetConfigFile(cfgFile)
			v.SetConfigType("yaml")
			if err := v.ReadInConfig(); err != nil {
				return exitcode.UsageErr(fmt.Errorf("read config %s: %w", cfgFile, err))
			}
		}
	}
	if err := v.Unmarshal(&g.cfg); err != nil {
		return exitcode.UsageErr(fmt.Errorf("config: %w", err))
	}
	switch g.cfg.Output {
	case "table", "json":
	default:
		return exitcode.UsageErr(fmt.Errorf("-o %q: want table or json", g.cfg.Output))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.cfg.LogLevel)); err != nil {
		return exitcode.UsageErr(fmt.Errorf("--log-level %q: want debug, info, warn or error", g.cfg.LogLevel))
	}
	if g.cfg.MaxRequestsPerSecond < 0 {
		return exitcode.UsageErr(fmt.Errorf("--max-requests-per-second %v: want >= 0", g.cfg.MaxRequestsPerSecond))
	}
	g.log = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
	return nil
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
