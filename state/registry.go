package state

import (
	"errors"
	"iter"

	"github.com/cip11/cip11"
)

// Health is the Runner Registry HealthStatus (§3.3 imported terms, CIP-2 §4).
type Health uint8

// HealthStatus values. Only Healthy passes the §7.1 floor.
const (
	Healthy Health = iota
	Unhealthy
	Paused
	Deregistered
)

// Runner is one Runner Registry record as stored at the end of a block.
type Runner struct {
	Address       cip11.Address
	Health        Health
	LastHeartbeat uint64 // height of the runner's last on-chain heartbeat (§7.1)
	// Stake is registration.stake and DelegatedActive is
	// delegation_totals.total_active (zero until CIP-13 delegation is live);
	// their saturating sum is effective_stake (§9.3).
	Stake           cip11.U128
	DelegatedActive cip11.U128
	// ReputationX1e9 is selection_reputation_x1e9(r, T): the lazy-decayed
	// CIP-2 v3 reputation as evaluated at this block, the same value the
	// candidate reputation filter uses (§9.2 point e). The CIP-2 decay itself is
	// owned by the node and arrives here already evaluated.
	ReputationX1e9 uint64
}

// EffectiveStake is registration.stake + delegation_totals.total_active
// (CIP-13 v2 §3.2, §9.3), saturating at 2^128−1 (DECISIONS D3).
func (r Runner) EffectiveStake() cip11.U128 { return r.Stake.AddSat(r.DelegatedActive) }

// ReputationConfig holds the fields of ReputationConfig_at(T) that the CIP-2
// v3 weight reads (§9.3).
type ReputationConfig struct {
	Normalizer    uint64 // REPUTATION_NORMALIZER (x1e9 scale)
	WMinFloorX1e6 uint64 // w_min_floor at Q1e6 (CIP-2 v3: 100_000 = 0.1)
}

// DefaultReputationConfig is a CIP-2 v3 configuration in which
// selection_reputation_x1e9 = 1e9 (reputation 1.0) gives weight factor 1.0
// (REPUTATION_NORMALIZER = 1) and w_min_floor = 0.1. CIP-2 owns the live
// values; see SPEC-NOTES.
func DefaultReputationConfig() ReputationConfig {
	return ReputationConfig{Normalizer: 1, WMinFloorX1e6: 100_000}
}

// RegistryView is the Runner Registry as stored at the end of one block.
// Returned slices are shared with the store: callers must not modify them.
type RegistryView interface {
	// Height is the block whose end state this view shows.
	Height() uint64
	// ActiveRunners is the value under ACTIVE_RUNNERS_KEY: runner addresses in
	// registration append order. Index i is the §7.2 registry index; health
	// changes never reorder, compact or renumber it.
	ActiveRunners() []cip11.Address
	// Runner returns the record for a registered runner.
	Runner(addr cip11.Address) (Runner, bool)
	// ReputationConfig is ReputationConfig_at(Height()).
	ReputationConfig() ReputationConfig
}

// SortedView is an optional [RegistryView] extension for stores that keep
// an address index: the records of every runner in ActiveRunners(), in
// ascending address order (the §9.1 candidate order, DECISIONS D14), so a
// snapshot needs neither a sort nor a lookup per address. The records must
// equal what Runner returns.
type SortedView interface {
	RegistryView
	ByAddress() iter.Seq[Runner]
}

// Registry serves historical registry views. The §9.2 pending pass reads the
// block-S state long after S, so an implementation must retain history at
// least as far back as the oldest live pending record.
type Registry interface {
	// At returns the registry as stored at the end of block h, or an error
	// wrapping ErrUnknownHeight.
	At(h uint64) (RegistryView, error)
}

// Sentinel errors of the registry implementations.
var (
	ErrUnknownHeight     = errors.New("state: height not available")
	ErrAlreadyRegistered = errors.New("state: runner already registered")
	ErrNotRegistered     = errors.New("state: runner not registered")
	ErrHeightRegression  = errors.New("state: write below the last written height")
)
