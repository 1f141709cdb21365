package quic

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

// §6.2, D27, D28: a registered runner in Sub(R) is admitted, both ends
// derive the same connection_id, and its heartbeats put it in local
// presence and in the proposer's PresenceInputV1 (§8.1).
func TestHandshakeHappyPath(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	c := f.startClient(rk, nil, nil)
	eventually(t, "admission", func() bool { return len(c.Connected()) == 1 })
	if !s.Connected(rk.Address()) || !s.IsPresent(rk.Address()) {
		t.Fatal("runner not connected and present after its first ping")
	}
	// Same connection_id at both ends (so the channel bindings agree).
	cs := clientSession(c, s.PeerKey())
	ss := serverSession(s, rk.Address())
	if cs == nil || ss == nil || cs.ID != ss.ID || cs.ChannelBinding != ss.ChannelBinding {
		t.Fatalf("sessions differ: %+v vs %+v", cs, ss)
	}
	if cs.Version != wire.Version || cs.ChainID != testChain || cs.ValidatorSetHash != f.snap.Hash() {
		t.Fatalf("session %+v", cs.Conn)
	}
	in, err := s.ProposerInput(startHeight)
	if err != nil {
		t.Fatal(err)
	}
	view, _ := f.reg.At(startHeight)
	set, err := presence.Decode(in, len(view.ActiveRunners()))
	if err != nil {
		t.Fatal(err)
	}
	addrs, _ := presence.Addresses(set, view)
	if len(addrs) != 1 || addrs[0] != rk.Address() {
		t.Fatalf("PresenceInput = %x (%v)", in, addrs)
	}
	if st := s.Stats(); st.Admitted != 1 || st.PingsOK < 1 {
		t.Fatalf("stats %+v", st)
	}
}

// clientSession is the session of c's link to v (the newest epoch's, if
// it holds several).
func clientSession(c *Client, v validators.PeerKey) *wire.Session {
	var sess *wire.Session
	var epoch uint64
	for _, l := range c.linkList() {
		l.mu.Lock()
		if l.peer == v && l.sess != nil && (sess == nil || l.pair.SubsetEpoch > epoch) {
			sess, epoch = l.sess, l.pair.SubsetEpoch
		}
		l.mu.Unlock()
	}
	return sess
}

func serverSession(s *Server, r cip11.Address) *wire.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.byRunner[r]; len(l) > 0 {
		return l[len(l)-1].sess
	}
	return nil
}

// §6.2: the exporter is connection-specific — two connections between the
// same endpoints on the same socket never share a channel binding.
// (Two runners, so that neither admission replaces the other, #21.)
func TestChannelBindingIsConnectionSpecific(t *testing.T) {
	rk, rk2 := runnerKey(t, 1), runnerKey(t, 2)
	f := newFixture(t, 1, rk, rk2)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	a, b := rawDial(t, tr, s, rk), rawDial(t, tr, s, rk2)
	if a.binding == b.binding {
		t.Fatal("two connections share a channel binding")
	}
	a.handshake(f.snap.Pair())
	b.handshake(f.snap.Pair())
	if a.sess.ID == b.sess.ID {
		t.Fatal("two connections share a connection_id")
	}
	// The server computed the same binding as each client.
	s.mu.Lock()
	seen := map[cip11.Hash]bool{}
	for _, sc := range s.conns {
		seen[sc.sess.ChannelBinding] = true
	}
	s.mu.Unlock()
	if !seen[a.binding] || !seen[b.binding] {
		t.Fatal("server bindings differ from the client's")
	}
}

