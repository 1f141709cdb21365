package node

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

// restartChain is a runner's Chain over a validator the test restarts: it
// records the heights the runner read (to know when it has handled a
// block) and every heartbeat it submitted.
type restartChain struct {
	mu    sync.Mutex
	v     *Validator
	reads map[uint64]int // Height() answers, by height
	beats []uint64       // nonces (signing heights) of submitted heartbeats
}

func (c *restartChain) cur() LocalChain {
	c.mu.Lock()
	defer c.mu.Unlock()
	return LocalChain{V: c.v}
}

func (c *restartChain) set(v *Validator) {
	c.mu.Lock()
	c.v = v
	c.mu.Unlock()
}

func (c *restartChain) Height(ctx context.Context) (uint64, error) {
	h, err := c.cur().Height(ctx)
	c.mu.Lock()
	c.reads[h]++
	c.mu.Unlock()
	return h, err
}

func (c *restartChain) Submit(ctx context.Context, raw []byte) error {
	if tx, err := DecodeTx(raw); err == nil && tx.Kind == TxHeartbeat {
		c.mu.Lock()
		c.beats = append(c.beats, tx.Nonce)
		c.mu.Unlock()
	}
	return c.cur().Submit(ctx, raw)
}

func (c *restartChain) Settled(ctx context.Context, j cip11.Hash, r cip11.Address) (bool, error) {
	return c.cur().Settled(ctx, j, r)
}

func (c *restartChain) Poll(ctx context.Context, r cip11.Address) ([]*wire.JobAssignment, error) {
	return c.cur().Poll(ctx, r)
}

func (c *restartChain) LastHeartbeat(ctx context.Context, r cip11.Address) (uint64, bool, error) {
	return c.cur().LastHeartbeat(ctx, r)
}

func (c *restartChain) Assigned(ctx context.Context, j cip11.Hash, r cip11.Address, h uint64) (bool, error) {
	return c.cur().Assigned(ctx, j, r, h)
}

// handled waits until the runner has read height h twice: its loop reads
// the height again only after it has handled the previous one
// (heartbeat, poll).
func (c *restartChain) handled(t *testing.T, h uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		n := c.reads[h]
		c.mu.Unlock()
		if n >= 2 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the runner did not handle height %d", h)
}

