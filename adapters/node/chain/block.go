package chain

import (
	"encoding/binary"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/nodetx"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
)

// What a committed block does beyond its execution: the mempool pruned of
// what it carried, the registry operations and heartbeats it took, and its
// Mode-A certificates counted.

// pruneMempool drops from the mempool the registrations and heartbeats
// committed block b carried (a heartbeat whose nonce is now at or below
// its runner's last_heartbeat, §7.1), and those no block can carry: a registration
// of a registered runner, a heartbeat of a deregistered runner or of a
// signer neither registered nor registering (so hostile signers cannot
// grow it). What a block did not draw (a proposal built elsewhere, before
// the transaction reached it) stays for the next block.
func (c *Core) pruneMempool(b *chainlog.Block) {
	for _, tx := range b.Txs {
		if r := tx.Reconfigure; r != nil && c.mem.reconf != nil && c.mem.reconf.Reconfigure().Epoch <= r.Epoch {
			c.mem.reconf = nil
		}
		if ct := tx.Certificate; ct != nil {
			if w := c.mem.certs[ct.Runner]; w != nil && w.Height <= ct.Height {
				delete(c.mem.certs, ct.Runner)
				delete(c.mem.certRaw, ct.Runner)
			}
		}
	}
	c.mem.regs = slices.DeleteFunc(c.mem.regs, func(tx *Tx) bool {
		_, ok := c.runnerIdx[tx.From]
		return ok
	})
	if len(c.mem.beats) == 0 {
		return
	}
	reg, lastHB := c.x.Store().Registrar(), c.lastHeartbeats()
	for a, tx := range c.mem.beats {
		if last, ok := lastHB(a); ok && tx.Nonce <= last || uint64(b.Height)-min(tx.Nonce, uint64(b.Height)) >= HeartbeatWindow {
			delete(c.mem.beats, a) // counted (or spent), or too old for the next block: it can never count (§7.1)
			continue
		}
		if _, ok := c.runnerIdx[a]; !ok {
			if !slices.ContainsFunc(c.mem.regs, func(tx *Tx) bool { return tx.From == a }) {
				delete(c.mem.beats, a)
			}
			continue
		}
		if r, ok, err := reg.Latest(a); err == nil && ok && r.Health == state.Deregistered {
			delete(c.mem.beats, a)
		}
	}
}

// lastHeartbeats returns a lookup of registered runners' on-chain
// last_heartbeat at the end of the last committed block (§7.1), never a
// staged proposal's; ok is false for an address not registered then, or
// when the registry cannot be read. The registry view is read once.
func (c *Core) lastHeartbeats() func(a cip11.Address) (uint64, bool) {
	var v state.RegistryView
	if h := c.Height(); h > 0 {
		v, _ = c.x.Store().Registry().At(h)
	}
	return func(a cip11.Address) (uint64, bool) {
		if v == nil {
			return 0, false
		}
		r, ok := v.Runner(a)
		return r.LastHeartbeat, ok
	}
}

// registryOps adds genesis registrations (block 1), registrations and
// on-chain heartbeats from the pool m (§7.1). Heartbeats name registry
// indices in ACTIVE_RUNNERS order after this block's registrations.
func (c *Core) registryOps(h uint64, b *chainlog.Block, m *mempool) {
	if h > 1 && len(m.regs) == 0 && len(m.beats) == 0 {
		return
	}
	added := map[cip11.Address]int{} // this block's registrations
	register := func(a cip11.Address, stake cip11.U128, rep chainlog.U64) {
		if _, ok := c.runnerIdx[a]; ok {
			return
		}
		if _, ok := added[a]; ok {
			return
		}
		added[a] = len(c.runnerIdx) + len(added)
		b.Registry = append(b.Registry, chainlog.RegistryOp{Op: chainlog.OpRegister, Address: a, Stake: &stake, ReputationX1e9: &rep})
	}
	if h == 1 {
		for _, r := range c.cfg.Runners {
			register(r.Address, r.Stake, r.ReputationX1e9)
		}
	}
	for _, tx := range m.regs {
		stake := cip11.U128{Hi: binary.BigEndian.Uint64(tx.Payload[:8]), Lo: binary.BigEndian.Uint64(tx.Payload[8:16])}
		register(tx.From, stake, 1_000_000_000)
	}
	reg, lastHB := c.x.Store().Registrar(), c.lastHeartbeats()
	var beats []uint32
	for a, tx := range m.beats { // sorted below
		i, ok := c.runnerIdx[a]
		if !ok {
			if i, ok = added[a]; !ok {
				continue
			}
		}
		if r, ok, err := reg.Latest(a); err != nil || ok && r.Health == state.Deregistered {
			continue
		}
		last, _ := lastHB(a) // 0 for a runner this block registers
		if HeartbeatCounts(tx.Nonce, last, h) != nil {
			continue // signed for a later height (it waits), or one no block can count
		}
		beats = append(beats, uint32(i))
	}
	slices.Sort(beats)
	b.Heartbeats = append(b.Heartbeats, beats...)
}

// countCertificates adds committed block b's §8.3 certificates to the stats.
func (c *Core) countCertificates(b *chainlog.Block) {
	for _, tx := range b.Txs {
		if ct := tx.Certificate; ct != nil {
			c.stats.CertificateReceipts += int64(len(ct.Receipts))
			c.stats.CertificateBytes += int64(8 + len(ct.Receipts)*nodetx.ReceiptLen)
		}
	}
	acc, rej := CertificateOutcomes(b)
	c.stats.CertificatesAccepted += int64(acc)
	c.stats.CertificatesRejected += int64(rej)
}

// CertificateOutcomes counts block b's executed §8.3 certificates by
// result: accepted, and rejected for any reason.
func CertificateOutcomes(b *chainlog.Block) (accepted, rejected int) {
	for _, o := range b.Out.Certificates {
		if o.Result == blockexec.CertAccepted {
			accepted++
		}
	}
	return accepted, len(b.Out.Certificates) - accepted
}

// ModeACoverage is the §8.3 proven-until coverage after the last committed
// block h: how many registered runners have presence_proven_until ≥ h+1
// (would be in the Mode-A PresenceInput of the next block), and how many
// are registered. Without Mode-A state both are as far as known (proven 0).
func (c *Core) ModeACoverage() (proven, registered int, err error) {
	registered = len(c.runnerAt)
	ms, ok := c.x.Store().(store.ModeAState)
	if !ok {
		return 0, registered, nil
	}
	recs, err := ms.PresenceAnchors()
	if err != nil {
		return 0, registered, err
	}
	next := c.Height() + 1
	for _, r := range recs {
		if r.Record.ProvenUntil >= next {
			proven++
		}
	}
	return proven, registered, nil
}
