package node

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/job"
)

// fakeAPI is a validator HTTP API for the chain-view tests: a height, one
// job (absent until the height reaches its assignment), /submit counting
// and a pause that holds every request until the test ends.
type fakeAPI struct {
	height  atomic.Uint64
	paused  atomic.Bool
	down    atomic.Bool // answers 503
	submits atomic.Int64
	job     cip11.Hash
	runner  cip11.Address
	assign  uint64 // the job's assignment_height
	stop    chan struct{}
}

func newFakeAPI(t *testing.T, h uint64, id cip11.Hash, runner cip11.Address, assign uint64) (*fakeAPI, *httptest.Server) {
	f := &fakeAPI{job: id, runner: runner, assign: assign, stop: make(chan struct{})}
	f.height.Store(h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.paused.Load() { // a SIGSTOPped process: the connection is accepted, nothing answers
			select {
			case <-f.stop:
			case <-r.Context().Done():
			}
			return
		}
		if f.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		switch {
		case r.URL.Path == "/status":
			_ = json.NewEncoder(w).Encode(httpapi.Status{Height: f.height.Load()})
		case r.URL.Path == "/jobs/"+hex.EncodeToString(f.job[:]):
			if f.height.Load() < f.assign { // not applied yet: unknown job
				http.NotFound(w, r)
				return
			}
			_ = json.NewEncoder(w).Encode(job.View{State: job.StateAssigned, AssignmentHeight: f.assign, Committee: []cip11.Address{f.runner}})
		case r.URL.Path == "/submit":
			f.submits.Add(1)
			w.WriteHeader(http.StatusAccepted)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() { close(f.stop); srv.Close() })
	return f, srv
}

// TestHTTPChainAssignedWaitsForLaggingValidator (§10.1, issue 28): the
// first-named validator has not applied the assignment block yet (it does
// not know the job); the still-assigned check is not answered "no" from
// its lag, but by a validator that has applied the height. Before the
// chain view read several validators the runner's single -api validator
// answered, and 9–12 % of pushes from the others were rejected.
func TestHTTPChainAssignedWaitsForLaggingValidator(t *testing.T) {
	job, runner := cip11.Hash{7}, cip11.Address{9}
	_, lag := newFakeAPI(t, 9, job, runner, 10)
	_, ahead := newFakeAPI(t, 10, job, runner, 10)
	c, err := NewHTTPChain([]string{lag.URL, ahead.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, err := c.Assigned(ctx, job, runner, 10)
	if err != nil || !ok {
		t.Fatalf("Assigned at 10 with the first validator at 9 = %v, %v; want true", ok, err)
	}
	// a validator that has applied the height and says "not in the
	// committee" is believed
	ok, err = c.Assigned(ctx, job, cip11.Address{1}, 10)
	if err != nil || ok {
		t.Fatalf("another runner: Assigned = %v, %v; want false, nil", ok, err)
	}
	// every validator behind: the check waits, then fails with an error
	// once the caller's deadline passes (Reject(UnverifiableAssignment))
	short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if ok, err := c.Assigned(short, job, runner, 11); ok || err == nil {
		t.Fatalf("Assigned at 11 with every validator at ≤ 10 = %v, %v; want an error", ok, err)
	}
}

// TestHTTPChainAssignedWaitsForHeight: the only validator catches up while
// the check waits; the answer is its, not the "unknown job" of before.
func TestHTTPChainAssignedWaitsForHeight(t *testing.T) {
	job, runner := cip11.Hash{7}, cip11.Address{9}
	a, srvA := newFakeAPI(t, 9, job, runner, 10)
	b, srvB := newFakeAPI(t, 9, job, runner, 10)
	c, err := NewHTTPChain([]string{srvA.URL, srvB.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, func() { a.height.Store(10); b.height.Store(10) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ok, err := c.Assigned(ctx, job, runner, 10); err != nil || !ok {
		t.Fatalf("Assigned = %v, %v; want true once the validators apply 10", ok, err)
	}
}

// TestHTTPChainFailover (issue 28): the runner's first-named validator
// fails (503, then paused: it accepts and never answers); heights,
// submissions and job queries go through another, and a paused one is
// passed over within apiRequestTimeout.
func TestHTTPChainFailover(t *testing.T) {
	job, runner := cip11.Hash{7}, cip11.Address{9}
	first, srv0 := newFakeAPI(t, 20, job, runner, 10)
	other, srv1 := newFakeAPI(t, 21, job, runner, 10)
	c, err := NewHTTPChain([]string{srv0.URL, srv1.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first.down.Store(true)
	if h, err := c.Height(ctx); err != nil || h != 21 {
		t.Fatalf("Height with the first validator down = %d, %v; want 21", h, err)
	}
	if err := c.Submit(ctx, []byte{1}); err != nil || other.submits.Load() != 1 {
		t.Fatalf("Submit with the first validator down: %v, %d submits at the other", err, other.submits.Load())
	}
	first.down.Store(false)
	first.paused.Store(true)
	other.height.Store(30)
	start := time.Now()
	for range 3 {
		if err := c.Submit(ctx, []byte{2}); err != nil {
			t.Fatalf("Submit with the first validator paused: %v", err)
		}
	}
	if d := time.Since(start); d > 3*apiRequestTimeout {
		t.Fatalf("three submits with one validator paused took %v", d)
	}
	if ok, err := c.Settled(ctx, job, runner); err != nil || ok {
		t.Fatalf("Settled with the first validator paused = %v, %v", ok, err)
	}
	// both down: an error wrapping ErrNoValidatorAPI
	other.down.Store(true)
	first.paused.Store(false)
	first.down.Store(true)
	time.Sleep(apiBackoffMax) // past every backoff
	if err := c.Submit(ctx, []byte{3}); !errors.Is(err, ErrNoValidatorAPI) {
		t.Fatalf("Submit with every validator down: %v, want ErrNoValidatorAPI", err)
	}
}

// TestHTTPChainPrefersHighest: a hint (a verified pong's height) makes the
// validator that is ahead the first asked; Height is the highest seen.
func TestHTTPChainPrefersHighest(t *testing.T) {
	job, runner := cip11.Hash{7}, cip11.Address{9}
	_, srv0 := newFakeAPI(t, 5, job, runner, 10)
	_, srv1 := newFakeAPI(t, 8, job, runner, 10)
	c, err := NewHTTPChain([]string{srv0.URL, srv1.URL + "/", srv0.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Bases(); len(got) != 2 || got[0] != srv0.URL || got[1] != srv1.URL {
		t.Fatalf("Bases = %v", got)
	}
	ctx := context.Background()
	if h, _ := c.Height(ctx); h != 5 {
		t.Fatalf("first Height = %d, want 5 (the first named)", h)
	}
	c.Hint(srv1.URL, 8)
	if h, _ := c.Height(ctx); h != 8 {
		t.Fatalf("Height after a hint of 8 = %d", h)
	}
}

// TestRunnerHeartbeatMargin (§6.6, issue 28): the safety margin is half
// HEARTBEAT_TIMEOUT_BLOCKS (50 of the default 100), not 10 blocks — one
// second of loopback blocks, which a 5 s restart of the runner's
// validator overran by 7 blocks past the floor.
func TestRunnerHeartbeatMargin(t *testing.T) {
	d, err := GenerateGenesis(GenesisOptions{Seed: 1, Runners: 1, QUIC: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(context.Background(), RunnerConfig{Genesis: d.Genesis, Key: d.RunnerKeys[0], Chain: HTTPChain{Base: "http://127.0.0.1:9"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if d.Genesis.P().HeartbeatTimeoutBlocks != 100 || r.hb.Emergency != 50 || r.hb.Cadence != 50 {
		t.Fatalf("timeout %d: emergency %d, cadence %d; want 50, 50", d.Genesis.P().HeartbeatTimeoutBlocks, r.hb.Emergency, r.hb.Cadence)
	}
	for timeout, want := range map[uint64]uint64{1: 0, 2: 1, 3: 1, 100: 50, 1001: 500} {
		if got := HeartbeatMargin(timeout); got != want {
			t.Errorf("HeartbeatMargin(%d) = %d, want %d", timeout, got, want)
		}
	}
}
