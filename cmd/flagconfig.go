package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/localfile"
)

// The configuration is strict (docs/configuration.md, "Strict input"): a
// config file may hold only the global settings, each with a value of its
// type, and an environment variable must parse as its setting's type. A
// mistyped key ("stor: s3://…") would otherwise be ignored silently and the
// run would use the default store.

// isSetting reports a global flag that is also a configuration key.
func isSetting(name string) bool { return name != "config" && name != "help" }

// settingNames lists the configuration keys, sorted.
func settingNames(fs *pflag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(fl *pflag.Flag) {
		if isSetting(fl.Name) {
			names = append(names, fl.Name)
		}
	})
	sort.Strings(names)
	return names
}

// maxConfigBytes caps the config file.
const maxConfigBytes = 1 << 20

// checkConfigFile reads the config file on its own (never blocking on a
// FIFO: localfile.ReadInput) and refuses an unknown key or a value of the
// wrong type, naming the file and the key. It returns the keys the file
// sets and the bytes read, which the configuration is then taken from (the
// file is read once).
func checkConfigFile(fs *pflag.FlagSet, path string) (map[string]bool, []byte, error) {
	data, err := localfile.ReadInput(path, maxConfigBytes)
	if err != nil {
		return nil, nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("read config file: %w", err), "check --config and NEREUSCTL_CONFIG")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("config file %s: not valid YAML: %w", path, err)
	}
	if len(doc.Content) > 0 && doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("config file %s: want a mapping of settings (key: value lines), got %s", path, nodeKind(doc.Content[0]))
	}
	if len(doc.Content) > 0 {
		if err := checkConfigNodes(fs, doc.Content[0]); err != nil {
			return nil, nil, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	fv := viper.New()
	fv.SetConfigType("yaml")
	if err := fv.ReadConfig(bytes.NewReader(data)); err != nil {
		return nil, nil, fmt.Errorf("config file %s: %w", path, err)
	}
	keys := map[string]bool{}
	names := settingNames(fs)
	fileKeys := fv.AllKeys()
	sort.Strings(fileKeys)
	for _, k := range fileKeys {
		fl := fs.Lookup(k)
		if fl == nil || !isSetting(k) {
			msg := fmt.Sprintf("config file %s: unknown key %q", path, k)
			if s := closest(k, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return nil, nil, fmt.Errorf("%s; known keys: %s", msg, strings.Join(names, ", "))
		}
		if err := checkFileValue(fl.Value.Type(), fv.Get(k)); err != nil {
			return nil, nil, fmt.Errorf("config file %s: key %q: %w", path, k, err)
		}
		keys[k] = true
	}
	return keys, data, nil
}

// checkConfigNodes checks what only the file's text shows, before YAML's
// typing hides it: a key given twice, and a number that is not written in
// decimal. YAML reads 0x10, 0o17, 1_6 and 1e6 as numbers, which flags and
// environment variables refuse (docs/configuration.md, "Strict input").
func checkConfigNodes(fs *pflag.FlagSet, m *yaml.Node) error {
	line := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if first, ok := line[k.Value]; ok {
			return fmt.Errorf("key %q is given twice (lines %d and %d); give each setting once", k.Value, first, k.Line)
		}
		line[k.Value] = k.Line
		fl := fs.Lookup(k.Value)
		if fl == nil || v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
			continue
		}
		switch fl.Value.Type() {
		case "int":
			if _, err := parseDecimal(v.Value, 64, false); err != nil {
				return fmt.Errorf("key %q (line %d): want a whole number in decimal, got %s", k.Value, v.Line, v.Value)
			}
		case "float64":
			if _, err := parseDecimalFloat(v.Value); err != nil {
				return fmt.Errorf("key %q (line %d): want a finite number in decimal, got %s", k.Value, v.Line, v.Value)
			}
		}
	}
	return nil
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a single value"
	}
	return "something else"
}

