// Package local implements one node's local, non-consensus view of CIP-11
// connectivity: a validator's local presence (§6.3–§6.5, §7.4, §10.6,
// §11.1) and the runner-side schedules (§6.6, §10.3, §11.3).
//
// # Local presence (§6.3–§6.5, §7.4, §10.6, §11.1)
//
// [Presence] is a pure state machine over height-stamped events (pings,
// backpressure, connection open/close, capability deltas, dispatch
// outcomes) that answers the present set, push routing, the accepting_new
// bit and the proposer's PresenceInputV1 for the next block
// ([Presence.ProposerInput], encoded by package presence). A restart starts
// empty (§8.1). [AckTimedOut] classifies a push without a framed answer
// within ACK_TIMEOUT_BLOCKS as a [HardFailure].
//
// # Runner schedules (§6.6, §10.3, §11.3)
//
// [HeartbeatPhase] staggers on-chain heartbeats per runner and
// [HeartbeatSchedule] adds the emergency refresh; [ReconnectDelayMillis] is
// the reconnect backoff with injected jitter; [ResultTxRetry] schedules
// result-transaction rebroadcast.
//
// The package is pure: no I/O, no clock, no goroutines, no globals besides
// its sentinel errors.
package local
