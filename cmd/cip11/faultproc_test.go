package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/internal/devkeys"
	"github.com/cip11/cip11/presence/local"
)

// Issue 28 "Must show", runners without a single point of failure, as
// processes: four `cip11 validator -home` processes (k = 3 of 4, so every
// runner's Sub(R) keeps at least two live validators while one is down),
// six `cip11 runner` processes all started with -api naming the victim, so
// the victim is every runner's first-named validator — the one a runner
// asks first for heights, heartbeats and the §10.1 check — and jobs
// submitted to the other three. TestNetworkPauseOneValidator stops the
// victim (SIGSTOP) for 30 s: no job expires and none is lost.
// TestNetworkKillFirstNamedValidator SIGKILLs it for 5 s and restarts it:
// no runner's on-chain last_heartbeat falls past the §7.1 floor
// (current_block_height − last_heartbeat ≤ HEARTBEAT_TIMEOUT_BLOCKS), read
// every 100 ms from a live validator's GET /runner/{addr}.

const faultRunners = 6

// faultNet is a procNet with runner processes and a job flow for the
// fault tests.
type faultNet struct {
	*procNet
	g       *node.Genesis
	runners []string // runner addresses (40 hex)
	addrs   []cip11.Address
}

// newFaultNet starts four validators, waits for height 3, and starts
// faultRunners runner processes whose -api is validator first's.
func newFaultNet(t *testing.T, first int) *faultNet {
	t.Helper()
	p := newProcNet(t, 4, faultRunners)
	for i := range 4 {
		p.start(i)
	}
	p.waitAll([]int{0, 1, 2, 3}, 3, 90*time.Second)
	g, err := node.LoadGenesis(filepath.Join(p.home(0), "cip11.json"))
	if err != nil {
		t.Fatal(err)
	}
	if k := g.P().SubsetSize(len(g.Set)); len(g.Set) != 4 || k != 3 {
		t.Fatalf("want 4 validators with k = 3, have %d with k = %d", len(g.Set), k)
	}
	f := &faultNet{procNet: p, g: g}
	for i := range faultRunners {
		kp := filepath.Join(p.dir, fmt.Sprintf("runner-%04d.key", i))
		k, err := node.LoadRunnerKey(kp)
		if err != nil {
			t.Fatal(err)
		}
		f.runners = append(f.runners, k.Address().String())
		f.addrs = append(f.addrs, k.Address())
		start(t, "runner", "-genesis", filepath.Join(p.home(i%4), "cip11.json"), "-key", kp, "-api", p.api(first),
			"-work", "20ms", "-log", "warn")
	}
	return f
}

// connected is how many runners validator i has authenticated links with.
func (f *faultNet) connected(i int) int {
	var d struct {
		Connected []string `json:"connected_runners"`
	}
	if getJSON(f.api(i)+"/dashboard.json", &d) != nil {
		return 0
	}
	return len(d.Connected)
}

// jobFlow posts one job every interval, round robin over validators, and
// records the id of every job answered 201.
type jobFlow struct {
	stop, done chan struct{}
	mu         sync.Mutex
	ids        []string
	refused    int
}

func (f *faultNet) flow(to []int, every time.Duration) *jobFlow {
	j := &jobFlow{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(j.done)
		hc := &http.Client{Timeout: 3 * time.Second}
		t := time.NewTicker(every)
		defer t.Stop()
		for nonce := uint64(1); ; nonce++ {
			select {
			case <-j.stop:
				return
			case <-t.C:
			}
			b, _ := json.Marshal(httpapi.JobRequest{Submitter: devkeys.Submitter(int(nonce % 8)), JobKind: 1, Runners: 1 + uint32(nonce%2),
				TimeoutBlocks: 20, WorkMillis: 20, Nonce: nonce})
			resp, err := hc.Post(f.api(to[int(nonce)%len(to)])+"/jobs", "application/json", bytes.NewReader(b))
			var jv struct {
				ID string `json:"id"`
			}
			ok := err == nil && resp.StatusCode == http.StatusCreated && json.NewDecoder(resp.Body).Decode(&jv) == nil && jv.ID != ""
			if err == nil {
				resp.Body.Close()
			}
			j.mu.Lock()
			if ok {
				j.ids = append(j.ids, jv.ID)
			} else {
				j.refused++
			}
			j.mu.Unlock()
		}
	}()
	return j
}

func (j *jobFlow) halt() []string {
	select {
	case <-j.stop:
	default:
		close(j.stop)
	}
	<-j.done
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.ids)
}

