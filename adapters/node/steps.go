package node

import (
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/chainlog"
)

// Broadcaster is an external consensus engine's mempool, as the validator
// sees it (ValidatorConfig.Broadcaster; adapters/cometbft, D29, D33). BroadcastTx
// and BroadcastJob hand a node transaction or an encoded job spec to the
// engine, which checks it on every validator through AdmitTx or AdmitJob
// and gossips it, so that it reaches every proposer. They return the local
// admission's error (ErrBadRequest, ErrDuplicate, ErrMempoolFull, …).
type Broadcaster interface {
	BroadcastTx(raw []byte) error
	BroadcastJob(spec []byte) error
}

// MempoolSizer is a Broadcaster that reports how many transactions its
// mempool holds (GET /status mempool, cip11_mempool_transactions): under
// an engine its mempool is the only one.
type MempoolSizer interface {
	Size() int
}

// The consensus steps below are the step API both drivers call the same
// way (D32): an engine's application (adapters/cometbft: ABCI++
// PrepareProposal, ProcessProposal, FinalizeBlock, Commit) and the
// single-validator driver (ProduceBlock, producer.go). Each is one round
// trip to the loop that owns the core. They must not be called from inside
// a callback the loop itself is running.

// ProposeBlock builds and executes block Height()+1 (chain.Core.Propose)
// with cs and pres from txs, the engine's mempool (an engine's network),
// or from the core's own pool (one validator: txs nil). The execution
// stays open for a FinalizeBlock of a block with the same hash. The
// proposal's Carry is what the engine must carry beside the body: the
// specs of its job submits in order, the signed transactions of its
// certificates (§8.3 runner_signed), registrations, heartbeats and results
// (SPEC-NOTES C7).
func (v *Validator) ProposeBlock(cs Consensus, pres []byte, txs [][]byte) (*chain.Proposal, error) {
	var p *chain.Proposal
	var err error
	if derr := v.do(func(c *chain.Core) {
		start := v.now()
		p, err = c.Propose(cs, pres, txs)
		err = v.stepErr(c, err)
		v.spent = v.now().Sub(start) // a new open execution
	}); derr != nil {
		return nil, derr
	}
	return p, err
}

// CheckBlock checks a block another validator proposed: it carries a
// signed transaction for each registration, heartbeat, result and
// reconfiguration (chain.Core.CheckSigned, SPEC-NOTES C7; txs are the
// block's decoded node transactions), then it executes (chain.Core.Check;
// the execution stays open for a FinalizeBlock of the same block). The
// verdict is deterministic.
func (v *Validator) CheckBlock(b *chainlog.Block, txs []*chain.Tx) error {
	var err error
	if derr := v.do(func(c *chain.Core) {
		start := v.now()
		if err = c.CheckSigned(b, txs); err == nil {
			err = v.stepErr(c, c.Check(b))
		}
		v.spent = v.now().Sub(start)
	}); derr != nil {
		return derr
	}
	return err
}

// FinalizeBlock executes the decided block b (reusing the open execution
// when b hashes to the block ProposeBlock or CheckBlock executed), learns
// what it carries (carried: a network block's raw submissions; nil on one
// validator: chain.Core.Apply), appends it to the block log and returns it
// with its outputs; the state digest is b.Out.StateDigest. The CIP-2
// commitments it carries are included once it commits: a multi-runner
// reveal the server holds for one is released then, never on the
// commitment's mere admission (§10.3 "MUST NOT submit an early reveal").
// The state is committed by CommitBlock.
func (v *Validator) FinalizeBlock(b *chainlog.Block, carried *chain.Carried) (*chainlog.Block, error) {
	var err error
	if derr := v.do(func(c *chain.Core) {
		start := v.now()
		if carried != nil {
			carried.At = start
		}
		_, err = c.Apply(b, carried)
		if err = v.stepErr(c, err); err == nil {
			v.included = v.includedCommits(carried)
		}
		v.spent += v.now().Sub(start)
	}); derr != nil {
		return nil, derr
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// includedCommits are the CIP-2 commitments among carried's transactions
// (FinalizeBlock), for the sender to release held reveals of at commit;
// none without a transport.
func (v *Validator) includedCommits(carried *chain.Carried) []chain.Assignment {
	if carried == nil || v.srv == nil {
		return nil
	}
	var cs []chain.Assignment
	for _, tx := range carried.Txs {
		if tx.Kind == TxCommit && tx.ChainID == uint64(v.g.ChainID) {
			cs = append(cs, chain.Assignment{JobID: tx.JobID, Runner: tx.From})
		}
	}
	return cs
}

// CommitBlock commits the finalized block and queues its pushes (§10.1:
// only after commit). It returns the height below which the engine may
// prune its blocks (ValidatorConfig.RetainHeight; 0: keep everything).
func (v *Validator) CommitBlock() (retain uint64, err error) {
	if derr := v.do(func(c *chain.Core) {
		retain, err = v.commit(c, v.spent)
		v.spent = 0
	}); derr != nil {
		return 0, derr
	}
	return retain, err
}

// RecoveredJobs are the encoded specs of the journaled jobs no block has
// included yet, recovered at start (chain.Core.Recovered): the engine's
// mempool lost them with the restart, so its driver offers them again
// (Broadcaster.BroadcastJob), each taken back once by AdmitJob.
func (v *Validator) RecoveredJobs() [][]byte {
	var out [][]byte
	_ = v.do(func(c *chain.Core) { out = c.Recovered() })
	return out
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
	view, err := v.registry().At(h)
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
	view, err := v.registry().At(h)
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
