package node

import (
	"context"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

// FollowChain is a Chain (and KeyedChain, EpochSource) over whichever
// in-process Validator Pick returns at each call: a validator restarted on
// its directory, or the one furthest ahead among several, as a runner's
// chain view follows the finalized tip (D33). Pick's error (ErrClosed while
// none runs) is the call's. A nil Pick answers ErrClosed.
type FollowChain struct {
	Pick func() (*Validator, error)
}

func (c FollowChain) local() (LocalChain, error) {
	if c.Pick == nil {
		return LocalChain{}, ErrClosed
	}
	v, err := c.Pick()
	if err != nil {
		return LocalChain{}, err
	}
	if v == nil {
		return LocalChain{}, ErrClosed
	}
	return LocalChain{V: v}, nil
}

// Epochs implements EpochSource.
func (c FollowChain) Epochs(ctx context.Context) ([]EpochSet, error) {
	l, err := c.local()
	if err != nil {
		return nil, err
	}
	return l.Epochs(ctx)
}

// Height implements Chain.
func (c FollowChain) Height(ctx context.Context) (uint64, error) {
	l, err := c.local()
	if err != nil {
		return 0, err
	}
	return l.Height(ctx)
}

// Submit implements Chain.
func (c FollowChain) Submit(ctx context.Context, tx []byte) error {
	l, err := c.local()
	if err != nil {
		return err
	}
	return l.Submit(ctx, tx)
}

// Settled implements Chain.
func (c FollowChain) Settled(ctx context.Context, job cip11.Hash, runner cip11.Address) (bool, error) {
	l, err := c.local()
	if err != nil {
		return false, err
	}
	return l.Settled(ctx, job, runner)
}

// Poll implements Chain.
func (c FollowChain) Poll(ctx context.Context, runner cip11.Address) ([]*wire.JobAssignment, error) {
	l, err := c.local()
	if err != nil {
		return nil, err
	}
	return l.Poll(ctx, runner)
}

// PollKeyed implements KeyedChain.
func (c FollowChain) PollKeyed(ctx context.Context, runner cip11.Address, key wire.PubKey) ([]*wire.JobAssignment, error) {
	l, err := c.local()
	if err != nil {
		return nil, err
	}
	return l.PollKeyed(ctx, runner, key)
}

// LastHeartbeat implements Chain.
func (c FollowChain) LastHeartbeat(ctx context.Context, runner cip11.Address) (uint64, bool, error) {
	l, err := c.local()
	if err != nil {
		return 0, false, err
	}
	return l.LastHeartbeat(ctx, runner)
}

// Assigned implements Chain.
func (c FollowChain) Assigned(ctx context.Context, job cip11.Hash, runner cip11.Address, height uint64) (bool, error) {
	l, err := c.local()
	if err != nil {
		return false, err
	}
	return l.Assigned(ctx, job, runner, height)
}

var (
	_ Chain       = FollowChain{}
	_ KeyedChain  = FollowChain{}
	_ EpochSource = FollowChain{}
)

// Busy is the number of executions in progress (a devnet's chaos kills a
// runner that is mid-job).
func (r *Runner) Busy() int64 { return r.active.Load() }
