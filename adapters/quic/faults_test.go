package quic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"

	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

// committedFrom is a registry with nothing committed below first: At
// wraps state.ErrUnknownHeight there, as the Pebble store does before its
// first commit.
type committedFrom struct {
	state.Registry
	first uint64
}

func (r committedFrom) At(h uint64) (state.RegistryView, error) {
	if h < r.first {
		return nil, fmt.Errorf("%w: %d: nothing committed", state.ErrUnknownHeight, h)
	}
	return r.Registry.At(h)
}

// Issue 18 #23, SPEC-NOTES N6 (§6.2, §12.5): a validator that has
// committed nothing refuses a runner with a signed, retryable
// Goodbye{Draining} carrying retry_after_blocks = 1, not ProtocolError;
// once its first block is applied it admits the runner.
func TestNotReadyValidatorRefusesRetryably(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	cfg := f.serverConfig(0)
	cfg.Registry = committedFrom{f.reg, 1}
	s, err := NewServer(t.Context(), cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	tr := rawTransport(t)
	r := rawDial(t, tr, s, rk)
	if g, err := r.sendHello(helloFor(rk, f.snap.Pair())); err != nil || g != nil {
		t.Fatal(err, g)
	}
	if err := r.sendAck(r.binding); err != nil {
		t.Fatal(err)
	}
	g := r.expectGoodbye()
	if err := isGoodbye(g, wire.GoodbyeDraining); err != nil {
		t.Fatal(err)
	}
	if g.RetryAfterBlocks == nil || *g.RetryAfterBlocks != 1 {
		t.Fatalf("retry_after_blocks %v, want 1", g.RetryAfterBlocks)
	}
	if advisory, err := wire.CheckGoodbye(r.sess, wire.RoleValidator, g); advisory || err != nil {
		t.Fatalf("Goodbye not signed for the session: advisory %v, %v", advisory, err)
	}
	s.Tick(1)
	again := rawDial(t, tr, s, rk)
	again.handshake(f.snap.Pair())
	if !s.Connected(rk.Address()) {
		t.Fatal("not admitted after the first block")
	}
}

// Issue 18 #5, SPEC-NOTES N7 (§12.5 "advisory only", §11.3): an unsigned
// pre-auth Goodbye asking for retry_after_blocks = 2^64−1 holds the runner
// off for at most MaxAdvisoryRetryBlocks; it redials once its chain view
// passes that bound.
func TestAdvisoryGoodbyeRetryBounded(t *testing.T) {
	_, _, v, c := runnerWithFake(t)
	conn := v.accept()
	forever := ^uint64(0)
	if err := conn.ctl.write(&wire.Goodbye{Reason: wire.GoodbyeRateLimited, RetryAfterBlocks: &forever}); err != nil {
		t.Fatal(err)
	}
	peer := validators.PeerKey(v.key.PubKey().Raw())
	eventually(t, "refusal recorded", func() bool { return c.LastRefusal(peer) != nil })
	if g := c.LastRefusal(peer); g.Verified || g.Reason != wire.GoodbyeRateLimited {
		t.Fatalf("refusal %+v, want an unverified RateLimited", g)
	}
	c.Tick(startHeight + MaxAdvisoryRetryBlocks)
	v.accept() // fails the test if the runner does not redial within 5 s
}

// Issue 18 #20 (§6.6, §15.1): half-open connections are capped per source
// IP as well as in total. Twelve connections from 127.0.0.2 that never
// send a Hello hold at most MaxHalfOpenPerSource slots, so a runner from
// 127.0.0.1 still connects and is admitted at once (with only the total
// cap, the storm held all eight and the dial was refused).
func TestHalfOpenCappedPerSource(t *testing.T) {
	rk, flooder := runnerKey(t, 1), runnerKey(t, 2)
	f := newFixture(t, 1, rk, flooder)
	s := f.startServer(0, func(c *ServerConfig) {
		c.HandshakeTimeout = 30 * time.Second
		c.MaxHalfOpen, c.MaxHalfOpenPerSource = 8, 4
	})
	udp, err := net.ListenPacket("udp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	storm := &qgo.Transport{Conn: udp}
	t.Cleanup(func() { _ = storm.Close(); _ = udp.Close() })
	held := 0
	for range 12 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		qc, err := storm.Dial(ctx, s.Addr(), clientTLS(), &qgo.Config{MaxIdleTimeout: 30 * time.Second, KeepAlivePeriod: time.Second})
		cancel()
		if err == nil {
			held++
			t.Cleanup(func() { _ = qc.CloseWithError(0, "") })
		}
	}
	eventually(t, "the storm's connections half-open", func() bool { return s.HalfOpen() >= held })
	if held > 4 {
		t.Fatalf("%d half-open connections from one source, cap 4", held)
	}
	r := rawDial(t, rawTransport(t), s, rk)
	r.handshake(f.snap.Pair())
	if !s.Connected(rk.Address()) {
		t.Fatal("second source's runner not admitted")
	}
}

// Issue 18 #9 (§6.3): a runner that is never ticked (no chain view but
// its pongs) learns the height from a verified pong ahead of it and pings
// at that height, so it keeps heartbeating past nonce 0.
func TestClientLearnsHeightFromPong(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	s.Tick(startHeight + 5)
	c := f.startClient(rk, nil, nil)
	eventually(t, "client at the pong's height", func() bool { return c.Height() == startHeight+5 })
	eventually(t, "a second ping, at the new height", func() bool { return s.Stats().PingsOK == 2 })
}

// Issue 18 #3 (§6.4): a runner at capacity says accepting_new = false
// again on a new connection (a fresh handshake restores its entry at the
// validator), so the validator does not route to it after a reconnect
// while it is still full; once the job ends it says accepting_new = true
// and is present again from its next ping.
func TestBackpressureReassertedAfterReconnect(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	release := make(chan struct{})
	ex := ExecutorFunc(func(ctx context.Context, j *Job) (Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return resultExecutor(rk, false, 0)(ctx, j)
	})
	c := f.startClient(rk, ex, func(cc *ClientConfig) { cc.MaxConcurrent = 1 })
	eventually(t, "present", func() bool { return s.IsPresent(rk.Address()) })
	c.Tick(startHeight + 1)
	id, spec := testJob("backpressure")
	if err := s.Push([]Assignment{assignment(id, spec, rk.Address())})[0]; err != nil {
		t.Fatal(err)
	}
	eventually(t, "backpressured", func() bool { return !s.IsPresent(rk.Address()) })
	zero := uint64(0)
	if err := s.Goodbye(rk.Address(), wire.GoodbyeDraining, "reconnect", &zero); err != nil {
		t.Fatal(err)
	}
	eventually(t, "readmitted", func() bool { return s.Stats().Admitted == 2 && len(c.Connected()) == 1 })
	eventually(t, "still backpressured after the reconnect", func() bool { return !s.IsPresent(rk.Address()) })
	close(release)
	c.Tick(startHeight + 2)
	eventually(t, "present again once the runner has capacity", func() bool {
		c.Tick(s.Height() + 1)
		s.Tick(s.Height() + 1)
		return s.IsPresent(rk.Address())
	})
}

// earlyReveal pushes a multi-runner job to r and answers it with an
// Accepted ack and a JobResult but no JobResultCommit (the commitment
// went to the chain by another path).
func earlyReveal(t *testing.T, s *Server, r *rawConn, name string) cip11.Hash {
	t.Helper()
	id, spec := testJob(name)
	a := assignment(id, spec, r.key.Address())
	a.MultiRunner = true
	if err := s.Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	fs, ja := r.acceptJob()
	r.ack(fs, ja, wire.Accepted())
	if err := fs.write(&wire.JobResult{JobID: id, TxBytes: memTx(r.key, wire.InstructionJobResultSubmit, id)}); err != nil {
		t.Fatal(err)
	}
	return id
}

// Issue 18 #7 (§10.3, §10.6, §11.2): a multi-runner reveal that arrives
// before its commitment was seen is held, and released when the node
// reports the commitment included (Server.ReleaseReveal), however it
// reached the chain: forwarded, Success. A held reveal never released is
// dropped past the job's deadline_block (SoftFailure,
// ErrRevealNotReleased), and one runner cannot make the validator hold
// more than MaxHeldReveals (ErrTooManyHeld).
func TestHeldRevealReleasedByReleaseReveal(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, func(c *ServerConfig) { c.MaxHeldReveals = 2 })
	r := rawDial(t, rawTransport(t), s, rk)
	r.handshake(f.snap.Pair())

	released := earlyReveal(t, s, r, "released")
	f.noOutcome(200 * time.Millisecond)
	if n := len(f.mempools[0].Txs()); n != 0 {
		t.Fatalf("%d txs forwarded before the commitment was included", n)
	}
	if err := s.ReleaseReveal(released, rk.Address()); err != nil {
		t.Fatal(err)
	}
	if o := f.waitOutcome(released); o.Outcome != local.Success {
		t.Fatalf("released reveal: %v (%v)", o.Outcome, o.Err)
	}
	if n := len(f.mempools[0].Txs()); n != 1 {
		t.Fatalf("%d txs forwarded, want the reveal", n)
	}
	if err := s.ReleaseReveal(released, rk.Address()); !errors.Is(err, ErrNoSuchJob) {
		t.Fatalf("ReleaseReveal of a finished push: %v", err)
	}

	expires := earlyReveal(t, s, r, "expires")
	_ = earlyReveal(t, s, r, "second held")
	eventually(t, "two reveals held", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.heldBy[rk.Address()] == 2
	})
	over := earlyReveal(t, s, r, "over the cap")
	if o := f.waitOutcome(over); o.Outcome != local.SoftFailure || !errors.Is(o.Err, ErrTooManyHeld) {
		t.Fatalf("third held reveal: %v (%v)", o.Outcome, o.Err)
	}
	s.Tick(startHeight + 101) // past deadline_block = startHeight + 100
	got := map[cip11.Hash]error{}
	for range 2 {
		var o Outcome
		select {
		case o = <-f.outcomes:
		case <-time.After(10 * time.Second):
			t.Fatal("held reveals not dropped past the deadline")
		}
		if o.Outcome != local.SoftFailure {
			t.Fatalf("expired held reveal: %v", o.Outcome)
		}
		got[o.JobID] = o.Err
	}
	if !errors.Is(got[expires], ErrRevealNotReleased) {
		t.Fatalf("outcomes after the deadline: %v", got)
	}
	if n := len(f.mempools[0].Txs()); n != 1 {
		t.Fatalf("%d txs forwarded, want only the released reveal", n)
	}
}

// Issue 18 #9 (§6.3): with ProbeEvery set, a runner that is never ticked
// follows the validator's height through its pongs block after block, and
// stays in local presence past PRESENCE_TIMEOUT_BLOCKS.
func TestClientProbeFollowsValidatorHeight(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	c := f.startClient(rk, nil, func(cc *ClientConfig) { cc.ProbeEvery = 20 * time.Millisecond })
	eventually(t, "present", func() bool { return s.IsPresent(rk.Address()) })
	for h := uint64(startHeight + 1); h <= startHeight+2*f.p.PresenceTimeoutBlocks; h++ {
		s.Tick(h)
		eventually(t, "client follows the validator's height", func() bool { return c.Height() == h })
	}
	eventually(t, "still present", func() bool { return s.IsPresent(rk.Address()) })
	if r := c.Stats().PongsRejected; r != 0 {
		t.Fatalf("%d pongs rejected", r)
	}
}
