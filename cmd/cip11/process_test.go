package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/internal/ports"
)

// TestMain lets the test binary act as the cip11 command (CIP11_AS_MAIN=1),
// so process tests run real validator and runner processes.
func TestMain(m *testing.M) {
	if os.Getenv("CIP11_AS_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

type proc struct {
	cmd *exec.Cmd
	out *syncWriter
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "CIP11_AS_MAIN=1")
	p := &proc{cmd: cmd, out: &syncWriter{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", args[0], p.out.String())
		}
	})
	return p
}

// syncWriter is a process's combined output, safe to read while it runs.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(b)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freePort is a loopback port free now for network, outside the kernel's
// ephemeral range (internal/ports).
func freePort(t *testing.T, network string) int {
	t.Helper()
	p, err := ports.Free(network)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func getJSON(url string, dst any) error {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(dst)
}

func waitFor(t *testing.T, what string, d time.Duration, f func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if f() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// Processes (issue 8): a validator and two runners as separate processes
// on loopback, configured only by the files `cip11 genesis` writes. Jobs
// (M = 1 and M = 2) submitted over HTTP complete; the validator is then
// killed with SIGKILL and restarted on its data directory, resumes from
// its last committed block, and a job submitted afterwards completes too;
// finally the runner executing a job is killed with SIGKILL mid-job and
// the job still completes (timeout re-selection, D26).
func TestProcessesValidatorAndTwoRunners(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	qport, hport := freePort(t, "udp"), freePort(t, "tcp")
	api := fmt.Sprintf("http://127.0.0.1:%d", hport)
	var out, errb bytes.Buffer
	if code := run([]string{"genesis", "-o", dir, "-runners", "2", "-quic", fmt.Sprintf("127.0.0.1:%d", qport),
		"-http", fmt.Sprintf("127.0.0.1:%d", hport)}, &out, &errb); code != 0 {
		t.Fatalf("genesis: %d %s", code, errb.String())
	}
	gen := filepath.Join(dir, "genesis.json")
	data := filepath.Join(dir, "data")
	validator := func() *proc {
		return start(t, "validator", "-genesis", gen, "-key", filepath.Join(dir, "validator.key"), "-data", data, "-block-time", "200ms", "-log", "warn")
	}
	v := validator()
	runnerProc := func(i int) *proc {
		return start(t, "runner", "-genesis", gen, "-key", filepath.Join(dir, fmt.Sprintf("runner-%04d.key", i)), "-work", "20ms", "-log", "warn")
	}
	runners := []*proc{runnerProc(0), runnerProc(1)}
	var st struct {
		Height  string `json:"height"`
		Present int    `json:"present"`
		PeerKey string `json:"peer_key"`
		SetHash string `json:"validator_set_hash"`
	}
	waitFor(t, "both runners present", 30*time.Second, func() bool { return getJSON(api+"/status", &st) == nil && st.Present == 2 })
	t0 := time.Now()
	if st.SetHash == "" || !strings.Contains(v.out.String(), "validator_set_hash  "+st.SetHash+"\n") {
		t.Errorf("the validator did not print its validator_set_hash %s", st.SetHash)
	}
	if st.PeerKey == "" || !strings.Contains(v.out.String(), st.PeerKey) {
		t.Errorf("the validator did not print its peer key %s", st.PeerKey)
	}
	submitWork := func(m, nonce, workMs, timeout int) string {
		body := fmt.Sprintf(`{"submitter":"%040x","job_kind":1,"runners":%d,"timeout_blocks":"%d","work_ms":%d,"nonce":"%d"}`, 7, m, timeout, workMs, nonce)
		resp, err := http.Post(api+"/jobs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var jv struct {
			ID string `json:"id"`
		}
		if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&jv) != nil {
			t.Fatalf("POST /jobs: %s", resp.Status)
		}
		return jv.ID
	}
	submit := func(m, nonce int) string { return submitWork(m, nonce, 20, 20) }
	completed := func(ids ...string) func() bool {
		return func() bool {
			for _, id := range ids {
				var jv struct {
					State string `json:"state"`
				}
				if getJSON(api+"/jobs/"+id, &jv) != nil || jv.State != "completed" {
					return false
				}
			}
			return true
		}
	}
	ids := []string{submit(1, 1), submit(2, 2), submit(1, 3)}
	waitFor(t, "jobs completed", 60*time.Second, completed(ids...))
	t.Logf("3 jobs completed in %v", time.Since(t0))

	// SIGKILL the validator and restart it on the same directory.
	var before struct {
		Height string `json:"height"`
	}
	if err := getJSON(api+"/status", &before); err != nil {
		t.Fatal(err)
	}
	if err := v.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = v.cmd.Wait()
	v2 := validator()
	waitFor(t, "restarted validator prints its height", 30*time.Second, func() bool {
		return strings.Contains(v2.out.String(), "height")
	})
	sc := bufio.NewScanner(strings.NewReader(v2.out.String()))
	var resumed uint64
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "height" {
			fmt.Sscan(f[1], &resumed)
		}
	}
	var bh uint64
	fmt.Sscan(before.Height, &bh)
	if resumed < bh {
		t.Fatalf("restarted at height %d, below %d seen before the kill", resumed, bh)
	}
	t1 := time.Now()
	// Without the stable stateless-reset key (SPEC-NOTES N2) the runners
	// would sit out the 30 s QUIC idle timeout here.
	waitFor(t, "runners back after the restart", 10*time.Second, func() bool { return getJSON(api+"/status", &st) == nil && st.Present == 2 })
	t.Logf("runners present again %v after the restart", time.Since(t1))
	waitFor(t, "a job after the restart completes", 60*time.Second, completed(submit(2, 4)))

	// SIGKILL the runner executing a long job: the job still ends by rule
	// (its deadline passes, D26 re-selects the other runner, which completes it).
	id := submitWork(1, 5, 1500, 15)
	var jv struct {
		State     string   `json:"state"`
		Committee []string `json:"committee"`
		Events    []struct {
			Kind string `json:"kind"`
		} `json:"events"`
	}
	waitFor(t, "the long job acked", 30*time.Second, func() bool {
		if getJSON(api+"/jobs/"+id, &jv) != nil {
			return false
		}
		for _, e := range jv.Events {
			if e.Kind == "acked" {
				return true
			}
		}
		return false
	})
	g, err := node.LoadGenesis(gen)
	if err != nil {
		t.Fatal(err)
	}
	victim := 0
	if fmt.Sprintf("%x", g.Runners[1].Address[:]) == jv.Committee[0] {
		victim = 1
	}
	if err := runners[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = runners[victim].cmd.Wait()
	runners[victim] = runnerProc(victim)
	waitFor(t, "the killed runner's job ends", 60*time.Second, func() bool {
		return getJSON(api+"/jobs/"+id, &jv) == nil && (jv.State == "completed" || jv.State == "expired")
	})
	if jv.State != "completed" {
		t.Fatalf("the killed runner's job %s", jv.State)
	}
}