// §6.2: a HelloAck signed over another connection's channel binding does
// not verify on this one: Goodbye{AuthFailed}, nothing admitted.
func TestHelloAckOverAnotherBindingRejected(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	other, r := rawDial(t, tr, s, rk), rawDial(t, tr, s, rk)
	if g, err := r.sendHello(helloFor(rk, f.snap.Pair())); err != nil || g != nil {
		t.Fatal(err, g)
	}
	if err := r.sendAck(other.binding); err != nil {
		t.Fatal(err)
	}
	if err := isGoodbye(r.expectGoodbye(), wire.GoodbyeAuthFailed); err != nil {
		t.Fatal(err)
	}
	r.waitClosed()
	if s.Connected(rk.Address()) || s.Stats().Admitted != 0 {
		t.Fatal("runner admitted with a replayed HelloAck")
	}
}

// §6.2: the runner side rejects a validator HelloAck bound to another
// connection too (the validator's ack is verified against our binding).
func TestRunnerRejectsValidatorAckOverOtherBinding(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	r := rawDial(t, tr, s, rk)
	r.hello = helloFor(rk, f.snap.Pair())
	if err := r.ctl.write(r.hello); err != nil {
		t.Fatal(err)
	}
	fr, _ := r.ctl.readBy(time.Now().Add(5 * time.Second))
	r.peer = fr.(*wire.Hello)
	fr, _ = r.ctl.readBy(time.Now().Add(5 * time.Second))
	ack := fr.(*wire.HelloAck)
	loc := &wire.Local{Role: wire.RoleRunner, ChainID: testChain, Version: wire.Version, Epochs: []wire.EpochPair{f.snap.Pair()}}
	if err := wire.CheckHelloAck(loc, r.hello, r.peer, ack, r.binding); err != nil {
		t.Fatalf("genuine ack: %v", err)
	}
	other := rawDial(t, tr, s, rk)
	if err := wire.CheckHelloAck(loc, r.hello, r.peer, ack, other.binding); !errors.Is(err, wire.ErrSigInvalid) {
		t.Fatalf("ack over another binding: %v, want ErrSigInvalid", err)
	}
}

// §6.2, §5.3, §12.3, §12.5: each admission refusal closes with its Goodbye
// reason, and nothing is recorded for the runner.
func TestAdmissionRefusals(t *testing.T) {
	registered, unregistered, deregistered := runnerKey(t, 1), runnerKey(t, 2), runnerKey(t, 3)
	f := newFixture(t, 5, registered, deregistered)
	f.register(deregistered, state.Deregistered)
	// With |V| = 5, k = 4: find a validator outside Sub(registered).
	outside := -1
	for i, k := range f.vkeys {
		if in, _ := f.snap.InSub(registered.PubKey(), validators.PeerKey(k.PubKey().Raw()), f.p); !in {
			outside = i
		}
	}
	inside := (outside + 1) % len(f.vkeys)
	srvIn := f.startServer(inside, nil)
	srvOut := f.startServer(outside, nil)

	other := snapshotOf(t, 0, validatorKeys(1, "other"), 0)
	cases := []struct {
		name   string
		srv    *Server
		key    *wire.RunnerKey
		hello  func(h *wire.Hello)
		ack    bool // the refusal comes after the HelloAck
		reason wire.GoodbyeReason
	}{
		{"wrong chain", srvIn, registered, func(h *wire.Hello) { h.ChainID++ }, false, wire.GoodbyeWrongChain},
		{"major version", srvIn, registered, func(h *wire.Hello) { h.Version = 0x0200 }, false, wire.GoodbyeUnsupportedVersion},
		{"unknown validator set", srvIn, registered, func(h *wire.Hello) { h.ValidatorSetHash = other.Hash() }, false, wire.GoodbyeNotInSubset},
		{"subset epoch mismatch", srvIn, registered, func(h *wire.Hello) { h.SubsetEpoch = 1 }, false, wire.GoodbyeNotInSubset},
		{"not in Sub(R)", srvOut, registered, nil, false, wire.GoodbyeNotInSubset},
		{"validator dials a validator", srvIn, registered, func(h *wire.Hello) {
			h.PartyRole, h.PartyPubKey = wire.RoleValidator, f.vkeys[outside].PubKey()
		}, false, wire.GoodbyeAuthFailed},
		{"unregistered", srvIn, unregistered, nil, true, wire.GoodbyeAuthFailed},
		{"deregistered", srvIn, deregistered, nil, true, wire.GoodbyeAuthFailed},
	}
	tr := rawTransport(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rawDial(t, tr, tc.srv, tc.key)
			h := helloFor(tc.key, f.snap.Pair())
			if tc.hello != nil {
				tc.hello(h)
			}
			g, err := r.sendHello(h)
			if err != nil {
				t.Fatal(err)
			}
			if tc.ack {
				if g != nil {
					t.Fatalf("refused before HelloAck: %s", g.Reason)
				}
				if err := r.sendAck(r.binding); err != nil {
					t.Fatal(err)
				}
				g = r.expectGoodbye()
				// After both proofs the Goodbye is signed (§12.5).
				if err := g.Verify(r.sess, wire.RoleValidator); err != nil {
					t.Fatalf("post-auth Goodbye not signed: %v", err)
				}
			} else if g != nil && g.Signed != nil {
				t.Fatal("pre-auth Goodbye carries a signature")
			}
			if err := isGoodbye(g, tc.reason); err != nil {
				t.Fatal(err)
			}
			r.waitClosed()
			if tc.srv.Connected(tc.key.Address()) || tc.srv.IsPresent(tc.key.Address()) {
				t.Fatal("refused runner recorded")
			}
		})
	}
	if n := srvIn.Stats().Admitted + srvOut.Stats().Admitted; n != 0 {
		t.Fatalf("%d admitted", n)
	}
}

