package quic

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cip11/cip11/presence/modea"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// Mode-A PresenceReceipts over QUIC (§8.3, §6.4, §12.2–§12.3, SPEC-NOTES N18).

func withReceipts(c *ClientConfig) { c.ModeAReceipts = true }

// receiptsAt waits until c holds a receipt of height h from every one of
// want and returns them.
func receiptsAt(t *testing.T, c *Client, h uint64, want int) []wire.PresenceReceipt {
	t.Helper()
	var got []wire.PresenceReceipt
	eventually(t, "receipts", func() bool {
		got = c.Receipts()
		n := 0
		for _, r := range got {
			if r.BlockHeight == h {
				n++
			}
		}
		return n == want
	})
	return got
}

// TestModeAReceiptsPassProcessCertificate: a runner seeking receipts,
// connected to its k = 3 validators, collects one receipt per validator;
// each verifies under the executing chain's id (§12.6), and together they
// are a SubmitPresenceCertificate that presence/modea.ProcessCertificate
// accepts with t_hard = k, anchoring the runner at their height (§8.3).
func TestModeAReceiptsPassProcessCertificate(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 3, rk)
	for i := range f.vkeys {
		f.startServer(i, nil)
	}
	c := f.startClient(rk, nil, withReceipts)
	eventually(t, "three admitted links", func() bool { return len(c.Connected()) == 3 })
	f.tick(startHeight+1, c)
	got := receiptsAt(t, c, startHeight+1, 3)

	var keys []validators.PeerKey
	for _, r := range got {
		if err := r.Verify(testChain); err != nil {
			t.Fatalf("receipt from %s: %v", r.ValidatorPubKey, err)
		}
		if r.RunnerPubKey != rk.PubKey() || !r.AcceptingNew || r.SubsetEpoch != f.snap.Epoch() || r.ValidatorSetHash != f.snap.Hash() {
			t.Fatalf("receipt fields %+v", r)
		}
		if r.Verify(testChain+1) == nil {
			t.Fatal("a receipt verifies under another chain_id")
		}
		k, _ := validators.PeerKeyOf(r.ValidatorPubKey)
		keys = append(keys, k)
	}
	want := []validators.PeerKey{}
	for _, k := range f.vkeys {
		want = append(want, validators.PeerKey(k.PubKey().Raw()))
	}
	if !slices.Equal(keys, want) { // f.vkeys is in ascending raw-key order
		t.Fatalf("receipts from %x, want one per validator in key order %x", keys, want)
	}
	for i, s := range f.servers {
		if st := s.Stats(); st.ReceiptsIssued < 1 {
			t.Fatalf("validator %d issued %d receipts", i, st.ReceiptsIssued)
		}
	}

	certify := func(tHard uint32) (modea.CertificateResult, error) {
		p := f.p
		p.THard = tHard
		ep, err := f.sets.EpochsAt(startHeight + 1)
		if err != nil {
			t.Fatal(err)
		}
		reg, err := f.reg.At(startHeight + 1)
		if err != nil {
			t.Fatal(err)
		}
		ctx := &modea.CertificateContext{Params: p, ChainID: testChain, CurrentHeight: startHeight + 2, Epochs: ep,
			Registry: reg, Store: modea.NewMemState().Block(startHeight + 2), Meter: &modea.CycleMeter{Limit: ^uint64(0)}}
		return modea.ProcessCertificate(ctx, &modea.Certificate{Runner: rk.Address(), Height: startHeight + 2, Receipts: got})
	}
	res, err := certify(3)
	if err != nil {
		t.Fatalf("ProcessCertificate: %v (verdicts %v)", err, res.Verdicts)
	}
	if n := len(res.Counted()); n != 3 || res.Record.Anchor != startHeight+1 {
		t.Fatalf("counted %d receipts, anchor %d", n, res.Record.Anchor)
	}
	if _, err := certify(4); !errors.Is(err, modea.ErrBelowThreshold) {
		t.Fatalf("t_hard 4 with 3 receipts: %v", err)
	}
}

// rawReceiptConn is a raw runner admitted on a 0x0101 connection.
func rawReceiptConn(t *testing.T, f *fixture, s *Server, rk *wire.RunnerKey) *rawConn {
	t.Helper()
	r := rawDial(t, rawTransport(t), s, rk)
	h := helloFor(r.key, f.snap.Pair())
	h.Version = wire.VersionReceipts
	if g, err := r.sendHello(h); err != nil || g != nil {
		t.Fatalf("hello: %v %+v", err, g)
	}
	if r.peer.Version != wire.VersionReceipts {
		t.Fatalf("validator Hello version %#x to a 0x0101 runner", r.peer.Version)
	}
	if err := r.sendAck(r.binding); err != nil {
		t.Fatal(err)
	}
	if r.sess.Version != wire.VersionReceipts {
		t.Fatalf("session version %#x", r.sess.Version)
	}
	r.ctl.setVersion(wire.VersionReceipts)
	if r.ping(0, startHeight) == nil {
		t.Fatal("no pong")
	}
	return r
}

