package quic

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"
	"go.uber.org/goleak"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

// Issue 17 §2: every goroutine the server and the clients start is
// tracked and waited for by Close (or by cancelling the context given to
// NewServer/NewClient). Fifty rounds of a server and three runners over
// loopback QUIC, each pushing one job per runner to Success, end with no
// goroutine left behind. Rounds alternate: cancel the shared context;
// Close the clients first; Close the server first with a concurrent
// second Close (idempotent, waits for the first).
func TestLifecycleNoGoroutineLeaks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	keys := []*wire.RunnerKey{runnerKey(t, 1), runnerKey(t, 2), runnerKey(t, 3)}
	f := newFixture(t, 1, keys...)
	rounds := 50
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		lifecycleRound(t, f, keys, round)
	}
}

func lifecycleRound(t *testing.T, f *fixture, keys []*wire.RunnerKey, round int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var successes atomic.Int64
	cfg := f.serverConfig(0)
	cfg.GoodbyeLinger = 20 * time.Millisecond
	cfg.OnOutcome = func(o Outcome) {
		if o.Outcome == local.Success {
			successes.Add(1)
		}
	}
	s, err := NewServer(ctx, cfg, startHeight)
	if err != nil {
		t.Fatal(err)
	}
	f.dir.Put(s.PeerKey(), s.Addr())
	clients := make([]*Client, len(keys))
	for i, k := range keys {
		cc := f.clientConfig(k, nil)
		cc.GoodbyeLinger = 20 * time.Millisecond
		if clients[i], err = NewClient(ctx, cc, startHeight); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		eventually(t, "admitted", func() bool { return s.IsPresent(k.Address()) })
	}
	as := make([]Assignment, len(keys))
	for i, k := range keys {
		id, spec := testJob(string(rune('a'+round)) + k.Address().String())
		as[i] = assignment(id, spec, k.Address())
	}
	for _, c := range clients {
		c.Tick(startHeight + 1)
	}
	for i, err := range s.Applied(startHeight+1, as) {
		if err != nil {
			t.Fatalf("round %d push %d: %v", round, i, err)
		}
	}
	eventually(t, "every push a Success", func() bool { return successes.Load() == int64(len(keys)) })
	switch round % 3 {
	case 0:
		cancel()
		closeAll(t, s, clients)
	case 1:
		for _, c := range clients {
			_ = c.Close()
		}
		closeAll(t, s, nil)
	default:
		closeAll(t, s, clients)
	}
}

// closeAll closes s twice concurrently, then the clients; every Close must
// return nil (a later one waits for the first).
func closeAll(t *testing.T, s *Server, clients []*Client) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !isClosed(err) {
			t.Fatalf("Close: %v", err)
		}
	}
	for _, c := range clients {
		if err := c.Close(); err != nil && !isClosed(err) {
			t.Fatalf("client Close: %v", err)
		}
	}
}

// rawDialStreams is rawDial with the runner's stream credit for
// validator-initiated streams set to maxStreams (-1: none at all).
func rawDialStreams(t testing.TB, tr *qgo.Transport, s *Server, k *wire.RunnerKey, maxStreams int64) *rawConn {
	t.Helper()
	return rawDialConfig(t, tr, s, k, &qgo.Config{MaxIdleTimeout: 30 * time.Second, KeepAlivePeriod: time.Second, MaxIncomingStreams: maxStreams})
}