// checkFileValue checks a YAML value against a setting's type.
func checkFileValue(typ string, val any) error {
	switch typ {
	case "bool":
		if _, ok := val.(bool); !ok {
			return fmt.Errorf("want true or false, got %s", describeValue(val))
		}
	case "float64":
		switch val.(type) {
		case int, int64, float64, uint64:
		default:
			return fmt.Errorf("want a number, got %s", describeValue(val))
		}
	case "int":
		switch t := val.(type) {
		case int, int64, uint64:
		case float64:
			if t != float64(int64(t)) {
				return fmt.Errorf("want a whole number, got %s", describeValue(val))
			}
		default:
			return fmt.Errorf("want a whole number, got %s", describeValue(val))
		}
	case "stringArray":
		list, ok := val.([]any)
		if !ok {
			return fmt.Errorf("want a list of strings, got %s", describeValue(val))
		}
		for i, item := range list {
			if _, ok := item.(string); !ok {
				return fmt.Errorf("item %d: want a string, got %s", i+1, describeValue(item))
			}
		}
	default:
		if _, ok := val.(string); !ok {
			return fmt.Errorf("want a string, got %s", describeValue(val))
		}
	}
	return nil
}

// describeValue names a YAML value's kind for messages, in plain words.
func describeValue(val any) string {
	switch t := val.(type) {
	case nil:
		return "nothing"
	case string:
		return fmt.Sprintf("the text %q", t)
	case bool:
		return fmt.Sprintf("%v", t)
	case int, int64, uint64, float64:
		return fmt.Sprintf("the number %v", t)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return "a value of another kind"
}

// decodeConfig reads every setting from v (flag > env > file > default)
// into a Config, converting each by its flag's type; a value that does not
// convert is an error naming where it came from.
func decodeConfig(v *viper.Viper, fs *pflag.FlagSet, cfgFile string, fileKeys map[string]bool) (Config, error) {
	var c Config
	var errs []error
	str := func(key string) string {
		val := v.Get(key)
		if s, ok := val.(string); ok {
			return s
		}
		errs = append(errs, fmt.Errorf("%s: want a string", settingSource(fs, key, cfgFile, fileKeys)))
		return ""
	}
	boolean := func(key string) bool {
		switch t := v.Get(key).(type) {
		case bool:
			return t
		case string:
			b, err := strconv.ParseBool(t)
			if err == nil {
				return b
			}
			errs = append(errs, fmt.Errorf("%s: %q: want true or false", settingSource(fs, key, cfgFile, fileKeys), t))
		default:
			errs = append(errs, fmt.Errorf("%s: want true or false", settingSource(fs, key, cfgFile, fileKeys)))
		}
		return false
	}
	number := func(key string) float64 {
		switch t := v.Get(key).(type) {
		case float64:
			return t
		case int:
			return float64(t)
		case int64:
			return float64(t)
		case uint64:
			return float64(t)
		case string:
			f, err := parseDecimalFloat(t)
			if err == nil {
				return f
			}
			errs = append(errs, fmt.Errorf("%s: %q: %w", settingSource(fs, key, cfgFile, fileKeys), t, err))
		default:
			errs = append(errs, fmt.Errorf("%s: want a number", settingSource(fs, key, cfgFile, fileKeys)))
		}
		return 0
	}
	integer := func(key string) int {
		switch t := v.Get(key).(type) {
		case int:
			return t
		case int64:
			return int(t)
		case uint64:
			return int(t)
		case float64:
			return int(t)
		case string:
			d, err := parseDecimal(t, 32, false)
			if err == nil {
				n, _ := strconv.Atoi(d)
				return n
			}
			errs = append(errs, fmt.Errorf("%s: %q: %w", settingSource(fs, key, cfgFile, fileKeys), t, err))
		default:
			errs = append(errs, fmt.Errorf("%s: want a whole number", settingSource(fs, key, cfgFile, fileKeys)))
		}
		return 0
	}
	// strs reads a list setting: the flag given again and again, a YAML
	// list in the file, a comma-separated list in the environment.
	strs := func(key string) []string {
		switch t := v.Get(key).(type) {
		case nil:
			return nil
		case []string:
			return t
		case []any:
			out := make([]string, 0, len(t))
			for _, item := range t {
				s, ok := item.(string)
				if !ok {
					errs = append(errs, fmt.Errorf("%s: want a list of strings", settingSource(fs, key, cfgFile, fileKeys)))
					return nil
				}
				out = append(out, s)
			}
			return out
		case string:
			if t == "" {
				return nil
			}
			return strings.Split(t, ",")
		default:
			errs = append(errs, fmt.Errorf("%s: want a list of strings", settingSource(fs, key, cfgFile, fileKeys)))
		}
		return nil
	}
	duration := func(key string) time.Duration {
		switch t := v.Get(key).(type) {
		case time.Duration:
			return t
		case string:
			d, err := time.ParseDuration(t)
			if err == nil {
				return d
			}
			errs = append(errs, fmt.Errorf("%s: %q: %s", settingSource(fs, key, cfgFile, fileKeys), t, durationWant(t)))
		default:
			errs = append(errs, fmt.Errorf("%s: want a duration such as 30s or 2m", settingSource(fs, key, cfgFile, fileKeys)))
		}
		return 0
	}
	c.Store = str("store")
	c.Output = str("output")
	c.LogLevel = str("log-level")
	c.S3Endpoint = str("s3-endpoint")
	c.S3Region = str("s3-region")
	c.S3PathStyle = boolean("s3-path-style")
	c.S3AllowHTTP = boolean("s3-allow-http")
	c.MaxRequestsPerSecond = number("max-requests-per-second")
	c.Parallel = integer("parallel")
	c.LeaseWait = duration("lease-wait")
	c.LeaseTTL = duration("lease-ttl")
	c.Stats = boolean("stats")
	c.Quiet = boolean("quiet")
	c.NoProgress = boolean("no-progress")
	c.RequestTimeout = duration("request-timeout")
	c.Timeout = duration("timeout")
	c.ProbeMaxAge = duration("probe-max-age")
	c.SkipStoreProbe = boolean("skip-store-probe")
	c.PushGateway = str("push-gateway")
	c.PushGatewayLabels = strs("push-gateway-label")
	return c, errors.Join(errs...)
}

// otherEnv are the NEREUSCTL_ variables that are not settings but are
// read elsewhere (besides NEREUSCTL_TEST_*, the test suite's).
var otherEnv = map[string]bool{"NEREUSCTL_CONFIG": true, "NEREUSCTL_CPUPROFILE": true, "NEREUSCTL_S3_SDK_READS": true}

// checkEnv refuses a NEREUSCTL_ variable that names no setting: a typo
// (NEREUSCTL_STOR) would otherwise leave the default store in use. An
// empty variable counts as unset, as it does for the settings.
func checkEnv(fs *pflag.FlagSet, environ []string) error {
	names := settingNames(fs)
	known := map[string]bool{}
	var envNames []string
	for _, n := range names {
		e := settingEnv(n)
		known[e] = true
		envNames = append(envNames, e)
	}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" || !strings.HasPrefix(k, "NEREUSCTL_") || known[k] || otherEnv[k] || strings.HasPrefix(k, "NEREUSCTL_TEST_") {
			continue
		}
		msg := fmt.Sprintf("environment variable %s is not a nereusctl setting", k)
		if s := closest(k, envNames); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return errors.New(msg)
	}
	return nil
}

// settingEnv is a setting's environment variable.
func settingEnv(key string) string {
	return "NEREUSCTL_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// settingSource names where a setting's value came from, for messages.
func settingSource(fs *pflag.FlagSet, key, cfgFile string, fileKeys map[string]bool) string {
	if fl := fs.Lookup(key); fl != nil && fl.Changed {
		return "--" + key
	}
	env := settingEnv(key)
	if _, ok := os.LookupEnv(env); ok {
		return "environment variable " + env
	}
	if fileKeys[key] {
		return fmt.Sprintf("config file %s: key %q", cfgFile, key)
	}
	return "--" + key
}

// parseDecimalFloat parses a decimal number (digits, an optional fraction
// and exponent); it refuses what strconv.ParseFloat also takes but an
// operator does not mean: hex floats, underscores, NaN and infinities.
func parseDecimalFloat(s string) (float64, error) {
	body := s
	if len(body) > 0 && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	if body == "" || strings.TrimLeft(body, "0123456789.eE+-") != "" || strings.ContainsAny(body[:1], "eE+-") {
		return 0, errors.New("want a decimal number")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, errors.New("want a decimal number")
	}
	return f, nil
}

// closest is the name in names nearest to s (edit distance at most 2), or
// "".
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
