package node

import (
	"errors"
	"fmt"

	"github.com/cip11/cip11"
)

// Phase is the §14 migration phase a node runs, derived from the §13
// protocol flags by PhaseOf (SPEC-NOTES N10).
type Phase uint8

// The §14 phases.
const (
	// PhaseOff: CIP11_TRANSPORT_ENABLED off. No QUIC listener on the
	// validator, no QUIC client on the runner; jobs are delivered by poll
	// (GET /runner/{addr}/jobs) only.
	PhaseOff Phase = 0
	// Phase1 (CIP11_TRANSPORT_ENABLED): QUIC and best-effort push
	// alongside polling; poll is the primary path, so a connected runner
	// still polls.
	Phase1 Phase = 1
	// Phase2 (CIP11_PRESENT_FIRST_ENABLED): push is the primary path; a
	// runner polls only while it has no admitted connection (fallback).
	Phase2 Phase = 2
	// Phase3 (CIP11_POLL_DISABLED): push only; the poll endpoint answers
	// 410 Gone.
	Phase3 Phase = 3
)

// ErrPhaseFlags is PhaseOf's error: a flag set that is no §14 phase.
var ErrPhaseFlags = errors.New("node: protocol flags name no §14 phase")

// ErrPollDisabled is the poll fallback's answer under CIP11_POLL_DISABLED
// (§13, §14 Phase 3): HTTP 410 Gone.
var ErrPollDisabled = errors.New("node: poll fallback disabled (CIP11_POLL_DISABLED)")

// PhaseOf derives the §14 phase from the delivery flags. The phases are
// cumulative (§14: each is gated by its flag on top of the previous one):
// CIP11_POLL_DISABLED needs CIP11_PRESENT_FIRST_ENABLED, which needs
// CIP11_TRANSPORT_ENABLED; any other combination wraps ErrPhaseFlags.
// CIP11_PRESENCE_SHADOW_ENABLED and PRESENCE_HARD_EXCLUDE_ENABLED do not
// change the phase (telemetry and the Mode A posture).
func PhaseOf(p cip11.Params) (Phase, error) {
	switch {
	case p.PollDisabled && !p.PresentFirstEnabled:
		return 0, fmt.Errorf("%w: CIP11_POLL_DISABLED without CIP11_PRESENT_FIRST_ENABLED (Phase 3 follows Phase 2)", ErrPhaseFlags)
	case p.PresentFirstEnabled && !p.TransportEnabled:
		return 0, fmt.Errorf("%w: CIP11_PRESENT_FIRST_ENABLED without CIP11_TRANSPORT_ENABLED (Phase 2 follows Phase 1: push cannot be primary without the transport)", ErrPhaseFlags)
	case p.PollDisabled:
		return Phase3, nil
	case p.PresentFirstEnabled:
		return Phase2, nil
	case p.TransportEnabled:
		return Phase1, nil
	}
	return PhaseOff, nil
}

// WithPhase returns p with the delivery flags of phase ph set (the others
// cleared): PhaseOff none, Phase1 CIP11_TRANSPORT_ENABLED, Phase2 also
// CIP11_PRESENT_FIRST_ENABLED, Phase3 also CIP11_POLL_DISABLED. A phase
// above 3 wraps ErrPhaseFlags.
func WithPhase(p cip11.Params, ph Phase) (cip11.Params, error) {
	if ph > Phase3 {
		return p, fmt.Errorf("%w: phase %d (0 … 3)", ErrPhaseFlags, ph)
	}
	p.TransportEnabled = ph >= Phase1
	p.PresentFirstEnabled = ph >= Phase2
	p.PollDisabled = ph >= Phase3
	return p, nil
}

// Transport reports whether the phase runs the QUIC transport.
func (ph Phase) Transport() bool { return ph >= Phase1 }

// Polls reports whether a runner polls at a new height, given whether it
// has an admitted QUIC connection: always in PhaseOff and Phase1 (poll is
// the primary path), only without a connection in Phase2 (fallback),
// never in Phase3.
func (ph Phase) Polls(connected bool) bool {
	switch ph {
	case PhaseOff, Phase1:
		return true
	case Phase2:
		return !connected
	}
	return false
}

// String is "off", "1", "2" or "3".
func (ph Phase) String() string {
	if ph == PhaseOff {
		return "off"
	}
	return fmt.Sprintf("%d", uint8(ph))
}
