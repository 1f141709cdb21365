package quic

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

// The tests in this file check DECISIONS D27 (streams, ALPN, TLS; §6.1,
// §6.2, §12.1) sentence by sentence, against the validator [Server] with a
// raw runner and against the runner [Client] with fakeValidator
// (d28_test.go). Runners of other implementations connect to this
// validator, so what is checked is what such a peer sees.

// ---- D27 sentence 1: "The runner is the QUIC client and the validator
// the server." and sentence 2: "ALPN cip11/1." ----

// D27: the Client dials (it is the QUIC client) and the Server accepts.
// A dialer offering any ALPN but cip11/1 is refused by the TLS handshake;
// one that offers cip11/1 among others gets cip11/1.
func TestD27ALPN(t *testing.T) {
	if ALPN != "cip11/1" {
		t.Fatalf("ALPN = %q", ALPN)
	}
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	dial := func(protos ...string) (*qgo.Conn, error) {
		conf := clientTLS()
		conf.NextProtos = protos
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return tr.Dial(ctx, s.Addr(), conf, nil)
	}
	for _, protos := range [][]string{{"h3"}, {"cip11/2"}, {"cip11"}, {"CIP11/1"}} {
		if qc, err := dial(protos...); err == nil {
			_ = qc.CloseWithError(0, "")
			t.Fatalf("ALPN %q accepted", protos)
		}
	}
	qc, err := dial("h3", ALPN)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = qc.CloseWithError(0, "") }()
	if got := qc.ConnectionState().TLS.NegotiatedProtocol; got != ALPN {
		t.Fatalf("negotiated %q", got)
	}
	if p := clientTLS().NextProtos; len(p) != 1 || p[0] != ALPN {
		t.Fatalf("the runner offers %q", p)
	}
	if p := serverTLS(tls.Certificate{}).NextProtos; len(p) != 1 || p[0] != ALPN {
		t.Fatalf("the validator offers %q", p)
	}
}

// D27: a Client whose validator speaks another ALPN never connects (the
// TLS handshake fails, no CIP-11 frame is exchanged); and the channel
// binding itself insists on cip11/1 (ErrALPN) should a stack let another
// protocol through.
func TestD27RunnerRefusesOtherALPN(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	v := startFakeValidator(t, f, 0, "h3")
	c := f.startClient(rk, nil, nil)
	eventually(t, "a dial", func() bool { return c.Stats().Dials >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if qc, err := v.ln.Accept(ctx); err == nil {
		_ = qc.CloseWithError(0, "")
		t.Fatal("a runner connection completed under ALPN h3")
	}
	if c.Stats().Admissions != 0 || len(c.Connected()) != 0 || c.AnyUp() {
		t.Fatal("runner connected")
	}

	qc := dialWithALPN(t, "h3")
	if _, err := ChannelBinding(qc); !errors.Is(err, ErrALPN) {
		t.Fatalf("ChannelBinding under ALPN h3: %v, want ErrALPN", err)
	}
}

// dialWithALPN connects to a bare quic-go server that speaks alpn.
func dialWithALPN(t *testing.T, alpn string) *qgo.Conn {
	t.Helper()
	cert, err := selfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	sc := serverTLS(cert)
	sc.NextProtos = []string{alpn}
	ln, err := qgo.ListenAddr("127.0.0.1:0", sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	cc := clientTLS()
	cc.NextProtos = []string{alpn}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	qc, err := qgo.DialAddr(ctx, ln.Addr().String(), cc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qc.CloseWithError(0, "") })
	return qc
}

// ---- D27 sentence 3: "TLS 1.3 with self-signed certificates that
// neither side verifies: identity is the role key, proven by HelloAck over
// the channel binding TLS-Exporter("cowboy-cip11-handshake-v1", "", 32)
// (§6.2)." ----

// D27: TLS 1.3 only — a dialer capped at TLS 1.2 is refused, and both
// ends of an admitted connection run TLS 1.3.
func TestD27TLS13Only(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	conf := clientTLS()
	conf.MinVersion, conf.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if qc, err := tr.Dial(ctx, s.Addr(), conf, nil); err == nil {
		_ = qc.CloseWithError(0, "")
		t.Fatal("TLS 1.2 dialer accepted")
	}
	r := rawDial(t, tr, s, rk)
	r.handshake(f.snap.Pair())
	if v := r.qc.ConnectionState().TLS.Version; v != tls.VersionTLS13 {
		t.Fatalf("runner end: TLS %#x", v)
	}
	if sc := serverConn(s, rk.Address()); sc == nil || sc.qc.ConnectionState().TLS.Version != tls.VersionTLS13 {
		t.Fatal("validator end is not TLS 1.3")
	}
}

func serverConn(s *Server, r cip11.Address) *sconn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.byRunner[r]; len(l) > 0 {
		return l[len(l)-1]
	}
	return nil
}

// D27, §6.2: the validator's certificate is self-signed and verifies
// against no root, yet the runner connects (it does not verify it), and
// the runner presents no certificate at all (the validator verifies none).
// Each Server has its own certificate: it carries no identity.
func TestD27SelfSignedCertificatesUnverified(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 2, rk)
	s0, s1 := f.startServer(0, nil), f.startServer(1, nil)
	tr := rawTransport(t)
	var certs [][]byte
	for _, s := range []*Server{s0, s1} {
		r := rawDial(t, tr, s, rk)
		r.handshake(f.snap.Pair())
		peer := r.qc.ConnectionState().TLS.PeerCertificates
		if len(peer) != 1 {
			t.Fatalf("%d certificates", len(peer))
		}
		cert := peer[0]
		if err := cert.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature); err != nil ||
			string(cert.RawIssuer) != string(cert.RawSubject) {
			t.Fatalf("validator certificate is not self-signed: %v", err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: x509.NewCertPool()}); err == nil {
			t.Fatal("certificate unexpectedly verifies")
		}
		certs = append(certs, cert.Raw)
		sc := serverConn(s, rk.Address())
		if sc == nil || len(sc.qc.ConnectionState().TLS.PeerCertificates) != 0 {
			t.Fatal("the runner presented a certificate (or was not admitted)")
		}
	}
	if string(certs[0]) == string(certs[1]) {
		t.Fatal("two Servers share a certificate")
	}
}

