package cip11

import (
	"errors"
	"fmt"
	"math/bits"
)

// Params carries every §13 system constant and the five §13 protocol flags
// (§14 phases). All are governance-adjustable (CIP-12); a node passes the
// values in force at the block being executed. Use [DefaultParams] and
// [Params.Validate].
type Params struct {
	// §5.1 connectivity subsets.
	MinSubset uint32 // MIN_SUBSET: floor on k (k = 1 when |V| = 1)
	MaxSubset uint32 // MAX_SUBSET: ceiling on k in default Mode B
	KHardMin  uint32 // K_HARD_MIN: minimum effective_k for Mode A (§8.4); tunable upward only

	// MinStakeCBYWei is MIN_STAKE_CBY_WEI, the CIP-2 registration minimum
	// (genesis-configured; used only in admission context, never as a weight floor).
	MinStakeCBYWei U128

	// §10.3 result-transaction self-submit fallback.
	ResultTxInclusionGraceBlocks      uint64 // RESULT_TX_INCLUSION_GRACE_BLOCKS
	ResultTxRebroadcastIntervalBlocks uint64 // RESULT_TX_REBROADCAST_INTERVAL_BLOCKS

	// §6.3, §7.1, §10.6 liveness.
	HeartbeatBlocks        uint64 // HEARTBEAT_BLOCKS: QUIC ping cadence
	PresenceTimeoutBlocks  uint64 // PRESENCE_TIMEOUT_BLOCKS: local-presence expiry
	HeartbeatTimeoutBlocks uint64 // HEARTBEAT_TIMEOUT_BLOCKS: on-chain floor staleness
	AckTimeoutBlocks       uint64 // ACK_TIMEOUT_BLOCKS: HardFailure threshold

	// §9.3–§9.4 MRU.
	MRUTTLBlocks        uint64 // MRU_TTL_BLOCKS
	MRUWeightMultiplier uint64 // MRU_WEIGHT_MULTIPLIER
	MRUActivationHeight uint64 // MRU_ACTIVATION_HEIGHT: below it MRU is neither read nor written (§9.4)

	// §9.2 commit-then-reveal delay, counted in consensus views (not blocks).
	SelectionSeedDelayViews uint64 // SELECTION_SEED_DELAY_VIEWS; tunable upward only

	// §12.1 frame ceiling.
	MaxFrameBytes uint32 // MAX_FRAME_BYTES

	// §8.3–§8.4 Mode A.
	THard                              uint32 // t_hard: certificate receipt threshold
	TRoute                             uint32 // t_route: reserved, inert (must be 1)
	ReceiptFreshnessBlocks             uint64 // RECEIPT_FRESHNESS_BLOCKS
	PresenceProofTTLBlocks             uint64 // PRESENCE_PROOF_TTL_BLOCKS
	PresenceCertBaseCycles             uint64 // PRESENCE_CERT_BASE_CYCLES
	PresenceReceiptPrecheckCycles      uint64 // PRESENCE_RECEIPT_PRECHECK_CYCLES
	PresenceReceiptEd25519VerifyCycles uint64 // PRESENCE_RECEIPT_ED25519_VERIFY_CYCLES

	// §5.3 reconfiguration overlap.
	OverlapBlocks uint64 // OVERLAP_BLOCKS

	// §13 protocol flags, all default false (§14).
	TransportEnabled           bool // CIP11_TRANSPORT_ENABLED (Phase 1)
	PresenceShadowEnabled      bool // CIP11_PRESENCE_SHADOW_ENABLED (Phase 1 telemetry)
	PresentFirstEnabled        bool // CIP11_PRESENT_FIRST_ENABLED (Phase 2: CIP-11 selection active)
	PollDisabled               bool // CIP11_POLL_DISABLED (Phase 3)
	PresenceHardExcludeEnabled bool // PRESENCE_HARD_EXCLUDE_ENABLED (Mode A request, §8.4 guard)
}

// Launch floors that governance may only raise (§13).
const (
	launchKHardMin                = 20
	launchSelectionSeedDelayViews = 3
	maxFrameBytesDefault          = 2 << 20
)

