package chain

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
)

// ErrUnsigned marks a network block whose registration, on-chain
// heartbeat, CIP-2 result (ResultSubmit, Verified) or reconfiguration has
// no transaction signed by its runner (or the devnet admin) among the
// block's submissions, or a registry change no transaction makes
// (SPEC-NOTES C7): a proposer cannot register a runner, set its stake, keep
// it above the §7.1 floor, deliver or verify a result on its own authority.
var ErrUnsigned = errors.New("chain: block content without its signed transaction")

// Signed returns the signed transactions behind block b's registrations,
// heartbeats, results and reconfiguration, as the pool the proposal drew
// from and the result verifier hold them, for the block to carry (genesis
// registrations in block 1 have none).
func (c *Core) Signed(b *chainlog.Block) [][]byte {
	var out [][]byte
	m := c.pooled()
	for _, op := range b.Registry {
		if op.Op != chainlog.OpRegister || (b.Height == 1 && c.genesisRunner(op) != nil) {
			continue
		}
		for _, tx := range m.regs {
			if tx.From == op.Address {
				out = append(out, tx.Bytes())
				break
			}
		}
	}
	for _, i := range b.Heartbeats {
		if a, ok := c.addressAt(b, i); ok && m.beats[a] != nil {
			out = append(out, m.beats[a].Bytes())
		}
	}
	for _, tx := range b.Txs {
		if r := tx.Reconfigure; r != nil && m.reconf != nil && m.reconf.Reconfigure().Epoch == r.Epoch {
			out = append(out, m.reconf.Bytes())
		}
		var t *trackedJob
		var members []cip11.Address
		switch {
		case tx.ResultSubmit != nil:
			t, members = c.jobs[tx.ResultSubmit.JobID], []cip11.Address{tx.ResultSubmit.Runner}
		case tx.Verified != nil:
			if t = c.jobs[tx.Verified.JobID]; t != nil {
				members = t.committee
			}
		}
		if t == nil {
			continue
		}
		for _, r := range members { // repeats are dropped by the layout
			if t.runners > 1 && t.commitTx[r] != nil {
				out = append(out, t.commitTx[r])
			}
			if t.revealTx[r] != nil {
				out = append(out, t.revealTx[r])
			}
		}
	}
	return out
}

// CheckSigned is a verifier's check of block b (the next height) against
// the node transactions it carries, decoded and signature-checked
// (blocklayout.Proposal.Txs): every registry change is a registration as
// this core makes them (stake, reputation 1e9, nothing else) by a
// TxRegister of that address with that stake, or in block 1 a genesis
// runner as the genesis lists it; every heartbeat index names a runner
// (registered before b or by b) with a TxHeartbeat that b can count
// (HeartbeatCounts: signed at most HeartbeatWindow blocks before b, not
// after it, and after the runner's on-chain last_heartbeat, so that a
// heartbeat transaction counts once, §7.1, SPEC-NOTES C7). Errors wrap
// ErrUnsigned.
func (c *Core) CheckSigned(b *chainlog.Block, txs []*Tx) error {
	h := uint64(b.Height)
	regs, beats := map[cip11.Address]*Tx{}, map[cip11.Address][]uint64{} // beats: each signer's heartbeat nonces
	var reconfs [][]byte                                                 // the admin's signed reconfiguration payloads
	type jr struct {
		job    cip11.Hash
		runner cip11.Address
	}
	commits, reveals := map[jr]cip11.Hash{}, map[jr]*Tx{}
	for _, tx := range txs {
		switch tx.Kind {
		case TxCommit:
			commits[jr{tx.JobID, tx.From}] = cip11.Hash(tx.Payload)
		case TxReveal:
			reveals[jr{tx.JobID, tx.From}] = tx
		case TxReconfigure:
			if c.cfg.Admin != nil && tx.From == *c.cfg.Admin {
				reconfs = append(reconfs, tx.Payload)
			}
		case TxRegister:
			regs[tx.From] = tx
		case TxHeartbeat:
			beats[tx.From] = append(beats[tx.From], tx.Nonce)
		}
	}
	for j, op := range b.Registry {
		if op.Op != chainlog.OpRegister || op.Stake == nil || op.ReputationX1e9 == nil || op.Health != nil || op.DelegatedActive != nil || op.LastHeartbeat != nil {
			return fmt.Errorf("%w: registry[%d] (%s %s) is not a registration a transaction makes", ErrUnsigned, j, op.Op, op.Address)
		}
		if h == 1 {
			if g := c.genesisRunner(op); g != nil {
				if g.Stake != *op.Stake || g.ReputationX1e9 != *op.ReputationX1e9 {
					return fmt.Errorf("%w: registry[%d]: genesis runner %s with another stake or reputation", ErrUnsigned, j, op.Address)
				}
				continue
			}
		}
		tx := regs[op.Address]
		if tx == nil {
			return fmt.Errorf("%w: registry[%d]: no register transaction of %s", ErrUnsigned, j, op.Address)
		}
		stake := cip11.U128{Hi: binary.BigEndian.Uint64(tx.Payload[:8]), Lo: binary.BigEndian.Uint64(tx.Payload[8:16])}
		if stake != *op.Stake || *op.ReputationX1e9 != 1_000_000_000 {
			return fmt.Errorf("%w: registry[%d]: %s registers with stake %s, its transaction says %s", ErrUnsigned, j, op.Address, op.Stake, stake)
		}
	}
	// result is runner's revealed result for job, from the block's signed
	// reveal (and, for M > 1, the commitment it opens).
	result := func(t *trackedJob, job cip11.Hash, runner cip11.Address) (cip11.Hash, error) {
		rv := reveals[jr{job, runner}]
		if rv == nil {
			return cip11.Hash{}, fmt.Errorf("no reveal transaction of %s for job %s", runner, job)
		}
		res, salt, _, ok := SplitReveal(rv.Payload)
		if !ok {
			return cip11.Hash{}, fmt.Errorf("reveal of %s for job %s: %w", runner, job, CheckReveal(rv.Payload))
		}
		if t != nil && t.runners > 1 {
			if cm, ok := commits[jr{job, runner}]; !ok || Commitment(res, salt) != cm {
				return cip11.Hash{}, fmt.Errorf("no commit transaction of %s for job %s that its reveal opens (CIP-2 commit-reveal)", runner, job)
			}
		}
		return res, nil
	}
	for j, tx := range b.Txs {
		switch {
		case tx.ResultSubmit != nil:
			rs := tx.ResultSubmit
			if _, err := result(c.jobs[rs.JobID], rs.JobID, rs.Runner); err != nil {
				return fmt.Errorf("%w: txs[%d] result_submit: %w", ErrUnsigned, j, err)
			}
		case tx.Verified != nil:
			if err := c.checkVerified(tx.Verified, result); err != nil {
				return fmt.Errorf("%w: txs[%d] verified: %w", ErrUnsigned, j, err)
			}
		}
		r := tx.Reconfigure
		if r == nil {
			continue
		}
		enc, err := chainlog.EncodeReconfigure(r)
		if err != nil || !slices.ContainsFunc(reconfs, func(p []byte) bool { return bytes.Equal(p, enc) }) {
			return fmt.Errorf("%w: txs[%d]: a reconfiguration of epoch %d without the devnet admin's transaction (SPEC-NOTES C11)", ErrUnsigned, j, r.Epoch)
		}
	}
	lastHB := c.lastHeartbeats()
	for k, i := range b.Heartbeats {
		a, ok := c.addressAt(b, i)
		if !ok {
			return fmt.Errorf("%w: heartbeats[%d]: index %d names no runner", ErrUnsigned, k, i)
		}
		last, _ := lastHB(a) // 0 for a runner b registers
		var why error = errors.New("none carried")
		for _, n := range beats[a] {
			if why = HeartbeatCounts(n, last, h); why == nil {
				break
			}
		}
		if why != nil {
			return fmt.Errorf("%w: heartbeats[%d]: no heartbeat transaction of %s that block %d can count (§7.1: nonce in (last_heartbeat %d, %d], at most %d blocks old): %w",
				ErrUnsigned, k, a, h, last, h, HeartbeatWindow, why)
		}
	}
	return nil
}

