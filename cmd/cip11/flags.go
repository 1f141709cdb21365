package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// command is one subcommand's flag set with its help text. Every numeric
// flag is range-checked as it is parsed (intFlag, durFlag, …), so a value
// outside its range is a usage error naming the flag and the range, and
// -h prints what the command does, its arguments and every flag.
type command struct {
	name string // "devnet", "vectors check"
	args string // the synopsis after the name
	doc  string // what the command does and its arguments
	fs   *flag.FlagSet
}

func newCommand(name, args, doc string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are printed by parse
	fs.Usage = func() {}
	return &command{name: name, args: args, doc: doc, fs: fs}
}

// help writes the command's full help: synopsis, description, flags.
func (c *command) help(w io.Writer) {
	fmt.Fprintf(w, "usage: cip11 %s %s\n\n%s\n", c.name, c.args, strings.TrimSpace(c.doc))
	n := 0
	c.fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nflags:\n")
		c.fs.SetOutput(w)
		c.fs.PrintDefaults()
		c.fs.SetOutput(io.Discard)
	}
	if ex := examples[c.name]; ex != "" {
		fmt.Fprintf(w, "\nExample:\n%s\n", strings.TrimRight(ex, "\n"))
	}
}

// examples is the Example section that ends each command's -h.
var examples = map[string]string{
	"devnet": `  cip11 devnet -runners 20 -duration 10s
  cip11 devnet -validators 4 -runners 20 -duration 20s -json`,
	"genesis": `  cip11 genesis -o devnet -runners 4
  cip11 genesis -validators 4 -o net -runners 8`,
	"validator": `  cip11 validator -genesis devnet/genesis.json -key devnet/validator.key -data devnet/data
  cip11 validator -home net/v0`,
	"runner":        `  cip11 runner -genesis devnet/genesis.json -key devnet/runner-0000.key`,
	"reconfigure":   `  cip11 reconfigure -net net -epoch 1`,
	"reset":         `  cip11 reset -home net/v2`,
	"replay":        `  cip11 replay -blocks 200 chain.jsonl.gz`,
	"gen":           `  cip11 gen -seed 1 -runners 50 -blocks 500 -o chain.jsonl.gz`,
	"vectors":       `  cip11 vectors check conformance/testdata/vectors/*.json`,
	"vectors check": `  cip11 vectors check conformance/testdata/vectors/*.json`,
	"vectors gen":   `  cip11 vectors gen -dir conformance/testdata/vectors`,
	"version":       `  cip11 version`,
	"job submit":    `  cip11 job submit -node http://127.0.0.1:8011 -runners 2 -payload 'hello cip11' -wait`,
	"job get":       `  cip11 job get -node http://127.0.0.1:8011 3f1c…(64 hex digits)`,
	"job list":      `  cip11 job list -node http://127.0.0.1:8011 -state expired -limit 10`,
}

// parse parses args. ok false means the command is done with exit code:
// 0 for -h (the help on stdout), 2 for a usage error (the complaint and
// the synopsis on stderr).
func (c *command) parse(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	err := c.fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		c.help(stdout)
		return 0, false
	}
	if err != nil {
		return c.usageError(stderr, "%v", err), false
	}
	return 0, true
}

// usageError prints a usage complaint and the synopsis and returns 2.
func (c *command) usageError(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "cip11 %s: %s\nusage: cip11 %s %s\n(cip11 %s -h lists every flag)\n",
		c.name, fmt.Sprintf(format, a...), c.name, c.args, c.name)
	return 2
}

// nargs checks the number of positional arguments.
func (c *command) nargs(stderr io.Writer, lo, hi int) (int, bool) {
	switch n := c.fs.NArg(); {
	case n < lo:
		return c.usageError(stderr, "missing arguments"), false
	case n > hi && hi == 0:
		return c.usageError(stderr, "unexpected argument %q (no positional arguments)", c.fs.Arg(0)), false
	case n > hi:
		return c.usageError(stderr, "%d arguments, at most %d", n, hi), false
	}
	return 0, true
}

