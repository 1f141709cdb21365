package quic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// overlap is a reconfiguration E → E+1 over three validators v0 < v1 < v2
// (canonical order), each with its own server: epoch 0 is {v0, v1} and
// epoch 1 is {v1, v2}, activated at overlapAct. |V| = 2 gives k = 2 in
// both (§5.1), so for every runner Sub_0(R) = {v0, v1} and Sub_1(R) =
// {v1, v2}: v0 is in Sub_E only, v1 in both, v2 is added in E+1.
// OVERLAP_BLOCKS is overlapBlocks, so the §5.3 point-4 cutoff is
// overlapAct + overlapBlocks. The view starts as epoch 0 alone;
// activate switches it with StaticValidatorSets.Set, as the node does on
// ValidatorSetActivated.
type overlap struct {
	*fixture
	e0, e1 *validators.Snapshot
	ep     validators.Epochs // {Previous: e0, Current: e1}
}

const (
	overlapAct    = startHeight + 2
	overlapBlocks = 5
	overlapCut    = overlapAct + overlapBlocks // activation_height(E+1) + OVERLAP_BLOCKS
)

func newOverlap(t *testing.T, runners ...*wire.RunnerKey) *overlap {
	t.Helper()
	f := newFixture(t, 3, runners...)
	f.p.OverlapBlocks = overlapBlocks
	o := &overlap{fixture: f, e0: snapshotOf(t, 0, f.vkeys[:2], 0), e1: snapshotOf(t, 1, f.vkeys[1:], overlapAct)}
	first, err := validators.NewEpochs(nil, o.e0)
	if err != nil {
		t.Fatal(err)
	}
	f.sets.Set(first)
	if o.ep, err = validators.NewEpochs(o.e0, o.e1); err != nil {
		t.Fatal(err)
	}
	if got := o.ep.OverlapEnd(f.p); got != overlapCut {
		t.Fatalf("cutoff %d, want %d", got, overlapCut)
	}
	for _, rk := range runners { // the layout the tests rely on (§5.1 with k = |V|)
		for _, c := range []struct {
			s    *validators.Snapshot
			want []*wire.ValidatorKey
		}{{o.e0, f.vkeys[:2]}, {o.e1, f.vkeys[1:]}} {
			sub, err := c.s.Sub(rk.PubKey(), f.p)
			if err != nil || len(sub) != 2 {
				t.Fatalf("Sub_%d = %v, %v", c.s.Epoch(), sub, err)
			}
			for _, v := range c.want {
				if !slices.Contains(sub, validators.PeerKey(v.PubKey().Raw())) {
					t.Fatalf("Sub_%d misses a validator", c.s.Epoch())
				}
			}
		}
	}
	for i := range 3 {
		f.startServer(i, nil)
	}
	return o
}

// activate is ValidatorSetActivated(1, overlapAct): the view becomes
// {e0, e1} and every server and the given clients tick to overlapAct.
func (o *overlap) activate(clients ...*Client) {
	o.sets.Set(o.ep)
	o.tick(overlapAct, clients...)
}