// Issue 17 §2, §10.1: Applied does no network I/O. A runner that grants
// the validator no stream credit cannot open a job stream, and its push
// waits (up to the 30 s stream-open timeout configured here) on a server
// goroutine; Applied has already returned, the other runner's push has
// gone out and finished, and the stuck one is still pending (neither
// OnPushed nor OnPushError has been called for it).
func TestAppliedDoesNotWaitForStuckRunner(t *testing.T) {
	good, stuck := runnerKey(t, 1), runnerKey(t, 2)
	f := newFixture(t, 1, good, stuck)
	var mu sync.Mutex
	reported := map[cip11.Hash]string{}
	note := func(id cip11.Hash, what string) {
		mu.Lock()
		reported[id] = what
		mu.Unlock()
	}
	s := f.startServer(0, func(c *ServerConfig) {
		c.HandshakeTimeout = 30 * time.Second
		c.PushWindow = -1
		c.OnPushed = func(a Assignment) { note(a.JobID, "pushed") }
		c.OnPushError = func(a Assignment, err error) { note(a.JobID, "failed: "+err.Error()) }
	})
	r := rawDialStreams(t, rawTransport(t), s, stuck, -1)
	r.handshake(f.snap.Pair())
	c := f.startClient(good, nil, nil)
	eventually(t, "good runner present", func() bool { return s.IsPresent(good.Address()) })
	c.Tick(startHeight + 1)
	stuckID, stuckSpec := testJob("stuck")
	goodID, goodSpec := testJob("good")
	done := make(chan []error, 1)
	go func() {
		done <- s.Applied(startHeight+1, []Assignment{
			assignment(stuckID, stuckSpec, stuck.Address()), assignment(goodID, goodSpec, good.Address()),
		})
	}()
	select {
	case errs := <-done:
		for i, err := range errs {
			if err != nil {
				t.Fatalf("seat %d: %v", i, err)
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Applied waited for the runner without stream credit")
	}
	if o := f.waitOutcome(goodID); o.Outcome != local.Success {
		t.Fatalf("good runner's outcome %v (%v)", o.Outcome, o.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	if reported[goodID] != "pushed" {
		t.Fatalf("good push reported %q, want pushed", reported[goodID])
	}
	if what, ok := reported[stuckID]; ok {
		t.Fatalf("stuck push already reported %q; it should still be waiting for stream credit", what)
	}
}

// Issue 18 #21 (§4.2, §11.3): a second admission of the same runner
// replaces the first connection, which the server closes; the old
// connection's close does not clear the presence the new one owns, and
// the new one keeps working.
func TestNewAdmissionReplacesOldConnection(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	first := rawDial(t, tr, s, rk)
	first.handshake(f.snap.Pair())
	second := rawDial(t, tr, s, rk)
	second.handshake(f.snap.Pair())
	first.waitClosed()
	eventually(t, "one connection left", func() bool { return s.Stats().Connected == 1 })
	if !s.IsPresent(rk.Address()) {
		t.Fatal("the old connection's close cleared the new connection's presence")
	}
	if second.ping(1, startHeight+1) == nil {
		t.Fatal("the new connection no longer answers")
	}
	if got := serverSession(s, rk.Address()); got == nil || got.ID != second.sess.ID {
		t.Fatal("pushes would not go to the new connection")
	}
}

// Issue 17 §2: Client.Close returns only after every goroutine it started
// has ended, job executions included: an executor still winding down
// after its context was cancelled has returned by the time Close does.
func TestClientCloseWaitsForExecution(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	started := make(chan struct{})
	var returned atomic.Bool
	ex := ExecutorFunc(func(ctx context.Context, j *Job) (Result, error) {
		close(started)
		<-ctx.Done()
		time.Sleep(100 * time.Millisecond) // winding down
		returned.Store(true)
		return Result{}, ctx.Err()
	})
	c := f.startClient(rk, ex, nil)
	eventually(t, "present", func() bool { return s.IsPresent(rk.Address()) })
	c.Tick(startHeight + 1)
	id, spec := testJob("close waits")
	if err := s.Push([]Assignment{assignment(id, spec, rk.Address())})[0]; err != nil {
		t.Fatal(err)
	}
	<-started
	if err := c.Close(); err != nil && !isClosed(err) {
		t.Fatal(err)
	}
	if !returned.Load() {
		t.Fatal("Close returned while the job execution was still running")
	}
}