// request sends a PresenceReceiptRequest and returns the next frame.
func (r *rawConn) request(nonce uint64) wire.Frame {
	r.t.Helper()
	if err := r.ctl.write(&wire.PresenceReceiptRequest{Nonce: nonce}); err != nil {
		r.t.Fatal(err)
	}
	fr, err := r.ctl.readBy(time.Now().Add(5 * time.Second))
	if err != nil {
		r.t.Fatal(err)
	}
	return fr
}

func (r *rawConn) receipt(nonce uint64) *wire.PresenceReceipt {
	r.t.Helper()
	fr := r.request(nonce)
	rc, ok := fr.(*wire.PresenceReceipt)
	if !ok {
		r.t.Fatalf("got %s, want PresenceReceipt", fr.Type())
	}
	if err := wire.CheckReceipt(r.sess, rc); err != nil {
		r.t.Fatalf("receipt: %v", err)
	}
	if rc.NonceEcho != nonce {
		r.t.Fatalf("nonce_echo %d, want %d", rc.NonceEcho, nonce)
	}
	return rc
}

func (r *rawConn) backpressure(h uint64, accepting bool) {
	r.t.Helper()
	bp := &wire.BackpressureSignal{BlockHeight: h, ActiveJobs: 4, MaxConcurrent: 4, AcceptingNew: accepting}
	if err := bp.Sign(r.sess, r.key); err != nil {
		r.t.Fatal(err)
	}
	if err := r.ctl.write(bp); err != nil {
		r.t.Fatal(err)
	}
}