// given reports whether the flag name was set on the command line.
func (c *command) given(name string) bool {
	set := false
	c.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// notWith refuses, as a usage error, any of names that was given: those
// flags do not apply in the mode the command runs in, which where says
// ("with -home: the home holds the keys").
func (c *command) notWith(stderr io.Writer, where string, names ...string) (int, bool) {
	for _, n := range names {
		if c.given(n) {
			return c.usageError(stderr, "-%s does not apply %s", n, where), false
		}
	}
	return 0, true
}

// intFlag is an int flag allowed in [min, max].
type intFlag struct {
	p        *int
	min, max int
	what     string // the allowed range in words (default "min to max")
}

func (c *command) intVar(name string, def, min, max int, usage string) *int {
	p := new(int)
	*p = def
	c.fs.Var(&intFlag{p: p, min: min, max: max}, name, usage)
	return p
}

// intVarText is intVar with the allowed range described in words.
func (c *command) intVarText(name string, def, min, max int, what, usage string) *int {
	p := new(int)
	*p = def
	c.fs.Var(&intFlag{p: p, min: min, max: max, what: what}, name, usage)
	return p
}

func (f *intFlag) rangeText() string {
	if f.what != "" {
		return f.what
	}
	return fmt.Sprintf("an integer from %d to %d", f.min, f.max)
}

func (f *intFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return strconv.Itoa(*f.p)
}

func (f *intFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < int64(f.min) || v > int64(f.max) {
		return fmt.Errorf("must be %s", f.rangeText())
	}
	*f.p = int(v)
	return nil
}

// uint64Flag is a uint64 flag allowed in [min, math.MaxUint64].
type uint64Flag struct {
	p   *uint64
	min uint64
}

func (c *command) uint64Var(name string, def, min uint64, usage string) *uint64 {
	p := new(uint64)
	*p = def
	c.fs.Var(&uint64Flag{p: p, min: min}, name, usage)
	return p
}

func (f *uint64Flag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return strconv.FormatUint(*f.p, 10)
}

func (f *uint64Flag) Set(s string) error {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v < f.min {
		return fmt.Errorf("must be an integer from %d to %d", f.min, uint64(math.MaxUint64))
	}
	*f.p = v
	return nil
}

// durFlag is a duration flag allowed in [min, max].
type durFlag struct {
	p        *time.Duration
	min, max time.Duration
}

func (c *command) durVar(name string, def, min, max time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	*p = def
	c.fs.Var(&durFlag{p: p, min: min, max: max}, name, usage)
	return p
}

func (f *durFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return f.p.String()
}

func (f *durFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v < f.min || v > f.max {
		return fmt.Errorf("must be a duration from %v to %v (e.g. 250ms, 20s)", f.min, f.max)
	}
	*f.p = v
	return nil
}

// strFlag is a string flag checked by check (nil: any non-empty value).
type strFlag struct {
	p     *string
	check func(string) error
}

func (c *command) strVar(name, def string, check func(string) error, usage string) *string {
	p := new(string)
	*p = def
	c.fs.Var(&strFlag{p: p, check: check}, name, usage)
	return p
}

func (f *strFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return *f.p
}

func (f *strFlag) Set(s string) error {
	check := f.check
	if check == nil {
		check = nonEmpty
	}
	if err := check(s); err != nil {
		return err
	}
	*f.p = s
	return nil
}

func nonEmpty(s string) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	return nil
}

// hostPort accepts HOST:PORT with a port from 0 to 65535.
func hostPort(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err == nil {
		var p uint64
		if p, err = strconv.ParseUint(port, 10, 16); err == nil && p <= 65535 {
			return nil
		}
	}
	return fmt.Errorf("must be HOST:PORT (e.g. 127.0.0.1:8011), port 0 to 65535")
}

// optHostPort is hostPort or empty (the default).
func optHostPort(s string) error {
	if s == "" {
		return nil
	}
	return hostPort(s)
}

// hostPortOrOff is hostPort, empty (the default) or "off".
func hostPortOrOff(s string) error {
	if s == "" || s == "off" {
		return nil
	}
	if hostPort(s) != nil {
		return errors.New("must be HOST:PORT (e.g. 127.0.0.1:8011), port 0 to 65535, or off")
	}
	return nil
}

// httpURL accepts an http:// or https:// URL with a host, or empty.
func httpURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an http:// or https:// URL with a host (e.g. http://127.0.0.1:8011)")
	}
	return nil
}

// logLevel accepts the slog level names (debug, info, warn, error).
func logLevel(s string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return errors.New("must be debug, info, warn or error")
	}
	return nil
}

// Ranges shared by several commands.
const (
	maxDuration = 24 * time.Hour
	maxBlock    = time.Hour
)
