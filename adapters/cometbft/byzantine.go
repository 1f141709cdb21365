package cometbft

import (
	"slices"

	abci "github.com/cometbft/cometbft/abci/types"
)

// misbehavior is a fault one validator's App commits on purpose: the hook
// of the Byzantine-validator tests (issue 27 §4; the shape of CometBFT's
// e2e "misbehaviors", a per-node setting the test application consults at
// each ABCI call). Only tests set it (App.byz, through export_test.go);
// nothing in the production path does, and with none set every call site
// is a no-op, so an honest App behaves exactly as without the hook.
//
// Each function is optional and decides per height; it is called from the
// ABCI connection that makes the call, so it must be safe for concurrent
// use with the test that owns it.
type misbehavior struct {
	// extension replaces the vote extension ExtendVote(h) returns; partial
	// is the honest one (this validator's partial of Round(E, h), D31).
	extension func(h uint64, partial []byte) []byte
	// presence replaces the PresenceInput the proposer of h builds its
	// block with (§7.2, §8.2); pres is the honest one (local, or united
	// with the gossip), nil when there is none.
	presence func(h uint64, pres []byte) []byte
	// proposal replaces the proposal's transactions (header, body, raw
	// submissions; D32) after the block is built and laid out.
	proposal func(h uint64, txs [][]byte) [][]byte
	// snapshots replaces the snapshots ListSnapshots serves (state sync);
	// l is the honest list.
	snapshots func(l []*abci.Snapshot) []*abci.Snapshot
	// chunk replaces chunk i of the snapshot at height h that
	// LoadSnapshotChunk serves; c is the honest one (nil: none).
	chunk func(h uint64, i uint32, c []byte) []byte
}

// byzSnapshots applies the misbehaviour's snapshot list, if any.
func (a *App) byzSnapshots(l []*abci.Snapshot) []*abci.Snapshot {
	if m := a.byz.Load(); m != nil && m.snapshots != nil {
		return m.snapshots(l)
	}
	return l
}

// byzChunk applies the misbehaviour's chunk, if any.
func (a *App) byzChunk(h uint64, i uint32, c []byte) []byte {
	if m := a.byz.Load(); m != nil && m.chunk != nil {
		return m.chunk(h, i, c)
	}
	return c
}

// byzExtension applies the misbehaviour's extension, if any.
func (a *App) byzExtension(h uint64, ext []byte) []byte {
	if m := a.byz.Load(); m != nil && m.extension != nil {
		return m.extension(h, ext)
	}
	return ext
}

// byzPresence applies the misbehaviour's presence, if any.
func (a *App) byzPresence(h uint64, pres []byte) []byte {
	if m := a.byz.Load(); m != nil && m.presence != nil {
		return m.presence(h, pres)
	}
	return pres
}

// byzProposal applies the misbehaviour's proposal, if any; changed reports
// whether the transactions differ from txs (the built block then no longer
// describes them).
func (a *App) byzProposal(h uint64, txs [][]byte) (out [][]byte, changed bool) {
	m := a.byz.Load()
	if m == nil || m.proposal == nil {
		return txs, false
	}
	out = m.proposal(h, slices.Clone(txs))
	return out, !slices.EqualFunc(out, txs, func(x, y []byte) bool { return string(x) == string(y) })
}

// proposeAltered records a proposal a misbehaviour altered and returns it:
// this validator accepts its own proposal (a Byzantine proposer votes for
// it) and, should it be decided, executes it from its transactions like
// another's (the block it built no longer describes them).
func (a *App) proposeAltered(h uint64, txs [][]byte) [][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.proposed = nil
	if len(txs) >= 2 {
		a.proposed = &proposal{height: h, hdr: txs[0], body: txs[1]}
	}
	return txs
}
