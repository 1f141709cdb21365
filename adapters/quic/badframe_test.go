package quic

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/cip11/cip11/wire"
)

// §12.1, §13: a length above MAX_FRAME_BYTES closes the connection with
// Goodbye{ProtocolError} from the 4-byte header alone — the announced size
// is never allocated.
func TestOversizedFrameClosesWithoutAllocating(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	for _, n := range []uint32{f.p.MaxFrameBytes + 1, 0xFFFFFFFF} {
		r := rawDial(t, tr, s, rk)
		r.handshake(f.snap.Pair())
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		hdr := binary.BigEndian.AppendUint32(nil, n)
		if _, err := r.ctl.st.Write(append(hdr, byte(wire.TypeHeartbeatPing))); err != nil {
			t.Fatal(err)
		}
		if err := isGoodbye(r.expectGoodbye(), wire.GoodbyeProtocolError); err != nil {
			t.Fatal(err)
		}
		r.waitClosed()
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(f.p.MaxFrameBytes)/2 {
			t.Fatalf("announcing %d bytes allocated %d", n, grew)
		}
	}
}

// Before admission the frame ceiling is the handshake's, not
// MAX_FRAME_BYTES: an unauthenticated peer cannot make the validator
// buffer megabytes.
func TestPreAuthFrameCeiling(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	r := rawDial(t, rawTransport(t), s, rk)
	hdr := binary.BigEndian.AppendUint32(nil, handshakeFrameBytes+1)
	if _, err := r.ctl.st.Write(append(hdr, byte(wire.TypeHello))); err != nil {
		t.Fatal(err)
	}
	g := r.expectGoodbye()
	if err := isGoodbye(g, wire.GoodbyeProtocolError); err != nil {
		t.Fatal(err)
	}
	if g.Signed != nil {
		t.Fatal("pre-auth Goodbye signed")
	}
}

// §12.1: an unknown type, a zero length and a payload that is not the
// frame's exact deterministic-CBOR body are protocol errors.
func TestMalformedFramesAreProtocolErrors(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	for name, b := range map[string][]byte{
		"zero length":   {0, 0, 0, 0},
		"unknown type":  {0, 0, 0, 1, 0x99},
		"bad cbor":      {0, 0, 0, 4, byte(wire.TypeHeartbeatPing), 0xa3, 0x00, 0x18},
		"truncated map": {0, 0, 0, 2, byte(wire.TypeHeartbeatPing), 0xa3},
	} {
		t.Run(name, func(t *testing.T) {
			r := rawDial(t, tr, s, rk)
			r.handshake(f.snap.Pair())
			if _, err := r.ctl.st.Write(b); err != nil {
				t.Fatal(err)
			}
			if err := isGoodbye(r.expectGoodbye(), wire.GoodbyeProtocolError); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A frame type valid on the wire but not on the control stream.
	r := rawDial(t, tr, s, rk)
	r.handshake(f.snap.Pair())
	if err := r.ctl.write(&wire.JobProgress{Fraction: 1}); err != nil {
		t.Fatal(err)
	}
	if err := isGoodbye(r.expectGoodbye(), wire.GoodbyeProtocolError); err != nil {
		t.Fatal(err)
	}
}

// The server survives random bytes on the control stream, before and
// after admission, and still admits an honest runner afterwards.
func TestRandomControlStreamBytes(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, func(c *ServerConfig) { c.GoodbyeLinger = 20 * time.Millisecond; c.HelloRate = -1 })
	tr := rawTransport(t)
	rng := rand.New(rand.NewPCG(1, 2))
	n := 24
	if testing.Short() {
		n = 8
	}
	for i := range n {
		r := rawDial(t, tr, s, rk)
		if i%2 == 1 {
			r.handshake(f.snap.Pair())
		}
		b := make([]byte, 1+rng.IntN(300))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if i%3 == 0 && len(b) > 4 { // a plausible header in front of garbage
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			b[4] = []byte{0x01, 0x02, 0x10, 0x12, 0x13, 0xf0}[rng.IntN(6)]
		}
		feed(r, b)
	}
	checkAlive(t, f, s)
}

func feed(r *rawConn, b []byte) {
	_, _ = r.ctl.st.Write(b)
	select {
	case <-r.qc.Context().Done():
	case <-time.After(30 * time.Millisecond):
	}
	_ = r.qc.CloseWithError(0, "")
}

// checkAlive: an honest runner is still admitted and only its connection
// remains.
func checkAlive(t *testing.T, f *fixture, s *Server) {
	t.Helper()
	// Wait for the abused connections to be gone: local.Presence.Close of an
	// old connection clears the runner even if a newer one is live.
	eventually(t, "abused connections closed", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.conns) == 0
	})
	k := runnerKey(t, 1)
	r := rawDial(t, rawTransport(t), s, k)
	r.handshake(f.snap.Pair())
	if !s.IsPresent(k.Address()) {
		t.Fatal("server no longer admits honest runners")
	}
}

// FuzzControlStream feeds arbitrary bytes to the control stream of an
// admitted (first byte odd) or unauthenticated connection; the server must
// never panic and must keep serving.
func FuzzControlStream(ff *testing.F) {
	for _, seedBytes := range [][]byte{
		{1, 0, 0, 0, 5, 0x10, 0xa3, 0, 0, 1},
		{0, 0, 0, 0, 1, 0x01},
		{1, 0xff, 0xff, 0xff, 0xff},
		{0, 0, 0, 0, 3, 0xf0, 0xa0, 0x00},
		{1, 0, 0, 0, 9, 0x12, 0xa6, 0, 1, 1, 2, 2, 3, 0xf5},
	} {
		ff.Add(seedBytes)
	}
	ff.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		rk := runnerKey(t, 1)
		fx := newFixture(t, 1, rk)
		s := fx.startServer(0, func(c *ServerConfig) { c.GoodbyeLinger = 10 * time.Millisecond })
		r := rawDial(t, rawTransport(t), s, rk)
		if b[0]%2 == 1 {
			r.handshake(fx.snap.Pair())
		}
		feed(r, b[1:])
		checkAlive(t, fx, s)
	})
}
