package quic

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// §6.3: a ping signed on one connection is rejected on another of the same
// runner — connection_id binds the channel — even with a valid nonce. The
// second connection replaces the first (#21), so the ping is replayed from
// the old connection onto its successor.
func TestPingReplayedFromAnotherConnectionRejected(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	a, b := rawDial(t, tr, s, rk), rawDial(t, tr, s, rk)
	a.handshake(f.snap.Pair())
	p := &wire.HeartbeatPing{BlockHeight: startHeight, Nonce: 5}
	if err := p.Sign(a.sess, rk); err != nil {
		t.Fatal(err)
	}
	if pong := a.sendPing(p); pong == nil || pong.NonceEcho != 5 {
		t.Fatal("genuine ping not answered")
	}
	b.handshake(f.snap.Pair())
	before := s.Stats().PingsRejected
	if pong := b.sendPing(p); pong != nil {
		t.Fatal("replayed ping answered")
	}
	if err := isGoodbye(b.expectGoodbye(), wire.GoodbyeAuthFailed); err != nil {
		t.Fatal(err)
	}
	if s.Stats().PingsRejected != before+1 {
		t.Fatal("replay not counted as rejected")
	}
}

// §6.3: a nonce that does not strictly increase within the connection is
// rejected; the per-connection counter restarts at 0 on a new connection.
func TestPingNonceRegressionRejected(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	r := rawDial(t, tr, s, rk)
	r.handshake(f.snap.Pair()) // nonce 0
	if r.ping(1, startHeight) == nil || r.ping(3, startHeight) == nil {
		t.Fatal("increasing nonces not answered")
	}
	if r.ping(3, startHeight) != nil {
		t.Fatal("repeated nonce answered")
	}
	if err := isGoodbye(r.expectGoodbye(), wire.GoodbyeProtocolError); err != nil {
		t.Fatal(err)
	}
	r.waitClosed()
	again := rawDial(t, tr, s, rk)
	again.handshake(f.snap.Pair()) // nonce 0 again, accepted on the new connection
}

// §6.3: the runner rejects a pong whose nonce_echo is not its outstanding
// ping's nonce, so a validator answering wrongly never admits it.
func TestPongWithWrongNonceEchoRejected(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	s.mu.Lock()
	s.mutatePong = func(p *wire.HeartbeatPong) { p.NonceEcho++ }
	s.mu.Unlock()
	var mu sync.Mutex
	var got []error
	c := f.startClient(rk, nil, func(cc *ClientConfig) {
		cc.OnPongRejected = func(_ validators.PeerKey, err error) {
			mu.Lock()
			got = append(got, err)
			mu.Unlock()
		}
	})
	eventually(t, "pong rejected", func() bool { return c.Stats().PongsRejected > 0 })
	mu.Lock()
	err := got[0]
	mu.Unlock()
	if !errors.Is(err, wire.ErrPongNonceMismatch) {
		t.Fatalf("rejection %v", err)
	}
	if c.Stats().PongsOK != 0 || len(c.Connected()) != 0 {
		t.Fatal("runner treated a bad pong as admission")
	}
}

// §6.3, §7.4: heartbeats on every height keep the runner present; after
// PRESENCE_TIMEOUT_BLOCKS of silence it is dropped, and the next ping
// restores it.
func TestHeartbeatsDrivePresence(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	c := f.startClient(rk, nil, nil)
	// RunnerCounts (GET /status) counts what the lists hold
	counts := func(when string, conn, pres int) {
		t.Helper()
		gc, gp := s.RunnerCounts()
		if gc != conn || gp != pres || len(s.ConnectedRunners()) != gc || len(s.Present()) != gp {
			t.Fatalf("%s: RunnerCounts %d connected, %d present; lists %v, %v; want %d, %d", when, gc, gp, s.ConnectedRunners(), s.Present(), conn, pres)
		}
	}
	eventually(t, "admitted", func() bool { return len(c.Connected()) == 1 })
	for h := uint64(startHeight + 1); h <= startHeight+20; h++ {
		f.tick(h, c)
		want := c.Stats().PingsSent
		eventually(t, "pong", func() bool { return c.Stats().PongsOK >= want })
		if !s.IsPresent(rk.Address()) {
			t.Fatalf("dropped at %d while pinging", h)
		}
	}
	last := uint64(startHeight + 20)
	s.Tick(last + f.p.PresenceTimeoutBlocks - 1)
	if !s.IsPresent(rk.Address()) {
		t.Fatal("dropped before PRESENCE_TIMEOUT_BLOCKS")
	}
	counts("pinging", 1, 1)
	s.Tick(last + f.p.PresenceTimeoutBlocks)
	if s.IsPresent(rk.Address()) {
		t.Fatal("still present after PRESENCE_TIMEOUT_BLOCKS of silence")
	}
	counts("silent", 1, 0)
	c.Tick(last + f.p.PresenceTimeoutBlocks)
	eventually(t, "restored", func() bool { return s.IsPresent(rk.Address()) })
	counts("restored", 1, 1)
}

// §6.4: a runner at capacity backpressures; the validator drops it from
// local presence and pongs accepting_new = false until it recovers.
func TestBackpressureLeavesPresence(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	release := make(chan struct{})
	ex := ExecutorFunc(func(ctx context.Context, j *Job) (Result, error) {
		<-release
		return resultExecutor(rk, false, 0)(ctx, j)
	})
	c := f.startClient(rk, ex, func(cc *ClientConfig) { cc.MaxConcurrent = 1 })
	eventually(t, "present", func() bool { return s.IsPresent(rk.Address()) })
	id, spec := testJob("bp")
	f.tick(startHeight+1, c)
	if errs := s.Push([]Assignment{{JobID: id, JobSpec: spec, AssignmentHeight: startHeight + 1, DeadlineBlock: 200, Runner: rk.Address()}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	eventually(t, "backpressure", func() bool { return !s.IsPresent(rk.Address()) })
	s.mu.Lock()
	acc := s.pres.AcceptingNew(rk.Address())
	s.mu.Unlock()
	if acc {
		t.Fatal("accepting_new still true under backpressure")
	}
	close(release)
	if o := f.waitOutcome(id); o.Outcome != 0 /* Success */ {
		t.Fatalf("outcome %v", o.Outcome)
	}
	f.tick(startHeight+2, c)
	eventually(t, "present again", func() bool { return s.IsPresent(rk.Address()) })
	_ = time.Second
}