// links renders c.Links() as "v<i>@<epoch>", with "(down)" for a link
// not admitted, in Links order; a pair that is neither snapshot's own is
// "??".
func (o *overlap) links(c *Client) string {
	var parts []string
	for _, l := range c.Links() {
		i := slices.IndexFunc(o.vkeys, func(k *wire.ValidatorKey) bool { return validators.PeerKey(k.PubKey().Raw()) == l.Validator })
		s := fmt.Sprintf("v%d@%d", i, l.Pair.SubsetEpoch)
		if l.Pair != o.e0.Pair() && l.Pair != o.e1.Pair() {
			s = "??"
		}
		if !l.Up {
			s += "(down)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// connEpochs lists the subset_epoch of each admitted connection of
// runner at s, ascending.
func connEpochs(s *Server, runner cip11.Address) []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint64
	for _, sc := range s.byRunner[runner] {
		out = append(out, sc.pair.SubsetEpoch)
	}
	slices.Sort(out)
	return out
}

func waitLinks(t *testing.T, o *overlap, c *Client, want string) {
	t.Helper()
	eventually(t, "links "+want, func() bool { return o.links(c) == want })
}

// §5.3 points 1–4, test (i). v1 is in Sub_E(R) and Sub_{E+1}(R). From
// activation_height(E+1) the runner opens an E+1-paired link to it while
// keeping the E-paired one (point 1: no delivery gap); v1 admits both,
// each under its own snapshot (point 2), counts the runner once in local
// presence (§7.4), and pushes over the current epoch's (point 3). Up to
// the block before the cutoff both stay; at activation_height(E+1) +
// OVERLAP_BLOCKS only the E+1 pair is left on both ends (point 4), and
// the runner is present at v1 without a gap: in the block of the cutoff
// itself, before its ping on the E+1 connection for that block has
// arrived, a push is routed to it. Fails on the code before this change,
// which kept one link per validator (so v1 was never dialled under E+1)
// and one connection per runner at the server.
func TestOverlapValidatorInBothSubsetsHoldsBothPairs(t *testing.T) {
	rk := runnerKey(t, 1)
	o := newOverlap(t, rk)
	s0, s1 := o.servers[0], o.servers[1]
	c := o.startClient(rk, nil, nil)
	waitLinks(t, o, c, "v0@0 v1@0")

	o.activate(c)
	waitLinks(t, o, c, "v0@0 v1@0 v1@1 v2@1")
	eventually(t, "v1 holds both pairs", func() bool { return slices.Equal(connEpochs(s1, rk.Address()), []uint64{0, 1}) })
	o.tick(overlapAct+1, c)
	eventually(t, "present at v1", func() bool { return s1.IsPresent(rk.Address()) })
	if st := s1.Stats(); st.Connected != 2 || st.Present != 1 {
		t.Fatalf("v1: %d connections, %d present; want 2 and the runner once", st.Connected, st.Present)
	}
	if got := c.Connected(); len(got) != 3 {
		t.Fatalf("Connected lists %d validators, want 3 (v1 once)", len(got))
	}
	sc, _, err := s1.route(&Assignment{Runner: rk.Address()})
	if err != nil || sc.pair != o.e1.Pair() {
		t.Fatalf("route: %v over epoch %+v, want the E+1 connection", err, sc)
	}
	id, spec := testJob("overlap both")
	if err := s1.Push([]Assignment{assignment(id, spec, rk.Address())})[0]; err != nil {
		t.Fatal(err)
	}
	if o := o.waitOutcome(id); o.Outcome != local.Success {
		t.Fatalf("push during the window: %+v", o)
	}

	o.tick(overlapCut-1, c)
	if got := o.links(c); got != "v0@0 v1@0 v1@1 v2@1" {
		t.Fatalf("one block before the cutoff: %s", got)
	}
	if got := connEpochs(s1, rk.Address()); !slices.Equal(got, []uint64{0, 1}) {
		t.Fatalf("one block before the cutoff v1 holds %v", got)
	}

	// The validators reach the cutoff first, as they usually do (they push
	// right after applying a block, before the runner has seen it).
	for _, s := range o.servers {
		s.Tick(overlapCut)
	}
	if got := connEpochs(s1, rk.Address()); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("at the cutoff v1 holds %v, want the E+1 pair only", got)
	}
	if !s1.IsPresent(rk.Address()) || s0.IsPresent(rk.Address()) {
		t.Fatalf("at the cutoff: present at v1 %v (want true: no gap), at v0 %v (want false)", s1.IsPresent(rk.Address()), s0.IsPresent(rk.Address()))
	}
	if sc, _, err := s1.route(&Assignment{Runner: rk.Address()}); err != nil || sc.pair != o.e1.Pair() {
		t.Fatalf("route at the cutoff: %v", err)
	}
	c.Tick(overlapCut)
	waitLinks(t, o, c, "v1@1 v2@1")
	eventually(t, "v0 dropped the runner", func() bool { return !s0.Connected(rk.Address()) })
	o.tick(overlapCut+1, c)
	eventually(t, "the handed-over entry closed by the next ping", func() bool {
		s1.mu.Lock()
		defer s1.mu.Unlock()
		return len(s1.handover) == 0
	})
	if !s1.IsPresent(rk.Address()) {
		t.Fatal("not present at v1 after the cutoff")
	}
	id, spec = testJob("overlap after cutoff")
	if err := s1.Push([]Assignment{assignment(id, spec, rk.Address())})[0]; err != nil {
		t.Fatal(err)
	}
	if o := o.waitOutcome(id); o.Outcome != local.Success {
		t.Fatalf("push after the cutoff: %+v", o)
	}
}

// §5.3 point 4, §12.5, test (ii). v0 is in Sub_E(R) only. At the cutoff
// its connection closes with Goodbye{OverlapExpired}, whichever side
// initiates (both MAY): the sender counts it sent and the peer received.
// A validator's Goodbye is not recorded as a refusal, and the runner
// never dials v0 under the epoch-E pair again (a dial would be refused
// and counted in v0's RefusedBy). The "validator first" case fails on the
// code before this change: the server never re-checked a connection's
// pair after admission.
func TestOverlapEpochOnlyValidatorClosedAtCutoff(t *testing.T) {
	for _, validatorFirst := range []bool{true, false} {
		name := map[bool]string{true: "validator first", false: "runner first"}[validatorFirst]
		t.Run(name, func(t *testing.T) {
			rk := runnerKey(t, 1)
			o := newOverlap(t, rk)
			s0, s1 := o.servers[0], o.servers[1]
			c := o.startClient(rk, nil, nil)
			o.activate(c)
			waitLinks(t, o, c, "v0@0 v1@0 v1@1 v2@1")
			const oe = wire.GoodbyeOverlapExpired
			if validatorFirst {
				for _, s := range o.servers {
					s.Tick(overlapCut)
				}
				eventually(t, "both E links ended by the validators", func() bool { return c.Stats().GoodbyesReceived[oe] == 2 })
				if a, b := s0.Stats().GoodbyesSent[oe], s1.Stats().GoodbyesSent[oe]; a != 1 || b != 1 {
					t.Fatalf("Goodbye{OverlapExpired} sent by v0 %d, v1 %d; want 1 each", a, b)
				}
				// Before the runner's own cutoff tick its E links are down, not gone.
				waitLinks(t, o, c, "v0@0(down) v1@0(down) v1@1 v2@1")
				time.Sleep(400 * time.Millisecond) // several §11.3 backoffs (100 ms, 200 ms)
				c.Tick(overlapCut)
			} else {
				c.Tick(overlapCut)
				eventually(t, "both validators got the runner's Goodbye", func() bool {
					return s0.Stats().GoodbyesReceived[oe] == 1 && s1.Stats().GoodbyesReceived[oe] == 1
				})
				if n := c.Stats().GoodbyesSent[oe]; n != 2 {
					t.Fatalf("runner sent %d Goodbye{OverlapExpired}, want 2", n)
				}
				eventually(t, "v0 forgot the runner", func() bool { return !s0.Connected(rk.Address()) })
				if !s1.IsPresent(rk.Address()) {
					t.Fatal("the runner's Goodbye on its E connection took it out of v1's presence")
				}
				for _, s := range o.servers {
					s.Tick(overlapCut)
				}
			}
			waitLinks(t, o, c, "v1@1 v2@1")
			for h := uint64(overlapCut + 1); h <= overlapCut+3; h++ {
				o.tick(h, c)
				time.Sleep(150 * time.Millisecond)
			}
			st0 := s0.Stats()
			if st0.Admitted != 1 || st0.Refused != 0 || st0.Connected != 0 || st0.PreHelloCloses != 0 {
				t.Fatalf("v0 after the cutoff: admitted %d, refused %d, connected %d, pre-Hello closes %d (a re-dial?)",
					st0.Admitted, st0.Refused, st0.Connected, st0.PreHelloCloses)
			}
			if g := c.LastRefusal(s0.PeerKey()); g != nil {
				t.Fatalf("OverlapExpired recorded as a refusal: %+v", g)
			}
			if st := c.Stats(); st.GoodbyesSent[oe]+st.GoodbyesReceived[oe] != 2 {
				t.Fatalf("runner counted %d sent + %d received, want 2 in all", st.GoodbyesSent[oe], st.GoodbyesReceived[oe])
			}
		})
	}
}

// §5.3 points 1 and 4, §5.4, test (iii). v2 joins in E+1. A view that
// announces E+1 before its activation_height dials nothing new; at the
// activation height the runner dials v2 under E+1's pair.
func TestOverlapAddedValidatorDialledAtActivation(t *testing.T) {
	rk := runnerKey(t, 1)
	o := newOverlap(t, rk)
	s2 := o.servers[2]
	c := o.startClient(rk, nil, nil)
	waitLinks(t, o, c, "v0@0 v1@0")
	o.sets.Set(o.ep) // announced one block ahead
	o.tick(overlapAct-1, c)
	time.Sleep(300 * time.Millisecond)
	if got := o.links(c); got != "v0@0 v1@0" {
		t.Fatalf("before activation_height: %s", got)
	}
	if st := s2.Stats(); st.Admitted != 0 || st.Refused != 0 || st.PreHelloCloses != 0 {
		t.Fatalf("v2 dialled before activation: %+v", st)
	}
	o.tick(overlapAct, c)
	waitLinks(t, o, c, "v0@0 v1@0 v1@1 v2@1")
	if got := connEpochs(s2, rk.Address()); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("v2 holds %v, want the E+1 pair", got)
	}
}

