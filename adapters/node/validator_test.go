package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/replay"
	"github.com/cip11/cip11/wire"
)

func testDevnet(t *testing.T, runners int, mod func(p *cip11.Params)) *GeneratedGenesis {
	t.Helper()
	p := DefaultGenesisParams()
	if mod != nil {
		mod(&p)
	}
	d, err := GenerateGenesis(GenesisOptions{Seed: 9, Runners: runners, QUIC: "127.0.0.1:0", Params: &p})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newTestValidator(t *testing.T, d *GeneratedGenesis, dir string) *Validator {
	t.Helper()
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// docs/genesis.md: the genesis file round-trips, is strictly decoded, and
// its keys reload from the files `cip11 genesis` writes.
func TestGenesisFiles(t *testing.T) {
	d := testDevnet(t, 3, nil)
	dir := t.TempDir()
	if err := d.Write(dir, 9); err != nil {
		t.Fatal(err)
	}
	g, err := LoadGenesis(filepath.Join(dir, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := d.Genesis.Encode()
	b, _ := g.Encode()
	if !bytes.Equal(a, b) {
		t.Fatal("genesis does not round-trip")
	}
	vk, err := LoadValidatorKeys(filepath.Join(dir, "validator.key"))
	if err != nil || vk.Peer.PubKey() != d.Validator.Peer.PubKey() || vk.Threshold.PublicKey() != d.Validator.Threshold.PublicKey() {
		t.Fatalf("validator key: %v", err)
	}
	rk, err := LoadRunnerKey(filepath.Join(dir, "runner-0002.key"))
	if err != nil || rk.Address() != g.Runners[2].Address {
		t.Fatalf("runner key: %v", err)
	}
	// another runner's address in the file is a typed error
	var kf map[string]string
	raw, _ := os.ReadFile(filepath.Join(dir, "runner-0001.key"))
	_ = json.Unmarshal(raw, &kf)
	kf["address"] = fmt.Sprintf("%x", g.Runners[0].Address)
	raw, _ = json.Marshal(kf)
	_ = os.WriteFile(filepath.Join(dir, "bad.key"), raw, 0o600)
	if _, err := LoadRunnerKey(filepath.Join(dir, "bad.key")); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("mismatched runner key file: %v", err)
	}
	bad := map[string]func(s string) string{
		"unknown field":     func(s string) string { return strings.Replace(s, `"format"`, `"formatx": 1, "format"`, 1) },
		"trailing data":     func(s string) string { return s + "{}" },
		"other format":      func(s string) string { return strings.Replace(s, GenesisFormat, "nope", 1) },
		"unknown parameter": func(s string) string { return strings.Replace(s, `"params": {`, `"params": {"NOPE": "1",`, 1) },
		"forged beacon":     func(s string) string { return strings.Replace(s, `"signature": "`, `"signature": "8`, 1)[:len(s)] },
		"duplicate runner": func(s string) string {
			var gg Genesis
			_ = json.Unmarshal([]byte(s), &gg)
			gg.Runners = append(gg.Runners, gg.Runners[0])
			out, _ := json.Marshal(gg)
			return string(out)
		},
	}
	for name, f := range bad {
		if _, err := DecodeGenesis([]byte(f(string(a)))); !errors.Is(err, ErrGenesis) {
			t.Errorf("%s: %v, want ErrGenesis", name, err)
		}
	}
	if _, err := NewValidator(ValidatorConfig{Genesis: g}); !errors.Is(err, ErrNilConfig) {
		t.Errorf("nil keys: %v", err)
	}
	if _, err := NewValidator(ValidatorConfig{Genesis: g, Keys: mustKeys(t)}); !errors.Is(err, ErrKeyFile) {
		t.Errorf("foreign validator key: %v", err)
	}
}

func mustKeys(t *testing.T) *ValidatorKeys {
	k, err := NewValidatorKeys([32]byte{1}, [32]byte{2})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// §8.1 crash recovery: the block log is written before the store commits,
// so a crash can leave the log one block ahead; reopening re-executes
// that block from the log and reaches the same state. A log behind the
// store, a torn last line, and a corrupted line are handled as documented.
func TestValidatorRecovery(t *testing.T) {
	d := testDevnet(t, 4, nil)
	d1 := t.TempDir()
	v := newTestValidator(t, d, d1)
	for range 5 {
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{1}, Runners: 1, TimeoutBlocks: 5}); err != nil {
		t.Fatal(err)
	}
	v.Close()
	d2 := t.TempDir()
	copyDir(t, d1, d2) // the state at height 5
	v = newTestValidator(t, d, d1)
	if err := v.ProduceBlock(); err != nil { // block 6 includes the job
		t.Fatal(err)
	}
	v.Close()
	// d2: store at 5, log at 6 (the log of d1)
	copyFile(t, filepath.Join(d1, "blocks.jsonl"), filepath.Join(d2, "blocks.jsonl"))
	v2 := newTestValidator(t, d, d2)
	if h := v2.Height(); h != 6 {
		t.Fatalf("recovered to height %d, want 6", h)
	}
	jv, ok := v2.Job((&JobSpec{Submitter: cip11.Address{1}, Runners: 1, TimeoutBlocks: 5}).ID())
	if !ok || jv.State != job.StateAssigned {
		t.Fatalf("job after recovery: %v %+v", ok, jv)
	}
	if err := v2.ProduceBlock(); err != nil {
		t.Fatal(err)
	}
	v2.Close()
	// the log replays, across the recovery
	f, _ := os.Open(filepath.Join(d2, "blocks.jsonl"))
	s, err := replay.Run(f, replay.Config{})
	f.Close()
	if err != nil || s.Blocks != 7 {
		t.Fatalf("replay: %d blocks, %v", s.Blocks, err)
	}

	// a torn last line is dropped and re-produced
	lg := filepath.Join(d2, "blocks.jsonl")
	b, _ := os.ReadFile(lg)
	_ = os.WriteFile(lg, append(b, []byte(`{"height":"8","rou`)...), 0o644)
	v3 := newTestValidator(t, d, d2)
	if h := v3.Height(); h != 7 {
		t.Fatalf("after a torn line: height %d", h)
	}
	v3.Close()

	// the store ahead of the log is refused (blocks were lost)
	lines := bytes.SplitAfter(b, []byte("\n"))
	_ = os.WriteFile(lg, bytes.Join(lines[:len(lines)-2], nil), 0o644)
	if _, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: d2, NoSync: true}); !errors.Is(err, ErrBlockLog) {
		t.Fatalf("log behind the store: %v", err)
	}
	// a corrupted complete line is corruption, not a torn write
	bad := bytes.Clone(b)
	bad[len(lines[0])+5] = '#'
	_ = os.WriteFile(lg, bad, 0o644)
	if _, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: d2, NoSync: true}); !errors.Is(err, ErrBlockLog) {
		t.Fatalf("corrupted line: %v", err)
	}
	// another genesis's log
	other, err := GenerateGenesis(GenesisOptions{Seed: 10, ChainID: 99, Runners: 1, QUIC: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(lg, b, 0o644)
	if _, err := NewValidator(ValidatorConfig{Genesis: other.Genesis, Keys: other.Validator, DataDir: d2, NoSync: true}); err == nil {
		t.Fatal("opened another genesis's data directory")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		copyFile(t, p, filepath.Join(to, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The HTTP API over a real validator (the handler tests with a fake
// backend are in httpapi): a job goes in, its view comes out, /submit
// admits a runner transaction once (409 after), rejects garbage with 400,
// and the poll fallback returns the runner's signed assignment (§14), or
// 410 Gone under CIP11_POLL_DISABLED.
func TestBackendOverHTTP(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		d := testDevnet(t, 2, func(p *cip11.Params) { p.PollDisabled = disabled })
		v := newTestValidator(t, d, "")
		defer v.Close()
		h, err := httpapi.NewHandler(Backend{v}, httpapi.Options{PollDisabled: disabled})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		post := func(path, body string) (int, string) {
			resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		get := func(path string) (int, string) {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if err := v.ProduceBlock(); err != nil { // block 1 registers the genesis runners
			t.Fatal(err)
		}
		rk := d.RunnerKeys[0]
		hb, _ := SignTx(rk, uint64(d.Genesis.ChainID), TxHeartbeat, 2, cip11.Hash{}, nil) // after last_heartbeat 1 (§7.1, C7)
		sub := fmt.Sprintf(`{"tx":"%x"}`, hb.Bytes())
		if code, body := post("/submit", sub); code != http.StatusOK {
			t.Fatalf("submit: %d %s", code, body)
		}
		if code, _ := post("/submit", sub); code != http.StatusConflict {
			t.Fatalf("duplicate submit: %d", code)
		}
		// issue 18 item 10: a transaction signed for another chain, and a
		// heartbeat signed far from the chain's height, are refused
		other, _ := SignTx(rk, uint64(d.Genesis.ChainID)+1, TxHeartbeat, 1, cip11.Hash{}, nil)
		if code, body := post("/submit", fmt.Sprintf(`{"tx":"%x"}`, other.Bytes())); code != http.StatusBadRequest || !strings.Contains(body, "another chain") {
			t.Fatalf("another chain's heartbeat: %d %s", code, body)
		}
		stale, _ := SignTx(rk, uint64(d.Genesis.ChainID), TxHeartbeat, 1+chain.HeartbeatWindow+5, cip11.Hash{}, nil)
		if code, body := post("/submit", fmt.Sprintf(`{"tx":"%x"}`, stale.Bytes())); code != http.StatusBadRequest || !strings.Contains(body, "stale") {
			t.Fatalf("a heartbeat from far ahead: %d %s", code, body)
		}
		if code, _ := post("/submit", `{"tx":"00ff"}`); code != http.StatusBadRequest {
			t.Fatalf("garbage submit: %d", code)
		}
		if code, _ := post("/jobs", `{"submitter":"0000000000000000000000000000000000000001","job_kind":1,"runners":0,"timeout_blocks":"5"}`); code != http.StatusBadRequest {
			t.Fatalf("M = 0: %d", code)
		}
		code, body := post("/jobs", `{"submitter":"0000000000000000000000000000000000000001","job_kind":1,"runners":1,"timeout_blocks":"9"}`)
		if code != http.StatusCreated {
			t.Fatalf("POST /jobs: %d %s", code, body)
		}
		var jv job.View
		if err := json.Unmarshal([]byte(body), &jv); err != nil || jv.State != job.StateSubmitted || jv.JobKind != 1 || jv.Submitter != (cip11.Address{19: 1}) {
			t.Fatalf("job view %s: %v", body, err)
		}
		if code, _ := post("/jobs", `{"submitter":"0000000000000000000000000000000000000001","job_kind":1,"runners":1,"timeout_blocks":"9"}`); code != http.StatusConflict {
			t.Fatalf("same job twice: %d", code)
		}
		for range 3 { // registration at 1; the job selects at 2 or later
			if err := v.ProduceBlock(); err != nil {
				t.Fatal(err)
			}
		}
		code, body = get(fmt.Sprintf("/jobs/%x", jv.ID[:]))
		if code != http.StatusOK || !strings.Contains(body, `"assigned"`) {
			t.Fatalf("GET job: %d %s", code, body)
		}
		_ = json.Unmarshal([]byte(body), &jv)
		runner := jv.Committee[0]
		code, body = get(fmt.Sprintf("/runner/%x/jobs", runner[:]))
		if disabled {
			if code != http.StatusGone {
				t.Fatalf("poll with CIP11_POLL_DISABLED: %d", code)
			}
			continue
		}
		if code != http.StatusOK {
			t.Fatalf("poll: %d %s", code, body)
		}
		var pr httpapi.RunnerJobsResponse
		if err := json.Unmarshal([]byte(body), &pr); err != nil {
			t.Fatal(err)
		}
		if runner == rk.Address() {
			if len(pr.Jobs) != 1 || pr.Jobs[0].JobID != jv.ID || pr.Jobs[0].Verify(uint64(d.Genesis.ChainID)) != nil {
				t.Fatalf("poll: %+v", pr.Jobs)
			}
		}
		if code, _ := get("/jobs/zz"); code != http.StatusBadRequest {
			t.Fatalf("bad id: %d", code)
		}
	}
}

// §14 poll fallback end to end: a runner that cannot reach the validator
// over QUIC still gets its job by polling and completes it through
// /submit-path admission.
func TestPollFallbackCompletesJob(t *testing.T) {
	d := testDevnet(t, 1, nil)
	v := newTestValidator(t, d, "")
	defer v.Close()
	r, err := NewRunner(context.Background(), RunnerConfig{Genesis: d.Genesis, Key: d.RunnerKeys[0], Chain: LocalChain{V: v}, Validator: "127.0.0.1:9", Tick: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := v.ProduceBlock(); err != nil {
		t.Fatal(err)
	}
	id, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{2}, Runners: 1, TimeoutBlocks: 50, WorkMillis: 1})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
		if jv, _ := v.Job(id); jv.State == job.StateCompleted {
			if len(r.Client().Connected()) != 0 {
				t.Fatal("the runner had a QUIC link")
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	jv, _ := v.Job(id)
	t.Fatalf("job not completed by polling: %+v", jv)
}

var _ = chainlog.FormatName
var _ = wire.RoleRunner
