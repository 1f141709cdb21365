package quic

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

// §10.3: for a multi-runner job the runner sends JobResultCommit before
// JobResult on the accepted stream; the validator forwards the commit
// verbatim, holds the early reveal, and forwards it once the reveal window
// opens (default: the block after the commit). Only then is it Success.
func TestMultiRunnerCommitThenHeldReveal(t *testing.T) {
	f, rk, c := connectAll(t, 1, func(k *wire.RunnerKey) Executor { return resultExecutor(k, true, 0) }, nil)
	s, mp := f.servers[0], f.mempools[0]
	id, spec := testJob("multi")
	a := assignment(id, spec, rk.Address())
	a.MultiRunner = true
	if err := s.Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	eventually(t, "commit forwarded", func() bool { return len(mp.Txs()) == 1 })
	eventually(t, "reveal held", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range s.pushes {
			if p.held != nil {
				return true
			}
		}
		return false
	})
	if len(mp.Txs()) != 1 {
		t.Fatal("early reveal forwarded")
	}
	f.tick(startHeight+2, c)
	if o := f.waitOutcome(id); o.Outcome != local.Success {
		t.Fatalf("outcome %v (%v)", o.Outcome, o.Err)
	}
	txs := mp.Txs()
	if len(txs) != 2 || !bytes.Equal(txs[0], memTx(rk, wire.InstructionJobResultCommit, id)) ||
		!bytes.Equal(txs[1], memTx(rk, wire.InstructionJobResultSubmit, id)) {
		t.Fatalf("forwarded %x", txs)
	}
}

// §10.3: a validator configured to refuse early reveals answers with
// Goodbye{ProtocolError} and forwards nothing of the reveal.
func TestEarlyRevealRefused(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, func(c *ServerConfig) { c.RefuseEarlyReveal = true })
	c := f.startClient(rk, resultExecutor(rk, true, 0), nil)
	eventually(t, "admitted", func() bool { return len(c.Connected()) == 1 })
	f.tick(startHeight+1, c)
	eventually(t, "present", func() bool { return s.IsPresent(rk.Address()) })
	id, spec := testJob("early reveal")
	a := assignment(id, spec, rk.Address())
	a.MultiRunner = true
	if err := s.Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	o := f.waitOutcome(id)
	if o.Outcome != local.SoftFailure || !errors.Is(o.Err, ErrEarlyReveal) {
		t.Fatalf("outcome %v (%v)", o.Outcome, o.Err)
	}
	eventually(t, "goodbye", func() bool { g := c.LastRefusal(s.PeerKey()); return g != nil })
	if g := c.LastRefusal(s.PeerKey()); g.Reason != wire.GoodbyeProtocolError || !g.Verified {
		t.Fatalf("goodbye %+v", g)
	}
	if n := len(f.mempools[0].Txs()); n != 1 {
		t.Fatalf("%d forwarded, want only the commit", n)
	}
}

// §10.3 checks 1–4: a result transaction signed by someone else, or with
// the wrong instruction, is not forwarded.
func TestInvalidResultNotForwarded(t *testing.T) {
	stranger := runnerKey(t, 99)
	bad := map[string]func(*wire.RunnerKey, cip11.Hash) []byte{
		"other signer": func(_ *wire.RunnerKey, id cip11.Hash) []byte {
			return memTx(stranger, wire.InstructionJobResultSubmit, id)
		},
		"wrong instruction": func(k *wire.RunnerKey, id cip11.Hash) []byte { return memTx(k, wire.InstructionJobResultCommit, id) },
		"wrong job": func(k *wire.RunnerKey, _ cip11.Hash) []byte {
			return memTx(k, wire.InstructionJobResultSubmit, cip11.Hash{1})
		},
		"undecodable": func(*wire.RunnerKey, cip11.Hash) []byte { return []byte("junk") },
	}
	want := map[string]error{"other signer": wire.ErrResultSigner, "wrong instruction": wire.ErrResultInstruction,
		"wrong job": wire.ErrResultJobID, "undecodable": wire.ErrResultTxDecode}
	for name, mk := range bad {
		t.Run(name, func(t *testing.T) {
			ex := func(k *wire.RunnerKey) Executor {
				return ExecutorFunc(func(_ context.Context, j *Job) (Result, error) {
					return Result{Reveal: mk(k, j.Assignment.JobID)}, nil
				})
			}
			f, rk, _ := connectAll(t, 1, ex, nil)
			id, spec := testJob(name)
			if err := f.servers[0].Push([]Assignment{assignment(id, spec, rk.Address())})[0]; err != nil {
				t.Fatal(err)
			}
			o := f.waitOutcome(id)
			if o.Outcome != local.SoftFailure || !errors.Is(o.Err, want[name]) {
				t.Fatalf("outcome %v (%v)", o.Outcome, o.Err)
			}
			if len(f.mempools[0].Txs()) != 0 {
				t.Fatal("invalid result forwarded")
			}
		})
	}
}

