package quic

import (
	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

// Result frames on a push's stream: the §10.3 commit and reveal the
// validator holds and forwards.

// onResult applies the §10.3 checks and forwards the transaction verbatim.
func (s *Server) onResult(p *push, fr wire.Frame) bool {
	tx, err := wire.CheckResult(fr, p.a.Runner, s.cfg.TxDecoder, s.cfg.TxValidator)
	if err != nil {
		s.stats.resultsRejected.Add(1)
		s.finishPush(p, local.SoftFailure, err)
		return true
	}
	if c, ok := fr.(*wire.JobResultCommit); ok {
		if err := s.cfg.Mempool.Submit(c.TxBytes, tx); err != nil {
			s.finishPush(p, local.SoftFailure, err)
			return true
		}
		s.stats.forwarded.Add(1)
		s.mu.Lock()
		p.commitSeen, p.commitAt = true, s.height
		s.mu.Unlock()
		return false
	}
	r := fr.(*wire.JobResult)
	if !p.a.MultiRunner {
		return s.forwardReveal(p, &heldTx{raw: r.TxBytes, tx: tx})
	}
	s.mu.Lock()
	open, seen := s.revealOpen(p, s.height), p.commitSeen
	full := p.held == nil && s.heldBy[p.a.Runner] >= s.cfg.MaxHeldReveals
	if !open && !s.cfg.RefuseEarlyReveal && p.held == nil && !full {
		p.held = &heldTx{raw: r.TxBytes, tx: tx} // §10.3: hold, never submit early
		s.heldBy[p.a.Runner]++
	}
	s.mu.Unlock()
	switch {
	case open:
		return s.forwardReveal(p, &heldTx{raw: r.TxBytes, tx: tx})
	case s.cfg.RefuseEarlyReveal:
		err := ErrEarlyReveal
		if !seen {
			err = ErrResultBeforeCommit
		}
		s.finishPush(p, local.SoftFailure, err)
		s.closeWith(p.sc, err)
		return true
	case full:
		s.finishPush(p, local.SoftFailure, ErrTooManyHeld)
		return true
	}
	return false
}

// ReleaseReveal is the node telling the server that runner's commitment
// for jobID is part of the chain (§10.3) — included in a committed block
// under external consensus, or admitted on a single validator, whose core
// is the chain — however it got there (this stream, another validator,
// the runner's own rebroadcast): the reveal window of that push is open,
// and a reveal held for it is forwarded now. ErrNoSuchJob if no push of
// jobID to runner is in flight.
func (s *Server) ReleaseReveal(jobID cip11.Hash, runner cip11.Address) error {
	var release []*push
	s.mu.Lock()
	n := 0
	for k, p := range s.pushes {
		if k.job != jobID || p.a.Runner != runner {
			continue
		}
		n++
		p.included = true
		if p.held != nil && !p.releasing {
			p.releasing = true
			release = append(release, p)
		}
	}
	s.mu.Unlock()
	if n == 0 {
		return ErrNoSuchJob
	}
	for _, p := range release {
		s.forwardReveal(p, p.held)
	}
	return nil
}

// revealOpen is the reveal-window test for a multi-runner push; s.mu held.
func (s *Server) revealOpen(p *push, h uint64) bool {
	if p.included {
		return true
	}
	if s.cfg.RevealOpen != nil {
		return s.cfg.RevealOpen(p.a.JobID, h)
	}
	return p.commitSeen && h > p.commitAt
}

func (s *Server) forwardReveal(p *push, t *heldTx) bool {
	if err := s.cfg.Mempool.Submit(t.raw, t.tx); err != nil {
		s.finishPush(p, local.SoftFailure, err)
		return true
	}
	s.stats.forwarded.Add(1)
	s.finishPush(p, local.Success, nil)
	return true
}