// DefaultParams returns the §13 defaults with every flag off. t_hard defaults
// to the honest-majority threshold of K_HARD_MIN (floor(20/2)+1 = 11);
// MRU_ACTIVATION_HEIGHT ships as u64::MAX (§9.4: dormant).
func DefaultParams() Params {
	return Params{
		MinSubset: 3, MaxSubset: 8, KHardMin: launchKHardMin,
		ResultTxInclusionGraceBlocks: 2, ResultTxRebroadcastIntervalBlocks: 2,
		HeartbeatBlocks: 1, PresenceTimeoutBlocks: 15, HeartbeatTimeoutBlocks: 100, AckTimeoutBlocks: 15,
		MRUTTLBlocks: 1280, MRUWeightMultiplier: 4, MRUActivationHeight: ^uint64(0),
		SelectionSeedDelayViews: launchSelectionSeedDelayViews,
		MaxFrameBytes:           maxFrameBytesDefault,
		THard:                   launchKHardMin/2 + 1, TRoute: 1,
		ReceiptFreshnessBlocks: 30, PresenceProofTTLBlocks: 60,
		PresenceCertBaseCycles: 20_000, PresenceReceiptPrecheckCycles: 1_000, PresenceReceiptEd25519VerifyCycles: 5_000,
		OverlapBlocks: 160,
	}
}

// ErrInvalidParams is wrapped by every [Params.Validate] failure.
var ErrInvalidParams = errors.New("cip11: invalid params")

// Validate checks the relations §13 states or implies. Every failure wraps
// [ErrInvalidParams] and names the constant.
func (p Params) Validate() error {
	checks := []struct {
		bad  bool
		what string
	}{
		{p.MinSubset == 0, "MIN_SUBSET must be ≥ 1"},
		{p.MaxSubset < p.MinSubset, "MAX_SUBSET must be ≥ MIN_SUBSET"},
		{p.KHardMin < launchKHardMin, "K_HARD_MIN may only be raised above 20 (§13; lowering needs a successor CIP)"},
		{p.ResultTxRebroadcastIntervalBlocks == 0, "RESULT_TX_REBROADCAST_INTERVAL_BLOCKS must be ≥ 1"},
		{p.HeartbeatBlocks == 0, "HEARTBEAT_BLOCKS must be ≥ 1"},
		{p.PresenceTimeoutBlocks < p.HeartbeatBlocks, "PRESENCE_TIMEOUT_BLOCKS must be ≥ HEARTBEAT_BLOCKS"},
		{p.HeartbeatTimeoutBlocks == 0, "HEARTBEAT_TIMEOUT_BLOCKS must be ≥ 1"},
		{p.AckTimeoutBlocks == 0, "ACK_TIMEOUT_BLOCKS must be ≥ 1"},
		{p.MRUWeightMultiplier == 0, "MRU_WEIGHT_MULTIPLIER must be ≥ 1"},
		{p.SelectionSeedDelayViews < launchSelectionSeedDelayViews, "SELECTION_SEED_DELAY_VIEWS may only be raised above 3 (§9.2)"},
		{p.MaxFrameBytes < 64, "MAX_FRAME_BYTES must hold a frame (≥ 64)"},
		{p.TRoute != 1, "t_route is reserved and inert: must be 1"},
		{p.THard == 0, "t_hard must be ≥ 1"},
		{p.ReceiptFreshnessBlocks == 0, "RECEIPT_FRESHNESS_BLOCKS must be ≥ 1"},
		{p.PresenceProofTTLBlocks == 0, "PRESENCE_PROOF_TTL_BLOCKS must be ≥ 1"},
		{p.PollDisabled && !p.TransportEnabled, "CIP11_POLL_DISABLED without CIP11_TRANSPORT_ENABLED leaves no delivery path (§14)"},
	}
	for _, c := range checks {
		if c.bad {
			return fmt.Errorf("%w: %s", ErrInvalidParams, c.what)
		}
	}
	return nil
}

// ModeAEffective reports whether Mode A hard-exclude is in force: the flag
// and the §8.4 K_HARD_MIN activation guard (§9.2: effective_k ≥ K_HARD_MIN and
// t_hard ≥ floor(effective_k/2)+1). The flag alone is not sufficient, and
// with CIP11_PRESENT_FIRST_ENABLED off there is no Mode A at all (D24: the
// flag turns off the whole §13 bundle in live selection).
func (p Params) ModeAEffective(effectiveK uint32) bool {
	return p.PresentFirstEnabled && p.PresenceHardExcludeEnabled && effectiveK >= p.KHardMin && p.THard >= effectiveK/2+1
}

// MRUActive reports whether MRU is read and written at height h (§9.4 gate).
func (p Params) MRUActive(h uint64) bool { return h >= p.MRUActivationHeight }

// SubsetSize is §5.1 k = min(|V|, clamp(ceil(log2(|V|)) + 1, MIN_SUBSET,
// MAX_SUBSET)) for a validator set of n participants (§5.2); it is also
// §8.4 effective_k. It is 0 for n ≤ 0.
func (p Params) SubsetSize(n int) int {
	if n <= 0 {
		return 0
	}
	ceilLog2 := bits.Len64(uint64(n) - 1) // ceil(log2 n) for n ≥ 1
	c := max(uint64(p.MinSubset), min(uint64(ceilLog2)+1, uint64(p.MaxSubset)))
	return int(min(uint64(n), c))
}
