package cmd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/bundle"
	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/localfile"
	"github.com/nereusctl/nereusctl/internal/store"
)

// bundleOutput is support-bundle's --output/-o: the global flag of the
// same name is the output format, so one flag takes both: a format name
// (table, wide, json, yaml) sets the format, anything else is the file.
type bundleOutput struct {
	file, format string
}

func (o *bundleOutput) String() string { return o.file }
func (o *bundleOutput) Type() string   { return "FILE.tar.gz" }
func (o *bundleOutput) Set(v string) error {
	switch v {
	case "table", "wide", "json", "yaml":
		o.format = v
	default:
		if o.file != "" && o.file != v {
			return fmt.Errorf("two bundle files (%s, %s): give one", o.file, v)
		}
		o.file = v
	}
	return nil
}

func newSupportBundleCmd(g *globals) *cobra.Command {
	out := &bundleOutput{}
	c := &cobra.Command{
		Use:   "support-bundle --output FILE.tar.gz [TOPIC-PARTITION...]",
		Short: "Write what an engineer needs to diagnose the store, without its data",
		Long: `Collect, into one tar.gz, what an engineer needs to diagnose this store
without seeing its data, for the partitions named (every binding when none
is): their bindings, stream heads and generation manifests, each stream's
listing (keys, sizes, ETags), each checkpoint's header and section table
(one ranged read of its footer), compaction tasks and deletion records;
the quarantine records, leases, retention progress and the store probe
result; the JSON of 'status', 'verify --read-only' and 'checkpoint list'
over the same partitions; the nereusctl version and build; the effective
configuration and the NEREUSCTL_ and AWS_ environment, credentials
redacted (URL passwords, secret query parameters, any setting whose name
names a secret). A MANIFEST lists every file with its size, SHA-256 and
what it is.

Never record data: no byte of a data object (.kb), a compacted view
(.ntc2) or a checkpoint's sections (.nkc1), no record key or value; only
JSON documents are copied from the store, each checked to be one. The
store is only read. The archive is written to a temporary file beside
FILE and renamed into place (mode 0600); an existing FILE is refused.
--output takes both the file and, as on every command, the output format
(-o json): a format name is the format, anything else the file.` + exitStatusHelp("2 --output is missing, FILE exists, or a partition is malformed"),
		Example: `  nereusctl support-bundle --output /tmp/nereus-support.tar.gz
  nereusctl support-bundle --output /tmp/orders.tar.gz orders-0 orders-1 -o json
  tar -tzf /tmp/nereus-support.tar.gz`,
		RunE: func(cmd *cobra.Command, args []string) error {
			g.foreignS3Settings = true // it reports a wrong configuration
			if out.format != "" {
				g.cfg.Output = out.format
			}
			output := out.file
			if output == "" {
				return exitcode.UsageErr(fmt.Errorf("--output FILE.tar.gz is required"))
			}
			if _, err := os.Lstat(output); err == nil {
				return exitcode.UsageErr(fmt.Errorf("--output %s: the file exists; give a new name (a bundle never overwrites)", output))
			} else if !errors.Is(err, fs.ErrNotExist) {
				return exitcode.UsageErr(fmt.Errorf("--output %s: %w", output, err))
			}
			var tps []layout.TopicPartition
			for _, a := range args {
				tp, err := layout.ParseTopicPartition(a)
				if err != nil {
					return exitcode.UsageErr(fmt.Errorf("partition %q: %w", a, err))
				}
				tps = append(tps, tp)
			}
			return runSupportBundle(cmd, g, output, args, tps)
		},
	}
	c.Flags().VarP(out, "output", "o", "the tar.gz to write (must not exist); -o table|wide|json|yaml is the output format, as on every command")
	return c
}

// supportBundleJSON is support-bundle -o json
// (docs/json-output.md#support-bundle).
type supportBundleJSON struct {
	SchemaVersion int                 `json:"schema_version"`
	Output        string              `json:"output"`
	Bytes         int                 `json:"bytes"`
	Files         []supportBundleFile `json:"files"`
	Commands      []supportBundleRun  `json:"commands"`
	Notes         []string            `json:"notes"`
}

type supportBundleFile struct {
	Name   string `json:"name"`
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
	What   string `json:"what"`
}

type supportBundleRun struct {
	Command string `json:"command"`
	Exit    int    `json:"exit"`
	File    string `json:"file"`
}

// setting is one configuration value as a bundle records it.
type setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type bundleConfig struct {
	Settings    []setting `json:"settings"`
	Environment []setting `json:"environment"`
}

