package node

import (
	"context"
	"errors"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

// LocalChain is a runner's Chain (and KeyedChain, EpochSource) over an
// in-process Validator: V, or, when Pick is set, whichever validator Pick
// returns at each call — one restarted on its directory, or the one
// furthest ahead among several, as a runner's chain view follows the
// finalized tip (D33). Pick's error is the call's; no validator (V and
// Pick nil, or Pick returning nil) is ErrClosed. The other Chain is
// HTTPChain, over validators' HTTP APIs.
type LocalChain struct {
	V    *Validator
	Pick func() (*Validator, error)
}

func (c LocalChain) validator() (*Validator, error) {
	v := c.V
	if c.Pick != nil {
		var err error
		if v, err = c.Pick(); err != nil {
			return nil, err
		}
	}
	if v == nil {
		return nil, ErrClosed
	}
	return v, nil
}

// Epochs implements EpochSource.
func (c LocalChain) Epochs(context.Context) ([]EpochSet, error) {
	v, err := c.validator()
	if err != nil {
		return nil, err
	}
	return v.Epochs(), nil
}

// Height implements Chain.
func (c LocalChain) Height(context.Context) (uint64, error) {
	v, err := c.validator()
	if err != nil {
		return 0, err
	}
	return v.Height(), nil
}

// Submit implements Chain; a duplicate is not an error (the transaction
// is already on its way).
func (c LocalChain) Submit(_ context.Context, tx []byte) error {
	v, err := c.validator()
	if err != nil {
		return err
	}
	if _, err := v.SubmitTx(tx); err != nil && !errors.Is(err, ErrDuplicate) {
		return err
	}
	return nil
}

// Settled implements Chain.
func (c LocalChain) Settled(_ context.Context, job cip11.Hash, runner cip11.Address) (bool, error) {
	v, err := c.validator()
	if err != nil {
		return false, err
	}
	return v.Settled(job, runner)
}

// Poll implements Chain.
func (c LocalChain) Poll(_ context.Context, runner cip11.Address) ([]*wire.JobAssignment, error) {
	v, err := c.validator()
	if err != nil {
		return nil, err
	}
	return v.RunnerJobs(runner)
}

// PollKeyed implements KeyedChain.
func (c LocalChain) PollKeyed(_ context.Context, runner cip11.Address, key wire.PubKey) ([]*wire.JobAssignment, error) {
	v, err := c.validator()
	if err != nil {
		return nil, err
	}
	return v.RunnerJobsFor(runner, key)
}

// LastHeartbeat implements Chain.
func (c LocalChain) LastHeartbeat(_ context.Context, runner cip11.Address) (uint64, bool, error) {
	v, err := c.validator()
	if err != nil {
		return 0, false, err
	}
	return v.LastHeartbeat(runner)
}

// Assigned implements Chain.
func (c LocalChain) Assigned(_ context.Context, job cip11.Hash, runner cip11.Address, height uint64) (bool, error) {
	v, err := c.validator()
	if err != nil {
		return false, err
	}
	return v.Assigned(job, runner, height)
}

var (
	_ Chain       = LocalChain{}
	_ KeyedChain  = LocalChain{}
	_ EpochSource = LocalChain{}
)