// TestReceiptAcceptingNewFollowsBackpressure (§6.4): after the runner's
// BackpressureSignal{accepting_new: false} the validator's receipts carry
// accepting_new = false, signed so (and presence/modea does not count
// them); after accepting_new = true they carry true again.
func TestReceiptAcceptingNewFollowsBackpressure(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	r := rawReceiptConn(t, f, s, rk)

	if rc := r.receipt(100); !rc.AcceptingNew || rc.BlockHeight != startHeight {
		t.Fatalf("before backpressure: %+v", rc)
	}
	s.Tick(startHeight + 1)
	r.backpressure(startHeight+1, false)
	rc := r.receipt(101)
	if rc.AcceptingNew || rc.BlockHeight != startHeight+1 {
		t.Fatalf("backpressured runner got accepting_new=%v at %d", rc.AcceptingNew, rc.BlockHeight)
	}
	s.Tick(startHeight + 2)
	r.backpressure(startHeight+2, true)
	if rc := r.receipt(102); !rc.AcceptingNew {
		t.Fatal("accepting_new still false after the runner re-asserted capacity")
	}
	if st := s.Stats(); st.ReceiptsIssued != 3 || st.ReceiptRequestsIgnored != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestReceiptOnePerConnectionAndHeight: many requests at one height get
// one signature; the rest are ignored and counted, without a Goodbye: the
// frame after them on the stream is the pong to the next ping. A new
// height gets a new receipt.
func TestReceiptOnePerConnectionAndHeight(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	r := rawReceiptConn(t, f, s, rk)

	r.receipt(1)
	const extra = 50
	for i := range extra {
		if err := r.ctl.write(&wire.PresenceReceiptRequest{Nonce: uint64(2 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	if p := r.ping(1, startHeight); p == nil {
		t.Fatal("the frame after the ignored requests is not the pong")
	}
	st := s.Stats()
	if st.ReceiptsIssued != 1 || st.ReceiptRequestsIgnored != extra || st.ProtocolErrors != 0 {
		t.Fatalf("issued %d, ignored %d, protocol errors %d", st.ReceiptsIssued, st.ReceiptRequestsIgnored, st.ProtocolErrors)
	}
	s.Tick(startHeight + 1)
	if rc := r.receipt(99); rc.BlockHeight != startHeight+1 {
		t.Fatalf("receipt at %d", rc.BlockHeight)
	}
	if st := s.Stats(); st.ReceiptsIssued != 2 {
		t.Fatalf("issued %d after a new height", st.ReceiptsIssued)
	}
	const metric = `
# HELP cip11_presence_receipts_issued_total Mode-A PresenceReceipts signed for runners (§8.3, SPEC-NOTES N18).
# TYPE cip11_presence_receipts_issued_total counter
cip11_presence_receipts_issued_total 2
`
	if err := testutil.CollectAndCompare(NewCollector(s), strings.NewReader(metric), MetricReceiptsIssued); err != nil {
		t.Fatal(err)
	}
}

// TestReceiptsOffSpeaks0x0100: with receipts off (the default) the runner
// offers 0x0100, the validator answers 0x0100 (its Hello is what a 0x0100
// validator sends), no request and no receipt crosses the link.
func TestReceiptsOffSpeaks0x0100(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	c := f.startClient(rk, nil, nil)
	eventually(t, "admission", func() bool { return len(c.Connected()) == 1 })
	for h := uint64(startHeight + 1); h <= startHeight+3; h++ {
		f.tick(h, c)
		eventually(t, "pong", func() bool { return c.Stats().PongsOK >= int64(1+h-startHeight) })
	}
	if ss := serverSession(s, rk.Address()); ss == nil || ss.Version != wire.Version {
		t.Fatalf("session %+v", ss)
	}
	if cs, ss := c.Stats(), s.Stats(); cs.ReceiptRequests != 0 || cs.ReceiptsOK+cs.ReceiptsRejected != 0 ||
		ss.ReceiptsIssued != 0 || ss.ReceiptRequestsIgnored != 0 || len(c.Receipts()) != 0 {
		t.Fatalf("client %+v, server %+v", cs, ss)
	}

	// A raw 0x0100 runner sees the validator Hello version 0x0100.
	r := rawDial(t, rawTransport(t), s, rk)
	if g, err := r.sendHello(helloFor(rk, f.snap.Pair())); err != nil || g != nil {
		t.Fatal(err, g)
	}
	if r.peer.Version != wire.Version {
		t.Fatalf("validator Hello version %#x to a 0x0100 runner", r.peer.Version)
	}
}

// TestReceiptRequestOn0x0100IsProtocolError: on a 0x0100 connection type
// 0x14 is still an unknown type (§12.1): Goodbye{ProtocolError}, no receipt.
func TestReceiptRequestOn0x0100IsProtocolError(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	r := rawDial(t, rawTransport(t), s, rk)
	r.handshake(f.snap.Pair())
	if r.sess.Version != wire.Version {
		t.Fatalf("session %#x", r.sess.Version)
	}
	b, err := wire.Encode(&wire.PresenceReceiptRequest{Nonce: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.st.Write(b); err != nil { // the 0x0100 frameStream would refuse it
		t.Fatal(err)
	}
	g := r.expectGoodbye()
	if err := isGoodbye(g, wire.GoodbyeProtocolError); err != nil {
		t.Fatal(err)
	}
	if err := g.Verify(r.sess, wire.RoleValidator); err != nil {
		t.Fatalf("Goodbye after mutual auth: %v", err)
	}
	r.waitClosed()
	if st := s.Stats(); st.ReceiptsIssued != 0 || st.ProtocolErrors != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// fakeReceiptLink is a Client seeking receipts admitted by a
// fakeValidator at 0x0101, which answers the first ping.
func fakeReceiptLink(t *testing.T, receipts bool) (*fixture, *wire.RunnerKey, *fakeConn, *Client) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	v := startFakeValidator(t, f, 0, ALPN)
	c := f.startClient(rk, nil, func(cfg *ClientConfig) { cfg.ModeAReceipts = receipts })
	fc := v.accept()
	fc.sendHello(func(h *wire.Hello) { h.Version = wire.VersionReceipts })
	fc.sendAck(nil)
	fc.readAck()
	fc.ctl.setVersion(fc.sess.Version)
	fc.answerPing()
	eventually(t, "admission", func() bool { return len(c.Connected()) == 1 })
	return f, rk, fc, c
}

// TestRunnerDropsBadReceipts: the runner keeps a receipt only if it
// passes wire.CheckReceipt on its connection; a bad one (another chain,
// another epoch pair, another runner) is dropped and the link stays up.
func TestRunnerDropsBadReceipts(t *testing.T) {
	_, rk, fc, c := fakeReceiptLink(t, true)
	if fc.sess.Version != wire.VersionReceipts {
		t.Fatalf("session %#x", fc.sess.Version)
	}
	if _, ok := fc.read().(*wire.PresenceReceiptRequest); !ok {
		t.Fatal("no PresenceReceiptRequest after the first ping")
	}
	other := runnerKey(t, 2)
	send := func(chain uint64, edit func(*wire.PresenceReceipt)) {
		r := &wire.PresenceReceipt{ValidatorPubKey: fc.v.key.PubKey(), RunnerPubKey: rk.PubKey(), SubsetEpoch: fc.sess.SubsetEpoch,
			ValidatorSetHash: fc.sess.ValidatorSetHash, BlockHeight: startHeight, NonceEcho: 5, AcceptingNew: true}
		edit(r)
		if err := r.Sign(chain, fc.v.key); err != nil {
			t.Fatal(err)
		}
		if err := fc.ctl.write(r); err != nil {
			t.Fatal(err)
		}
	}
	send(testChain+1, func(*wire.PresenceReceipt) {})
	send(testChain, func(r *wire.PresenceReceipt) { r.SubsetEpoch++ })
	send(testChain, func(r *wire.PresenceReceipt) { r.RunnerPubKey = other.PubKey() })
	eventually(t, "three rejected receipts", func() bool { return c.Stats().ReceiptsRejected == 3 })
	if len(c.Receipts()) != 0 || len(c.Connected()) != 1 {
		t.Fatalf("receipts %v, connected %d", c.Receipts(), len(c.Connected()))
	}
	// A good one is kept; an older good one does not replace it.
	send(testChain, func(r *wire.PresenceReceipt) { r.BlockHeight = startHeight + 5 })
	send(testChain, func(r *wire.PresenceReceipt) { r.BlockHeight = startHeight + 1 })
	eventually(t, "two good receipts", func() bool { return c.Stats().ReceiptsOK == 2 })
	got := c.Receipts()
	if len(got) != 1 || got[0].BlockHeight != startHeight+5 || got[0].Verify(testChain) != nil {
		t.Fatalf("kept %+v", got)
	}
	// The copy is the caller's.
	got[0].BlockHeight = 0
	if c.Receipts()[0].BlockHeight != startHeight+5 {
		t.Fatal("Receipts shares its storage")
	}
}

// TestReceiptOn0x0100LinkIsProtocolError: a runner with receipts off
// treats a 0x15 frame as an unknown type: Goodbye{ProtocolError}.
func TestReceiptOn0x0100LinkIsProtocolError(t *testing.T) {
	_, rk, fc, c := fakeReceiptLink(t, false)
	if fc.sess.Version != wire.Version || fc.runner.Version != wire.Version {
		t.Fatalf("runner offered %#x, session %#x", fc.runner.Version, fc.sess.Version)
	}
	r := &wire.PresenceReceipt{ValidatorPubKey: fc.v.key.PubKey(), RunnerPubKey: rk.PubKey(), SubsetEpoch: fc.sess.SubsetEpoch,
		ValidatorSetHash: fc.sess.ValidatorSetHash, BlockHeight: startHeight, AcceptingNew: true}
	if err := r.Sign(testChain, fc.v.key); err != nil {
		t.Fatal(err)
	}
	b, err := wire.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fc.ctl.st.Write(b); err != nil {
		t.Fatal(err)
	}
	g := fc.expectGoodbye()
	if err := isGoodbye(g, wire.GoodbyeProtocolError); err != nil {
		t.Fatal(err)
	}
	if g.Detail == nil || !bytes.Contains([]byte(*g.Detail), []byte("unknown frame type")) {
		t.Fatalf("detail %v", g.Detail)
	}
	if st := c.Stats(); st.ReceiptRequests != 0 || st.ReceiptsOK != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestReceiptsOnAgainst0x0100Validator: a runner seeking receipts that
// meets a 0x0100 validator (another implementation) negotiates 0x0100
// and sends no request: its next frame after a new height is the ping.
func TestReceiptsOnAgainst0x0100Validator(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	v := startFakeValidator(t, f, 0, ALPN)
	c := f.startClient(rk, nil, withReceipts)
	fc := v.accept()
	if fc.runner.Version != wire.VersionReceipts {
		t.Fatalf("runner offered %#x", fc.runner.Version)
	}
	fc.sendHello(nil) // 0x0100
	fc.sendAck(nil)
	fc.readAck()
	if fc.sess.Version != wire.Version {
		t.Fatalf("session %#x", fc.sess.Version)
	}
	fc.answerPing()
	eventually(t, "admission", func() bool { return len(c.Connected()) == 1 })
	c.Tick(startHeight + 1)
	if p, ok := fc.read().(*wire.HeartbeatPing); !ok || p.BlockHeight != startHeight+1 {
		t.Fatalf("next frame %v", p)
	}
	if st := c.Stats(); st.ReceiptRequests != 0 {
		t.Fatalf("%d requests on a 0x0100 link", st.ReceiptRequests)
	}
}