// §10.5: each JobCancel reason stops execution mid-way; with no
// commitment sent, no result frame follows.
func TestCancelMidExecution(t *testing.T) {
	started := make(chan cip11.Hash, 3)
	stopped := make(chan error, 3)
	ex := func(k *wire.RunnerKey) Executor {
		return ExecutorFunc(func(ctx context.Context, j *Job) (Result, error) {
			started <- j.Assignment.JobID
			<-ctx.Done()
			stopped <- ctx.Err()
			return resultExecutor(k, false, 0)(ctx, j) // too late: dropped
		})
	}
	f, rk, _ := connectAll(t, 1, ex, nil)
	s := f.servers[0]
	for _, reason := range []wire.CancelReason{wire.CancelReassigned, wire.CancelExpired, wire.CancelFailed} {
		id, spec := testJob("cancel " + reason.String())
		if err := s.Push([]Assignment{assignment(id, spec, rk.Address())})[0]; err != nil {
			t.Fatal(err)
		}
		<-started
		if err := s.Cancel(id, rk.Address(), reason); err != nil {
			t.Fatal(err)
		}
		if err := <-stopped; !errors.Is(err, context.Canceled) {
			t.Fatalf("executor stopped with %v", err)
		}
		if o := f.waitOutcome(id); o.Outcome != local.SoftFailure {
			t.Fatalf("%s: outcome %v", reason, o.Outcome)
		}
	}
	if n := len(f.mempools[0].Txs()); n != 0 {
		t.Fatalf("%d results forwarded after cancels", n)
	}
	if err := s.Cancel(cip11.Hash{9}, rk.Address(), wire.CancelFailed); !errors.Is(err, ErrNoSuchJob) {
		t.Fatalf("cancel of an unknown job: %v", err)
	}
}

// §10.5: a cancel after the commitment was sent does not void the reveal:
// the runner still reveals when the window opens.
func TestCancelAfterCommitStillReveals(t *testing.T) {
	revealAt := uint64(startHeight + 3)
	f, rk, c := connectAll(t, 1, func(k *wire.RunnerKey) Executor { return resultExecutor(k, true, revealAt) }, nil)
	s, mp := f.servers[0], f.mempools[0]
	id, spec := testJob("commit then cancel")
	a := assignment(id, spec, rk.Address())
	a.MultiRunner = true
	if err := s.Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	eventually(t, "commit", func() bool { return len(mp.Txs()) == 1 })
	if err := s.Cancel(id, rk.Address(), wire.CancelReassigned); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cancel seen", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		j := c.jobs[id]
		return j != nil && j.cancelled
	})
	f.tick(revealAt-1, c)
	f.noOutcome(50 * time.Millisecond)
	f.tick(revealAt, c)
	if o := f.waitOutcome(id); o.Outcome != local.Success {
		t.Fatalf("outcome %v (%v)", o.Outcome, o.Err)
	}
	if len(mp.Txs()) != 2 {
		t.Fatal("reveal not forwarded after cancel")
	}
}

type recordingSubmitter struct {
	mu      sync.Mutex
	sent    []uint64
	height  func() uint64
	settled atomic.Bool
}

func (r *recordingSubmitter) Submit([]byte) error {
	r.mu.Lock()
	r.sent = append(r.sent, r.height())
	r.mu.Unlock()
	return nil
}
func (r *recordingSubmitter) Settled(cip11.Hash, []byte) bool { return r.settled.Load() }

