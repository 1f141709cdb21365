package main

import (
	"bytes"
	_ "embed"
	"encoding"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/cip11/cip11/chainlog"
)

// Regenerate the sample (only on purpose: it pins the engine's outputs):
//go:generate go run . gen -seed 1 -runners 5000 -blocks 1000 -o testdata/sample.jsonl.gz

// sampleLog is the shipped sample chain (see docs/chainlog.md "The sample
// chain"), replayed by `cip11 replay` without a FILE. Read-only: the one
// package-level variable, required by go:embed.
//
//go:embed testdata/sample.jsonl.gz
var sampleLog []byte

// errDivergence marks a block whose recomputed outputs differ from the log.
var errDivergence = errors.New("divergence")

// divergence names the block and the first differing output field.
type divergence struct {
	height    uint64
	field     string
	want, got string
}

func (d *divergence) Error() string {
	return fmt.Sprintf("block %d: %s: want %s got %s", d.height, d.field, d.want, d.got)
}

func (d *divergence) Unwrap() error { return errDivergence }

// summary counts what a replay saw.
type summary struct {
	blocks          int
	jobs, jobsM1    int
	assignments     int
	pendingWritten  int
	pendingConsumed int
	mruWrites       int
	digest          chainlog.Hash
	elapsed         time.Duration
}

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	every := fs.Int("progress", 250, "report progress on stderr every N blocks (0 = never)")
	limit := fs.Int("blocks", 0, "stop after N blocks (0 = all)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var in io.Reader
	name := "embedded sample (cmd/cip11/testdata/sample.jsonl.gz)"
	switch fs.NArg() {
	case 0:
		in = bytes.NewReader(sampleLog)
	case 1:
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			fmt.Fprintf(stderr, "replay: %v\n", err)
			return 1
		}
		defer f.Close()
		in, name = f, fs.Arg(0)
	default:
		fmt.Fprintln(stderr, "usage: cip11 replay [-progress N] [-blocks N] [FILE]")
		return 2
	}
	fmt.Fprintf(stderr, "replaying %s\n", name)
	s, err := replay(in, stderr, *every, *limit)
	printSummary(stdout, s)
	if err != nil {
		fmt.Fprintf(stderr, "replay: FAILED: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "OK: every block's outputs and state digest agree with the log")
	return 0
}

func printSummary(w io.Writer, s summary) {
	rate := 0.0
	if s.elapsed > 0 {
		rate = float64(s.blocks) / s.elapsed.Seconds()
	}
	fmt.Fprintf(w, "blocks:            %d\n", s.blocks)
	fmt.Fprintf(w, "jobs submitted:    %d (M == 1: %d, M > 1: %d)\n", s.jobs, s.jobsM1, s.jobs-s.jobsM1)
	fmt.Fprintf(w, "assignments:       %d\n", s.assignments)
	fmt.Fprintf(w, "pending written:   %d\n", s.pendingWritten)
	fmt.Fprintf(w, "pending consumed:  %d\n", s.pendingConsumed)
	fmt.Fprintf(w, "MRU writes:        %d\n", s.mruWrites)
	fmt.Fprintf(w, "final state digest: %x\n", s.digest[:])
	fmt.Fprintf(w, "time:              %.2fs (%.0f blocks/s)\n", s.elapsed.Seconds(), rate)
}

// replay re-executes the log in r from a fresh state, block by block, and
// compares every recorded output with the recomputed one. It stops at the
// first divergence (an error wrapping errDivergence) or malformed line.
// limit > 0 stops after that many blocks; every > 0 reports progress.
func replay(r io.Reader, progress io.Writer, every, limit int) (s summary, err error) {
	start := time.Now()
	defer func() { s.elapsed = time.Since(start) }()
	cr, err := chainlog.NewReader(r)
	if err != nil {
		return s, err
	}
	x, err := newExecutor(cr.Header())
	if err != nil {
		return s, err
	}
	for limit <= 0 || s.blocks < limit {
		b, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, err
		}
		got, err := safeStep(x, &b)
		if err != nil {
			return s, fmt.Errorf("block %d: %w", b.Height, err)
		}
		if d := diffOutput(uint64(b.Height), &b.Out, &got); d != nil {
			return s, d
		}
		s.count(&b)
		if every > 0 && s.blocks%every == 0 && progress != nil {
			fmt.Fprintf(progress, "replay: block %d, %.0f blocks/s\n", b.Height, float64(s.blocks)/time.Since(start).Seconds())
		}
	}
	s.elapsed = time.Since(start)
	return s, nil
}

// errPanic marks a block whose execution panicked: a malformed log must
// yield an error, never crash the replayer.
var errPanic = errors.New("execution panicked")

// safeStep is x.step with any panic turned into an error wrapping errPanic.
func safeStep(x *executor, b *chainlog.Block) (out chainlog.Output, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errPanic, r)
		}
	}()
	return x.step(b)
}

func (s *summary) count(b *chainlog.Block) {
	s.blocks++
	s.jobs += len(b.Submits)
	for _, j := range b.Submits {
		if j.CommitteeSize == 1 {
			s.jobsM1++
		}
	}
	s.assignments += len(b.Out.Assignments)
	s.pendingWritten += len(b.Out.PendingWritten)
	s.pendingConsumed += len(b.Out.PendingConsumed)
	s.mruWrites += len(b.Out.MRUWrites)
	s.digest = b.Out.StateDigest
}

// diffOutput returns nil if got equals want, else the first differing field
// in the log's field order (slice elements before slice lengths).
func diffOutput(h uint64, want, got *chainlog.Output) *divergence {
	if reflect.DeepEqual(want, got) {
		return nil
	}
	if d := diffValue("", reflect.ValueOf(*want), reflect.ValueOf(*got)); d != nil {
		d.height = h
		return d
	}
	return nil
}

func diffValue(path string, w, g reflect.Value) *divergence {
	if m, ok := w.Interface().(encoding.TextMarshaler); ok {
		ws, _ := m.MarshalText()
		gs, _ := g.Interface().(encoding.TextMarshaler).MarshalText()
		if !bytes.Equal(ws, gs) {
			return &divergence{field: path, want: string(ws), got: string(gs)}
		}
		return nil
	}
	switch w.Kind() {
	case reflect.Struct:
		for i := range w.NumField() {
			name, _, _ := strings.Cut(w.Type().Field(i).Tag.Get("json"), ",")
			if d := diffValue(joinPath(path, name), w.Field(i), g.Field(i)); d != nil {
				return d
			}
		}
	case reflect.Slice:
		for i := 0; i < w.Len() && i < g.Len(); i++ {
			if d := diffValue(fmt.Sprintf("%s[%d]", path, i), w.Index(i), g.Index(i)); d != nil {
				return d
			}
		}
		if w.Len() != g.Len() {
			return &divergence{field: path + " length", want: fmt.Sprint(w.Len()), got: fmt.Sprint(g.Len())}
		}
	default:
		if !reflect.DeepEqual(w.Interface(), g.Interface()) {
			return &divergence{field: path, want: fmt.Sprint(w.Interface()), got: fmt.Sprint(g.Interface())}
		}
	}
	return nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