func (j *jobFlow) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.ids)
}

// floorWatch reads every runner's registry record (GET /runner/{addr})
// every 100 ms from the validators in from (round robin, the next on
// failure) and keeps, per runner, the greatest height − last_heartbeat
// seen and any health other than healthy.
type floorWatch struct {
	stop, done chan struct{}
	mu         sync.Mutex
	worst      map[string][2]uint64 // runner → {height − last_heartbeat, height}
	unhealthy  []string
	reads      int
}

func (f *faultNet) watchFloor(from []int) *floorWatch {
	w := &floorWatch{stop: make(chan struct{}), done: make(chan struct{}), worst: map[string][2]uint64{}}
	go func() {
		defer close(w.done)
		next := 0
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			for _, r := range f.runners {
				for range from {
					var rec struct {
						Health string `json:"health"`
						Last   uint64 `json:"last_heartbeat,string"`
						Height uint64 `json:"height,string"`
					}
					v := from[next%len(from)]
					next++
					if getJSON(f.api(v)+"/runner/"+r, &rec) != nil {
						continue
					}
					w.mu.Lock()
					w.reads++
					if gap := rec.Height - min(rec.Last, rec.Height); gap > w.worst[r][0] {
						w.worst[r] = [2]uint64{gap, rec.Height}
					}
					if rec.Health != "healthy" {
						w.unhealthy = append(w.unhealthy, fmt.Sprintf("%s %s at %d (v%d)", r[:8], rec.Health, rec.Height, v))
					}
					w.mu.Unlock()
					break
				}
			}
		}
	}()
	return w
}

// check stops the watch, logs each runner's worst gap and fails the test
// for any past the floor or not healthy.
func (w *floorWatch) check(t *testing.T, f *faultNet) {
	t.Helper()
	close(w.stop)
	<-w.done
	floor := f.g.P().HeartbeatTimeoutBlocks
	var worst uint64
	for _, r := range f.runners {
		g := w.worst[r]
		worst = max(worst, g[0])
		if g[0] > floor {
			t.Errorf("runner %s fell below the heartbeat floor: height %d − last_heartbeat %d = %d > HEARTBEAT_TIMEOUT_BLOCKS %d", r, g[1], g[1]-g[0], g[0], floor)
		}
	}
	t.Logf("heartbeat floor: %d reads of %d runners; worst height − last_heartbeat %d (floor %d); per runner %v", w.reads, len(f.runners), worst, floor, w.worst)
	if w.reads == 0 {
		t.Error("no registry record read")
	}
	if len(w.unhealthy) > 0 {
		t.Errorf("runners not healthy: %v", w.unhealthy[:min(len(w.unhealthy), 10)])
	}
}

// settleJobs waits until every job ended and fails the test for any job
// expired or lost; it returns the counts.
func (f *faultNet) settleJobs(t *testing.T, at int, ids []string) {
	t.Helper()
	c := &cluster{t: t, api: f.api(at)}
	completed, expired, lost := c.settle(ids, 60*time.Second)
	t.Logf("jobs: %d answered 201: completed %d, expired %d, lost %d", len(ids), completed, expired, len(lost))
	if expired > 0 || len(lost) > 0 {
		t.Errorf("%d jobs expired and %d lost (%v) with a live validator in every Sub(R)", expired, len(lost), lost[:min(len(lost), 10)])
	}
}

// startFaultFlow starts the fault network (newFaultNet), waits until every
// runner is linked to the validators others (each is in 4 or 5 of the 6
// Sub(R)s, so 2 links a runner at least), then starts a job every 100 ms
// to them and the heartbeat-floor watch over them. The caller halts jobs.
func startFaultFlow(t *testing.T, victim int, others []int) (*faultNet, *jobFlow, *floorWatch) {
	t.Helper()
	f := newFaultNet(t, victim)
	waitFor(t, "every runner linked to validators 1–3 (each is in 4 or 5 of the 6 Sub(R)s)", 60*time.Second, func() bool {
		n := 0
		for _, i := range others {
			n += f.connected(i)
		}
		return n >= 2*faultRunners
	})
	return f, f.flow(others, 100*time.Millisecond), f.watchFloor(others)
}

