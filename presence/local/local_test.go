package local

import (
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
	"pgregory.net/rapid"
)

var (
	connA1 = ConnID{0xa1}
	connA2 = ConnID{0xa2}
	connB1 = ConnID{0xb1}
)

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestLocalExpiry: present from a valid ping until PRESENCE_TIMEOUT_BLOCKS
// (15) of silence: last ping at 10 ⇒ present through 24, dropped at 25.
func TestLocalExpiry(t *testing.T) {
	l := New(cip11.DefaultParams())
	mustOK(t, l.Open(9, addrA, connA1))
	if l.IsPresent(addrA, 9) {
		t.Fatal("present before any ping")
	}
	mustOK(t, l.Ping(10, addrA, connA1, 0))
	for h, want := range map[uint64]bool{10: true, 24: true, 25: false, 100: false} {
		if l.IsPresent(addrA, h) != want {
			t.Errorf("IsPresent at %d = %v", h, !want)
		}
	}
	mustOK(t, l.Ping(30, addrA, connA1, 1))
	if !l.IsPresent(addrA, 44) || l.IsPresent(addrA, 45) {
		t.Fatal("a later ping must restart the window")
	}
}

// TestLocalPingNonce: strictly increasing per connection; a new connection
// restarts at 0.
func TestLocalPingNonce(t *testing.T) {
	l := New(cip11.DefaultParams())
	mustOK(t, l.Open(1, addrA, connA1))
	mustOK(t, l.Ping(1, addrA, connA1, 0))
	mustOK(t, l.Ping(2, addrA, connA1, 5))
	for _, n := range []uint64{5, 4, 0} {
		if err := l.Ping(3, addrA, connA1, n); !errors.Is(err, wire.ErrPingNonceNotIncreasing) {
			t.Fatalf("nonce %d: %v", n, err)
		}
	}
	mustOK(t, l.Close(4, addrA, connA1))
	if err := l.Ping(4, addrA, connA1, 6); !errors.Is(err, ErrUnknownConnection) {
		t.Fatalf("ping on closed connection: %v", err)
	}
	mustOK(t, l.Open(5, addrA, connA2))
	mustOK(t, l.Ping(5, addrA, connA2, 0))
	if !l.IsPresent(addrA, 5) {
		t.Fatal("reconnected runner not present")
	}
	if err := l.Open(6, addrA, connA2); !errors.Is(err, ErrConnectionExists) {
		t.Fatal(err)
	}
}

// TestLocalBackpressure: accepting_new = false removes the runner and sets
// the Pong/receipt accepting_new to false; pings do not restore it; true
// lifts it and the next ping restores it (§6.4).
func TestLocalBackpressure(t *testing.T) {
	l := New(cip11.DefaultParams())
	mustOK(t, l.Open(1, addrA, connA1))
	mustOK(t, l.Ping(1, addrA, connA1, 0))
	mustOK(t, l.Backpressure(2, addrA, connA1, false))
	if l.IsPresent(addrA, 2) || l.AcceptingNew(addrA) {
		t.Fatal("backpressured runner still present or accepting")
	}
	mustOK(t, l.Ping(3, addrA, connA1, 1))
	if l.IsPresent(addrA, 3) {
		t.Fatal("ping restored a backpressured runner")
	}
	mustOK(t, l.Backpressure(4, addrA, connA1, true))
	if l.IsPresent(addrA, 4) || !l.AcceptingNew(addrA) {
		t.Fatal("accepting_new = true must wait for the next ping to restore presence")
	}
	mustOK(t, l.Ping(5, addrA, connA1, 2))
	if !l.IsPresent(addrA, 5) {
		t.Fatal("next ping must restore")
	}
	// A fresh handshake also lifts backpressure.
	mustOK(t, l.Backpressure(6, addrA, connA1, false))
	mustOK(t, l.Close(7, addrA, connA1))
	mustOK(t, l.Open(8, addrA, connA2))
	if !l.AcceptingNew(addrA) || l.IsPresent(addrA, 8) {
		t.Fatal("fresh handshake: accepting again, present only after a ping")
	}
	mustOK(t, l.Ping(8, addrA, connA2, 0))
	if !l.IsPresent(addrA, 8) {
		t.Fatal("ping after fresh handshake must restore")
	}
	if !l.AcceptingNew(addrB) {
		t.Fatal("an unknown runner has not signalled backpressure")
	}
}