// checkVerified checks a Verified against the committee's signed reveals
// the block carries (result gives each member's): every member of the job's
// committee (as this core tracks it from committed blocks) revealed, the
// matching list is exactly the members whose result is the majority's, in
// committee order (majority: ties to the earliest member's result), and
// nobody is slashed or left unrewarded (the devnet verifier never does).
func (c *Core) checkVerified(v *chainlog.Verified, result func(*trackedJob, cip11.Hash, cip11.Address) (cip11.Hash, error)) error {
	t := c.jobs[v.JobID]
	if t == nil || len(t.committee) == 0 {
		return fmt.Errorf("job %s has no committee here", v.JobID)
	}
	if len(v.RunnersToSlash) > 0 || len(v.RunnersUnrewarded) > 0 {
		return fmt.Errorf("job %s: runners to slash or unrewarded, which no result transaction says", v.JobID)
	}
	got := map[cip11.Address]cip11.Hash{}
	for _, r := range t.committee {
		res, err := result(t, v.JobID, r)
		if err != nil {
			return err
		}
		got[r] = res
	}
	maj := majority(t.committee, got)
	var want []cip11.Address
	for _, r := range t.committee {
		if got[r] == maj {
			want = append(want, r)
		}
	}
	if !slices.Equal(want, v.Matching) {
		return fmt.Errorf("job %s: matching %v, the carried reveals make it %v", v.JobID, v.Matching, want)
	}
	return nil
}

// genesisRunner is the genesis entry op registers, if any.
func (c *Core) genesisRunner(op chainlog.RegistryOp) *GenesisRunner {
	for i := range c.cfg.Runners {
		if c.cfg.Runners[i].Address == op.Address {
			return &c.cfg.Runners[i]
		}
	}
	return nil
}

// addressAt is the runner at registry index i after block b's
// registrations (b the next block).
func (c *Core) addressAt(b *chainlog.Block, i uint32) (cip11.Address, bool) {
	if int(i) < len(c.runnerAt) {
		return c.runnerAt[i], true
	}
	j := int(i) - len(c.runnerAt)
	for _, op := range b.Registry {
		if op.Op != chainlog.OpRegister {
			continue
		}
		if _, done := c.runnerIdx[op.Address]; done {
			continue
		}
		if j == 0 {
			return op.Address, true
		}
		j--
	}
	return cip11.Address{}, false
}
