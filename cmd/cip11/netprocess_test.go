package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/internal/ports"
)

// freeNetworkBase finds a -base-port whose n validators' ports (p2p and
// HTTP on TCP at base+10·i and +2, QUIC on UDP at +1) are free.
func freeNetworkBase(t *testing.T, n int) int {
	t.Helper()
	base := ports.Base(n)
	if base == 0 {
		t.Fatal("no free ports")
	}
	return base
}

// readDigests reads a block log with chainlog.NewReader (which refuses a
// gap or a repeated height) and returns every block's out.state_digest
// by height − 1.
func readDigests(t *testing.T, path string) []cip11.Hash {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := chainlog.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []cip11.Hash
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, b.Out.StateDigest)
	}
}

// Issue 19 §4 item 4: a four-validator network as four `cip11 validator
// -home` processes configured only by what `cip11 genesis -validators 4`
// wrote. All pass height 5; two runner processes join and jobs submitted
// to validator 0 complete as validator 3 sees them. One validator is
// SIGKILLed and the other three (30 of 40 voting power, over 2/3) keep
// making blocks and complete a job submitted meanwhile; restarted on its
// home it catches up with them and knows every job completed. Stopped with SIGTERM each exits 0, and the four
// block logs (node/blocks.jsonl) hold the same state digest at every
// height they share, the restarted validator's log included, which
// `cip11 replay` re-executes and accepts.
func TestNetworkProcessesAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four validator processes")
	}
	const n = 4
	dir := filepath.Join(t.TempDir(), "net")
	base := freeNetworkBase(t, n)
	if code, out, errOut := cli("genesis", "-validators", "4", "-o", dir, "-runners", "2", "-base-port", fmt.Sprint(base)); code != 0 {
		t.Fatalf("genesis: exit %d: %s%s", code, out, errOut)
	}
	home := func(i int) string { return filepath.Join(dir, fmt.Sprintf("v%d", i)) }
	api := func(i int) string { return fmt.Sprintf("http://127.0.0.1:%d", base+10*i+2) }
	validator := func(i int) *proc { return start(t, "validator", "-home", home(i), "-log", "warn") }
	procs := make([]*proc, n)
	for i := range procs {
		procs[i] = validator(i)
	}
	height := func(i int) (uint64, bool) {
		var st struct {
			Height uint64 `json:"height,string"`
		}
		if err := getJSON(api(i)+"/status", &st); err != nil {
			return 0, false
		}
		return st.Height, true
	}
	heights := func(which []int) []uint64 {
		out := make([]uint64, len(which))
		for k, i := range which {
			out[k], _ = height(i)
		}
		return out
	}
	all := []int{0, 1, 2, 3}
	// waitNet is waitFor that first logs every validator's height when
	// it times out.
	waitNet := func(t *testing.T, what string, d time.Duration, f func() bool) {
		t.Helper()
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			if f() {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s; heights %v", what, heights(all))
	}
	waitNet(t, "every validator past height 5", 120*time.Second, func() bool {
		for _, h := range heights(all) {
			if h <= 5 {
				return false
			}
		}
		return true
	})
	for i, p := range procs {
		if out := p.out.String(); !strings.Contains(out, "home                "+home(i)+"\n") || !strings.Contains(out, "http                "+api(i)+"\n") {
			t.Errorf("validator %d banner lacks its home and HTTP API:\n%s", i, out)
		}
	}

	// Two runner processes; jobs submitted to one validator complete as
	// every other validator sees them, so the block logs carry state.
	for i := range 2 {
		start(t, "runner", "-genesis", filepath.Join(home(i), "cip11.json"), "-key", filepath.Join(dir, fmt.Sprintf("runner-%04d.key", i)),
			"-work", "20ms", "-log", "warn")
	}
	submit := func(at, m, nonce int) string {
		body := fmt.Sprintf(`{"submitter":"%040x","job_kind":1,"runners":%d,"timeout_blocks":"30","work_ms":20,"nonce":"%d"}`, 7, m, nonce)
		resp, err := http.Post(api(at)+"/jobs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var jv struct {
			ID string `json:"id"`
		}
		if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&jv) != nil {
			t.Fatalf("POST /jobs to validator %d: %s", at, resp.Status)
		}
		return jv.ID
	}
	completedAt := func(at int, ids ...string) func() bool {
		return func() bool {
			for _, id := range ids {
				var jv struct {
					State string `json:"state"`
				}
				if getJSON(api(at)+"/jobs/"+id, &jv) != nil || jv.State != "completed" {
					return false
				}
			}
			return true
		}
	}
	jobs := []string{submit(0, 1, 1), submit(0, 2, 2)}
	waitNet(t, "jobs submitted to validator 0 completed, as validator 3 sees them", 60*time.Second, completedAt(3, jobs...))

	// SIGKILL one; the other three keep deciding blocks.
	const victim = 2
	others := []int{0, 1, 3}
	if err := procs[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = procs[victim].cmd.Wait()
	killedAt := heights(others)
	t.Logf("validator %d killed; the others at %v", victim, killedAt)
	waitNet(t, "the three others 5 blocks further", 60*time.Second, func() bool {
		for k, h := range heights(others) {
			if h < killedAt[k]+5 {
				return false
			}
		}
		return true
	})
	if _, up := height(victim); up {
		t.Fatal("the killed validator's API still answers")
	}
	jobs = append(jobs, submit(1, 1, 3))
	waitNet(t, "a job submitted with a validator down completed", 60*time.Second, completedAt(0, jobs[2]))

	// Restart it on its home: it catches up with the others.
	procs[victim] = validator(victim)
	t0 := time.Now()
	waitNet(t, "the restarted validator level with the others", 120*time.Second, func() bool {
		lo := slices.Min(heights(others)) // read first: the others keep moving
		h, ok := height(victim)
		return ok && h >= lo
	})
	t.Logf("restarted validator level with the others %v after its restart", time.Since(t0))
	waitNet(t, "the restarted validator making blocks", 30*time.Second, func() bool {
		h, _ := height(victim)
		return h >= killedAt[0]+15
	})
	if !completedAt(victim, jobs...)() {
		t.Fatal("the restarted validator does not know the three jobs completed")
	}

	// SIGTERM: each stops cleanly (exit 0).
	sigtermAll(t, procs)
	homes := make([]string, n)
	for i := range homes {
		homes[i] = home(i)
	}
	logs, common := agreeingLogs(t, homes)
	if uint64(common) < killedAt[0]+15 {
		t.Fatalf("the logs share only %d heights", common)
	}
	t.Logf("%d heights agree across the four block logs", common)

	vlog := filepath.Join(home(victim), "node", "blocks.jsonl")
	code, out, errOut := cli("replay", "-quiet", vlog)
	last := logs[victim][len(logs[victim])-1]
	if code != 0 || !strings.Contains(out, fmt.Sprintf("blocks:             %d\n", len(logs[victim]))) || !strings.Contains(out, "jobs submitted:     3 (M == 1: 2, M > 1: 1)\n") ||
		!strings.Contains(out, "final state digest: "+last.String()+"\n") {
		t.Fatalf("replay of %s: exit %d, stdout:\n%s\nstderr:\n%s", vlog, code, out, errOut)
	}
}