// TestLocalDispatchOutcomes: only HardFailure clears (§10.6); a valid ping
// restores.
func TestLocalDispatchOutcomes(t *testing.T) {
	l := New(cip11.DefaultParams())
	mustOK(t, l.Open(1, addrA, connA1))
	mustOK(t, l.Ping(1, addrA, connA1, 0))
	for _, o := range []Outcome{Success, Duplicate, SoftFailure} {
		mustOK(t, l.Dispatch(2, addrA, o))
		if !l.IsPresent(addrA, 2) {
			t.Fatalf("outcome %d cleared presence", o)
		}
	}
	mustOK(t, l.Dispatch(3, addrA, HardFailure))
	if l.IsPresent(addrA, 3) {
		t.Fatal("HardFailure did not clear")
	}
	mustOK(t, l.Ping(4, addrA, connA1, 1))
	if !l.IsPresent(addrA, 4) {
		t.Fatal("ping after HardFailure did not restore")
	}
	if err := l.Dispatch(5, addrA, 4); !errors.Is(err, ErrUnknownOutcome) {
		t.Fatal(err)
	}
	if err := l.Dispatch(1, addrA, Success); !errors.Is(err, ErrEventHeightRegressed) {
		t.Fatal(err)
	}
	mustOK(t, l.Dispatch(5, addrB, HardFailure)) // unknown runner: nothing to clear
	p := cip11.DefaultParams()
	if AckTimedOut(100, 115, p) || !AckTimedOut(100, 116, p) {
		t.Fatal("HardFailure after ACK_TIMEOUT_BLOCKS: answer at sentAt+15 is in time")
	}
}

// TestLocalCloseAndRestart: connection loss clears immediately (§11.3); a
// restart (a new Presence) is empty (§8.1).
func TestLocalCloseAndRestart(t *testing.T) {
	l := New(cip11.DefaultParams())
	mustOK(t, l.Open(1, addrA, connA1))
	mustOK(t, l.Open(1, addrB, connB1))
	mustOK(t, l.Ping(1, addrA, connA1, 0))
	mustOK(t, l.Ping(1, addrB, connB1, 0))
	mustOK(t, l.Close(2, addrA, connA1))
	if got := l.Present(2); !slices.Equal(got, []cip11.Address{addrB}) {
		t.Fatalf("present %v", got)
	}
	l.Forget()
	if _, ok := l.runners[addrA]; ok || len(l.order) != 1 {
		t.Fatal("Forget kept a disconnected runner")
	}
	if len(New(cip11.DefaultParams()).Present(2)) != 0 {
		t.Fatal("restart must start empty")
	}
	if err := l.Close(3, addrC, connA1); !errors.Is(err, ErrUnknownConnection) {
		t.Fatal(err)
	}
}

// TestLocalCapabilityDelta: routing-only veto (§6.5), never presence.
func TestLocalCapabilityDelta(t *testing.T) {
	l := New(cip11.DefaultParams())
	mustOK(t, l.Open(1, addrA, connA1))
	mustOK(t, l.Ping(1, addrA, connA1, 0))
	ent := cip11.Hash{0xee}
	mustOK(t, l.CapabilityDelta(2, addrA, connA1, &wire.CapabilityDelta{RemovedCapabilities: []string{"llm"}, RemovedEntitlements: []cip11.Hash{ent}}))
	if !l.IsPresent(addrA, 2) {
		t.Fatal("a delta changed presence")
	}
	if l.Pushes(addrA, 2, []string{"llm"}, nil) || l.Pushes(addrA, 2, nil, []cip11.Hash{ent}) || !l.Pushes(addrA, 2, []string{"http"}, nil) {
		t.Fatal("removed items must veto only jobs that need them")
	}
	mustOK(t, l.CapabilityDelta(3, addrA, connA1, &wire.CapabilityDelta{AddedCapabilities: []string{"llm"}, AddedEntitlements: []cip11.Hash{ent}}))
	if !l.Pushes(addrA, 3, []string{"llm"}, []cip11.Hash{ent}) {
		t.Fatal("re-added items still vetoed")
	}
	mustOK(t, l.CapabilityDelta(4, addrA, connA1, &wire.CapabilityDelta{AddedCapabilities: []string{"x"}, RemovedCapabilities: []string{"x"}}))
	if l.Pushes(addrA, 4, []string{"x"}, nil) {
		t.Fatal("within one delta removals apply after additions")
	}
	if l.Pushes(addrB, 4, nil, nil) {
		t.Fatal("absent runner pushed")
	}
}

