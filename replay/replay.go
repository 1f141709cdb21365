package replay

import (
	"fmt"
	"io"
	"slices"

	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
)

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
	// Base is a pruned log's base height (Config.Pruned; 0: a log from
	// block 1).
	Base uint64 `json:"base"`
	// LastHeight is the height of the last block checked (executed, or
	// the resumed store's).
	LastHeight uint64 `json:"last_height"`
}

// Config tunes [Run].
type Config struct {
	blockexec.Options
	// Limit > 0 stops after that many blocks.
	Limit int
	// Progress, if non-nil, is called after every replayed block.
	Progress func(height uint64, s *Summary)
	// Pruned accepts a pruned log (docs/chainlog.md "Pruned block logs":
	// a validator's blocks.jsonl whose second line is a base line,
	// chainlog.Reader.ReadBase). The base line's reconfigurations are
	// restored after Options.Reconfigurations, and the store (OpenStore)
	// must already hold the state at a height the log holds, above the
	// base (a validator snapshot's, node.ImportSnapshot): Run resumes
	// there as over any store. Without Pruned a pruned log fails with
	// chainlog.ErrPruned.
	Pruned bool
}

// Run re-executes the log in r block by block and compares every
// recorded output with the recomputed one. It stops at the first
// divergence (a [*blockexec.Divergence], wrapping
// [blockexec.ErrDivergence]), invalid block or
// malformed line. A divergent or invalid block is never committed: the
// store stays at the last block that matched the log.
//
// Over a store that already holds committed blocks (cfg.OpenStore), Run
// resumes: it skips the log's blocks up to the store's last committed
// height h, checks that the store's state digest equals the log's at h
// (else a Divergence at h), and executes from h+1. A store ahead of the
// log, or at a height the log does not have, is
// [blockexec.ErrStoreMismatch].
// Summary.Resumed is h's block count; the other counts cover the blocks
// executed. The reconfigurations of the skipped blocks are restored (they
// extend the schedule as they did when the store committed them).
//
// A panic is a bug and is not recovered.
func Run(r io.Reader, cfg Config) (s Summary, err error) {
	cr, err := chainlog.NewReader(r)
	if err != nil {
		return s, err
	}
	opts := cfg.Options
	var base *chainlog.Base
	if cfg.Pruned {
		if base, err = cr.ReadBase(); err != nil {
			return s, err
		}
		if base != nil {
			s.Base = base.Height
			opts.Reconfigurations = append(slices.Clone(opts.Reconfigurations), base.Reconfigurations...)
		}
	}
	x, err := blockexec.New(cr.Header(), opts)
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
	if base != nil && (!resume || last <= base.Height) {
		held := "an empty store"
		if resume {
			held = fmt.Sprintf("a store at height %d", last)
		}
		return s, fmt.Errorf("%w: the log is pruned (its blocks start at %d) and there is %s: replay it over the state at one of its heights (a snapshot)",
			blockexec.ErrStoreMismatch, base.Height+1, held)
	}
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
			if h > last {
				return s, fmt.Errorf("%w: store at height %d, the log has no such block", blockexec.ErrStoreMismatch, last)
			}
			s.Resumed++
			for _, tx := range b.Txs {
				if tx.Reconfigure != nil {
					if err := x.RestoreReconfiguration(tx.Reconfigure); err != nil {
						return s, fmt.Errorf("block %d (in the store): %w", h, err)
					}
				}
			}
			if h < last {
				continue
			}
			resume = false
			d, err := x.Digest()
			if err != nil {
				return s, fmt.Errorf("block %d: %w", h, err)
			}
			if d != b.Out.StateDigest {
				return s, &blockexec.Divergence{Height: h, Field: "state_digest (resumed store)", Want: b.Out.StateDigest.String(), Got: d.String()}
			}
			s.FinalDigest, s.LastHeight = d.String(), h
			continue
		}
		got, err := x.Execute(b)
		if err != nil {
			return s, fmt.Errorf("block %d: %w", h, err)
		}
		if d := blockexec.DiffOutput(h, &b.Out, &got); d != nil {
			x.Discard()
			return s, d
		}
		if err := x.Commit(); err != nil {
			return s, fmt.Errorf("block %d: %w", h, err)
		}
		s.count(b)
		if cfg.Progress != nil {
			cfg.Progress(h, &s)
		}
	}
	if resume {
		return s, fmt.Errorf("%w: store at height %d, beyond the log", blockexec.ErrStoreMismatch, last)
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
	s.LastHeight = uint64(b.Height)
}