// §6.2: the per-source rate limit on unauthenticated Hello closes with
// Goodbye{RateLimited}.
func TestHelloRateLimited(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	now := time.Unix(1000, 0)
	s := f.startServer(0, func(c *ServerConfig) {
		c.HelloRate, c.HelloBurst = 1, 1
		c.Now = func() time.Time { return now }
	})
	tr := rawTransport(t)
	first := rawDial(t, tr, s, rk)
	if g, err := first.sendHello(helloFor(rk, f.snap.Pair())); err != nil || g != nil {
		t.Fatal(err, g)
	}
	second := rawDial(t, tr, s, rk)
	g, err := second.sendHello(helloFor(rk, f.snap.Pair()))
	if err != nil {
		t.Fatal(err)
	}
	if err := isGoodbye(g, wire.GoodbyeRateLimited); err != nil {
		t.Fatal(err)
	}
}

// §5.3 point 2: during the overlap window admission is epoch-paired —
// each epoch's own (epoch, hash) with that epoch's membership; a mixed
// pair is refused; and past activation + OVERLAP_BLOCKS epoch E is
// refused with Goodbye{OverlapExpired} (§5.3 point 4, §12.5).
func TestOverlapEpochPairedAdmission(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	old := f.snap
	keysE1 := append(validatorKeys(1, "new"), f.vkeys...) // E+1 adds a validator
	sortKeys(keysE1)
	next := snapshotOf(t, 1, keysE1, startHeight)
	e, err := validators.NewEpochs(old, next)
	if err != nil {
		t.Fatal(err)
	}
	f.sets.Set(e)
	s := f.startServer(0, nil) // validator 0 of epoch E, also in E+1 (k = 2 = |V|)
	tr := rawTransport(t)

	for _, pair := range []wire.EpochPair{old.Pair(), next.Pair()} {
		r := rawDial(t, tr, s, rk)
		r.handshake(pair)
		if !s.Connected(rk.Address()) {
			t.Fatalf("pair %d not admitted", pair.SubsetEpoch)
		}
	}
	mixed := wire.EpochPair{SubsetEpoch: old.Epoch(), ValidatorSetHash: next.Hash()}
	r := rawDial(t, tr, s, rk)
	g, err := r.sendHello(helloFor(rk, mixed))
	if err != nil {
		t.Fatal(err)
	}
	if err := isGoodbye(g, wire.GoodbyeNotInSubset); err != nil {
		t.Fatalf("cross-product pair: %v", err)
	}
	// Past the cutoff the epoch-E pair is refused.
	s.Tick(e.OverlapEnd(f.p))
	r = rawDial(t, tr, s, rk)
	if g, err = r.sendHello(helloFor(rk, old.Pair())); err != nil {
		t.Fatal(err)
	}
	if err := isGoodbye(g, wire.GoodbyeOverlapExpired); err != nil {
		t.Fatalf("epoch E past OVERLAP_BLOCKS: %v", err)
	}
}

