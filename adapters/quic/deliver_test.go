package quic

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// polled is the poll answer's form of a (GET /runner/{addr}/jobs, §14):
// the JobAssignment the validator vk signs, as a push would carry it.
func polled(t *testing.T, vk *wire.ValidatorKey, rk *wire.RunnerKey, a Assignment) *wire.JobAssignment {
	t.Helper()
	ja := &wire.JobAssignment{JobID: a.JobID, JobSpec: a.JobSpec, JobSpecHash: wire.JobSpecHash(a.JobSpec),
		AssignmentHeight: a.AssignmentHeight, DeadlineBlock: a.DeadlineBlock, RunnerPubKey: rk.PubKey()}
	if err := ja.Sign(testChain, vk); err != nil {
		t.Fatal(err)
	}
	return ja
}

// txSubmitter records every self-submitted transaction with the client
// height it was submitted at.
type txSubmitter struct {
	mu      sync.Mutex
	txs     [][]byte
	at      []uint64
	height  func() uint64
	settled atomic.Bool
}

func (s *txSubmitter) Submit(tx []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.txs = append(s.txs, tx)
	s.at = append(s.at, s.height())
	return nil
}

func (s *txSubmitter) Settled(cip11.Hash, []byte) bool { return s.settled.Load() }

func (s *txSubmitter) sent() ([][]byte, []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.txs...), append([]uint64(nil), s.at...)
}

// §10.1 "accept at most one" across push and poll: a job accepted over
// QUIC is not executed a second time when, after the connection dropped,
// the poll answer (§11.3, §14) delivers it again; and a job accepted from
// the poll answer is acked Duplicate when its push arrives afterwards.
func TestDeliverDedupesAcrossPushAndPoll(t *testing.T) {
	var runs atomic.Int64
	sub := &txSubmitter{}
	f, rk, c := connectAll(t, 1, func(k *wire.RunnerKey) Executor { return countingExecutor(k, &runs, false, 0) },
		func(cc *ClientConfig) { cc.Submitter = sub })
	sub.height = c.Height
	s := f.servers[0]

	id, spec := testJob("pushed then polled")
	a := assignment(id, spec, rk.Address())
	if err := s.Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	if o := f.waitOutcome(id); o.Outcome != local.Success {
		t.Fatalf("push outcome %v (%v)", o.Outcome, o.Err)
	}
	if err := s.Goodbye(rk.Address(), wire.GoodbyeShutdown, "drop", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "connection dropped", func() bool { return !s.Connected(rk.Address()) })
	err := c.Deliver(context.Background(), polled(t, f.vkeys[0], rk, a))
	if !errors.Is(err, ErrDuplicateJob) {
		t.Fatalf("Deliver of a pushed job: %v, want ErrDuplicateJob", err)
	}
	if runs.Load() != 1 {
		t.Fatalf("%d executions of one job, want 1", runs.Load())
	}

	// The other order: poll first, then the push.
	eventually(t, "reconnected", func() bool { return len(c.Connected()) == 1 && s.Connected(rk.Address()) })
	f.tick(startHeight+2, c)
	eventually(t, "present again", func() bool { return s.IsPresent(rk.Address()) })
	id2, spec2 := testJob("polled then pushed")
	b := assignment(id2, spec2, rk.Address())
	if err := c.Deliver(context.Background(), polled(t, f.vkeys[0], rk, b)); err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	eventually(t, "delivered job ran", func() bool { return runs.Load() == 2 })
	if err := s.Push([]Assignment{b})[0]; err != nil {
		t.Fatal(err)
	}
	if o := f.waitOutcome(id2); o.Outcome != local.Duplicate || o.Ack == nil || o.Ack.Kind != wire.AckDuplicate {
		t.Fatalf("push after poll: outcome %v ack %v, want Duplicate", o.Outcome, o.Ack)
	}
	if runs.Load() != 2 {
		t.Fatalf("%d executions, want 2 (one per job)", runs.Load())
	}
	if got := c.Stats().Delivered; got != 1 {
		t.Fatalf("Delivered %d, want 1", got)
	}
}