// §10.3: a retained result transaction is self-submitted after
// RESULT_TX_INCLUSION_GRACE_BLOCKS and every
// RESULT_TX_REBROADCAST_INTERVAL_BLOCKS until settled.
func TestResultRebroadcast(t *testing.T) {
	sub := &recordingSubmitter{}
	var c *Client
	f, rk, cl := connectAll(t, 1, func(k *wire.RunnerKey) Executor { return resultExecutor(k, false, 0) },
		func(cc *ClientConfig) { cc.Submitter = sub })
	c = cl
	sub.height = c.Height
	id, spec := testJob("rebroadcast")
	if err := f.servers[0].Push([]Assignment{assignment(id, spec, rk.Address())})[0]; err != nil {
		t.Fatal(err)
	}
	f.waitOutcome(id)
	sentAt := uint64(startHeight + 1)
	for h := sentAt + 1; h <= sentAt+6; h++ {
		if h == sentAt+5 {
			sub.settled.Store(true)
		}
		c.Tick(h)
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	want := []uint64{sentAt + 2, sentAt + 4}
	if len(sub.sent) != len(want) || sub.sent[0] != want[0] || sub.sent[1] != want[1] {
		t.Fatalf("rebroadcast at %v, want %v", sub.sent, want)
	}
}

// §12.5: Goodbye.retry_after_blocks holds the runner off for that many
// blocks, then it reconnects.
func TestGoodbyeRetryAfterBlocks(t *testing.T) {
	f, rk, c := connectAll(t, 1, func(k *wire.RunnerKey) Executor { return resultExecutor(k, false, 0) }, nil)
	s := f.servers[0]
	retry := uint64(3)
	if err := s.Goodbye(rk.Address(), wire.GoodbyeDraining, "maintenance", &retry); err != nil {
		t.Fatal(err)
	}
	eventually(t, "goodbye", func() bool { return c.LastRefusal(s.PeerKey()) != nil })
	g := c.LastRefusal(s.PeerKey())
	if g.Reason != wire.GoodbyeDraining || !g.Verified || g.RetryAfterBlocks == nil || *g.RetryAfterBlocks != 3 || g.Detail != "maintenance" {
		t.Fatalf("goodbye %+v", g)
	}
	h := c.Height()
	time.Sleep(400 * time.Millisecond) // well past the first backoff
	if s.Stats().Admitted != 1 {
		t.Fatal("reconnected before retry_after_blocks")
	}
	f.tick(h+2, c)
	time.Sleep(300 * time.Millisecond)
	if s.Stats().Admitted != 1 {
		t.Fatal("reconnected before retry_after_blocks")
	}
	f.tick(h+3, c)
	eventually(t, "reconnect", func() bool { return s.Stats().Admitted == 2 && len(c.Connected()) == 1 })
}

// §8.1, §11.3: after a validator restart (empty presence) the runner
// reconnects with backoff and presence rebuilds from its heartbeats.
func TestValidatorRestart(t *testing.T) {
	f, rk, c := connectAll(t, 1, func(k *wire.RunnerKey) Executor { return resultExecutor(k, false, 0) }, nil)
	old := f.servers[0]
	addr := old.Addr().String()
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	f.servers = nil
	s := f.startServer(0, func(cfg *ServerConfig) { cfg.Listen = addr })
	if s.IsPresent(rk.Address()) {
		t.Fatal("restarted validator remembers presence")
	}
	eventually(t, "reconnect", func() bool { return s.Connected(rk.Address()) && len(c.Connected()) == 1 })
	f.tick(startHeight+5, c)
	eventually(t, "presence rebuilt", func() bool { return s.IsPresent(rk.Address()) })
	in, err := s.ProposerInput(startHeight + 5)
	if err != nil || len(in) < 3 || in[2] != 1 {
		t.Fatalf("PresenceInput %x %v", in, err)
	}
}

// After a runner restart (new process, same key) the runner comes back.
func TestRunnerRestart(t *testing.T) {
	f, rk, c := connectAll(t, 1, func(k *wire.RunnerKey) Executor { return resultExecutor(k, false, 0) }, nil)
	s := f.servers[0]
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "dropped", func() bool { return !s.Connected(rk.Address()) && !s.IsPresent(rk.Address()) })
	c2 := f.startClient(rk, nil, nil)
	eventually(t, "back", func() bool { return len(c2.Connected()) == 1 && s.IsPresent(rk.Address()) })
}