// §6.6, §7.1 (issue 18 item 4): a heartbeat lost before inclusion — here
// the validator restarts, losing its mempool, every time the runner's
// heartbeat is waiting in it, four times in a row — is resubmitted on the
// next block, newly signed at that height, because the runner schedules
// from the on-chain last_heartbeat, not from what it sent; so the runner
// never goes stale beyond HEARTBEAT_TIMEOUT_BLOCKS. (With the schedule run
// from the sent height, the runner waited a whole cadence after each lost
// heartbeat and went stale.)
func TestHeartbeatLostInMempoolIsResubmitted(t *testing.T) {
	const timeout, losses = 20, 4
	d := testDevnet(t, 1, func(p *cip11.Params) { p.HeartbeatTimeoutBlocks = timeout })
	dir := t.TempDir()
	v := newTestValidator(t, d, dir)
	defer func() { _ = v.Close() }()
	ch := &restartChain{v: v, reads: map[uint64]int{}}
	r, err := NewRunner(context.Background(), RunnerConfig{Genesis: d.Genesis, Key: d.RunnerKeys[0], Chain: ch,
		Validator: "127.0.0.1:9", Tick: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	addr := d.RunnerKeys[0].Address()
	restarts, lostAt := 0, uint64(0)
	for range 3 * timeout {
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
		h := v.Height()
		ch.handled(t, h)
		last, ok, err := v.LastHeartbeat(addr)
		if err != nil || !ok {
			t.Fatalf("height %d: registry record: %v %v", h, ok, err)
		}
		if h-last > timeout {
			t.Fatalf("height %d: last_heartbeat %d is stale (HEARTBEAT_TIMEOUT_BLOCKS %d) after %d lost heartbeats",
				h, last, timeout, restarts)
		}
		if restarts < losses && v.Status().Mempool > 0 { // the heartbeat is waiting: lose it
			if err := v.Close(); err != nil {
				t.Fatal(err)
			}
			v = newTestValidator(t, d, dir)
			ch.set(v)
			restarts++
			lostAt = last
		}
	}
	if restarts != losses {
		t.Fatalf("only %d heartbeats were lost", restarts)
	}
	last, _, _ := v.LastHeartbeat(addr)
	if last <= lostAt {
		t.Fatalf("no heartbeat included after the losses: last_heartbeat %d", last)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	seen := map[uint64]bool{}
	for _, n := range ch.beats {
		if seen[n] {
			t.Fatalf("two heartbeats signed at height %d: %v", n, ch.beats)
		}
		seen[n] = true
	}
	if len(seen) <= losses {
		t.Fatalf("heartbeats sent at %v: not resubmitted after each loss", ch.beats)
	}
}

// The runner's chain view over a real validator's HTTP API (HTTPChain, the
// `cip11 runner` path) agrees with the in-process one (LocalChain): the
// on-chain last_heartbeat (§7.1, GET /runner/{addr}) and whether a runner
// is still assigned to a job at an assignment_height (§10.1, the job view's
// committee and assignment_height).
func TestChainViewOverHTTP(t *testing.T) {
	d := testDevnet(t, 2, nil)
	v := newTestValidator(t, d, "")
	defer v.Close()
	h, err := httpapi.NewHandler(Backend{v}, httpapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx := context.Background()
	views := map[string]Chain{"http": HTTPChain{Base: srv.URL}, "local": LocalChain{V: v}}
	a0, a1 := d.RunnerKeys[0].Address(), d.RunnerKeys[1].Address()
	for name, c := range views {
		if _, ok, err := c.LastHeartbeat(ctx, a0); ok || err != nil {
			t.Fatalf("%s: a record before block 1: %v %v", name, ok, err)
		}
	}
	if err := v.ProduceBlock(); err != nil { // block 1 registers the runners
		t.Fatal(err)
	}
	// signed for block 2: block 1's registration already set last_heartbeat
	// to 1, and a heartbeat counts only with a later nonce (§7.1, C7)
	hb, _ := SignTx(d.RunnerKeys[0], uint64(d.Genesis.ChainID), TxHeartbeat, 2, cip11.Hash{}, nil)
	if _, err := v.SubmitTx(hb.Bytes()); err != nil {
		t.Fatal(err)
	}
	id, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{2}, Runners: 1, TimeoutBlocks: 50})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
	}
	jv, _ := v.Job(id)
	if jv.State != job.StateAssigned || len(jv.Committee) != 1 || jv.AssignmentHeight < 2 {
		t.Fatalf("job %+v", jv)
	}
	in, out := jv.Committee[0], a0
	if in == a0 {
		out = a1
	}
	for name, c := range views {
		if last, ok, err := c.LastHeartbeat(ctx, a0); !ok || err != nil || last != 2 { // included in block 2
			t.Fatalf("%s: runner 0 last_heartbeat %d %v %v, want 2", name, last, ok, err)
		}
		if last, ok, err := c.LastHeartbeat(ctx, a1); !ok || err != nil || last != 1 { // registered at 1
			t.Fatalf("%s: runner 1 last_heartbeat %d %v %v, want 1", name, last, ok, err)
		}
		if _, ok, err := c.LastHeartbeat(ctx, cip11.Address{9}); ok || err != nil {
			t.Fatalf("%s: an unregistered runner: %v %v", name, ok, err)
		}
		for _, q := range []struct {
			job    cip11.Hash
			runner cip11.Address
			height uint64
			want   bool
		}{
			{id, in, jv.AssignmentHeight, true},
			{id, out, jv.AssignmentHeight, false},           // not in the committee
			{id, in, jv.AssignmentHeight - 1, false},        // not the current assignment
			{cip11.Hash{7}, in, jv.AssignmentHeight, false}, // no such job
		} {
			if got, err := c.Assigned(ctx, q.job, q.runner, q.height); err != nil || got != q.want {
				t.Fatalf("%s: Assigned(%x, %x, %d) = %v %v, want %v", name, q.job[:4], q.runner[:4], q.height, got, err, q.want)
			}
		}
	}
}

// hbChain is a Chain for the heartbeat schedule alone: LastHeartbeat
// answers last, Submit records the heartbeats' signing heights.
type hbChain struct {
	last  uint64
	beats []uint64
}

func (c *hbChain) Height(context.Context) (uint64, error) { return 0, nil }
func (c *hbChain) Submit(_ context.Context, raw []byte) error {
	if tx, err := DecodeTx(raw); err == nil && tx.Kind == TxHeartbeat {
		c.beats = append(c.beats, tx.Nonce)
	}
	return nil
}
func (c *hbChain) Settled(context.Context, cip11.Hash, cip11.Address) (bool, error) {
	return false, nil
}
func (c *hbChain) Poll(context.Context, cip11.Address) ([]*wire.JobAssignment, error) {
	return nil, nil
}
func (c *hbChain) LastHeartbeat(context.Context, cip11.Address) (uint64, bool, error) {
	return c.last, true, nil
}
func (c *hbChain) Assigned(context.Context, cip11.Hash, cip11.Address, uint64) (bool, error) {
	return false, nil
}

// §6.6: a runner whose view steps over its phase bucket (blocks faster
// than its reads) heartbeats at the first height it sees past the bucket,
// not at the emergency bound, and a refresh on schedule logs no
// emergency; one past the bound (the last heartbeat sent never reached
// the chain) does, at Warn. The soak of issue 31 logged every heartbeat
// as an emergency: each runner waited for the bound after a skipped
// bucket.
func TestHeartbeatBucketSkippedByTheView(t *testing.T) {
	d := testDevnet(t, 1, nil)
	var logs bytes.Buffer
	ch := &hbChain{last: 702}
	r := &Runner{cfg: RunnerConfig{Genesis: d.Genesis, Key: d.RunnerKeys[0], Chain: ch},
		hb:  local.HeartbeatSchedule{Phase: 10, Cadence: 50, Emergency: 50},
		log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	ctx := context.Background()
	for _, h := range []uint64{705, 709, 712, 713} { // bucket 710 skipped
		r.heartbeat(ctx, h)
	}
	if !slices.Equal(ch.beats, []uint64{712}) {
		t.Fatalf("heartbeats at %v, want [712] (bucket 710 skipped by the view)", ch.beats)
	}
	ch.last = 713 // included; the next bucket 760 is seen
	for _, h := range []uint64{714, 760} {
		r.heartbeat(ctx, h)
	}
	if !slices.Equal(ch.beats, []uint64{712, 760}) || logs.Len() != 0 {
		t.Fatalf("heartbeats at %v, want [712 760]; log %q", ch.beats, logs.String())
	}
	// 760's heartbeat never lands: the refresh at the bound 763 is on
	// schedule (no Warn); 763's is lost too, and at 764 it is an emergency
	for _, h := range []uint64{761, 762, 763} {
		r.heartbeat(ctx, h)
	}
	if logs.Len() != 0 {
		t.Fatalf("warned at or before the bound: %q", logs.String())
	}
	r.heartbeat(ctx, 764)
	if !strings.Contains(logs.String(), "emergency heartbeat refresh") || !slices.Equal(ch.beats, []uint64{712, 760, 763, 764}) {
		t.Fatalf("heartbeats %v; log %q", ch.beats, logs.String())
	}
}

// The §10.1 still-assigned hook counts the checks its chain view
// answered (Runner.ChainChecks, the push-latency harnesses' figure): with
// no client view yet, every check goes to the chain, whose answer is the
// hook's.
func TestRunnerAssignedCountsChainChecks(t *testing.T) {
	r := &Runner{cfg: RunnerConfig{Chain: &hbChain{}}}
	for i := range 3 {
		ok, err := r.assigned(context.Background(), cip11.Hash{byte(i)}, cip11.Address{1}, 5)
		if err != nil || ok {
			t.Fatalf("check %d: %v, %v; want the chain's answer (false)", i, ok, err)
		}
	}
	if n := r.ChainChecks(); n != 3 {
		t.Fatalf("ChainChecks %d, want 3", n)
	}
}
