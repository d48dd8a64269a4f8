package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every integer flag of every command parses decimal only: the class fix,
// checked over the whole command tree so that a flag added later is
// covered too.
func TestEveryIntegerFlagIsDecimal(t *testing.T) {
	root := newRootCmd(&globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(fl *pflag.Flag) {
				typ := fl.Value.Type()
				if _, isInt := intBits[typ]; !isInt {
					return
				}
				n++
				name := c.CommandPath() + " --" + fl.Name
				if _, ok := fl.Value.(*strictInt); !ok {
					t.Errorf("%s (%s) is not strict", name, typ)
					return
				}
				def := fl.Value.String()
				for _, bad := range []string{"0x10", "0X10", "0o17", "0b11", "1_200", "1e3", " 1", "", "-", "+-1", "１"} {
					if err := fl.Value.Set(bad); err == nil {
						t.Errorf("%s accepted %q (now %s)", name, bad, fl.Value.String())
					}
				}
				if err := fl.Value.Set("0100"); err != nil || fl.Value.String() != "100" {
					t.Errorf("%s: 0100 gave %s, %v; want decimal 100", name, fl.Value.String(), err)
				}
				if err := fl.Value.Set("00000000000000001200"); err != nil || fl.Value.String() != "1200" {
					t.Errorf("%s: 00000000000000001200 gave %s, %v", name, fl.Value.String(), err)
				}
				if fl.Value.Type() != typ {
					t.Errorf("%s: type %s became %s", name, typ, fl.Value.Type())
				}
				fl.Value.Set(def)
			})
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if n < 8 {
		t.Fatalf("found %d integer flags; the walk missed commands", n)
	}
}

func TestParseDecimal(t *testing.T) {
	for _, c := range []struct {
		in       string
		bits     int
		unsigned bool
		want     string
		err      string
	}{
		{"0", 64, false, "0", ""},
		{"-1", 64, false, "-1", ""},
		{"+7", 64, false, "7", ""},
		{"-007", 64, false, "-7", ""},
		{"9223372036854775807", 64, false, "9223372036854775807", ""},
		{"9223372036854775808", 64, false, "", "out of range"},
		{"2147483648", 32, false, "", "out of range"},
		{"-1", 64, true, "", "non-negative"},
		{"+5", 8, true, "5", ""},
		{"256", 8, true, "", "out of range"},
		{"0x1f", 64, false, "", "decimal"},
		{"1_000", 64, false, "", "decimal"},
	} {
		got, err := parseDecimal(c.in, c.bits, c.unsigned)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseDecimal(%q, %d, %v) = %q, %v; want error %q", c.in, c.bits, c.unsigned, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseDecimal(%q, %d, %v) = %q, %v; want %q", c.in, c.bits, c.unsigned, got, err, c.want)
		}
	}
}

// Every parent command refuses an unknown subcommand (usage, with cobra's
// suggestion) and stays help when called alone.
func TestEveryParentRefusesUnknownSubcommands(t *testing.T) {
	root := newRootCmd(&globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	var parents []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() {
			parents = append(parents, c)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if len(parents) < 5 {
		t.Fatalf("found %d parent commands", len(parents))
	}
	for _, p := range parents {
		if p.Args == nil {
			t.Errorf("%s has no argument check", p.CommandPath())
			continue
		}
		err := p.Args(p, []string{"zzzunknown"})
		if err == nil || !strings.Contains(err.Error(), `unknown command "zzzunknown" for "`+p.CommandPath()+`"`) {
			t.Errorf("%s: %v", p.CommandPath(), err)
		}
		if code := codeOf(t.Context(), err); code != 2 {
			t.Errorf("%s: exit %d, want 2", p.CommandPath(), code)
		}
	}
}

// Every argument check of every command reports a usage error (exit 2):
// the code comes from the error's type, so an unwrapped cobra error would
// be exit 1.
func TestEveryArgumentErrorIsUsage(t *testing.T) {
	root := newRootCmd(&globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Args != nil {
			for _, args := range [][]string{nil, {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y", "z"}} {
				if err := c.Args(c, args); err != nil {
					checked++
					if code := codeOf(t.Context(), err); code != 2 {
						t.Errorf("%s with %d args: %v: exit %d, want 2", c.CommandPath(), len(args), err, code)
					}
				}
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if checked < 10 {
		t.Fatalf("only %d argument errors checked", checked)
	}
}

// A required flag or flag group (cobra checks them after the root's
// pre-run hook, untyped) is a usage error too.
func TestRequiredFlagIsUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	g := &globals{stderr: &stderr}
	root := newRootCmd(g)
	c := &cobra.Command{Use: "probe", RunE: func(*cobra.Command, []string) error { return nil }}
	c.Flags().String("needed", "", "")
	c.MarkFlagRequired("needed")
	root.AddCommand(c)
	root.SetArgs([]string{"probe"})
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	err := root.ExecuteContext(t.Context())
	if code := codeOf(t.Context(), err); code != 2 {
		t.Fatalf("%v: exit %d, want 2", err, code)
	}
}