// TestNetworkPauseOneValidator (issue 28 "Must show"): validator 0, every
// runner's first-named validator, is stopped (SIGSTOP) for 30 s while jobs
// flow to the other three, then continued. Every runner's Sub(R) keeps
// two live validators, so no job may expire: every job answered 201
// completes, none is lost, and no runner falls below the heartbeat floor.
func TestNetworkPauseOneValidator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four validator and six runner processes, pauses one validator 30 s")
	}
	const victim = 0
	others := []int{1, 2, 3}
	f, jobs, watch := startFaultFlow(t, victim, others)
	defer jobs.halt()
	waitFor(t, "10 jobs answered 201", 30*time.Second, func() bool { return jobs.count() >= 10 })

	at := f.heights(others)
	if err := f.procs[victim].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(30 * time.Second)
	during := jobs.count()
	after := f.heights(others)
	if err := f.procs[victim].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("validator %d paused %v: the others went from %v to %v", victim, time.Since(t0).Round(time.Millisecond), at, after)
	for k := range others {
		if after[k] < at[k]+20 {
			t.Fatalf("validator %d made %d blocks in the 30 s pause", others[k], after[k]-at[k])
		}
	}
	waitFor(t, "5 more jobs answered 201 after the pause", 30*time.Second, func() bool { return jobs.count() >= during+5 })
	ids := jobs.halt()
	f.settleJobs(t, 1, ids)
	watch.check(t, f)
	waitFor(t, "the paused validator level with the others", 60*time.Second, func() bool {
		lo := slices.Min(f.heights(others))
		return f.height(victim) >= lo
	})
}

// TestNetworkKillFirstNamedValidator (issue 28 "Must show"): validator 0,
// every runner's first-named validator, is SIGKILLed, restarted on its
// home 5 s later and caught up; throughout, and for a heartbeat timeout
// after, no runner falls below the heartbeat floor, and every job
// answered 201 completes.
func TestNetworkKillFirstNamedValidator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four validator and six runner processes, kills one validator")
	}
	const victim = 0
	others := []int{1, 2, 3}
	f, jobs, watch := startFaultFlow(t, victim, others)
	defer jobs.halt()
	// The kill lands where it hurts: once every runner is on its steady
	// §6.6 schedule (a cadence of blocks in), one block before the next
	// runner's heartbeat is due, when its last_heartbeat is a whole
	// cadence old. The schedule is the runner's own (NewRunner's).
	floor := f.g.P().HeartbeatTimeoutBlocks
	margin := node.HeartbeatMargin(floor)
	cadence := floor - margin
	waitFor(t, "a heartbeat cadence of blocks", 90*time.Second, func() bool { return f.height(1) >= cadence+5 })
	h := f.height(1)
	target, due, last := "", uint64(0), uint64(0)
	for i, r := range f.runners {
		var rec struct {
			Last uint64 `json:"last_heartbeat,string"`
		}
		if err := getJSON(f.api(1)+"/runner/"+r, &rec); err != nil {
			t.Fatal(err)
		}
		hb, err := local.NewHeartbeatSchedule(uint64(f.g.ChainID), f.addrs[i], cadence, margin, f.g.P())
		if err != nil {
			t.Fatal(err)
		}
		if d := hb.NextDue(h+3, rec.Last); target == "" || d < due {
			target, due, last = r, d, rec.Last
		}
	}
	t.Logf("at height %d: runner %s is due at %d (last_heartbeat %d, cadence %d, margin %d); the kill lands at %d", h, target[:8], due, last, cadence, margin, due-1)
	waitFor(t, fmt.Sprintf("height %d", due-1), 60*time.Second, func() bool { return f.height(1) >= due-1 })

	if err := f.procs[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = f.procs[victim].cmd.Wait()
	killedAt := f.height(1)
	time.Sleep(5 * time.Second)
	f.start(victim)
	t0 := time.Now()
	waitFor(t, "the restarted validator level with the others", 60*time.Second, func() bool {
		lo := slices.Min(f.heights(others))
		st, ok := f.status(victim)
		return ok && st.Height >= lo && !st.CatchingUp
	})
	t.Logf("validator %d killed at height %d, restarted 5 s later, level with the others %v after its restart (height %d)",
		victim, killedAt, time.Since(t0).Round(time.Millisecond), f.height(victim))
	// every runner has heartbeated since the kill (the floor watch saw
	// each runner's gap until then)
	waitFor(t, "every runner's last_heartbeat past the kill", 90*time.Second, func() bool {
		for _, r := range f.runners {
			var rec struct {
				Last uint64 `json:"last_heartbeat,string"`
			}
			if getJSON(f.api(1)+"/runner/"+r, &rec) != nil || rec.Last < killedAt {
				return false
			}
		}
		return true
	})
	ids := jobs.halt()
	f.settleJobs(t, 1, ids)
	watch.check(t, f)
}
