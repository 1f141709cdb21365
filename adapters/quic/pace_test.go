package quic

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

// pacedWorld is one server and n raw runners, handshaken and present.
func pacedWorld(t *testing.T, n int, mutate func(*ServerConfig)) (*fixture, *Server, []*rawConn) {
	keys := make([]*wire.RunnerKey, n)
	for i := range keys {
		keys[i] = runnerKey(t, 1+i)
	}
	f := newFixture(t, 1, keys...)
	s := f.startServer(0, mutate)
	tr := rawTransport(t)
	rs := make([]*rawConn, n)
	for i, k := range keys {
		rs[i] = rawDial(t, tr, s, k)
		rs[i].handshake(f.snap.Pair())
	}
	return f, s, rs
}

// pushNow runs PushWith on its own goroutine and fails the test if it
// has not returned within 5 s: a paced push must not wait for answers.
func pushNow(t *testing.T, s *Server, as []Assignment, o PushOptions) []error {
	t.Helper()
	done := make(chan []error, 1)
	go func() { done <- s.PushWith(as, o) }()
	select {
	case errs := <-done:
		return errs
	case <-time.After(5 * time.Second):
		t.Fatal("paced PushWith waited for the runners' answers")
		return nil
	}
}

// noJobYet checks that r has no job stream within d.
func noJobYet(t *testing.T, r *rawConn, d time.Duration, who string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if st, err := r.qc.AcceptStream(ctx); err == nil {
		t.Fatalf("%s got a job stream (%d) before a slot was free", who, st.StreamID())
	}
}

// A paced push (§10.1 dispatch, pacing of the synchronized-burst
// measurement) returns at once: ErrNotPresent for a seat not routed here,
// nil for the queued ones; the assignments then go out in order, the
// next only once an earlier one was answered.
func TestPushWithPacedDoesNotWait(t *testing.T) {
	_, s, rs := pacedWorld(t, 3, nil)
	absent := runnerKey(t, 99)
	var as []Assignment
	for i, r := range rs {
		id, spec := testJob("paced-" + string(rune('a'+i)))
		as = append(as, assignment(id, spec, r.key.Address()))
	}
	id, spec := testJob("paced-absent")
	as = append(as, assignment(id, spec, absent.Address()))

	errs := pushNow(t, s, as, PushOptions{MaxInFlight: 1, SlotTimeout: time.Minute})
	for i, err := range errs[:3] {
		if err != nil {
			t.Fatalf("seat %d: %v", i, err)
		}
	}
	if !errors.Is(errs[3], ErrNotPresent) {
		t.Fatalf("absent runner: %v", errs[3])
	}
	fs0, a0 := rs[0].acceptJob()
	if a0.JobID != as[0].JobID {
		t.Fatal("first slot went to another seat")
	}
	noJobYet(t, rs[1], 300*time.Millisecond, "runner 1")
	rs[0].ack(fs0, a0, wire.Accepted())
	fs1, a1 := rs[1].acceptJob()
	if a1.JobID != as[1].JobID {
		t.Fatal("second slot went to another seat")
	}
	noJobYet(t, rs[2], 300*time.Millisecond, "runner 2")
	rs[1].ack(fs1, a1, wire.Accepted())
	if _, a2 := rs[2].acceptJob(); a2.JobID != as[2].JobID {
		t.Fatal("third slot went to another seat")
	}
}

// A queued seat whose runner left local presence before its slot came is
// reported through ServerConfig.OnPushError (it was already reported as
// queued by PushWith).
func TestPushWithPacedFailureReported(t *testing.T) {
	failed := make(chan error, 4)
	var failedJob cip11.Hash
	_, s, rs := pacedWorld(t, 2, func(c *ServerConfig) {
		c.OnPushError = func(a Assignment, err error) {
			failedJob = a.JobID
			failed <- err
		}
	})
	id0, spec0 := testJob("paced-stays")
	id1, spec1 := testJob("paced-leaves")
	as := []Assignment{assignment(id0, spec0, rs[0].key.Address()), assignment(id1, spec1, rs[1].key.Address())}
	if errs := pushNow(t, s, as, PushOptions{MaxInFlight: 1, SlotTimeout: time.Minute}); errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	fs0, a0 := rs[0].acceptJob()
	_ = rs[1].qc.CloseWithError(0, "")
	eventually(t, "runner 1 leaves local presence", func() bool { return !s.IsPresent(rs[1].key.Address()) })
	rs[0].ack(fs0, a0, wire.Accepted())
	select {
	case err := <-failed:
		if !errors.Is(err, ErrNotPresent) || failedJob != id1 {
			t.Fatalf("OnPushError(%s, %v), want the leaver's job and ErrNotPresent", failedJob, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no OnPushError for the queued seat whose runner left")
	}
}

// The default window follows the socket's receive buffer: paced at
// PacedPushWindow below SmallReceiveBuffer, unpaced at or above it or
// when unknown; a configured PushWindow wins.
func TestPushWindowFollowsReceiveBuffer(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{-1, -1}, {0, PacedPushWindow}, {212992 * 2, PacedPushWindow},
		{SmallReceiveBuffer - 1, PacedPushWindow}, {SmallReceiveBuffer, -1}, {14 << 20, -1},
	} {
		if got := windowForBuffer(c.n); got != c.want {
			t.Errorf("windowForBuffer(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = udp.Close() })
	f := newFixture(t, 1)
	s := f.startServer(0, func(c *ServerConfig) { c.PacketConn = udp })
	// quic-go has raised the buffer; shrink it as an unprivileged host's.
	if err := udp.SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	if n := receiveBuffer(udp); n >= 0 && (n < 64<<10 || n >= SmallReceiveBuffer) {
		t.Fatalf("receive buffer reads %d after setting 64 KiB", n)
	} else if n >= 0 && s.PushWindow() != PacedPushWindow {
		t.Fatalf("PushWindow %d with a %d-byte buffer", s.PushWindow(), n)
	}
	for _, w := range []int{-1, 7} {
		s := f.startServer(0, func(c *ServerConfig) { c.PushWindow = w })
		if s.PushWindow() != w {
			t.Fatalf("configured PushWindow %d reads %d", w, s.PushWindow())
		}
	}
}