// §5.3 point 4, §6.2, §12.5, test (iv). Past the cutoff a Hello offering
// epoch E's pair is refused at admission with Goodbye{OverlapExpired}
// (advisory: before mutual auth it is unsigned) while E+1's is admitted;
// a runner whose handshake under E's pair was still running when the
// cutoff came is refused at admission with a signed
// Goodbye{OverlapExpired}; and an E-paired connection admitted during
// the window is closed at the cutoff with a signed Goodbye{OverlapExpired}.
func TestOverlapExpiredHelloRefused(t *testing.T) {
	rk := runnerKey(t, 1)
	o := newOverlap(t, rk)
	s0, s1 := o.servers[0], o.servers[1]
	o.activate()
	tr := rawTransport(t)

	live := rawDial(t, tr, s1, rk)
	live.handshake(o.e0.Pair())
	half := rawDial(t, tr, s0, rk)
	if g, err := half.sendHello(helloFor(rk, o.e0.Pair())); err != nil || g != nil {
		t.Fatalf("E's Hello during the window: %v %+v", err, g)
	}

	s1.Tick(overlapCut)
	g := live.expectGoodbye()
	if err := isGoodbye(g, wire.GoodbyeOverlapExpired); err != nil {
		t.Fatalf("admitted E connection at the cutoff: %v", err)
	}
	if adv, err := wire.CheckGoodbye(live.sess, wire.RoleValidator, g); adv || err != nil {
		t.Fatalf("the closing Goodbye is not signed by the validator: %v", err)
	}
	live.waitClosed()
	if s1.Connected(rk.Address()) || s1.Stats().GoodbyesSent[wire.GoodbyeOverlapExpired] != 1 {
		t.Fatalf("v1 still holds the runner, or did not count the Goodbye: %+v", s1.Stats())
	}

	late := rawDial(t, tr, s1, rk)
	g, err := late.sendHello(helloFor(rk, o.e0.Pair()))
	if err != nil {
		t.Fatal(err)
	}
	if err := isGoodbye(g, wire.GoodbyeOverlapExpired); err != nil {
		t.Fatalf("E's Hello past the cutoff: %v", err)
	}
	if g.Signed != nil {
		t.Fatal("a pre-auth Goodbye carries a signature")
	}
	if st := s1.Stats(); st.RefusedBy[wire.GoodbyeOverlapExpired] != 1 || st.Admitted != 1 {
		t.Fatalf("v1 stats %+v", st)
	}
	next := rawDial(t, tr, s1, rk)
	next.handshake(o.e1.Pair())
	if !slices.Equal(connEpochs(s1, rk.Address()), []uint64{1}) {
		t.Fatal("E+1's Hello past the cutoff not admitted")
	}

	s0.Tick(overlapCut) // during half's handshake
	if err := half.sendAck(half.binding); err != nil {
		t.Fatal(err)
	}
	g = half.expectGoodbye()
	if err := isGoodbye(g, wire.GoodbyeOverlapExpired); err != nil {
		t.Fatalf("handshake across the cutoff: %v", err)
	}
	if adv, err := wire.CheckGoodbye(half.sess, wire.RoleValidator, g); adv || err != nil {
		t.Fatalf("refusal after mutual auth not signed: %v", err)
	}
	if s0.Connected(rk.Address()) || s0.Stats().Admitted != 0 {
		t.Fatal("admitted under an expired pair")
	}
}

