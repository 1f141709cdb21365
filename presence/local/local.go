package local

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

// Local-presence event errors (§6.3–§6.5, §7.4). A rejected event changes
// nothing.
var (
	// ErrEventHeightRegressed: an event is stamped below an earlier event's
	// height; local presence consumes events in block order.
	ErrEventHeightRegressed = errors.New("local: local-presence event below the last event height")
	// ErrUnknownConnection: a frame or close names a connection that is not
	// open for that runner (§6.2: nothing is recorded before admission).
	ErrUnknownConnection = errors.New("local: no such open connection for the runner")
	// ErrConnectionExists: a connection id is opened twice.
	ErrConnectionExists = errors.New("local: connection already open")
	// ErrUnknownOutcome: a dispatch outcome outside §10.6's four.
	ErrUnknownOutcome = errors.New("local: unknown dispatch outcome")
)

// ConnID identifies one authenticated connection: its §12.6 connection_id,
// fresh for every handshake because it binds the TLS channel_binding.
type ConnID cip11.Hash

// Outcome is a §10.6 dispatch outcome classification.
type Outcome uint8

// The four §10.6 outcomes.
const (
	Success     Outcome = iota // JobAck{Accepted} then the required result frames
	Duplicate                  // JobAck{Duplicate}
	SoftFailure                // JobAck{Reject(_)} or another framed response
	HardFailure                // no framed response within ACK_TIMEOUT_BLOCKS
)

// AckTimedOut reports whether a push sent at height sentAt has become a
// HardFailure at height h: no framed answer within ACK_TIMEOUT_BLOCKS, i.e.
// h > sentAt + ACK_TIMEOUT_BLOCKS (§10.6, §11.1).
func AckTimedOut(sentAt, h uint64, p cip11.Params) bool {
	return h > addSat(sentAt, p.AckTimeoutBlocks)
}

// Presence is one validator's §7.4 local presence: a pure state
// machine over events stamped with the validator's block height. A new
// value is empty, which is exactly the §8.1 restart rule: after a restart
// presence is rebuilt from fresh heartbeats. It is not safe for concurrent use.
type Presence struct {
	timeout uint64
	last    uint64
	order   []cip11.Address // known runners, ascending: output never follows map order
	runners map[cip11.Address]*runnerState
}

type runnerState struct {
	conns         []connState
	lastPing      uint64
	live          bool // a valid ping since the last clear
	backpressured bool // last BackpressureSignal said accepting_new = false
	removedCaps   map[string]struct{}
	removedEnts   map[cip11.Hash]struct{}
}

type connState struct {
	id     ConnID
	nonce  uint64
	pinged bool
}

// New returns an empty §7.4 local presence using
// PRESENCE_TIMEOUT_BLOCKS from p (§6.3).
func New(p cip11.Params) *Presence {
	return &Presence{timeout: p.PresenceTimeoutBlocks, runners: make(map[cip11.Address]*runnerState)}
}

func (l *Presence) stamp(h uint64) error {
	if h < l.last {
		return fmt.Errorf("%w: %d < %d", ErrEventHeightRegressed, h, l.last)
	}
	l.last = h
	return nil
}

func (l *Presence) entry(runner cip11.Address) *runnerState {
	e, ok := l.runners[runner]
	if !ok {
		e = &runnerState{removedCaps: map[string]struct{}{}, removedEnts: map[cip11.Hash]struct{}{}}
		l.runners[runner] = e
		i, _ := slices.BinarySearchFunc(l.order, runner, compareAddr)
		l.order = slices.Insert(l.order, i, runner)
	}
	return e
}

func compareAddr(a, b cip11.Address) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}

func (e *runnerState) conn(id ConnID) int {
	return slices.IndexFunc(e.conns, func(c connState) bool { return c.id == id })
}

// connOf checks the height and finds an open connection.
func (l *Presence) connOf(h uint64, runner cip11.Address, id ConnID) (*runnerState, int, error) {
	e := l.runners[runner]
	i := -1
	if e != nil {
		i = e.conn(id)
	}
	if i < 0 {
		return nil, 0, fmt.Errorf("%w: runner %s", ErrUnknownConnection, runner)
	}
	return e, i, l.stamp(h)
}

// Open records an authenticated connection (§6.2: both proofs verified). A
// fresh handshake lifts backpressure; the runner is present again from its
// next valid ping (§6.4). The ping nonce starts afresh (§6.3).
func (l *Presence) Open(h uint64, runner cip11.Address, id ConnID) error {
	if e := l.runners[runner]; e != nil && e.conn(id) >= 0 {
		return ErrConnectionExists
	}
	if err := l.stamp(h); err != nil {
		return err
	}
	e := l.entry(runner)
	e.conns = append(e.conns, connState{id: id})
	e.backpressured = false
	return nil
}

// Close records connection loss: the runner leaves local presence
// immediately (§11.3) until a valid ping on an open connection.
func (l *Presence) Close(h uint64, runner cip11.Address, id ConnID) error {
	e, i, err := l.connOf(h, runner, id)
	if err != nil {
		return err
	}
	e.conns = slices.Delete(e.conns, i, i+1)
	e.live = false
	return nil
}

// Ping records a HeartbeatPing whose signature the transport verified
// (§6.3). The nonce must strictly increase within the connection (the first
// ping of a connection may carry any nonce — normally 0, since the counter
// restarts per connection). It refreshes the runner unless it is
// backpressured (§6.4) and restores it after a HardFailure (§10.6).
func (l *Presence) Ping(h uint64, runner cip11.Address, id ConnID, nonce uint64) error {
	e, i, err := l.connOf(h, runner, id)
	if err != nil {
		return err
	}
	c := &e.conns[i]
	if err := wire.CheckPingNonce(c.nonce, !c.pinged, nonce); err != nil {
		return err
	}
	c.nonce, c.pinged = nonce, true
	e.lastPing = h
	e.live = !e.backpressured // a backpressured runner returns on the first ping after accepting_new = true
	return nil
}

