package cmd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nereusctl/nereusctl/internal/exitcode"
)

// Operator input is strict (docs/configuration.md, "Strict input"): an
// integer is decimal, whatever the command. pflag's integer flags parse
// with base 0, so "0100" would be 64 and "0x10" 16, and "1_200" would be
// accepted; strictCommands puts every integer flag of every command behind
// a decimal-only parser, and makes every parent command refuse an unknown
// subcommand instead of printing its help with status 0.

// strictInt is a pflag.Value that accepts only decimal integers (an
// optional sign, then digits; leading zeros are decimal) and hands the
// wrapped flag its canonical form, so the wrapped Value and every
// Get*/typed accessor see the number the operator meant.
type strictInt struct {
	inner    pflag.Value
	bits     int
	unsigned bool
}

// intBits maps pflag's integer type names to their width and sign.
var intBits = map[string]struct {
	bits     int
	unsigned bool
}{
	"int": {strconv.IntSize, false}, "int8": {8, false}, "int16": {16, false}, "int32": {32, false}, "int64": {64, false},
	"uint": {strconv.IntSize, true}, "uint8": {8, true}, "uint16": {16, true}, "uint32": {32, true}, "uint64": {64, true},
}

func (v *strictInt) String() string { return v.inner.String() }
func (v *strictInt) Type() string   { return v.inner.Type() }

func (v *strictInt) Set(s string) error {
	canon, err := parseDecimal(s, v.bits, v.unsigned)
	if err != nil {
		return err
	}
	return v.inner.Set(canon)
}

// plainFlagError rewrites pflag's refusal of a flag value whose cause is
// Go's parser ("strconv.ParseBool: parsing "maybe": invalid syntax", "time:
// unknown unit "d" in duration "1d"") into what the flag wants, in plain
// words; other errors are returned as they are.
func plainFlagError(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	fl := ive.GetFlag()
	var want string
	switch fl.Value.Type() {
	case "bool":
		want = "want true or false"
	case "duration":
		want = durationWant(ive.GetValue())
	default:
		var ne *strconv.NumError
		if !errors.As(err, &ne) {
			return err
		}
		want = "want a decimal number"
	}
	name := "--" + fl.Name
	if fl.Shorthand != "" && fl.ShorthandDeprecated == "" {
		name = "-" + fl.Shorthand + ", --" + fl.Name
	}
	return fmt.Errorf("invalid argument %q for %q flag: %s", ive.GetValue(), name, want)
}

// durationWant says what a duration is, for a value that is not one; a
// number of days gets its value in hours.
func durationWant(s string) string {
	const want = "want a duration such as 30s, 15m or 24h"
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := strconv.ParseUint(n, 10, 16); err == nil {
			return fmt.Sprintf("%s (days are written in hours: %dh)", want, d*24)
		}
		return want + " (days are written in hours: 1d is 24h)"
	}
	return want
}

// errNotDecimal is what a strict integer refuses; pflag names the flag
// and the value around it.
var errNotDecimal = errors.New("want a decimal integer (digits only; no 0x, 0o, 0b or _)")

// parseDecimal checks s as a decimal integer of the given width and
// returns its canonical form.
func parseDecimal(s string, bits int, unsigned bool) (string, error) {
	digits := s
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		if unsigned && s[0] == '-' {
			return "", errors.New("want a non-negative decimal integer")
		}
		digits = s[1:]
	}
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return "", errNotDecimal
	}
	if unsigned {
		n, err := strconv.ParseUint(digits, 10, bits)
		if err != nil {
			return "", fmt.Errorf("out of range for a %d-bit unsigned integer", bits)
		}
		return strconv.FormatUint(n, 10), nil
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return "", fmt.Errorf("out of range for a %d-bit integer", bits)
	}
	return strconv.FormatInt(n, 10), nil
}

// strictFloat is a pflag.Value that accepts only a finite decimal number
// (no hex floats, underscores, NaN or infinities).
type strictFloat struct{ inner pflag.Value }

func (v *strictFloat) String() string { return v.inner.String() }
func (v *strictFloat) Type() string   { return v.inner.Type() }

func (v *strictFloat) Set(s string) error {
	if _, err := parseDecimalFloat(s); err != nil {
		return err
	}
	return v.inner.Set(s)
}

// strictFlags wraps every integer flag of fs (once).
func strictFlags(fs *pflag.FlagSet) {
	fs.VisitAll(func(fl *pflag.Flag) {
		if _, done := fl.Value.(*strictInt); done {
			return
		}
		if _, done := fl.Value.(*strictFloat); done {
			return
		}
		if b, ok := intBits[fl.Value.Type()]; ok {
			fl.Value = &strictInt{inner: fl.Value, bits: b.bits, unsigned: b.unsigned}
		} else if t := fl.Value.Type(); t == "float64" || t == "float32" {
			fl.Value = &strictFloat{inner: fl.Value}
		}
	})
}

// strictCommands applies the strict rules to c and every command under it:
// integer flags are decimal only, and a parent command (one with
// subcommands and nothing to run itself) refuses an unknown subcommand
// with a usage error and cobra's suggestions.
func strictCommands(c *cobra.Command) {
	strictFlags(c.Flags())
	strictFlags(c.PersistentFlags())
	if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
		c.Args = unknownSubcommand
		c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	}
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	for _, sub := range c.Commands() {
		strictCommands(sub)
	}
}

// unknownSubcommand is a parent command's argument check: any argument is
// a subcommand cobra did not find.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return exitcode.Wrap(exitcode.Usage, errors.New(msg), fmt.Sprintf("run '%s --help' for its subcommands", cmd.CommandPath()))
}

// newHelpCmd is cobra's help command, except that an unknown topic is a
// usage error with suggestions ("help lst"), not help and status 0.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help provides help for any command in the application.\nSimply type nereusctl help [path to command] for full details.",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil || cmd == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil {
				return unknownSubcommand(c.Root(), args)
			}
			if len(rest) > 0 && cmd.HasSubCommands() {
				return unknownSubcommand(cmd, rest)
			}
			cmd.InitDefaultHelpFlag()
			return cmd.Help()
		},
	}
}
