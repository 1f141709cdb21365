package local

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/cip11/cip11"
	"github.com/holiman/uint256"
)

// Runner-side schedule errors (§6.6, §11.3).
var (
	// ErrZeroCadence: effective_cadence_blocks is 0, so no phase exists.
	ErrZeroCadence = errors.New("local: effective_cadence_blocks is 0")
	// ErrCadenceTooLong: effective_cadence_blocks exceeds
	// HEARTBEAT_TIMEOUT_BLOCKS − safety_margin_blocks (§6.6), or the margin
	// leaves no room at all.
	ErrCadenceTooLong = errors.New("local: effective_cadence_blocks exceeds HEARTBEAT_TIMEOUT_BLOCKS − safety_margin_blocks")
)

// HeartbeatPhase is the §6.6 per-runner on-chain heartbeat phase:
// keccak256(chain_id ‖ runner_address) mod effective_cadence_blocks, with
// chain_id as 8 bytes big-endian (DECISIONS D2), the 20-byte address, and
// the digest read as a 256-bit big-endian integer.
func HeartbeatPhase(chainID uint64, runner cip11.Address, cadence uint64) (uint64, error) {
	if cadence == 0 {
		return 0, ErrZeroCadence
	}
	var cid [8]byte
	binary.BigEndian.PutUint64(cid[:], chainID)
	d := cip11.Keccak256(cid[:], runner[:])
	var x uint256.Int
	x.SetBytes32(d[:])
	return x.Mod(&x, uint256.NewInt(cadence)).Uint64(), nil
}

// HeartbeatSchedule is a runner's §6.6 on-chain heartbeat schedule:
// steady-state submissions in its own phase bucket, and an emergency
// refresh before the floor would go stale. Build it with
// [NewHeartbeatSchedule].
type HeartbeatSchedule struct {
	Phase   uint64 // runner-specific phase in [0, Cadence)
	Cadence uint64 // effective_cadence_blocks
	// Emergency is HEARTBEAT_TIMEOUT_BLOCKS − safety_margin_blocks: once
	// h − last_heartbeat reaches it, a refresh is due whatever the phase.
	Emergency uint64
}

// NewHeartbeatSchedule derives runner's schedule on chainID (§6.6). It
// requires 1 ≤ cadence ≤ HEARTBEAT_TIMEOUT_BLOCKS − safetyMargin.
func NewHeartbeatSchedule(chainID uint64, runner cip11.Address, cadence, safetyMargin uint64, p cip11.Params) (HeartbeatSchedule, error) {
	if safetyMargin >= p.HeartbeatTimeoutBlocks || cadence > p.HeartbeatTimeoutBlocks-safetyMargin {
		return HeartbeatSchedule{}, fmt.Errorf("%w: cadence %d, timeout %d, margin %d", ErrCadenceTooLong, cadence, p.HeartbeatTimeoutBlocks, safetyMargin)
	}
	phase, err := HeartbeatPhase(chainID, runner, cadence)
	if err != nil {
		return HeartbeatSchedule{}, err
	}
	return HeartbeatSchedule{Phase: phase, Cadence: cadence, Emergency: p.HeartbeatTimeoutBlocks - safetyMargin}, nil
}

// NextDue is the first height ≥ h (and > lastHeartbeat) at which the runner
// submits its next on-chain heartbeat: the earlier of its next phase bucket
// (height ≡ Phase mod Cadence) and the emergency refresh at lastHeartbeat +
// Emergency (§6.6, §7.1). The caller submits at that height and, once the
// heartbeat is included, recomputes with the new last_heartbeat.
func (s HeartbeatSchedule) NextDue(h, lastHeartbeat uint64) uint64 {
	from := max(h, addSat(lastHeartbeat, 1))
	r := from % s.Cadence
	ahead := s.Phase - r // blocks to the next bucket, without wrapping for a cadence above 2^63
	if s.Phase < r {
		ahead = s.Phase + (s.Cadence - r)
	}
	bucket := from + ahead
	if bucket < from { // wrapped past 2^64−1
		bucket = ^uint64(0)
	}
	return max(from, min(bucket, addSat(lastHeartbeat, s.Emergency)))
}