// TestLocalProposerInput: the proposer marks only runners registered as of
// the parent block (§8.1, §8.5), using the codec's canonical encoding.
func TestLocalProposerInput(t *testing.T) {
	reg := registryWith(t, addrA, addrB)
	mustOK(t, reg.Register(10, state.Runner{Address: addrC}))
	l := New(cip11.DefaultParams())
	for i, a := range []cip11.Address{addrA, addrC} {
		id := ConnID{byte(i)}
		mustOK(t, l.Open(10, a, id))
		mustOK(t, l.Ping(10, a, id, 0))
	}
	s, enc := l.ProposerInput(10, regAt(t, reg, 9))
	if !slices.Equal(s.Indices(), []int{0}) || string(enc) != string(presence.Encode(presence.FromAddresses(regAt(t, reg, 9), []cip11.Address{addrA}))) {
		t.Fatalf("parent 9: %v %x", s.Indices(), enc)
	}
	s, _ = l.ProposerInput(10, regAt(t, reg, 10))
	if !slices.Equal(s.Indices(), []int{0, 2}) {
		t.Fatalf("parent 10: %v", s.Indices())
	}
}

// TestLocalProperties (rapid): over random event sequences, no runner is
// present more than PRESENCE_TIMEOUT_BLOCKS after its last valid ping or
// while backpressured; a HardFailure clears it; the next valid ping
// restores it unless it is backpressured.
func TestLocalProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := cip11.DefaultParams()
		p.PresenceTimeoutBlocks = uint64(rapid.IntRange(1, 20).Draw(t, "timeout"))
		l := New(p)
		runners := []cip11.Address{addrA, addrB}
		conns := []ConnID{connA1, connA2, connB1}
		lastPing := map[cip11.Address]uint64{}
		pinged := map[cip11.Address]bool{}
		bp := map[cip11.Address]bool{}
		nonce := map[ConnID]uint64{}
		h := uint64(0)
		for range rapid.IntRange(1, 60).Draw(t, "events") {
			h += uint64(rapid.IntRange(0, 8).Draw(t, "dh"))
			r := rapid.SampledFrom(runners).Draw(t, "runner")
			c := rapid.SampledFrom(conns).Draw(t, "conn")
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0:
				if l.Open(h, r, c) == nil {
					bp[r] = false
				}
			case 1:
				_ = l.Close(h, r, c)
			case 2:
				nonce[c] += uint64(rapid.IntRange(0, 2).Draw(t, "dn"))
				if l.Ping(h, r, c, nonce[c]) == nil {
					lastPing[r], pinged[r] = h, true
					if !bp[r] && !l.IsPresent(r, h) {
						t.Fatalf("valid ping at %d did not restore %s", h, r)
					}
				}
			case 3:
				accepting := rapid.Bool().Draw(t, "accepting")
				if l.Backpressure(h, r, c, accepting) == nil {
					bp[r] = !accepting
				}
			case 4:
				if l.Dispatch(h, r, HardFailure) == nil && l.IsPresent(r, h) {
					t.Fatalf("HardFailure at %d did not clear %s", h, r)
				}
			case 5:
				_ = l.Dispatch(h, r, Outcome(rapid.IntRange(0, 2).Draw(t, "outcome")))
			}
			for _, q := range []uint64{h, h + p.PresenceTimeoutBlocks} {
				if n, list := l.CountPresent(q), l.Present(q); n != len(list) {
					t.Fatalf("CountPresent(%d) = %d, Present %v", q, n, list)
				}
			}
			for _, a := range runners {
				for _, q := range []uint64{h, h + p.PresenceTimeoutBlocks - 1, h + p.PresenceTimeoutBlocks} {
					if !l.IsPresent(a, q) {
						continue
					}
					if !pinged[a] || q-lastPing[a] >= p.PresenceTimeoutBlocks || bp[a] {
						t.Fatalf("%s present at %d: last ping %d (pinged %v), backpressured %v", a, q, lastPing[a], pinged[a], bp[a])
					}
				}
			}
		}
	})
}