func sortKeys(ks []*wire.ValidatorKey) {
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if string(ks[j].PubKey().Raw()) < string(ks[i].PubKey().Raw()) {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
}

// §12.5: a Client refused after mutual auth records the signed reason.
func TestClientRecordsRefusal(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	f.register(rk, state.Deregistered)
	s := f.startServer(0, nil)
	c := f.startClient(rk, nil, nil)
	eventually(t, "refusal", func() bool { return c.LastRefusal(s.PeerKey()) != nil })
	g := c.LastRefusal(s.PeerKey())
	if g.Reason != wire.GoodbyeAuthFailed || !g.Verified {
		t.Fatalf("refusal %+v", g)
	}
	if len(c.Connected()) != 0 {
		t.Fatal("refused client counts as connected")
	}
}

// §6.6: above MaxHalfOpen, new connection attempts are refused by QUIC
// before any CIP-11 work; the count returns to zero after admission.
func TestHalfOpenCap(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, func(c *ServerConfig) { c.MaxHalfOpen, c.RetryAbove = 1, 1 })
	tr := rawTransport(t)
	held := rawDial(t, tr, s, rk) // TLS done, no Hello yet: half-open
	eventually(t, "half-open count", func() bool { return s.HalfOpen() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if qc, err := tr.Dial(ctx, s.Addr(), clientTLS(), nil); err == nil {
		_ = qc.CloseWithError(0, "")
		t.Fatal("second half-open connection accepted over the cap")
	}
	held.handshake(f.snap.Pair())
	eventually(t, "half-open released", func() bool { return s.HalfOpen() == 0 })
}

// The validator drops a silent half-open connection at the handshake
// deadline (§6.6).
func TestHandshakeDeadline(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, func(c *ServerConfig) { c.HandshakeTimeout = 300 * time.Millisecond })
	r := rawDial(t, rawTransport(t), s, rk)
	r.waitClosed()
	eventually(t, "half-open released", func() bool { return s.HalfOpen() == 0 })
}

// Constructors refuse nil dependencies.
func TestConstructorsRejectNil(t *testing.T) {
	f := newFixture(t, 1)
	cfg := f.serverConfig(0)
	cfg.Registry = nil
	if _, err := NewServer(context.Background(), cfg, 0); !errors.Is(err, ErrNilDependency) {
		t.Fatalf("nil registry: %v", err)
	}
	cfg = f.serverConfig(0)
	cfg.Key = nil
	if _, err := NewServer(context.Background(), cfg, 0); !errors.Is(err, ErrNilKey) {
		t.Fatalf("nil key: %v", err)
	}
	cc := f.clientConfig(runnerKey(t, 1), nil)
	cc.Executor = nil
	if _, err := NewClient(context.Background(), cc, 0); !errors.Is(err, ErrNilDependency) {
		t.Fatalf("nil executor: %v", err)
	}
	cc = f.clientConfig(runnerKey(t, 1), nil)
	cc.Key = nil
	if _, err := NewClient(context.Background(), cc, 0); !errors.Is(err, ErrNilKey) {
		t.Fatalf("nil key: %v", err)
	}
}

// D28: a HelloAck that does not repeat its sender's Hello (here another
// block_height is fine, another subset_epoch is not) is
// Goodbye{ProtocolError}.
func TestHelloAckMismatchIsProtocolError(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)

	ok := rawDial(t, tr, s, rk)
	if g, err := ok.sendHello(helloFor(rk, f.snap.Pair())); err != nil || g != nil {
		t.Fatal(err, g)
	}
	ack := ackFor(ok.hello)
	ack.BlockHeight += 7 // advisory, not repeated (§6.2)
	if err := ack.Sign(ok.peer, ok.binding, rk); err != nil {
		t.Fatal(err)
	}
	if err := ok.ctl.write(ack); err != nil {
		t.Fatal(err)
	}
	ok.sess, _ = wire.SessionFor(ok.hello, ok.peer, ok.binding)
	if ok.ping(0, startHeight) == nil {
		t.Fatal("ack with another block_height refused")
	}

	bad := rawDial(t, tr, s, rk)
	if g, err := bad.sendHello(helloFor(rk, f.snap.Pair())); err != nil || g != nil {
		t.Fatal(err, g)
	}
	ack = ackFor(bad.hello)
	ack.Version = 0x0101
	if err := ack.Sign(bad.peer, bad.binding, rk); err != nil {
		t.Fatal(err)
	}
	if err := bad.ctl.write(ack); err != nil {
		t.Fatal(err)
	}
	if err := isGoodbye(bad.expectGoodbye(), wire.GoodbyeProtocolError); err != nil {
		t.Fatal(err)
	}
}

