package node

import (
	"fmt"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/chainlog"
)

// Engine is an external consensus engine's mempool, as the validator sees
// it (ValidatorConfig.Engine; adapters/cometbft, D29, D33). BroadcastTx
// and BroadcastJob hand a node transaction or an encoded job spec to the
// engine, which checks it on every validator through AdmitTx or AdmitJob
// and gossips it, so that it reaches every proposer. They return the local
// admission's error (ErrBadRequest, ErrDuplicate, ErrMempoolFull, …).
type Engine interface {
	BroadcastTx(raw []byte) error
	BroadcastJob(spec []byte) error
}

// The consensus steps below are the core's, run on the validator's loop,
// for an Engine's application (ABCI++ PrepareProposal, ProcessProposal,
// FinalizeBlock and Commit; D32). They must not be called from inside a
// callback the loop itself is running.

// ProposeBlock builds and executes block Height()+1 from the core's
// mempool with cs and pres (chain.Core.Propose). Its execution stays open
// for a FinalizeBlock of the same *Block. specs are the encoded specs of
// the block's job submits, in order (nil for one the core knows only from
// a block), the signed transactions of its presence certificates (§8.3
// runner_signed), registrations and heartbeats (SPEC-NOTES C7), for the
// engine to carry with the block.
func (v *Validator) ProposeBlock(cs Consensus, pres []byte) (b *chainlog.Block, specs [][]byte, err error) {
	if derr := v.do(func(c *chain.Core) {
		b, err = c.Propose(cs, pres)
		err = v.stepErr(c, err)
		if err != nil {
			return
		}
		for _, tx := range b.Txs {
			switch {
			case tx.Submit != nil:
				specs = append(specs, c.Spec(tx.Submit.JobID))
			case tx.Certificate != nil:
				specs = append(specs, c.CertificateTx(tx.Certificate.Runner))
			}
		}
		specs = append(specs, c.Signed(b)...)
	}); derr != nil {
		return nil, nil, derr
	}
	return b, specs, err
}

// CheckSigned checks that a block another validator proposed carries a
// signed transaction for each registration and heartbeat (chain.Core.CheckSigned,
// SPEC-NOTES C7); txs are the block's decoded node transactions.
func (v *Validator) CheckSigned(b *chainlog.Block, txs []*chain.Tx) error {
	var err error
	if derr := v.do(func(c *chain.Core) { err = c.CheckSigned(b, txs) }); derr != nil {
		return derr
	}
	return err
}

// CheckBlock executes a block another validator proposed and discards it
// (chain.Core.Check): the verdict is deterministic.
func (v *Validator) CheckBlock(b *chainlog.Block) error {
	var err error
	if derr := v.do(func(c *chain.Core) { err = v.stepErr(c, c.Check(b)) }); derr != nil {
		return derr
	}
	return err
}

// FinalizeBlock executes the decided block (reusing ProposeBlock's
// execution when b is the block it returned), appends it to the block log
// and returns it with its outputs; the state digest is b.Out.StateDigest.
// The state is committed by CommitBlock.
func (v *Validator) FinalizeBlock(b *chainlog.Block) (*chainlog.Block, error) {
	var err error
	if derr := v.do(func(c *chain.Core) {
		v.finStart = v.now()
		_, err = c.Apply(b)
		err = v.stepErr(c, err)
	}); derr != nil {
		return nil, derr
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// CommitBlock commits the finalized block and queues its pushes (§10.1:
// only after commit).
func (v *Validator) CommitBlock() error {
	var err error
	if derr := v.do(func(c *chain.Core) {
		start := v.finStart
		if start.IsZero() {
			start = v.now()
		}
		err = v.commit(c, start)
		v.finStart = time.Time{}
	}); derr != nil {
		return derr
	}
	return err
}

// PresenceInput is the proposer's local PresenceInputV1 for block h
// (§7.2: over registry(h−1)); nil when h is 1 or the transport is off.
func (v *Validator) PresenceInput(h uint64) ([]byte, error) {
	if h <= 1 || v.srv == nil {
		return nil, nil
	}
	return v.srv.ProposerInput(h - 1)
}

// NotHeld counts assignments this validator did not push because it holds
// no stream to the runner (D33).
func (v *Validator) NotHeld() uint64 { return v.notHeld.Load() }

// stepErr marks a core failure sticky for callers outside the loop.
func (v *Validator) stepErr(c *chain.Core, err error) error {
	if err != nil && c.Err() != nil {
		return v.fail(c, err)
	}
	if err != nil {
		return fmt.Errorf("height %d: %w", c.Height()+1, err)
	}
	return nil
}

// LastBlock is the last committed block (nil before block 1): its height
// and Out.StateDigest are an engine's Info answer. The caller must not
// modify it.
func (v *Validator) LastBlock() *chainlog.Block {
	var b *chainlog.Block
	_ = v.do(func(c *chain.Core) { b = c.Last() })
	return b
}

// Genesis is the validator's genesis.
func (v *Validator) Genesis() *Genesis { return v.g }

// DuplicateAcks counts JobAcks with status Duplicate this validator
// received: its push reached a runner that had accepted the job from
// another validator of Sub(R) (§10.1, D33).
func (v *Validator) DuplicateAcks() uint64 { return v.dupAcks.Load() }

// Seats counts the committee seats the blocks this validator committed
// since it started assigned: the pushes one validator per seat would send
// (§10.1).
func (v *Validator) Seats() uint64 { return v.seats.Load() }

// LocalPresence is this validator's local presence (§7.4) as a
// PresenceInputV1 over registry(h) and that registry's size: what it
// publishes to its peers after committing h (D33 presence gossip), the
// basis of PresenceInput(h+1). nil when the transport is off.
func (v *Validator) LocalPresence(h uint64) (field []byte, n int, err error) {
	if v.srv == nil || h == 0 {
		return nil, 0, nil
	}
	view, err := v.x.Store().Registry().At(h)
	if err != nil {
		return nil, 0, err
	}
	field, err = v.srv.ProposerInput(h)
	return field, len(view.ActiveRunners()), err
}

// RegistrySize is |registry(h)|, the PresenceInput index basis of block
// h+1 (§7.2).
func (v *Validator) RegistrySize(h uint64) (int, error) {
	if h == 0 {
		return 0, nil
	}
	view, err := v.x.Store().Registry().At(h)
	if err != nil {
		return 0, err
	}
	return len(view.ActiveRunners()), nil
}

// ConnectedRunners are the runners holding an admitted QUIC connection to
// this validator (none when the transport is off).
func (v *Validator) ConnectedRunners() []cip11.Address {
	if v.srv == nil {
		return nil
	}
	return v.srv.ConnectedRunners()
}

// TransportStats is the QUIC server's counters (ok false: no transport,
// §14 phase 0).
func (v *Validator) TransportStats() (cquic.ServerStats, bool) {
	if v.srv == nil {
		return cquic.ServerStats{}, false
	}
	return v.srv.Stats(), true
}