// Overdue reports whether a refresh at h is the emergency refresh proper:
// h − lastHeartbeat has reached Emergency and h is not the steady
// schedule's own bucket. With effective_cadence_blocks equal to the
// emergency bound (the usual choice) a runner whose last heartbeat was in
// its bucket is due again exactly at lastHeartbeat + Emergency, in its
// bucket: on schedule, not an emergency. An emergency is a heartbeat that
// did not reach the chain in time (or a cadence longer than the bound).
func (s HeartbeatSchedule) Overdue(h, lastHeartbeat uint64) bool {
	due := addSat(lastHeartbeat, s.Emergency)
	if h < due {
		return false
	}
	return h != due || h%s.Cadence != s.Phase
}

// RandSource is the injected source of §11.3 jitter: uniform 64-bit values
// (math/rand/v2.Source satisfies it); the package never draws its own.
type RandSource interface {
	Uint64() uint64
}

// Reconnect backoff constants (§11.3), in milliseconds.
const (
	ReconnectBaseMillis = 100    // 100 ms
	ReconnectCapMillis  = 30_000 // 30 s
)

// ReconnectDelayMillis is the §11.3 delay before reconnect attempt
// `attempt` (0-based): base = min(100 ms × 2^attempt, 30 s), then a uniform
// jitter of ±25% of base drawn from r, and the result capped at 30 s again
// so that no delay exceeds the cap.
func ReconnectDelayMillis(attempt uint32, r RandSource) uint64 {
	base := uint64(ReconnectCapMillis)
	if attempt < 16 { // 100 ms × 2^16 is far past the cap
		base = min(base, uint64(ReconnectBaseMillis)<<attempt)
	}
	spread := base / 4
	off, _ := bits.Mul64(r.Uint64(), 2*spread+1) // uniform in [0, 2·spread]
	return min(base-spread+off, ReconnectCapMillis)
}

// ResultTxRetry is the runner's §10.3 self-submit/rebroadcast schedule for
// one retained result-phase transaction: first at sent +
// RESULT_TX_INCLUSION_GRACE_BLOCKS if not yet included, then every
// RESULT_TX_REBROADCAST_INTERVAL_BLOCKS, never before the reveal window
// opens (for a JobResultSubmit reveal) and never after the transaction is
// included or the job terminal. Heights are finalized block heights.
type ResultTxRetry struct {
	next        uint64
	revealOpens uint64
	interval    uint64
	done        bool
}

// NewResultTxRetry starts the §10.3 schedule for a frame sent at height sent.
// revealOpens is the first height of the CIP-2 reveal window for a reveal
// (0 for a commitment or when no window applies).
func NewResultTxRetry(sent, revealOpens uint64, p cip11.Params) *ResultTxRetry {
	return &ResultTxRetry{
		next:        max(addSat(sent, p.ResultTxInclusionGraceBlocks), revealOpens),
		revealOpens: revealOpens, interval: max(p.ResultTxRebroadcastIntervalBlocks, 1),
	}
}

// Due reports whether the runner rebroadcasts the retained transaction at h (§10.3).
func (r *ResultTxRetry) Due(h uint64) bool { return !r.done && h >= r.next && h >= r.revealOpens }

// Rebroadcast records a rebroadcast at h; the next is one
// RESULT_TX_REBROADCAST_INTERVAL_BLOCKS later (§10.3).
func (r *ResultTxRetry) Rebroadcast(h uint64) { r.next = max(addSat(h, r.interval), r.revealOpens) }

// Stop ends the schedule: inclusion observed, job terminal, or the
// instruction no longer valid (§10.3).
func (r *ResultTxRetry) Stop() { r.done = true }