// §10.1: a polled assignment gets every runner-side check a pushed one
// gets: job_spec_hash, the validator in the active snapshot, the
// assignment's signature, runner_pubkey its own, assignment_height
// finalized in its own view, and the byte-identical fields of an accepted
// job_id.
func TestDeliverChecks(t *testing.T) {
	var runs atomic.Int64
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	sub := &txSubmitter{}
	c := f.startClient(rk, countingExecutor(rk, &runs, false, 0), func(cc *ClientConfig) { cc.Offline = true; cc.Submitter = sub })
	sub.height = c.Height
	c.Tick(startHeight + 1)
	vk := f.vkeys[0]
	id, spec := testJob("checks")
	a := assignment(id, spec, rk.Address())

	bad := polled(t, vk, rk, a)
	bad.JobSpecHash[0] ^= 1
	if err := bad.Sign(testChain, vk); err != nil { // a valid signature over the wrong hash
		t.Fatal(err)
	}
	stranger := validatorKeys(1, "not in the snapshot")[0]
	forged := polled(t, vk, rk, a)
	forged.ValidatorSigned[0] ^= 1
	ahead := a
	ahead.AssignmentHeight = startHeight + 2
	for _, tc := range []struct {
		name string
		ja   *wire.JobAssignment
		want error
	}{
		{"spec hash", bad, wire.ErrJobSpecHashMismatch},
		{"validator not in snapshot", polled(t, stranger, rk, a), wire.ErrValidatorNotInSnapshot},
		{"another runner's", polled(t, vk, runnerKey(t, 2), a), wire.ErrRunnerKeyNotOwn},
		{"not final in the runner's view", polled(t, vk, rk, ahead), wire.ErrAssignmentNotFinal},
	} {
		if err := c.Deliver(context.Background(), tc.ja); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := c.Deliver(context.Background(), forged); err == nil {
		t.Error("a forged validator_signed was accepted")
	}
	untagged := polled(t, vk, rk, a)
	untagged.ValidatorPubKey = wire.PubKey{}
	if err := c.Deliver(context.Background(), untagged); !errors.Is(err, wire.ErrPubKeyRole) {
		t.Errorf("validator_pubkey without a scheme: %v, want ErrPubKeyRole", err)
	}
	asRunner := polled(t, vk, rk, a)
	asRunner.ValidatorPubKey = rk.PubKey()
	if err := c.Deliver(context.Background(), asRunner); !errors.Is(err, wire.ErrPubKeyRole) {
		t.Errorf("a runner key as validator_pubkey: %v, want ErrPubKeyRole", err)
	}
	if runs.Load() != 0 {
		t.Fatalf("%d executions of rejected assignments", runs.Load())
	}
	if err := c.Deliver(context.Background(), polled(t, vk, rk, a)); err != nil {
		t.Fatalf("valid assignment: %v", err)
	}
	other := a
	other.DeadlineBlock++
	if err := c.Deliver(context.Background(), polled(t, vk, rk, other)); !errors.Is(err, wire.ErrAssignmentConflict) {
		t.Fatalf("conflicting fields: %v, want ErrAssignmentConflict", err)
	}
	c.Tick(startHeight + 2)
	if err := c.Deliver(context.Background(), polled(t, vk, rk, ahead)); !errors.Is(err, wire.ErrAssignmentConflict) {
		t.Fatalf("same job_id at another height: %v, want ErrAssignmentConflict", err)
	}
	eventually(t, "one execution", func() bool { return runs.Load() == 1 })
	if err := c.Deliver(context.Background(), nil); !errors.Is(err, ErrNilDependency) {
		t.Fatalf("nil assignment: %v", err)
	}
}

// §10.3 for a polled job, with the transport off (§14, Offline: no socket,
// no dial): the commit and the reveal are self-submitted at once, in that
// order, retained, and rebroadcast from RESULT_TX_INCLUSION_GRACE_BLOCKS on
// every RESULT_TX_REBROADCAST_INTERVAL_BLOCKS until settled.
func TestDeliverRetainsAndRebroadcasts(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	sub := &txSubmitter{}
	c := f.startClient(rk, resultExecutor(rk, true, 0), func(cc *ClientConfig) { cc.Offline = true; cc.Submitter = sub })
	sub.height = c.Height
	sentAt := uint64(startHeight + 1)
	c.Tick(sentAt)
	id, spec := testJob("retained")
	if err := c.Deliver(context.Background(), polled(t, f.vkeys[0], rk, assignment(id, spec, rk.Address()))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "results submitted", func() bool { txs, _ := sub.sent(); return len(txs) == 2 })
	commit, reveal := memTx(rk, wire.InstructionJobResultCommit, id), memTx(rk, wire.InstructionJobResultSubmit, id)
	txs, at := sub.sent()
	if string(txs[0]) != string(commit) || string(txs[1]) != string(reveal) || at[0] != sentAt || at[1] != sentAt {
		t.Fatalf("first submissions %x at %v, want commit then reveal at %d", txs, at, sentAt)
	}
	for h := sentAt + 1; h <= sentAt+6; h++ {
		if h == sentAt+5 {
			sub.settled.Store(true)
		}
		c.Tick(h)
	}
	_, at = sub.sent()
	want := []uint64{sentAt, sentAt, sentAt + 2, sentAt + 2, sentAt + 4, sentAt + 4}
	if len(at) != len(want) {
		t.Fatalf("submitted at %v, want %v", at, want)
	}
	for i := range want {
		if at[i] != want[i] {
			t.Fatalf("submitted at %v, want %v", at, want)
		}
	}
	if st := c.Stats(); st.Dials != 0 || len(c.Connected()) != 0 {
		t.Fatalf("an offline client dialed: %+v", st)
	}
}

// FuzzDeliver: any JobAssignment frame handed to Deliver (a poll answer
// is untrusted input) is accepted, refused with an error or reported a
// duplicate; it never panics, and only a valid one runs.
func FuzzDeliver(f *testing.F) {
	rk := runnerKey(f, 1)
	vk := validatorKeys(1, "A")[0]
	id, spec := testJob("fuzz")
	a := assignment(id, spec, rk.Address())
	ja := &wire.JobAssignment{JobID: a.JobID, JobSpec: a.JobSpec, JobSpecHash: wire.JobSpecHash(a.JobSpec),
		AssignmentHeight: a.AssignmentHeight, DeadlineBlock: a.DeadlineBlock, RunnerPubKey: rk.PubKey()}
	if err := ja.Sign(testChain, vk); err != nil {
		f.Fatal(err)
	}
	b, err := wire.Encode(ja)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)-1])
	f.Fuzz(func(t *testing.T, frame []byte) {
		e, err := validators.NewEpochs(nil, snapshotOf(t, 0, []*wire.ValidatorKey{vk}, 0))
		if err != nil {
			t.Fatal(err)
		}
		sub := &txSubmitter{height: func() uint64 { return 0 }}
		cfg := ClientConfig{Key: rk, ChainID: testChain, Params: testParams(), Validators: NewStaticValidatorSets(e),
			Directory: &StaticDirectory{}, Executor: resultExecutor(rk, false, 0), Offline: true, Submitter: sub}
		c, err := NewClient(context.Background(), cfg, startHeight+1)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fr, err := wire.Decode(frame, cip11.DefaultParams().MaxFrameBytes)
		if err != nil {
			return
		}
		got, ok := fr.(*wire.JobAssignment)
		if !ok {
			return
		}
		for range 2 {
			err := c.Deliver(context.Background(), got)
			if err == nil && got.ValidatorPubKey != vk.PubKey() {
				t.Fatalf("accepted an assignment not signed by the snapshot's validator")
			}
		}
	})
}
