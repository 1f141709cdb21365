package node

import (
	"github.com/cip11/cip11/adapters/node/chain"
)

// Catching up (issue 28): a validator that replays its store at start,
// block-syncs after a restart or a wipe, or follows the chain's commits
// after a pause executes blocks the others committed long ago. Their
// pushes (§10.1) are for the past: most assignments' deadlines have passed
// at the head, and the others' validators of Sub(R) delivered the rest.
// While its engine reports it behind ([CatchUp]), a validator pushes
// nothing: an assignment whose deadline_block is at or below the head is
// skipped at once; the others are held and decided again at every commit
// against the latest committed state, and those still live — the job not
// ended, the runner's result not committed (chain.Core.Settled), the
// deadline above the head — go out with the first block committed at the
// head. Pushes are delivery, not consensus: the chain's state, its digest
// and its blocks are the same whatever is skipped; a runner a skipped
// push misses takes the assignment from another validator of its Sub(R)
// or by poll (§10.4).

// CatchUp reports, for the block at height h being committed, the head
// height its engine knows (≥ h; the highest height it trusts the network
// has committed) and whether the validator is catching up (replaying,
// block-syncing or behind the head). nil: never catching up (a
// single-validator chain is its own head).
type CatchUp func(h uint64) (head uint64, catching bool)

// Reasons a push is skipped (PushesSkipped, cip11_pushes_skipped_total).
const (
	// SkipDeadline: the assignment's deadline_block is at or below the
	// head: the job has expired there (§10.6).
	SkipDeadline = "deadline_passed"
	// SkipSettled: the latest committed state has the job ended or the
	// runner's result committed: another validator delivered it.
	SkipSettled = "delivered"
	// SkipOverflow: more than maxHeldPushes were held while catching up.
	SkipOverflow = "held_overflow"
)

// SkipReasons are the reasons a push is skipped, in a fixed order.
func SkipReasons() []string { return []string{SkipDeadline, SkipSettled, SkipOverflow} }

// maxHeldPushes bounds the pushes held while catching up: at most one
// block's worth of seats per live assignment, far above any honest
// backlog; beyond it the oldest are skipped, counted.
const maxHeldPushes = 1 << 16

// SetCatchUp installs the engine's catch-up report (before the first
// block; adapters/cometbft's App does at NewApp).
func (v *Validator) SetCatchUp(f CatchUp) { v.catchUp.Store(&f) }

// PushesSkipped counts the pushes this validator did not hand to the
// transport because it was catching up, by reason (SkipReasons).
func (v *Validator) PushesSkipped() map[string]uint64 {
	return map[string]uint64{SkipDeadline: v.skipped[0].Load(), SkipSettled: v.skipped[1].Load(), SkipOverflow: v.skipped[2].Load()}
}

func (v *Validator) skip(reason int, n int) {
	if n <= 0 {
		return
	}
	v.skipped[reason].Add(uint64(n))
	v.cfg.Metrics.PushesSkipped(SkipReasons()[reason], n)
}

// gatePushes is the push path's catch-up gate (loop only): the pushes of
// block h to hand to the transport now.
func (v *Validator) gatePushes(c *chain.Core, h uint64, pushes []chain.Assignment) []chain.Assignment {
	p := v.catchUp.Load()
	if p == nil || *p == nil {
		return pushes
	}
	head, catching := (*p)(h)
	head = max(head, h)
	if !catching && len(v.held) == 0 {
		return pushes
	}
	all := append(v.held, pushes...)
	v.held = nil
	live := all[:0]
	var deadline, settled int
	for _, a := range all {
		switch {
		case a.DeadlineBlock <= head:
			deadline++
		case c.Settled(a.JobID, a.Runner):
			settled++
		default:
			live = append(live, a)
		}
	}
	v.skip(0, deadline)
	v.skip(1, settled)
	if !catching {
		if n := len(all); n > len(pushes) || deadline+settled > 0 {
			v.log.Info("caught up: pushing at the head", "height", h, "head", head, "held_live", len(live), "skipped_deadline", deadline, "skipped_delivered", settled)
		}
		return live
	}
	if over := len(live) - maxHeldPushes; over > 0 {
		v.skip(2, over)
		live = live[over:]
	}
	v.held = append([]chain.Assignment(nil), live...)
	return nil
}