// D27, §6.2: the channel binding is exactly TLS-Exporter with label
// "cowboy-cip11-handshake-v1", an empty context and 32 bytes: computed
// here independently, it equals both ends' binding, and a HelloAck signed
// over any other exporter output (another label, a non-empty context, or
// a longer output cut to 32 bytes) is refused with Goodbye{AuthFailed}.
func TestD27ExporterExact(t *testing.T) {
	if ExporterLabel != "cowboy-cip11-handshake-v1" {
		t.Fatalf("ExporterLabel = %q", ExporterLabel)
	}
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	export := func(qc *qgo.Conn, label string, ctx []byte, n int) cip11.Hash {
		st := qc.ConnectionState().TLS
		b, err := st.ExportKeyingMaterial(label, ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		return cip11.Hash(b[:32])
	}

	r := rawDial(t, tr, s, rk)
	want := export(r.qc, "cowboy-cip11-handshake-v1", nil, 32)
	if export(r.qc, "cowboy-cip11-handshake-v1", []byte{}, 32) != want {
		t.Fatal("empty and absent exporter contexts differ")
	}
	if got, err := ChannelBinding(r.qc); err != nil || got != want || r.binding != want {
		t.Fatalf("ChannelBinding = %x, %v; want %x", got, err, want)
	}
	r.handshake(f.snap.Pair())
	if ss := serverSession(s, rk.Address()); ss == nil || ss.ChannelBinding != want {
		t.Fatal("the validator's channel binding differs")
	}

	for name, wrong := range map[string]func(qc *qgo.Conn) cip11.Hash{
		"label v2":      func(qc *qgo.Conn) cip11.Hash { return export(qc, "cowboy-cip11-handshake-v2", nil, 32) },
		"context":       func(qc *qgo.Conn) cip11.Hash { return export(qc, "cowboy-cip11-handshake-v1", []byte{0}, 32) },
		"64 bytes, cut": func(qc *qgo.Conn) cip11.Hash { return export(qc, "cowboy-cip11-handshake-v1", nil, 64) },
	} {
		t.Run(name, func(t *testing.T) {
			r := rawDial(t, tr, s, rk)
			if g, err := r.sendHello(helloFor(rk, f.snap.Pair())); err != nil || g != nil {
				t.Fatal(err, g)
			}
			if err := r.sendAck(wrong(r.qc)); err != nil {
				t.Fatal(err)
			}
			if err := isGoodbye(r.expectGoodbye(), wire.GoodbyeAuthFailed); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// ---- D27 sentence 4: "The control stream is the runner's first
// bidirectional stream (id 0): Hello, HelloAck, heartbeats, backpressure,
// capability deltas, Goodbye." ----

// D27, §6.1: the control stream is stream 0 at both ends, and the runner
// can open no other stream: the validator allows one runner-initiated
// bidirectional stream and no unidirectional one, so a second
// bidirectional or any unidirectional stream is refused by QUIC's stream
// limit (a peer that exceeded it would be closed with STREAM_LIMIT_ERROR),
// and the control stream goes on working.
func TestD27ControlStreamIsTheOnlyRunnerStream(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	r := rawDial(t, rawTransport(t), s, rk)
	r.handshake(f.snap.Pair())
	if id := r.ctl.st.StreamID(); id != 0 {
		t.Fatalf("runner control stream id %d", id)
	}
	if sc := serverConn(s, rk.Address()); sc == nil || sc.ctl.st.StreamID() != 0 {
		t.Fatal("validator control stream is not stream 0")
	}
	var limit *qgo.StreamLimitReachedError
	if _, err := r.qc.OpenStream(); !errors.As(err, &limit) {
		t.Fatalf("second bidirectional stream: %v, want StreamLimitReachedError", err)
	}
	if _, err := r.qc.OpenUniStream(); !errors.As(err, &limit) {
		t.Fatalf("unidirectional stream: %v, want StreamLimitReachedError", err)
	}
	if r.ping(1, startHeight) == nil {
		t.Fatal("control stream dead after the refused streams")
	}
}

// D27, §6.1: the runner opens its control stream as its first
// bidirectional stream (id 0, checked by fakeValidator.accept) and
// refuses a validator-opened unidirectional stream.
func TestD27RunnerControlStreamAndNoUniStreams(t *testing.T) {
	_, _, v, c := runnerWithFake(t)
	fc := v.accept()
	fc.sendHello(nil)
	fc.readAck()
	fc.sendAck(nil)
	fc.answerPing()
	eventually(t, "admission", func() bool { return len(c.Connected()) == 1 })
	if !c.AnyUp() {
		t.Fatal("AnyUp false with a link up")
	}
	var limit *qgo.StreamLimitReachedError
	if _, err := fc.qc.OpenUniStream(); !errors.As(err, &limit) {
		t.Fatalf("validator unidirectional stream: %v, want StreamLimitReachedError", err)
	}
}

// D27, §6.3–§6.5, §12.5: the control stream carries heartbeats,
// backpressure, capability deltas and Goodbye, all after the handshake on
// the same stream; frames are §12.1 envelopes back to back, so a HelloAck
// and a ping in one stream write are two frames.
func TestD27ControlStreamCarriesControlFrames(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	r := rawDial(t, rawTransport(t), s, rk)
	if g, err := r.sendHello(helloFor(rk, f.snap.Pair())); err != nil || g != nil {
		t.Fatal(err, g)
	}
	ack, err := signAck(r.hello, r.peer, r.binding, rk)
	if err != nil {
		t.Fatal(err)
	}
	if r.sess, err = wire.SessionFor(r.hello, r.peer, r.binding); err != nil {
		t.Fatal(err)
	}
	ping := &wire.HeartbeatPing{BlockHeight: startHeight, Nonce: 0}
	if err := ping.Sign(r.sess, rk); err != nil {
		t.Fatal(err)
	}
	if err := r.ctl.writeAll(ack, ping); err != nil { // back to back, one write
		t.Fatal(err)
	}
	fr, err := r.ctl.readBy(nowPlus(5 * time.Second))
	if pong, ok := fr.(*wire.HeartbeatPong); err != nil || !ok || pong.NonceEcho != 0 {
		t.Fatalf("no pong to the ping behind the HelloAck: %v", err)
	}
	if !s.IsPresent(rk.Address()) {
		t.Fatal("not present")
	}

	bp := &wire.BackpressureSignal{BlockHeight: startHeight, ActiveJobs: 4, MaxConcurrent: 4, AcceptingNew: false}
	if err := bp.Sign(r.sess, rk); err != nil {
		t.Fatal(err)
	}
	cd := &wire.CapabilityDelta{BlockHeight: startHeight, AddedCapabilities: []string{"gpu"}}
	if err := cd.Sign(r.sess, rk); err != nil {
		t.Fatal(err)
	}
	if err := r.ctl.writeAll(bp, cd); err != nil {
		t.Fatal(err)
	}
	pong := r.ping(1, startHeight)
	if pong == nil || pong.AcceptingNew {
		t.Fatalf("pong after backpressure: %+v", pong)
	}
	if s.IsPresent(rk.Address()) {
		t.Fatal("backpressured runner still present (§6.4)")
	}

	g := goodbye(r.sess, rk, wire.GoodbyeShutdown, "bye", nil)
	if err := r.ctl.write(g); err != nil {
		t.Fatal(err)
	}
	r.waitClosed()
	eventually(t, "disconnect", func() bool { return !s.Connected(rk.Address()) })
}

// D27: job frames are not control frames — a JobAck, JobProgress,
// JobResultCommit or JobResult on the control stream is answered with a
// signed Goodbye{ProtocolError} and the connection is closed.
func TestD27JobFramesOnControlStreamRefused(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	id, _ := testJob("ctl")
	for name, mk := range map[string]func(r *rawConn) wire.Frame{
		"JobAck": func(r *rawConn) wire.Frame {
			a := &wire.JobAck{JobID: id, Status: wire.Accepted()}
			if err := a.Sign(r.sess, rk); err != nil {
				t.Fatal(err)
			}
			return a
		},
		"JobProgress": func(*rawConn) wire.Frame { return &wire.JobProgress{JobID: id, Fraction: 50} },
		"JobResultCommit": func(*rawConn) wire.Frame {
			return &wire.JobResultCommit{JobID: id, TxBytes: memTx(rk, wire.InstructionJobResultCommit, id)}
		},
		"JobResult": func(*rawConn) wire.Frame {
			return &wire.JobResult{JobID: id, TxBytes: memTx(rk, wire.InstructionJobResultSubmit, id)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := rawDial(t, tr, s, rk)
			r.handshake(f.snap.Pair())
			if err := r.ctl.write(mk(r)); err != nil {
				t.Fatal(err)
			}
			g := r.expectGoodbye()
			if err := isGoodbye(g, wire.GoodbyeProtocolError); err != nil {
				t.Fatal(err)
			}
			if err := g.Verify(r.sess, wire.RoleValidator); err != nil {
				t.Fatalf("post-auth Goodbye not signed: %v", err)
			}
			r.waitClosed()
		})
	}
	if n := len(f.mempools[0].Txs()); n != 0 {
		t.Fatalf("%d transactions forwarded from the control stream", n)
	}
}

// D27: the runner refuses job frames from the validator on the control
// stream too (a JobCancel or a JobAssignment there): signed
// Goodbye{ProtocolError}.
func TestD27RunnerRefusesJobFramesOnControlStream(t *testing.T) {
	id, spec := testJob("ctl")
	for name, mk := range map[string]func(fc *fakeConn) wire.Frame{
		"JobCancel": func(fc *fakeConn) wire.Frame {
			jc := &wire.JobCancel{JobID: id, Reason: wire.CancelExpired}
			jc.Sign(fc.sess, fc.v.key)
			return jc
		},
		"JobAssignment": func(fc *fakeConn) wire.Frame {
			a := &wire.JobAssignment{JobID: id, JobSpec: spec, JobSpecHash: wire.JobSpecHash(spec),
				AssignmentHeight: startHeight, DeadlineBlock: startHeight + 100, RunnerPubKey: fc.runner.PartyPubKey}
			if err := a.Sign(testChain, fc.v.key); err != nil {
				fc.t.Fatal(err)
			}
			return a
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, v, c := runnerWithFake(t)
			fc := v.accept()
			fc.sendHello(nil)
			fc.readAck()
			fc.sendAck(nil)
			fc.answerPing()
			eventually(t, "admission", func() bool { return len(c.Connected()) == 1 })
			if err := fc.ctl.write(mk(fc)); err != nil {
				t.Fatal(err)
			}
			g := fc.expectGoodbye()
			if err := isGoodbye(g, wire.GoodbyeProtocolError); err != nil {
				t.Fatal(err)
			}
			if err := g.Verify(fc.sess, wire.RoleRunner); err != nil {
				t.Fatalf("post-auth Goodbye not signed: %v", err)
			}
		})
	}
}

// ---- D27 sentence 5: "Each JobAssignment opens its own
// validator-initiated bidirectional stream, which also carries that job's
// JobAck, JobProgress, JobResultCommit, JobResult and JobCancel." and
// sentence 6: "Frames are §12.1 envelopes back to back on a stream." ----

// D27, §10.1–§10.5: two assignments open two validator-initiated
// bidirectional streams (QUIC ids ≡ 1 mod 4, distinct, not the control
// stream), each starting with its JobAssignment; the job's JobAck,
// JobProgress, JobResultCommit and JobResult go back on it, and the
// validator's JobCancel comes on it.
func TestD27JobStreamPerAssignment(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	progress := make(chan *wire.JobProgress, 4)
	s := f.startServer(0, func(c *ServerConfig) {
		c.OnProgress = func(_ cip11.Address, p *wire.JobProgress) { progress <- p }
	})
	r := rawDial(t, rawTransport(t), s, rk)
	r.handshake(f.snap.Pair())

	idA, specA := testJob("stream A")
	idB, specB := testJob("stream B")
	b := assignment(idB, specB, rk.Address())
	b.MultiRunner = true
	for _, err := range s.Push([]Assignment{assignment(idA, specA, rk.Address()), b}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	streams := map[cip11.Hash]*frameStream{}
	frames := map[cip11.Hash]*wire.JobAssignment{}
	ids := map[qgo.StreamID]bool{}
	for range 2 {
		fs, a := r.acceptJob() // the stream's first frame is the JobAssignment
		id := fs.st.StreamID()
		if id%4 != 1 || ids[id] {
			t.Fatalf("job stream id %d: not a fresh validator-initiated bidirectional stream", id)
		}
		ids[id] = true
		if err := a.Verify(testChain); err != nil {
			t.Fatal(err)
		}
		streams[a.JobID], frames[a.JobID] = fs, a
	}
	fa, fb := streams[idA], streams[idB]
	if fa == nil || fb == nil {
		t.Fatal("an assignment did not get its own stream")
	}

	// Job A: ack, progress and the result, all on A's stream.
	r.ack(fa, frames[idA], wire.Accepted())
	if err := fa.write(&wire.JobProgress{JobID: idA, Fraction: 40}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-progress:
		if p.JobID != idA || p.Fraction != 40 {
			t.Fatalf("progress %+v", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("JobProgress on the job stream not delivered")
	}
	if err := fa.write(&wire.JobResult{JobID: idA, TxBytes: memTx(rk, wire.InstructionJobResultSubmit, idA)}); err != nil {
		t.Fatal(err)
	}
	if o := f.waitOutcome(idA); o.Outcome != local.Success {
		t.Fatalf("job A outcome %v (%v)", o.Outcome, o.Err)
	}

	// Job B (multi-runner): ack and commit on B's stream; the cancel comes on it.
	r.ack(fb, frames[idB], wire.Accepted())
	before := s.Stats().Forwarded
	if err := fb.write(&wire.JobResultCommit{JobID: idB, TxBytes: memTx(rk, wire.InstructionJobResultCommit, idB)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "commit forwarded", func() bool { return s.Stats().Forwarded == before+1 })
	if err := s.Cancel(idB, rk.Address(), wire.CancelExpired); err != nil {
		t.Fatal(err)
	}
	fr, err := fb.readBy(nowPlus(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	jc, ok := fr.(*wire.JobCancel)
	if !ok || jc.JobID != idB {
		t.Fatalf("got %s on job B's stream, want its JobCancel", fr.Type())
	}
	if err := jc.Verify(r.sess); err != nil {
		t.Fatal(err)
	}
	// The control stream was not used for any of it and still works.
	if r.ping(1, startHeight) == nil {
		t.Fatal("control stream dead")
	}
}