// D28, §12.3: a peer offering a higher minor of the same major (0x0105)
// is admitted, and the connection's version is the lower one, the
// validator's 0x0101 (SPEC-NOTES N18).
func TestHigherMinorNegotiatesDown(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	r := rawDial(t, rawTransport(t), s, rk)
	h := helloFor(rk, f.snap.Pair())
	h.Version = wire.VersionReceipts + 4
	if g, err := r.sendHello(h); err != nil || g != nil {
		t.Fatal(err, g)
	}
	// D28: the HelloAck preimage carries the connection's (lower) version.
	ack, err := signAck(r.hello, r.peer, r.binding, rk)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ctl.write(ack); err != nil {
		t.Fatal(err)
	}
	if r.sess, err = wire.SessionFor(r.hello, r.peer, r.binding); err != nil {
		t.Fatal(err)
	}
	if r.sess.Version != wire.VersionReceipts {
		t.Fatalf("negotiated %#x", r.sess.Version)
	}
	if r.ping(0, startHeight) == nil {
		t.Fatal("higher-minor runner not admitted")
	}
	if ss := serverSession(s, rk.Address()); ss == nil || ss.ID != r.sess.ID {
		t.Fatal("connection ids differ")
	}
}

// Before its first block (height 0, registry(0) empty by definition: the
// genesis runners register in block 1) a validator refuses a runner as not
// ready, Goodbye{Draining}, not AuthFailed; from block 1 it admits it.
func TestHeightZeroIsNotReady(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	cfg := f.serverConfig(0)
	s, err := NewServer(context.Background(), cfg, 0)
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
	if err := isGoodbye(r.expectGoodbye(), wire.GoodbyeDraining); err != nil {
		t.Fatal(err)
	}
	if s.Stats().RefusedBy[wire.GoodbyeAuthFailed] != 0 {
		t.Fatal("a registered runner was refused as not registered at height 0")
	}
	s.Tick(1)
	r2 := rawDial(t, tr, s, rk)
	if g, err := r2.sendHello(helloFor(rk, f.snap.Pair())); err != nil || g != nil {
		t.Fatal(err, g)
	}
	if err := r2.sendAck(r2.binding); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for !s.Connected(rk.Address()) {
		if time.Now().After(deadline) {
			t.Fatal("runner not admitted at height 1")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