// TestNetworkValidatorStartErrors: cip11 validator -home on a directory
// that is not a network home exits 1 naming what is missing, and on a
// single-validator genesis directory says it has no validator_set.
func TestNetworkValidatorStartErrors(t *testing.T) {
	tmp := t.TempDir()
	code, out, errOut := cli("validator", "-home", filepath.Join(tmp, "nowhere"))
	if code != 1 || out != "" || !strings.Contains(errOut, "cip11.json") {
		t.Fatalf("missing home: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	single := filepath.Join(tmp, "single")
	if code, _, errOut := cli("genesis", "-o", single, "-runners", "1"); code != 0 {
		t.Fatal(errOut)
	}
	if err := os.Rename(filepath.Join(single, "genesis.json"), filepath.Join(single, "cip11.json")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = cli("validator", "-home", single)
	if code != 1 || out != "" || !strings.Contains(errOut, "validator_set") {
		t.Fatalf("single-validator genesis as a home: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestNetworkOneValidatorFlags: a one-validator network decides blocks on
// its own; validator -home serves the HTTP API on -http when given
// (instead of the genesis validator.http), -comet-log info shows
// CometBFT's own log on stderr, and SIGINT stops it with exit 0.
func TestNetworkOneValidatorFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a validator process")
	}
	dir := filepath.Join(t.TempDir(), "net")
	if code, _, errOut := cli("genesis", "-validators", "1", "-o", dir, "-runners", "0", "-base-port", fmt.Sprint(freeNetworkBase(t, 1))); code != 0 {
		t.Fatal(errOut)
	}
	api := fmt.Sprintf("http://127.0.0.1:%d", freePort(t, "tcp"))
	p := start(t, "validator", "-home", filepath.Join(dir, "v0"), "-http", strings.TrimPrefix(api, "http://"), "-comet-log", "info", "-log", "warn")
	waitFor(t, "height 3 on the -http address", 60*time.Second, func() bool {
		var st struct {
			Height uint64 `json:"height,string"`
		}
		return getJSON(api+"/status", &st) == nil && st.Height >= 3
	})
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("after SIGINT: %v", err)
	}
	out := p.out.String()
	if !strings.Contains(out, "http                "+api+"\n") || !strings.Contains(out, "Completed ABCI Handshake") {
		t.Fatalf("output lacks the -http address in the banner or CometBFT's log:\n%.3000s", out)
	}
}

// sigtermAll sends every validator process SIGTERM and expects each to
// exit 0 within 30 s.
func sigtermAll(t *testing.T, procs []*proc) {
	t.Helper()
	for i, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("validator %d after SIGTERM: %v", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("validator %d did not stop within 30 s of SIGTERM", i)
		}
	}
}

// agreeingLogs reads every home's block log (home/node/blocks.jsonl) and
// checks that they carry the same state digest at every height they
// share; it returns the digests and that number of heights.
func agreeingLogs(t *testing.T, homes []string) ([][]cip11.Hash, int) {
	t.Helper()
	logs := make([][]cip11.Hash, len(homes))
	common := -1
	for i, h := range homes {
		logs[i] = readDigests(t, filepath.Join(h, "node", "blocks.jsonl"))
		if common < 0 || len(logs[i]) < common {
			common = len(logs[i])
		}
	}
	for h := range common {
		for i := 1; i < len(logs); i++ {
			if logs[i][h] != logs[0][h] {
				t.Fatalf("height %d: validator %d state digest %s, validator 0 %s", h+1, i, logs[i][h], logs[0][h])
			}
		}
	}
	return logs, common
}
