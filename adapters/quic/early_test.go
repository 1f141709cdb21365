package quic

import (
	"testing"

	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// upcomingSets is a ValidatorSets that also knows the next snapshot.
type upcomingSets struct {
	*StaticValidatorSets
	next *validators.Snapshot
}

func (u upcomingSets) Upcoming(h uint64) (*validators.Snapshot, bool) {
	return u.next, u.next.ActivationHeight() > h
}

// TestEarlyOfferIsNotReady (§5.3, §12.5, SPEC-NOTES N19): a runner one
// block ahead of a validator at an activation offers the new epoch's pair
// to a validator of its new Sub(R) that has not reached the activation
// yet. A validator whose view knows the upcoming snapshot (UpcomingSets)
// refuses with Goodbye{Draining} and retry_after_blocks up to the
// activation, not NotInSubset; more than EarlyOfferBlocks ahead, or
// without the upcoming snapshot in its view, the offer is NotInSubset as
// before.
func TestEarlyOfferIsNotReady(t *testing.T) {
	rk := runnerKey(t, 1)
	o := newOverlap(t, rk) // epoch 0 = {v0, v1} now; epoch 1 = {v1, v2} from overlapAct
	plain := o.servers[2]  // v2, whose view is epoch 0 alone
	aware := o.startServer(2, func(c *ServerConfig) { c.Validators = upcomingSets{o.sets, o.e1} })
	far := snapshotOf(t, 1, o.vkeys[1:], startHeight+EarlyOfferBlocks+1)
	farAware := o.startServer(2, func(c *ServerConfig) { c.Validators = upcomingSets{o.sets, far} })
	tr := rawTransport(t)
	offer := func(s *Server, pair wire.EpochPair) *wire.Goodbye {
		t.Helper()
		g, err := rawDial(t, tr, s, rk).sendHello(helloFor(rk, pair))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	aware.Tick(overlapAct - 1)
	plain.Tick(overlapAct - 1)
	g := offer(aware, o.e1.Pair())
	if err := isGoodbye(g, wire.GoodbyeDraining); err != nil || g.RetryAfterBlocks == nil || *g.RetryAfterBlocks != 1 {
		t.Fatalf("one block early, aware: %v, retry_after %v; want Draining, 1", err, g.RetryAfterBlocks)
	}
	if err := isGoodbye(offer(plain, o.e1.Pair()), wire.GoodbyeNotInSubset); err != nil {
		t.Fatalf("one block early, no upcoming view: %v", err)
	}
	if err := isGoodbye(offer(farAware, far.Pair()), wire.GoodbyeNotInSubset); err != nil {
		t.Fatalf("%d blocks early: %v", EarlyOfferBlocks+1, err)
	}
	if st := aware.Stats(); st.RefusedBy[wire.GoodbyeDraining] != 1 || st.RefusedBy[wire.GoodbyeNotInSubset] != 0 {
		t.Fatalf("aware validator refusals %v", st.RefusedBy)
	}
}
