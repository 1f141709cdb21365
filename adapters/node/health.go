package node

import (
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/job"
)

// DefaultStallBlocks is ValidatorConfig.StallBlocks's default: a
// validator whose height has not moved for 8 nominal block intervals is
// stalled (4.8 s on a network of the default CometBFT timeouts, 8 s on a
// single validator at the default 1 s block time).
const DefaultStallBlocks = 8

// ConsensusFacts are an external consensus engine's facts for GET
// /status (adapters/cometbft).
type ConsensusFacts struct {
	// Height and Time are the engine's latest block and its header time.
	Height uint64
	Time   time.Time
	// CatchingUp: the engine is block-syncing from its peers.
	CatchingUp bool
	// Peers is the number of connected consensus peers.
	Peers int
	// Validators is the active set with each member's last signed height.
	Validators []httpapi.ValidatorHealth
	// Interval is the nominal block interval, the stall unit.
	Interval time.Duration
}

// ConsensusReporter is a Broadcaster that reports its facts (Status).
type ConsensusReporter interface {
	ConsensusFacts() ConsensusFacts
}

// PresenceReporter is a Broadcaster that reports the runners peer
// validators see present (presence gossip, §8.2; the dashboard, display
// only): registry indices over registry(h).
type PresenceReporter interface {
	PeerPresent() (indices []int, h uint64)
}

// consensusFacts are the engine's facts (zero without a reporting one).
func (v *Validator) consensusFacts() (ConsensusFacts, bool) {
	if r, ok := v.cfg.Broadcaster.(ConsensusReporter); ok {
		return r.ConsensusFacts(), true
	}
	return ConsensusFacts{}, false
}

// addHealth fills st's health fields (Status): last is the newest block
// this process applied (ok false: none since it started), facts the
// engine's. The height's last move is when this validator applied its
// newest block, or its start; stalled is that age beyond StallBlocks
// nominal intervals (BlockTime, or the engine's).
func (v *Validator) addHealth(st *httpapi.Status, now time.Time, last job.BlockSummary, ok bool, facts ConsensusFacts, engine bool) {
	d := &v.dash
	d.mu.Lock()
	moved := d.started
	var logged job.BlockSummary
	if n := len(d.history); n > 0 {
		logged = d.history[n-1]
	}
	d.mu.Unlock()
	interval := v.cfg.BlockTime
	st.LatestBlockHeight, st.EarliestBlockHeight = st.Height, v.EarliestHeight()
	switch {
	case ok:
		moved, st.LatestBlockTime = last.Time, last.Time
	case logged.Height == st.Height:
		st.LatestBlockTime = logged.Time
	}
	if engine {
		interval = facts.Interval
		st.LatestBlockHeight, st.LatestBlockTime = facts.Height, facts.Time
		st.CatchingUp, st.Peers, st.Validators = facts.CatchingUp, facts.Peers, facts.Validators
	}
	stallAfter := time.Duration(v.cfg.StallBlocks) * interval
	age := max(0, now.Sub(moved))
	st.LastBlockAgeMillis, st.StallAfterMillis = age.Milliseconds(), stallAfter.Milliseconds()
	st.Stalled = interval > 0 && age > stallAfter
	if err := v.Err(); err != nil {
		st.Failed = err.Error()
	}
}

// peerPresent marks the dashboard rows of runners a peer validator
// reports present (presence gossip) that are not connected here.
func (v *Validator) peerPresent(rows []httpapi.RunnerRow) {
	r, ok := v.cfg.Broadcaster.(PresenceReporter)
	if !ok {
		return
	}
	indices, h := r.PeerPresent()
	if len(indices) == 0 || h == 0 {
		return
	}
	view, err := v.registry().At(h)
	if err != nil {
		return
	}
	active := view.ActiveRunners()
	elsewhere := make(map[cip11.Address]bool, len(indices))
	for _, i := range indices {
		if i >= 0 && i < len(active) {
			elsewhere[active[i]] = true
		}
	}
	for i := range rows {
		rows[i].Elsewhere = !rows[i].Connected && elsewhere[rows[i].Address]
	}
}
