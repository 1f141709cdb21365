package quic

import (
	"errors"
	"fmt"

	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// Configuration errors: a constructor given a missing dependency.
var (
	ErrNilKey        = errors.New("quic: nil signing key")
	ErrNilDependency = errors.New("quic: nil dependency")
)

// Transport-level errors. Those that refuse a peer map to a §12.5 Goodbye
// reason through [GoodbyeReason].
var (
	// ErrRunnerNotRegistered: the runner's derived address has no
	// RunnerRegistration, or it is Deregistered (§6.2 admission). Closed with
	// Goodbye{AuthFailed}: the claimed identity does not resolve.
	ErrRunnerNotRegistered = errors.New("quic: runner is not registered or is deregistered")
	// ErrRateLimited: the source sent unauthenticated Hellos faster than the
	// per-source limit (§6.2). Goodbye{RateLimited}.
	ErrRateLimited = errors.New("quic: unauthenticated Hello rate limit exceeded")
	// ErrUnexpectedFrame: a frame that is valid on the wire but not allowed at
	// this point of the stream (for example a ping before HelloAck, or a
	// JobAssignment on the control stream). Goodbye{ProtocolError}.
	ErrUnexpectedFrame = errors.New("quic: frame not expected here")
	// ErrAckRejected: the runner answered a push with a verified
	// JobAck Reject(reason) (§10.2); the push is a SoftFailure whose
	// Outcome.Err names the reason and the ack's reason text.
	ErrAckRejected = errors.New("quic: runner rejected the job")
	// ErrHelloAckMismatch: a HelloAck does not repeat its sender's Hello
	// fields (all but block_height). D28: Goodbye{ProtocolError}.
	ErrHelloAckMismatch = errors.New("quic: HelloAck differs from its sender's Hello")
	// ErrNotControlStream: the runner's first bidirectional stream is not
	// stream 0, or the runner opened a second one (D27).
	ErrNotControlStream = errors.New("quic: control stream is not the runner's first bidirectional stream")
	// ErrPeerMismatch: the validator that answered is not the one dialed.
	// Goodbye{AuthFailed}.
	ErrPeerMismatch = errors.New("quic: peer identity is not the expected validator")
	// ErrChannelBinding: the TLS stack yielded no exporter bytes (§6.2: such
	// a stack is not conforming).
	ErrChannelBinding = errors.New("quic: TLS exporter unavailable")
	// ErrALPN: the peer did not negotiate ALPN cip11/1 (D27).
	ErrALPN = errors.New("quic: ALPN cip11/1 not negotiated")
	// ErrEarlyReveal: a JobResult for a multi-runner job arrived before
	// the reveal window opened and the server refuses rather than holds
	// early reveals (§10.3). Goodbye{ProtocolError}.
	ErrEarlyReveal = errors.New("quic: JobResult for a multi-runner job before its reveal window")
	// ErrResultBeforeCommit: a multi-runner job's JobResult arrived with no
	// JobResultCommit before it on the stream (§10.3).
	ErrResultBeforeCommit = errors.New("quic: JobResult before JobResultCommit for a multi-runner job")
	// ErrRevealNotReleased: a held multi-runner reveal whose window never
	// opened before the job's deadline_block (§10.3, §11.2); dropped.
	ErrRevealNotReleased = errors.New("quic: held reveal not released before the job's deadline")
	// ErrTooManyHeld: an early multi-runner reveal beyond
	// ServerConfig.MaxHeldReveals for its runner (§10.3); not held.
	ErrTooManyHeld = errors.New("quic: too many early reveals held for the runner")
	// ErrNotAssigned: the runner's chain view (ClientConfig.Assigned) says
	// it is no longer assigned to the job at the push's assignment_height
	// (§10.1: deregistered, or re-selected away); acked
	// Reject(UnverifiableAssignment).
	ErrNotAssigned = errors.New("quic: runner no longer assigned at assignment_height")
	// ErrNotPresent: a push names a runner this validator does not route to
	// (§7.4 (a), §10.1).
	ErrNotPresent = errors.New("quic: runner not in local presence")
	// ErrNoSuchJob: a cancel names no in-flight push.
	ErrNoSuchJob = errors.New("quic: no in-flight push for the job")
	// ErrClosed: the Server or Client is closed.
	ErrClosed = errors.New("quic: closed")
	// ErrNotReady: the validator has no committed registry view at its
	// height yet (nothing committed, or its store behind it), so §6.2
	// admission cannot be decided. Retryable: Goodbye{Draining} with
	// retry_after_blocks = [NotReadyRetryBlocks] (SPEC-NOTES N6).
	ErrNotReady = errors.New("quic: validator has no committed state to admit against yet")
	// ErrNotConnected: no admitted connection to that peer.
	ErrNotConnected = errors.New("quic: not connected")
	// ErrPushAbandoned: the push's connection was closed because its epoch
	// pair expired at the OVERLAP_BLOCKS cutoff (§5.3 point 4), by either
	// side, before the push finished. The push is a SoftFailure (the
	// runner is alive, and still connected under the new pair); its
	// results settle through the runner's own rebroadcast (§11.5).
	ErrPushAbandoned = errors.New("quic: push abandoned: its connection's epoch pair expired")
)

// RefusedError is a connection refused or closed by the peer's Goodbye
// (§12.5). Verified is false for an advisory (pre-auth or unverifiable)
// Goodbye.
type RefusedError struct {
	Reason           wire.GoodbyeReason
	Detail           string
	RetryAfterBlocks *uint64
	Verified         bool
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("quic: peer said Goodbye{%s} %q", e.Reason, e.Detail)
}

// NotReadyRetryBlocks is the retry_after_blocks of a Goodbye for
// [ErrNotReady]: try again after the next block (SPEC-NOTES N6).
const NotReadyRetryBlocks = 1

// retryAfter is the retry_after_blocks to refuse err with, if any.
func retryAfter(err error) *uint64 {
	var early *earlyOffer
	if errors.As(err, &early) {
		n := early.blocks
		return &n
	}
	if errors.Is(err, ErrNotReady) {
		n := uint64(NotReadyRetryBlocks)
		return &n
	}
	return nil
}

// GoodbyeReason maps a refusal to the §12.5 reason to close with: the
// transport's own sentinels first, then [wire.GoodbyeReasonFor].
func GoodbyeReason(err error) wire.GoodbyeReason {
	switch {
	case errors.Is(err, ErrRunnerNotRegistered), errors.Is(err, ErrPeerMismatch), errors.Is(err, ErrChannelBinding):
		return wire.GoodbyeAuthFailed
	case errors.Is(err, ErrRateLimited):
		return wire.GoodbyeRateLimited
	case errors.Is(err, ErrHelloAckMismatch):
		return wire.GoodbyeProtocolError
	case errors.Is(err, ErrNotReady):
		return wire.GoodbyeDraining
	case errors.Is(err, validators.ErrOverlapExpired):
		return wire.GoodbyeOverlapExpired
	}
	return wire.GoodbyeReasonFor(err)
}
