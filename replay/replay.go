package replay

import (
	"bytes"
	_ "embed"
	"encoding"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/cip11/cip11/chainlog"
)

// sampleLog is the shipped sample chain (docs/chainlog.md "The sample
// chain"). Read-only: the one package-level variable, required by
// go:embed. Regenerate only on purpose (it pins the engine's outputs):
//
//	go run ./cmd/cip11 gen -seed 1 -runners 5000 -blocks 1000 -o replay/testdata/sample.jsonl.gz
//
//go:embed testdata/sample.jsonl.gz
var sampleLog []byte

// Sample returns the embedded sample chain log (gzip JSON Lines).
func Sample() io.Reader { return bytes.NewReader(sampleLog) }

// ErrDivergence marks a block whose recomputed outputs differ from the log.
var ErrDivergence = errors.New("replay: divergence")

// Divergence names the block and the first differing output field.
type Divergence struct {
	Height    uint64
	Field     string
	Want, Got string
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("block %d: %s: want %s got %s", d.Height, d.Field, d.Want, d.Got)
}

// Unwrap makes a Divergence match [ErrDivergence].
func (d *Divergence) Unwrap() error { return ErrDivergence }

// Summary counts what a replay saw.
type Summary struct {
	Blocks          int    `json:"blocks"`
	Resumed         int    `json:"resumed"` // blocks the store already held
	Jobs            int    `json:"jobs"`
	JobsM1          int    `json:"jobs_m1"`
	Assignments     int    `json:"assignments"`
	Reselections    int    `json:"reselections"`
	Expired         int    `json:"expired"`
	PendingWritten  int    `json:"pending_written"`
	PendingConsumed int    `json:"pending_consumed"`
	MRUWrites       int    `json:"mru_writes"`
	FinalDigest     string `json:"final_state_digest"`
}

// Config tunes [Run].
type Config struct {
	Options
	// Limit > 0 stops after that many blocks.
	Limit int
	// Progress, if non-nil, is called after every replayed block.
	Progress func(height uint64, s *Summary)
}

// Run re-executes the log in r block by block and compares every
// recorded output with the recomputed one. It stops at the first
// divergence (an error wrapping [ErrDivergence]), invalid block or
// malformed line. A divergent or invalid block is never committed: the
// store stays at the last block that matched the log.
//
// Over a store that already holds committed blocks (cfg.OpenStore), Run
// resumes: it skips the log's blocks up to the store's last committed
// height h, checks that the store's state digest equals the log's at h
// (else a Divergence at h), and executes from h+1. A store ahead of the
// log, or at a height the log does not have, is [ErrStoreMismatch].
// Summary.Resumed is h's block count; the other counts cover the blocks
// executed.
//
// A panic is a bug and is not recovered.
func Run(r io.Reader, cfg Config) (s Summary, err error) {
	cr, err := chainlog.NewReader(r)
	if err != nil {
		return s, err
	}
	x, err := NewExecutor(cr.Header(), cfg.Options)
	if err != nil {
		return s, err
	}
	defer func() {
		if cerr := x.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close store: %w", cerr)
		}
	}()
	p := newPipeline(cr, x)
	defer p.stop()
	last, resume := x.LastCommitted()
	for cfg.Limit <= 0 || s.Blocks < cfg.Limit {
		b, err := p.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, err
		}
		h := uint64(b.Height)
		if resume {
			if h < last {
				s.Resumed++
				continue
			}
			if h > last {
				return s, fmt.Errorf("%w: store at height %d, the log has no such block", ErrStoreMismatch, last)
			}
			s.Resumed++
			resume = false
			d, err := x.Digest()
			if err != nil {
				return s, fmt.Errorf("block %d: %w", h, err)
			}
			if d != b.Out.StateDigest {
				return s, &Divergence{Height: h, Field: "state_digest (resumed store)", Want: b.Out.StateDigest.String(), Got: d.String()}
			}
			s.FinalDigest = d.String()
			continue
		}
		got, err := x.execute(b)
		if err != nil {
			return s, fmt.Errorf("block %d: %w", h, err)
		}
		if d := DiffOutput(h, &b.Out, &got); d != nil {
			x.discard()
			return s, d
		}
		if err := x.commit(); err != nil {
			return s, fmt.Errorf("block %d: %w", h, err)
		}
		s.count(b)
		if cfg.Progress != nil {
			cfg.Progress(h, &s)
		}
	}
	if resume {
		return s, fmt.Errorf("%w: store at height %d, beyond the log", ErrStoreMismatch, last)
	}
	return s, nil
}

func (s *Summary) count(b *chainlog.Block) {
	s.Blocks++
	for _, tx := range b.Txs {
		if tx.Submit != nil {
			s.Jobs++
			if tx.Submit.CommitteeSize == 1 {
				s.JobsM1++
			}
		}
	}
	s.Assignments += len(b.Out.Assignments)
	for _, a := range b.Out.Assignments {
		if a.Reselection > 0 {
			s.Reselections++
		}
	}
	s.Expired += len(b.Out.Expired)
	s.PendingWritten += len(b.Out.PendingWritten)
	s.PendingConsumed += len(b.Out.PendingConsumed)
	s.MRUWrites += len(b.Out.MRUWrites)
	s.FinalDigest = b.Out.StateDigest.String()
}

// DiffOutput returns nil if got equals want, else the first differing
// field in the log's field order (slice elements before slice lengths).
func DiffOutput(h uint64, want, got *chainlog.Output) *Divergence {
	if reflect.DeepEqual(want, got) {
		return nil
	}
	if d := diffValue("", reflect.ValueOf(*want), reflect.ValueOf(*got)); d != nil {
		d.Height = h
		return d
	}
	return nil
}

func diffValue(path string, w, g reflect.Value) *Divergence {
	if m, ok := w.Interface().(encoding.TextMarshaler); ok {
		ws, _ := m.MarshalText()
		gs, _ := g.Interface().(encoding.TextMarshaler).MarshalText()
		if !bytes.Equal(ws, gs) {
			return &Divergence{Field: path, Want: string(ws), Got: string(gs)}
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
			return &Divergence{Field: path + " length", Want: fmt.Sprint(w.Len()), Got: fmt.Sprint(g.Len())}
		}
	default:
		if !reflect.DeepEqual(w.Interface(), g.Interface()) {
			return &Divergence{Field: path, Want: fmt.Sprint(w.Interface()), Got: fmt.Sprint(g.Interface())}
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