// Backpressure records a verified BackpressureSignal (§6.4). accepting_new
// false removes the runner from local presence and makes [Presence.AcceptingNew]
// false; true lifts that, and the runner is present again from its next
// valid ping.
func (l *Presence) Backpressure(h uint64, runner cip11.Address, id ConnID, acceptingNew bool) error {
	e, _, err := l.connOf(h, runner, id)
	if err != nil {
		return err
	}
	e.backpressured = !acceptingNew
	if !acceptingNew {
		e.live = false
	}
	return nil
}

// Dispatch records a §10.6 outcome for a push to runner. Only HardFailure
// changes local presence: it clears the entry (routing only, §11.1) until
// the next valid ping.
func (l *Presence) Dispatch(h uint64, runner cip11.Address, o Outcome) error {
	if o > HardFailure {
		return fmt.Errorf("%w: %d", ErrUnknownOutcome, o)
	}
	if err := l.stamp(h); err != nil {
		return err
	}
	if e := l.runners[runner]; e != nil && o == HardFailure {
		e.live = false
	}
	return nil
}

// CapabilityDelta applies a verified §6.5 delta to this validator's routing
// only: a removed capability or entitlement vetoes pushing jobs that need
// it; an added one lifts an earlier removal. Within one delta additions
// apply before removals. It never touches presence, the registry or
// selection. The overlay lasts as long as this Presence.
func (l *Presence) CapabilityDelta(h uint64, runner cip11.Address, id ConnID, d *wire.CapabilityDelta) error {
	e, _, err := l.connOf(h, runner, id)
	if err != nil {
		return err
	}
	for _, c := range d.AddedCapabilities {
		delete(e.removedCaps, c)
	}
	for _, x := range d.AddedEntitlements {
		delete(e.removedEnts, x)
	}
	for _, c := range d.RemovedCapabilities {
		e.removedCaps[c] = struct{}{}
	}
	for _, x := range d.RemovedEntitlements {
		e.removedEnts[x] = struct{}{}
	}
	return nil
}

// IsPresent reports whether runner is in local presence at height h
// (§6.3, §7.4): it has an open connection and a valid ping since the last
// clear (connection loss, HardFailure, accepting_new = false), it is not
// backpressured, and it has not been silent for PRESENCE_TIMEOUT_BLOCKS —
// h − last_ping < PRESENCE_TIMEOUT_BLOCKS.
func (l *Presence) IsPresent(runner cip11.Address, h uint64) bool {
	e := l.runners[runner]
	if e == nil || !e.live || e.backpressured || len(e.conns) == 0 {
		return false
	}
	return h < e.lastPing || h-e.lastPing < l.timeout
}

// Present returns the runners in local presence at h (§7.4) in ascending
// address order.
func (l *Presence) Present(h uint64) []cip11.Address {
	var out []cip11.Address
	for _, a := range l.order {
		if l.IsPresent(a, h) {
			out = append(out, a)
		}
	}
	return out
}

// CountPresent is len(Present(h)) without building the list (GET
// /status).
func (l *Presence) CountPresent(h uint64) int {
	n := 0
	for _, a := range l.order {
		if l.IsPresent(a, h) {
			n++
		}
	}
	return n
}

// AcceptingNew is the accepting_new this validator puts in a HeartbeatPong
// or PresenceReceipt for runner (§6.4): false from a BackpressureSignal
// with accepting_new = false until one with true or a fresh handshake.
func (l *Presence) AcceptingNew(runner cip11.Address) bool {
	e := l.runners[runner]
	return e == nil || !e.backpressured
}

// Pushes reports whether this validator pushes a job needing caps and
// entitlements to runner at h (§7.4 (a), §10.1): the runner is in local
// presence and no needed item was removed by a CapabilityDelta (§6.5).
func (l *Presence) Pushes(runner cip11.Address, h uint64, caps []string, ents []cip11.Hash) bool {
	if !l.IsPresent(runner, h) {
		return false
	}
	e := l.runners[runner]
	for _, c := range caps {
		if _, gone := e.removedCaps[c]; gone {
			return false
		}
	}
	for _, x := range ents {
		if _, gone := e.removedEnts[x]; gone {
			return false
		}
	}
	return true
}

// ProposerInput is this validator's PresenceInputV1 for the block after h
// (§8.1): its local presence at h, indexed against parent, the registry as
// of the parent block (§8.5) — a runner registered later is not marked. It
// returns the set and its canonical encoding (DECISIONS D17).
func (l *Presence) ProposerInput(h uint64, parent state.RegistryView) (presence.Set, []byte) {
	s := presence.FromFunc(parent, func(a cip11.Address) bool { return l.IsPresent(a, h) })
	return s, presence.Encode(s)
}

// Forget drops every runner with no open connection, capability overlay
// included, bounding memory; it never changes who is present (§7.4: a
// runner without a connection is not present).
func (l *Presence) Forget() {
	l.order = slices.DeleteFunc(l.order, func(a cip11.Address) bool {
		if len(l.runners[a].conns) == 0 {
			delete(l.runners, a)
			return true
		}
		return false
	})
}

// addSat is a + b saturating at 2^64−1 (heights never wrap).
func addSat(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return s
}

// LastPing is the height of runner's last valid HeartbeatPing (§6.3), kept
// after its connections close; false if none was recorded. For operators.
func (l *Presence) LastPing(runner cip11.Address) (uint64, bool) {
	e := l.runners[runner]
	if e == nil || e.lastPing == 0 {
		return 0, false
	}
	return e.lastPing, true
}