// §5.3 point 4, §10.6, §11.5, test (v), at the validator. Three pushes on
// an E-paired connection are in flight at the cutoff: one awaiting its
// JobAck, one Accepted and awaiting results, one multi-runner whose
// reveal the validator holds (§10.3). The first two are abandoned: one
// SoftFailure each with ErrPushAbandoned — never the HardFailure the ack
// timeout would give, which would clear a runner still connected under
// E+1 — and nothing more for them however long the chain runs. The held
// reveal is not lost: its window opens and it is forwarded (Success).
func TestOverlapPushesAbandonedAtCutoff(t *testing.T) {
	rk := runnerKey(t, 1)
	o := newOverlap(t, rk)
	s0 := o.servers[0]
	o.activate()
	r := rawDial(t, rawTransport(t), s0, rk)
	r.handshake(o.e0.Pair())

	ids := make([]cip11.Hash, 3)
	as := make([]Assignment, 3)
	for i, name := range []string{"unacked", "accepted", "held reveal"} {
		var spec []byte
		ids[i], spec = testJob("abandon " + name)
		as[i] = assignment(ids[i], spec, rk.Address())
	}
	as[2].MultiRunner = true
	for i, err := range s0.Push(as) {
		if err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	for range as {
		fs, a := r.acceptJob()
		switch a.JobID {
		case ids[1]:
			r.ack(fs, a, wire.Accepted())
		case ids[2]:
			r.ack(fs, a, wire.Accepted())
			for _, fr := range []wire.Frame{
				&wire.JobResultCommit{JobID: a.JobID, TxBytes: memTx(rk, wire.InstructionJobResultCommit, a.JobID)},
				&wire.JobResult{JobID: a.JobID, TxBytes: memTx(rk, wire.InstructionJobResultSubmit, a.JobID)},
			} {
				if err := fs.write(fr); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	eventually(t, "the reveal held", func() bool {
		s0.mu.Lock()
		defer s0.mu.Unlock()
		return s0.heldBy[rk.Address()] == 1
	})
	eventually(t, "the ack read", func() bool { return stateOf(s0, ids[1]) == accepted })

	s0.Tick(overlapCut)
	got := map[cip11.Hash]Outcome{}
	for range 3 {
		o := o.waitOutcome2()
		if _, dup := got[o.JobID]; dup {
			t.Fatalf("second outcome for %s: %+v", o.JobID, o)
		}
		got[o.JobID] = o
	}
	for i, want := range []local.Outcome{local.SoftFailure, local.SoftFailure, local.Success} {
		if g := got[ids[i]]; g.Outcome != want || (want == local.SoftFailure) != errors.Is(g.Err, ErrPushAbandoned) {
			t.Fatalf("push %d: %+v, want %v", i, g, want)
		}
	}
	if a := got[ids[1]].Ack; a == nil || a.Kind != wire.AckAccepted {
		t.Fatalf("the accepted push's outcome lost its ack: %+v", got[ids[1]])
	}
	s0.Tick(overlapCut + o.p.AckTimeoutBlocks + 1)
	o.noOutcome(300 * time.Millisecond)
	st := s0.Stats()
	if st.PushesAbandoned != 2 || st.Outcomes[local.SoftFailure] != 2 || st.Outcomes[local.Success] != 1 || st.Outcomes[local.HardFailure] != 0 {
		t.Fatalf("stats: abandoned %d, outcomes %v", st.PushesAbandoned, st.Outcomes)
	}
	for _, id := range ids {
		if n := s0.pendingFor(id); n != 0 {
			t.Fatalf("push %s still in flight", id)
		}
	}
	if txs := o.mempools[0].Txs(); len(txs) != 2 {
		t.Fatalf("forwarded %d transactions, want the commit and the released reveal", len(txs))
	}
}

// stateOf is the state of s's push of job (finished if there is none).
func stateOf(s *Server, job cip11.Hash) pushState {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range s.pushes {
		if k.job == job {
			return p.state
		}
	}
	return finished
}

// waitOutcome2 is waitOutcome for any job.
func (f *fixture) waitOutcome2() Outcome {
	f.t.Helper()
	select {
	case o := <-f.outcomes:
		return o
	case <-time.After(10 * time.Second):
		f.t.Fatal("no outcome")
	}
	return Outcome{}
}

// §5.3 point 4, §10.1, §11.5, test (v), end to end. A job pushed by v0
// (Sub_E only) is executing when the cutoff closes that connection. v0
// reports it once, abandoned; the runner finishes it and, its stream
// gone, self-submits the result (§11.5 drain). When v1 pushes the same
// job over its E+1 connection afterwards, the runner acks Duplicate: the
// job was acked Accepted once and executed once.
func TestOverlapJobInFlightDrains(t *testing.T) {
	rk := runnerKey(t, 1)
	o := newOverlap(t, rk)
	s0, s1 := o.servers[0], o.servers[1]
	gate := make(chan struct{})
	inner := resultExecutor(rk, false, 0)
	var runs atomic.Int64
	ex := ExecutorFunc(func(ctx context.Context, j *Job) (Result, error) {
		runs.Add(1)
		select {
		case <-gate:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
		return inner(ctx, j)
	})
	var c *Client
	sub := &txSubmitter{height: func() uint64 { return c.Height() }}
	c = o.startClient(rk, ex, func(cc *ClientConfig) { cc.Submitter = sub })
	o.activate(c)
	waitLinks(t, o, c, "v0@0 v1@0 v1@1 v2@1")
	o.tick(overlapAct+1, c)
	eventually(t, "present at v0", func() bool { return s0.IsPresent(rk.Address()) })

	id, spec := testJob("drain")
	a := assignment(id, spec, rk.Address())
	if err := s0.Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	eventually(t, "v0 read the Accepted ack", func() bool { return stateOf(s0, id) == accepted })

	o.tick(overlapCut, c)
	got := o.waitOutcome(id)
	if got.Outcome != local.SoftFailure || !errors.Is(got.Err, ErrPushAbandoned) || got.Ack == nil || got.Ack.Kind != wire.AckAccepted {
		t.Fatalf("v0's outcome: %+v", got)
	}
	close(gate)
	h := uint64(overlapCut)
	eventually(t, "the result self-submitted", func() bool {
		h++ // the next block, until the §10.3 schedule rebroadcasts
		o.tick(h, c)
		time.Sleep(20 * time.Millisecond)
		txs, _ := sub.sent()
		return len(txs) >= 1
	})

	eventually(t, "present at v1", func() bool { return s1.IsPresent(rk.Address()) })
	if err := s1.Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	got = o.waitOutcome(id)
	if got.Outcome != local.Duplicate || got.Ack == nil || got.Ack.Kind != wire.AckDuplicate {
		t.Fatalf("v1's push of the same job: %+v", got)
	}
	o.noOutcome(200 * time.Millisecond)
	if st := c.Stats(); st.Executions != 1 || st.Acks != 2 || runs.Load() != 1 {
		t.Fatalf("executions %d (runs %d), acks %d; want one execution, Accepted once and Duplicate once", st.Executions, runs.Load(), st.Acks)
	}
	if n := len(o.mempools[0].Txs()) + len(o.mempools[1].Txs()); n != 0 {
		t.Fatalf("%d results forwarded over a validator stream, want 0 (the stream was gone)", n)
	}
}