func runSupportBundle(cmd *cobra.Command, g *globals, output string, args []string, tps []layout.TopicPartition) error {
	ctx := cmd.Context()
	st, err := g.store(ctx)
	if err != nil {
		return err
	}
	files, notes, err := bundle.Collect(ctx, st, tps)
	if err != nil {
		return err
	}
	cfg, err := jsonIndent(redactedConfig(g.cfg))
	if err != nil {
		return err
	}
	files = append(files, bundle.File{Name: "config.json", What: "the effective configuration and the NEREUSCTL_ and AWS_ environment, credentials redacted", Data: cfg})
	// The commands' own JSON, run in this process over the same store.
	sel := args
	all, status := []string{"--all"}, []string{"status", "--allow-empty"}
	if len(sel) > 0 {
		// Named partitions: status takes them as they are (--allow-empty
		// is only for the whole store).
		all, status = sel, append([]string{"status"}, sel...)
	}
	var runs []supportBundleRun
	for _, c := range []struct {
		file string
		args []string
	}{
		{"version.json", []string{"version"}},
		{"commands/status.json", status},
		{"commands/verify.json", append([]string{"verify", "--read-only"}, all...)},
		{"commands/checkpoint-list.json", append([]string{"checkpoint", "list"}, all...)},
	} {
		var out, errb bytes.Buffer
		// A run of its own (its own store handle, closed when it ends),
		// on the store and S3 settings this run resolved.
		child := &globals{stderr: &errb, noMetrics: true, foreignS3Settings: true}
		code := execute(ctx, child, append(childFlags(g.cfg), c.args...), &out)
		what := fmt.Sprintf("nereusctl %s -o json (exit %d)", strings.Join(c.args, " "), code)
		files = append(files, bundle.File{Name: c.file, What: what, Data: out.Bytes()})
		if errb.Len() > 0 {
			files = append(files, bundle.File{Name: strings.TrimSuffix(c.file, ".json") + ".stderr.txt", What: "its stderr", Data: []byte(store.RedactText(errb.String()))})
		}
		runs = append(runs, supportBundleRun{Command: "nereusctl " + strings.Join(c.args, " "), Exit: code, File: c.file})
	}
	if len(notes) > 0 {
		files = append(files, bundle.File{Name: "notes.txt", What: "what was left out, and why", Data: []byte(strings.Join(notes, "\n") + "\n")})
	}
	var buf bytes.Buffer
	if err := bundle.Write(&buf, files, time.Now()); err != nil {
		return err
	}
	if err := localfile.WriteAtomic(output, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("support-bundle: write %s: %w", output, err)
	}
	doc := supportBundleJSON{SchemaVersion: SchemaVersion, Output: output, Bytes: buf.Len(), Files: []supportBundleFile{}, Commands: runs, Notes: notes}
	if doc.Notes == nil {
		doc.Notes = []string{}
	}
	for _, f := range files {
		sum := sha256.Sum256(f.Data)
		doc.Files = append(doc.Files, supportBundleFile{Name: f.Name, Bytes: len(f.Data), SHA256: hex.EncodeToString(sum[:]), What: f.What})
	}
	if g.json() {
		return writeJSON(g.stdout, doc)
	}
	fmt.Fprintf(g.stdout, "wrote %s: %d files, %d bytes (MANIFEST lists them; no record data)\n", output, len(files)+1, buf.Len())
	for _, r := range runs {
		fmt.Fprintf(g.stdout, "  %s: exit %d\n", r.Command, r.Exit)
	}
	for _, n := range notes {
		fmt.Fprintf(g.stdout, "  note: %s\n", n)
	}
	return nil
}

// childFlags are the global flags that give a command run inside this one
// the store this run resolved.
func childFlags(c Config) []string {
	f := []string{"--store", c.Store, "-o", "json", "--no-progress"}
	if c.S3Endpoint != "" {
		f = append(f, "--s3-endpoint", c.S3Endpoint)
	}
	if c.S3Region != "" {
		f = append(f, "--s3-region", c.S3Region)
	}
	if c.S3PathStyle {
		f = append(f, "--s3-path-style")
	}
	if c.S3AllowHTTP {
		f = append(f, "--s3-allow-http")
	}
	if c.RequestTimeout > 0 {
		f = append(f, "--request-timeout", c.RequestTimeout.String())
	}
	return f
}

// redactedConfig is the resolved configuration by setting name, and the
// NEREUSCTL_ and AWS_ environment, with credentials redacted.
func redactedConfig(c Config) bundleConfig {
	out := bundleConfig{Settings: []setting{}, Environment: []setting{}}
	v := reflect.ValueOf(c)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name := t.Field(i).Tag.Get("mapstructure")
		val := fmt.Sprint(v.Field(i).Interface())
		if s, ok := v.Field(i).Interface().([]string); ok {
			r := make([]string, len(s))
			for j := range s {
				r[j] = store.RedactURL(s[j])
			}
			val = strings.Join(r, ",")
		}
		out.Settings = append(out.Settings, setting{Name: name, Value: redactValue(name, val)})
	}
	for _, kv := range os.Environ() {
		k, val, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "NEREUSCTL_") || strings.HasPrefix(k, "AWS_") {
			out.Environment = append(out.Environment, setting{Name: k, Value: redactValue(k, val)})
		}
	}
	sort.Slice(out.Environment, func(i, j int) bool { return out.Environment[i].Name < out.Environment[j].Name })
	return out
}

func redactValue(name, val string) string {
	if store.SecretName(name) && val != "" {
		return "REDACTED"
	}
	return store.RedactText(val)
}

func jsonIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
