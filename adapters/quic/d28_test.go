package quic

import (
	"context"
	crand "crypto/rand"
	"errors"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// The tests in this file check DECISIONS D28 (handshake order and version
// rule, §6.2, §12.3) sentence by sentence, on both ends: the validator
// [Server] against a raw runner driven frame by frame, and the runner
// [Client] against fakeValidator, a validator driven frame by frame. Either
// end must interoperate with other implementations that follow D28 to the
// letter, so each test pins what such a peer sees on the wire.

// ---- a validator that can misbehave ----

// fakeValidator is a QUIC server with the D27 TLS configuration whose
// CIP-11 side is played by the test.
type fakeValidator struct {
	t   *testing.T
	key *wire.ValidatorKey
	ln  *qgo.Listener
}

// fakeConn is one runner connection to a fakeValidator, after the
// runner's Hello was read.
type fakeConn struct {
	t       *testing.T
	v       *fakeValidator
	qc      *qgo.Conn
	ctl     *frameStream
	binding cip11.Hash
	runner  *wire.Hello // the runner's Hello
	hello   *wire.Hello // ours, once built
	sess    *wire.Session
}

// startFakeValidator listens as validator i of f (so the runner's Sub(R)
// and Directory lead to it) with ALPN alpn.
func startFakeValidator(t *testing.T, f *fixture, i int, alpn string) *fakeValidator {
	t.Helper()
	cert, err := selfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	conf := serverTLS(cert)
	conf.NextProtos = []string{alpn}
	ln, err := qgo.ListenAddr("127.0.0.1:0", conf, &qgo.Config{MaxIdleTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	v := &fakeValidator{t: t, key: f.vkeys[i], ln: ln}
	f.dir.Put(validators.PeerKey(v.key.PubKey().Raw()), ln.Addr())
	return v
}

// accept waits for the runner's next connection and reads its first frame,
// which D28 says is the runner's Hello on the stream the runner opened.
func (v *fakeValidator) accept() *fakeConn {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qc, err := v.ln.Accept(ctx)
	if err != nil {
		v.t.Fatalf("no connection: %v", err)
	}
	v.t.Cleanup(func() { _ = qc.CloseWithError(0, "") })
	st, err := qc.AcceptStream(ctx)
	if err != nil {
		v.t.Fatalf("no control stream: %v", err)
	}
	if st.StreamID() != 0 {
		v.t.Fatalf("D27: the runner's control stream is stream %d, want 0", st.StreamID())
	}
	st0 := qc.ConnectionState().TLS
	b, err := st0.ExportKeyingMaterial("cowboy-cip11-handshake-v1", nil, 32)
	if err != nil {
		v.t.Fatal(err)
	}
	c := &fakeConn{t: v.t, v: v, qc: qc, ctl: newFrameStream(st, 1<<21, 1<<21), binding: cip11.Hash(b)}
	fr := c.read()
	h, ok := fr.(*wire.Hello)
	if !ok {
		v.t.Fatalf("D28: the runner's first frame is %s, want Hello", fr.Type())
	}
	if h.PartyRole != wire.RoleRunner {
		v.t.Fatalf("runner Hello with role %s", h.PartyRole)
	}
	c.runner = h
	return c
}

func (c *fakeConn) read() wire.Frame {
	c.t.Helper()
	fr, err := c.ctl.readBy(time.Now().Add(5 * time.Second))
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return fr
}

// sendHello writes our Hello: the runner's epoch pair, our key, a fresh
// nonce; mutate may change it.
func (c *fakeConn) sendHello(mutate func(*wire.Hello)) {
	c.t.Helper()
	h := &wire.Hello{Version: wire.Version, ChainID: c.runner.ChainID, ValidatorSetHash: c.runner.ValidatorSetHash,
		SubsetEpoch: c.runner.SubsetEpoch, PartyPubKey: c.v.key.PubKey(), PartyRole: wire.RoleValidator, BlockHeight: startHeight}
	_, _ = crand.Read(h.ChallengeNonce[:])
	if mutate != nil {
		mutate(h)
	}
	c.hello = h
	if err := c.ctl.write(h); err != nil {
		c.t.Fatal(err)
	}
}

// sendAck writes our HelloAck over the runner's challenge with the D28
// preimage version; mutate, if set, changes it after signing.
func (c *fakeConn) sendAck(mutate func(*wire.HelloAck)) {
	c.t.Helper()
	ack, err := signAck(c.hello, c.runner, c.binding, c.v.key)
	if err != nil {
		c.t.Fatal(err)
	}
	if mutate != nil {
		mutate(ack)
	}
	if err := c.ctl.write(ack); err != nil {
		c.t.Fatal(err)
	}
}

// readAck reads the runner's HelloAck and verifies it the D28 way.
func (c *fakeConn) readAck() *wire.HelloAck {
	c.t.Helper()
	fr := c.read()
	ack, ok := fr.(*wire.HelloAck)
	if !ok {
		c.t.Fatalf("got %s, want the runner's HelloAck", fr.Type())
	}
	if err := checkPeerAck(ack, c.hello, c.runner, c.binding); err != nil {
		c.t.Fatalf("runner HelloAck: %v", err)
	}
	var err error
	if c.sess, err = wire.SessionFor(c.hello, c.runner, c.binding); err != nil {
		c.t.Fatal(err)
	}
	return ack
}

// expectGoodbye reads frames until the runner's Goodbye.
func (c *fakeConn) expectGoodbye() *wire.Goodbye {
	c.t.Helper()
	for {
		if g, ok := c.read().(*wire.Goodbye); ok {
			return g
		}
	}
}

// answerPing reads the runner's next HeartbeatPing, verifies it under
// our session and answers it.
func (c *fakeConn) answerPing() *wire.HeartbeatPing {
	c.t.Helper()
	fr := c.read()
	p, ok := fr.(*wire.HeartbeatPing)
	if !ok {
		c.t.Fatalf("got %s, want HeartbeatPing", fr.Type())
	}
	if err := p.Verify(c.sess); err != nil {
		c.t.Fatalf("ping does not verify under the D28 session: %v", err)
	}
	pong := &wire.HeartbeatPong{BlockHeight: startHeight, NonceEcho: p.Nonce, AcceptingNew: true}
	pong.Sign(c.sess, c.v.key)
	if err := c.ctl.write(pong); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// runnerWithFake is a fixture with one validator played by a
// fakeValidator and a real Client for runner 1.
func runnerWithFake(t *testing.T) (*fixture, *wire.RunnerKey, *fakeValidator, *Client) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	v := startFakeValidator(t, f, 0, ALPN)
	c := f.startClient(rk, nil, nil)
	return f, rk, v, c
}

// ---- D28 sentence 1: "the runner opens the control stream and sends
// Hello; the validator answers with its Hello." ----

// D28, §6.2: the Client opens the control stream (stream 0, D27) and its
// first frame is its Hello, offering its own identity and the epoch pair
// of the validator it dialed.
func TestD28RunnerOpensControlStreamWithHello(t *testing.T) {
	f, rk, v, _ := runnerWithFake(t)
	c := v.accept() // checks stream 0 and that the first frame is a Hello
	if c.runner.PartyPubKey != rk.PubKey() || c.runner.ChainID != testChain || c.runner.Version != wire.Version {
		t.Fatalf("runner Hello %+v", c.runner)
	}
	if (wire.EpochPair{SubsetEpoch: c.runner.SubsetEpoch, ValidatorSetHash: c.runner.ValidatorSetHash}) != f.snap.Pair() {
		t.Fatal("runner offered another epoch pair")
	}
}

// D28, §6.2: the validator does not speak first, and a first frame other
// than the runner's Hello is refused with an unsigned (pre-auth)
// Goodbye{ProtocolError}.
func TestD28ServerRequiresRunnerHelloFirst(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)

	// Silent runner: the validator writes nothing before our Hello.
	r := rawDial(t, tr, s, rk)
	if fr, err := r.ctl.readBy(time.Now().Add(300 * time.Millisecond)); err == nil {
		t.Fatalf("validator spoke first: %s", fr.Type())
	}

	for _, kind := range []string{"HelloAck", "HeartbeatPing"} {
		r := rawDial(t, tr, s, rk)
		var first wire.Frame = &wire.HeartbeatPing{BlockHeight: startHeight}
		if kind == "HelloAck" {
			// A well-formed HelloAck, signed over a made-up validator Hello.
			vh := &wire.Hello{Version: wire.Version, ChainID: testChain, PartyPubKey: f.vkeys[0].PubKey(), PartyRole: wire.RoleValidator}
			ack := ackFor(helloFor(rk, f.snap.Pair()))
			if err := ack.Sign(vh, r.binding, rk); err != nil {
				t.Fatal(err)
			}
			first = ack
		}
		if err := r.ctl.write(first); err != nil {
			t.Fatal(err)
		}
		g := r.expectGoodbye()
		if err := isGoodbye(g, wire.GoodbyeProtocolError); err != nil {
			t.Fatalf("%s first: %v", first.Type(), err)
		}
		if g.Signed != nil {
			t.Fatal("pre-auth Goodbye is signed")
		}
	}
	if s.Stats().Admitted != 0 {
		t.Fatal("admitted")
	}
}

// D28, §6.2, §5.3: the validator's answer to a Hello is its own Hello —
// validator role and key, the epoch pair the runner offered, a fresh
// challenge_nonce — followed by its HelloAck over the runner's
// challenge_nonce and this connection's channel binding.
func TestD28ValidatorAnswersWithItsHello(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	nonces := map[cip11.Hash]bool{}
	for range 2 {
		r := rawDial(t, tr, s, rk)
		if g, err := r.sendHello(helloFor(rk, f.snap.Pair())); err != nil || g != nil {
			t.Fatal(err, g) // sendHello verified the HelloAck over our nonce and binding
		}
		p := r.peer
		if p.PartyRole != wire.RoleValidator || p.PartyPubKey != f.vkeys[0].PubKey() || p.ChainID != testChain ||
			(wire.EpochPair{SubsetEpoch: p.SubsetEpoch, ValidatorSetHash: p.ValidatorSetHash}) != f.snap.Pair() {
			t.Fatalf("validator Hello %+v", p)
		}
		if nonces[p.ChallengeNonce] || p.ChallengeNonce == (cip11.Hash{}) {
			t.Fatal("validator challenge_nonce is not fresh")
		}
		nonces[p.ChallengeNonce] = true
	}
}

// ---- D28 sentence 2: "Each side sends its HelloAck, signing the peer's
// challenge_nonce, as soon as it has the peer's Hello, without waiting for
// the peer's HelloAck; each verifies the peer's HelloAck when it
// arrives." ----

// D28: the validator's HelloAck arrives while the runner has sent nothing
// but its Hello, and the HelloAck's signature is over the runner's
// challenge_nonce (it fails against any other nonce).
func TestD28ValidatorAcksWithoutWaiting(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	r := rawDial(t, rawTransport(t), s, rk)
	r.hello = helloFor(rk, f.snap.Pair())
	if err := r.ctl.write(r.hello); err != nil {
		t.Fatal(err)
	}
	fr, err := r.ctl.readBy(nowPlus(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if r.peer, _ = fr.(*wire.Hello); r.peer == nil {
		t.Fatalf("got %s, want Hello", fr.Type())
	}
	fr, err = r.ctl.readBy(nowPlus(5 * time.Second)) // we have not sent our HelloAck
	if err != nil {
		t.Fatalf("no HelloAck before ours: %v", err)
	}
	ack, ok := fr.(*wire.HelloAck)
	if !ok {
		t.Fatalf("got %s, want HelloAck", fr.Type())
	}
	if err := ack.Verify(r.hello, r.binding); err != nil {
		t.Fatalf("HelloAck over our nonce: %v", err)
	}
	other := *r.hello
	other.ChallengeNonce[0] ^= 1
	if err := ack.Verify(&other, r.binding); !errors.Is(err, wire.ErrSigInvalid) {
		t.Fatalf("HelloAck verifies over another nonce: %v", err)
	}
}

// D28: the Client sends its HelloAck as soon as it has the validator's
// Hello, while the validator withholds its own HelloAck; it then verifies
// the validator's HelloAck when it arrives, and heartbeats under the
// session both ends derive.
func TestD28RunnerAcksWithoutWaiting(t *testing.T) {
	_, _, v, c := runnerWithFake(t)
	fc := v.accept()
	fc.sendHello(nil)
	fc.readAck() // no HelloAck of ours was sent yet
	fc.sendAck(nil)
	fc.answerPing()
	eventually(t, "admission", func() bool { return len(c.Connected()) == 1 })
	if cs := clientSession(c, validators.PeerKey(v.key.PubKey().Raw())); cs == nil || cs.ID != fc.sess.ID {
		t.Fatal("client session differs from the validator's")
	}
}

// D28, §6.2: the Client verifies the validator's HelloAck when it
// arrives: one signed over another channel binding, or by a key other than
// the Hello's, is Goodbye{AuthFailed}; no heartbeat is sent.
func TestD28RunnerVerifiesValidatorAck(t *testing.T) {
	cases := map[string]func(a *wire.HelloAck, c *fakeConn){
		"another binding": func(a *wire.HelloAck, c *fakeConn) {
			b := c.binding
			b[0] ^= 1
			signed, err := signAck(c.hello, c.runner, b, c.v.key)
			if err != nil {
				c.t.Fatal(err)
			}
			a.SignedChallenge = signed.SignedChallenge
		},
		"signed by another key": func(a *wire.HelloAck, c *fakeConn) {
			other := validatorKeys(1, "other")[0]
			pre := *a
			pre.PartyPubKey = other.PubKey()
			if err := pre.Sign(c.runner, c.binding, other); err != nil {
				c.t.Fatal(err)
			}
			a.SignedChallenge = pre.SignedChallenge
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, v, c := runnerWithFake(t)
			fc := v.accept()
			fc.t = t
			fc.sendHello(nil)
			fc.readAck()
			fc.sendAck(func(a *wire.HelloAck) { mutate(a, fc) })
			fr := fc.read()
			g, ok := fr.(*wire.Goodbye)
			if !ok {
				t.Fatalf("runner sent %s, want Goodbye", fr.Type())
			}
			if err := isGoodbye(g, wire.GoodbyeAuthFailed); err != nil {
				t.Fatal(err)
			}
			if len(c.Connected()) != 0 || c.AnyUp() {
				t.Fatal("runner connected")
			}
		})
	}
}

// ---- D28 sentence 3: "The validator admits after verifying the runner's
// HelloAck and the admission rules; any refusal is a Goodbye." ----

// helloSent starts a server that reports admissions on the returned
// channel and a raw runner rk that has sent its Hello and read the
// validator's Hello and HelloAck, but not sent its own HelloAck.
func helloSent(t *testing.T, rk *wire.RunnerKey) (*Server, *rawConn, chan cip11.Address) {
	t.Helper()
	f := newFixture(t, 1, rk)
	admits := make(chan cip11.Address, 4)
	s := f.startServer(0, func(c *ServerConfig) { c.OnAdmit = func(a cip11.Address) { admits <- a } })
	r := rawDial(t, rawTransport(t), s, rk)
	if g, err := r.sendHello(helloFor(rk, f.snap.Pair())); err != nil || g != nil {
		t.Fatal(err, g)
	}
	return s, r, admits
}

// D28, §6.2: until the runner's HelloAck verified, nothing is recorded:
// not connected, not present, OnAdmit not called, still half-open; a
// heartbeat in place of the HelloAck is Goodbye{ProtocolError}.
func TestD28NoAdmissionBeforeRunnerAck(t *testing.T) {
	rk := runnerKey(t, 1)
	s, r, admits := helloSent(t, rk)
	time.Sleep(100 * time.Millisecond)
	if s.Connected(rk.Address()) || s.IsPresent(rk.Address()) || s.HalfOpen() != 1 || len(admits) != 0 {
		t.Fatalf("recorded before HelloAck: connected %v present %v half-open %d admits %d",
			s.Connected(rk.Address()), s.IsPresent(rk.Address()), s.HalfOpen(), len(admits))
	}
	sess, err := wire.SessionFor(r.hello, r.peer, r.binding)
	if err != nil {
		t.Fatal(err)
	}
	p := &wire.HeartbeatPing{BlockHeight: startHeight, Nonce: 0}
	if err := p.Sign(sess, rk); err != nil {
		t.Fatal(err)
	}
	if err := r.ctl.write(p); err != nil {
		t.Fatal(err)
	}
	if err := isGoodbye(r.expectGoodbye(), wire.GoodbyeProtocolError); err != nil {
		t.Fatal(err)
	}
	if len(admits) != 0 || s.Stats().Admitted != 0 {
		t.Fatal("admitted without a HelloAck")
	}
}

// D28, §6.2: admission happens once the runner's HelloAck verified and
// the admission rules pass (OnAdmit, then presence at the first ping).
// The refusals after a verified HelloAck (registration) are covered by
// TestAdmissionRefusals and are signed Goodbyes.
func TestD28AdmitsAfterRunnerAck(t *testing.T) {
	rk := runnerKey(t, 1)
	s, r, admits := helloSent(t, rk)
	if err := r.sendAck(r.binding); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-admits:
		if a != rk.Address() {
			t.Fatalf("admitted %s", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not admitted after a valid HelloAck")
	}
	if r.ping(0, startHeight) == nil || !s.IsPresent(rk.Address()) {
		t.Fatal("admitted runner not present after its first ping")
	}
}

// ---- D28 sentence 4: "A HelloAck repeats its sender's Hello fields (all
// but block_height); a mismatch is Goodbye{ProtocolError}." ----

// D28: every repeated field of the runner's HelloAck is checked against
// the runner's Hello — chain_id, version, validator_set_hash,
// subset_epoch, party_pubkey, party_role — and a mismatch is
// Goodbye{ProtocolError} even when the signature is valid for what the
// ack says. block_height is not repeated (TestHelloAckMismatchIsProtocolError).
func TestD28RunnerAckMismatchEachField(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	other := runnerKey(t, 2)
	vk := validatorKeys(1, "other")[0]
	cases := map[string]struct {
		mutate func(a *wire.HelloAck)
		signer wire.Signer
	}{
		"chain_id":           {func(a *wire.HelloAck) { a.ChainID++ }, rk},
		"version":            {func(a *wire.HelloAck) { a.Version = wire.Version + 1 }, rk},
		"validator_set_hash": {func(a *wire.HelloAck) { a.ValidatorSetHash[0] ^= 1 }, rk},
		"subset_epoch":       {func(a *wire.HelloAck) { a.SubsetEpoch++ }, rk},
		"party_pubkey":       {func(a *wire.HelloAck) { a.PartyPubKey = other.PubKey() }, other},
		"party_role": {func(a *wire.HelloAck) {
			a.PartyRole, a.PartyPubKey = wire.RoleValidator, vk.PubKey()
		}, vk},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := rawDial(t, tr, s, rk)
			if g, err := r.sendHello(helloFor(rk, f.snap.Pair())); err != nil || g != nil {
				t.Fatal(err, g)
			}
			ack := ackFor(r.hello)
			tc.mutate(ack)
			if err := ack.Sign(r.peer, r.binding, tc.signer); err != nil {
				t.Fatal(err)
			}
			if err := r.ctl.write(ack); err != nil {
				t.Fatal(err)
			}
			if err := isGoodbye(r.expectGoodbye(), wire.GoodbyeProtocolError); err != nil {
				t.Fatal(err)
			}
		})
	}
	if s.Stats().Admitted != 0 {
		t.Fatal("admitted with a mismatched HelloAck")
	}
}

// D28: the Client holds the validator's HelloAck to the same rule — a
// field that differs from the validator's Hello (here subset_epoch, and
// party_pubkey) is Goodbye{ProtocolError}; another block_height is fine.
func TestD28ValidatorAckMismatchIsProtocolError(t *testing.T) {
	t.Run("block_height differs", func(t *testing.T) {
		_, _, v, c := runnerWithFake(t)
		fc := v.accept()
		fc.t = t
		fc.sendHello(nil)
		fc.readAck()
		fc.sendAck(func(a *wire.HelloAck) { a.BlockHeight += 5 }) // not signed, not repeated
		fc.answerPing()
		eventually(t, "admission", func() bool { return len(c.Connected()) == 1 })
	})
	for name, mutate := range map[string]func(a *wire.HelloAck){
		"subset_epoch": func(a *wire.HelloAck) { a.SubsetEpoch++ },
		"party_pubkey": func(a *wire.HelloAck) { a.PartyPubKey = validatorKeys(1, "other")[0].PubKey() },
	} {
		t.Run(name, func(t *testing.T) {
			_, _, v, c := runnerWithFake(t)
			fc := v.accept()
			fc.t = t
			fc.sendHello(nil)
			fc.readAck()
			fc.sendAck(mutate)
			if err := isGoodbye(fc.expectGoodbye(), wire.GoodbyeProtocolError); err != nil {
				t.Fatal(err)
			}
			if len(c.Connected()) != 0 {
				t.Fatal("runner connected")
			}
		})
	}
}

// ---- D28 sentence 5: "Versions: a different major is
// Goodbye{UnsupportedVersion} (§12.3); otherwise the connection's version,
// used in connection_id and every preimage, is the lower of the two
// offered." ----

// D28, §12.3: a validator Hello with another major version is answered by
// the Client with Goodbye{UnsupportedVersion} and no HelloAck. (The
// validator side: TestAdmissionRefusals/major_version.)
func TestD28RunnerRefusesOtherMajor(t *testing.T) {
	for _, ver := range []uint16{0x0000, 0x0200, 0xff00} {
		_, _, v, c := runnerWithFake(t)
		fc := v.accept()
		fc.sendHello(func(h *wire.Hello) { h.Version = ver })
		fr := fc.read()
		g, ok := fr.(*wire.Goodbye)
		if !ok {
			t.Fatalf("version %#x: runner sent %s, want Goodbye", ver, fr.Type())
		}
		if err := isGoodbye(g, wire.GoodbyeUnsupportedVersion); err != nil {
			t.Fatalf("version %#x: %v", ver, err)
		}
		if len(c.Connected()) != 0 {
			t.Fatal("runner connected")
		}
		_ = c.Close()
	}
}

// D28, §12.3, §12.6: a runner offering a higher minor (0x0105) meets a
// validator of 0x0101 (wire.VersionReceipts, SPEC-NOTES N18): the
// connection's version is 0x0101, and it is what both connection_id and
// the HelloAck preimages carry — the validator's HelloAck verifies only
// with 0x0101 in its preimage, and a runner HelloAck signed with its own
// 0x0105 is refused (Goodbye{AuthFailed}).
func TestD28LowerVersionInConnectionIDAndPreimages(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	const higher = wire.VersionReceipts + 4 // 0x0105

	r := rawDial(t, tr, s, rk)
	h := helloFor(rk, f.snap.Pair())
	h.Version = higher
	if g, err := r.sendHello(h); err != nil || g != nil {
		t.Fatal(err, g)
	}
	// The validator's Hello carries its own version; its HelloAck repeats it.
	if r.peer.Version != wire.VersionReceipts {
		t.Fatalf("validator Hello version %#x", r.peer.Version)
	}
	ack, err := signAck(r.hello, r.peer, r.binding, rk)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Version != higher {
		t.Fatalf("HelloAck version field %#x, want its sender's Hello's %#x", ack.Version, higher)
	}
	// hiPeer makes wire's min(ack, Hello) the higher version: the preimage
	// a runner signing with its own version would use.
	hiPeer := *r.peer
	hiPeer.Version = higher
	if err := ack.Verify(&hiPeer, r.binding); err == nil {
		t.Fatal("runner HelloAck preimage carries the higher version")
	}
	if err := ack.Verify(r.peer, r.binding); err != nil {
		t.Fatalf("runner HelloAck preimage without the lower version: %v", err)
	}
	if err := r.ctl.write(ack); err != nil {
		t.Fatal(err)
	}
	r.sess, err = wire.SessionFor(r.hello, r.peer, r.binding)
	if err != nil {
		t.Fatal(err)
	}
	want, err := wire.ConnectionID(&wire.Conn{ChainID: testChain, Version: wire.VersionReceipts, RunnerPubKey: rk.PubKey(),
		ValidatorPubKey: f.vkeys[0].PubKey(), ValidatorSetHash: f.snap.Hash(), SubsetEpoch: f.snap.Epoch(), ChannelBinding: r.binding})
	if err != nil {
		t.Fatal(err)
	}
	if r.sess.ID != want {
		t.Fatal("connection_id is not over the lower version")
	}
	if r.ping(0, startHeight) == nil {
		t.Fatal("no pong under the lower-version connection_id")
	}
	if ss := serverSession(s, rk.Address()); ss == nil || ss.ID != want || ss.Version != wire.VersionReceipts {
		t.Fatal("validator's connection_id is not over the lower version")
	}

	// A runner HelloAck whose preimage carries its own higher version.
	bad := rawDial(t, tr, s, rk)
	h = helloFor(rk, f.snap.Pair())
	h.Version = higher
	if g, err := bad.sendHello(h); err != nil || g != nil {
		t.Fatal(err, g)
	}
	wrong := ackFor(bad.hello)
	badHi := *bad.peer
	badHi.Version = higher // the preimage carries 0x0105
	if err := wrong.Sign(&badHi, bad.binding, rk); err != nil {
		t.Fatal(err)
	}
	if err := bad.ctl.write(wrong); err != nil {
		t.Fatal(err)
	}
	if err := isGoodbye(bad.expectGoodbye(), wire.GoodbyeAuthFailed); err != nil {
		t.Fatal(err)
	}
}

// D28, §12.3, §12.6: the Client meeting a validator that offers a higher
// minor (0x0101) uses the lower version, its own 0x0100: its HelloAck
// preimage and its connection_id (so its pings) carry 0x0100, and it
// accepts the validator's HelloAck signed the same way.
func TestD28RunnerUsesLowerVersion(t *testing.T) {
	_, _, v, c := runnerWithFake(t)
	fc := v.accept()
	fc.sendHello(func(h *wire.Hello) { h.Version = wire.Version + 1 })
	ack := fc.readAck() // verified with min(0x0101, 0x0100) in the preimage
	if ack.Version != wire.Version {
		t.Fatalf("runner HelloAck version %#x, want its Hello's", ack.Version)
	}
	pre := *ack
	pre.Version = wire.Version + 1
	if err := pre.Verify(fc.hello, fc.binding); err == nil {
		t.Fatal("runner HelloAck preimage carries the validator's higher version")
	}
	fc.sendAck(nil)
	if fc.sess.Version != wire.Version {
		t.Fatalf("session version %#x", fc.sess.Version)
	}
	fc.answerPing() // verifies under connection_id with 0x0100
	eventually(t, "admission", func() bool { return len(c.Connected()) == 1 })
}
