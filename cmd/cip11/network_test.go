package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cip11/cip11/adapters/cometbft"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/cmd/internal/devnet"
)

// Issue 19 §4 item 1: cip11 genesis -validators N writes N validator homes
// DIR/v<i> that cometbft.ReadHome opens, validator i at -base-port + 10·i
// (p2p), + 1 (QUIC), + 2 (HTTP), every other validator its persistent
// peer, the -phase flags in each cip11.json and -runners key files in DIR;
// -seed changes the keys. A second run into DIR is refused (exit 1,
// node.ErrGenesisExists's message) and changes nothing.
func TestGenesisNetwork(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "net")
	code, out, errOut := cli("genesis", "-validators", "4", "-o", dir, "-runners", "3", "-seed", "5", "-base-port", "30000", "-phase", "3")
	if code != 0 || errOut != "" || !strings.Contains(out, "4-validator network") || !strings.Contains(out, filepath.Join(dir, "v3")) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for i := range 4 {
		h, err := cometbft.ReadHome(filepath.Join(dir, fmt.Sprintf("v%d", i)))
		if err != nil {
			t.Fatalf("v%d: %v", i, err)
		}
		port := 30000 + 10*i
		if h.Index != i || len(h.Genesis.Set) != 4 {
			t.Errorf("v%d: index %d, %d validators", i, h.Index, len(h.Genesis.Set))
		}
		if h.Genesis.Validator.QUIC != fmt.Sprintf("127.0.0.1:%d", port+1) || h.Genesis.Validator.HTTP != fmt.Sprintf("127.0.0.1:%d", port+2) ||
			h.Config.P2P.ListenAddress != fmt.Sprintf("tcp://127.0.0.1:%d", port) {
			t.Errorf("v%d: quic %s, http %s, p2p %s; want ports %d, %d, %d", i, h.Genesis.Validator.QUIC, h.Genesis.Validator.HTTP,
				h.Config.P2P.ListenAddress, port+1, port+2, port)
		}
		if !strings.Contains(out, fmt.Sprintf("http 127.0.0.1:%d", port+2)) {
			t.Errorf("stdout does not list v%d's HTTP address:\n%s", i, out)
		}
		if peers := strings.Split(h.Config.P2P.PersistentPeers, ","); len(peers) != 3 || strings.Contains(h.Config.P2P.PersistentPeers, fmt.Sprintf(":%d", port)) {
			t.Errorf("v%d: persistent peers %q", i, h.Config.P2P.PersistentPeers)
		}
		if ph, err := node.PhaseOf(h.Genesis.P()); err != nil || ph != node.Phase3 || h.Genesis.ChainID != 7011 {
			t.Errorf("v%d: phase %v %v, chain_id %d", i, ph, err, h.Genesis.ChainID)
		}
	}
	for i := range 4 {
		_, err := os.Stat(filepath.Join(dir, fmt.Sprintf("runner-%04d.key", i)))
		if (err == nil) != (i < 3) {
			t.Errorf("runner-%04d.key: %v", i, err)
		}
	}
	key := filepath.Join(dir, "v0", "validator.key")
	before, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}

	code, out, errOut = cli("genesis", "-validators", "4", "-o", dir, "-seed", "6")
	if code != 1 || out != "" || !strings.Contains(errOut, "already exist") || !strings.Contains(errOut, filepath.Join(dir, "v0")) {
		t.Fatalf("second network: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if after, _ := os.ReadFile(key); !bytes.Equal(after, before) {
		t.Fatal("a refused network changed v0/validator.key")
	}

	other := filepath.Join(tmp, "other")
	if code, _, errOut := cli("genesis", "-validators", "4", "-o", other, "-seed", "6"); code != 0 {
		t.Fatalf("seed 6: %s", errOut)
	}
	if k, _ := os.ReadFile(filepath.Join(other, "v0", "validator.key")); bytes.Equal(k, before) {
		t.Error("-seed 6 wrote seed 5's keys")
	}
	h, err := cometbft.ReadHome(filepath.Join(other, "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if h.Genesis.Validator.HTTP != "127.0.0.1:26612" {
		t.Errorf("default -base-port: v1 http %s, want 127.0.0.1:26612", h.Genesis.Validator.HTTP)
	}
	if ph, _ := node.PhaseOf(h.Genesis.P()); ph != node.Phase2 {
		t.Errorf("default phase %v, want 2", ph)
	}
}

// fakeNetDevnet replaces devnet.RunNetwork for the wiring tests: it
// records the configuration and returns rep or err.
func fakeNetDevnet(t *testing.T, rep *devnet.NetworkReport, err error) *devnet.NetworkConfig {
	t.Helper()
	got := new(devnet.NetworkConfig)
	called := false
	old := netDevnet
	netDevnet = func(_ context.Context, cfg devnet.NetworkConfig) (*devnet.NetworkReport, error) {
		if called {
			t.Error("RunNetwork called twice")
		}
		called = true
		*got = cfg
		return rep, err
	}
	t.Cleanup(func() { netDevnet = old })
	return got
}

func goodNetReport() *devnet.NetworkReport {
	return &devnet.NetworkReport{Validators: 4, Runners: 7, Blocks: 81, Submitted: 160, Completed: 158, Expired: 2,
		Assignments: 230, Seats: 236, Pushes: 240, PushesPerAssign: 1.04, PushP50Millis: 3.5, PushP99Millis: 12.25,
		BlockP50Millis: 240, BlockP99Millis: 610, AppHashesAgree: true, HeightsCompared: 81, ValidatorKills: 2,
		CaughtUp: true, ReplayAgrees: ptr(true), Elapsed: 23.5}
}

// Issue 19 §4 item 3 (the flags' wiring; the network itself is
// TestDevnetNetworkRuns): devnet -validators hands every flag to
// devnet.RunNetwork, prints the report as JSON (-json) or text, and
// exits 1 when the report shows a lost job, differing app hashes, a
// killed validator that did not catch up (-chaos) or a replay that
// disagrees, or RunNetwork fails.
func TestDevnetNetworkWiring(t *testing.T) {
	rep := goodNetReport()
	got := fakeNetDevnet(t, rep, nil)
	code, out, errOut := cli("devnet", "-validators", "4", "-runners", "7", "-duration", "3s", "-jobs-per-block", "5",
		"-multi-per-mille", "0", "-chaos", "-kills", "2", "-seed", "9", "-log", "error", "-json", "-quiet")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if got.Validators != 4 || got.Runners != 7 || got.Duration != 3*time.Second || got.JobsPerBlock != 5 || got.MultiPerMille != -1 ||
		!got.Chaos || got.Kills != 2 || got.Seed != 9 || got.Dir != "" || !got.NoSync || got.Logger == nil || got.Progress != nil {
		t.Fatalf("RunNetwork got %+v", *got)
	}
	if got.NoGossip {
		t.Fatal("presence gossip is off by default")
	}
	got = fakeNetDevnet(t, rep, nil)
	if code, _, errOut := cli("devnet", "-validators", "4", "-gossip=false", "-quiet"); code != 0 || !got.NoGossip {
		t.Fatalf("-gossip=false: exit %d (%s), NoGossip %v", code, errOut, got.NoGossip)
	}
	got = fakeNetDevnet(t, rep, nil)
	if code, _, errOut := cli("devnet", "-validators", "4", "-reconfigure", "-add-at", "16", "-remove-at", "40", "-overlap", "9", "-quiet"); code != 0 ||
		!got.Reconfigure || got.AddAt != 16 || got.RemoveAt != 40 || got.Overlap != 9 {
		t.Fatalf("-reconfigure: exit %d (%s), RunNetwork got %+v", code, errOut, *got)
	}
	stray := *rep
	stray.RunnersStray, stray.ReplayAgrees = 2, ptr(true)
	fakeNetDevnet(t, &stray, nil)
	if code, _, errOut := cli("devnet", "-validators", "4", "-reconfigure", "-quiet"); code != 1 || !strings.Contains(errOut, "outside their Sub(R)") {
		t.Fatalf("-reconfigure with stray runners: exit %d, stderr %q", code, errOut)
	}
	var back devnet.NetworkReport
	if err := json.Unmarshal([]byte(out), &back); err != nil || !reflect.DeepEqual(back, *rep) {
		t.Fatalf("-json printed %q (%v), want the report %+v", out, err, *rep)
	}
	if !strings.Contains(out, `"app_hashes_agree":true`) || !strings.Contains(out, `"jobs_lost":0`) {
		t.Errorf("-json lacks the report's fields: %s", out)
	}

	// Defaults, -data and the text report with progress lines.
	dataDir := t.TempDir()
	got = fakeNetDevnet(t, rep, nil)
	code, out, errOut = cli("devnet", "-validators", "1", "-data", dataDir)
	if code != 0 {
		t.Fatalf("text: exit %d, stderr %q", code, errOut)
	}
	if got.Validators != 1 || got.Runners != 50 || got.Duration != 20*time.Second || got.JobsPerBlock != 2 || got.MultiPerMille != 400 ||
		got.Chaos || got.Kills != 3 || got.Seed != 1 || got.Dir != dataDir || got.NoSync || got.Progress == nil {
		t.Fatalf("defaults: RunNetwork got %+v", *got)
	}
	for _, want := range []string{"4 validators (CometBFT), 7 runners, 81 blocks in 23.5 s", "submitted 160, completed 158, expired 2, lost 0",
		"240 for 236 committee seats of 230 assignments (1.04 a seat)", "p50 3.5 ms, p99 12.2 ms", "interval p50 240 ms, p99 610 ms",
		"app hashes agree at 81 heights: yes\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "chaos") {
		t.Errorf("a run without -chaos reports chaos:\n%s", out)
	}

	for _, tc := range []struct {
		name  string
		edit  func(*devnet.NetworkReport)
		chaos bool
		want  string
	}{
		{"lost", func(r *devnet.NetworkReport) { r.Lost = 2 }, false, "2 jobs lost"},
		{"app hashes", func(r *devnet.NetworkReport) { r.AppHashesAgree = false }, false, "app hashes differ"},
		{"catch-up", func(r *devnet.NetworkReport) { r.CaughtUp = false }, true, "did not catch up"},
		{"replay", func(r *devnet.NetworkReport) { r.ReplayAgrees = ptr(false) }, true, "does not replay"},
	} {
		r := goodNetReport()
		tc.edit(r)
		fakeNetDevnet(t, r, nil)
		args := []string{"devnet", "-validators", "4", "-quiet"}
		if tc.chaos {
			args = append(args, "-chaos")
		}
		code, out, errOut := cli(args...)
		if code != 1 || !strings.Contains(errOut, tc.want) || !strings.Contains(out, "cip11 devnet: 4 validators") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 naming %q after the report", tc.name, code, out, errOut, tc.want)
		}
	}
	// Without -chaos nothing is killed or replayed: CaughtUp and
	// ReplayAgrees false are no failure.
	r := goodNetReport()
	r.CaughtUp, r.ReplayAgrees = false, nil
	fakeNetDevnet(t, r, nil)
	if code, _, errOut := cli("devnet", "-validators", "4", "-quiet"); code != 0 {
		t.Errorf("no -chaos, CaughtUp and ReplayAgrees false: exit %d, %s", code, errOut)
	}
	// No replay ran: the JSON report does not claim one disagreed.
	fakeNetDevnet(t, r, nil)
	if code, out, errOut := cli("devnet", "-validators", "4", "-quiet", "-json"); code != 0 || strings.Contains(out, "replay_agrees") {
		t.Errorf("no replay, -json: exit %d, stdout %q, stderr %q; want no replay_agrees", code, out, errOut)
	}
	fakeNetDevnet(t, goodNetReport(), nil)
	if code, out, _ := cli("devnet", "-validators", "4", "-quiet", "-json", "-chaos"); code != 0 || !strings.Contains(out, `"replay_agrees":true`) {
		t.Errorf("-chaos -json: exit %d, stdout %q; want replay_agrees true", code, out)
	}
	fakeNetDevnet(t, goodNetReport(), nil)
	if code, out, errOut := cli("devnet", "-validators", "4", "-chaos", "-quiet"); code != 0 ||
		!strings.Contains(out, "2 validator kills; the restarted validator caught up: yes (slowest 0.0 s); its block log replays: yes") {
		t.Errorf("-chaos: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	fakeNetDevnet(t, nil, errors.New("validator 2 would not start"))
	if code, out, errOut := cli("devnet", "-validators", "4", "-quiet"); code != 1 || out != "" || !strings.Contains(errOut, "validator 2 would not start") {
		t.Errorf("RunNetwork error: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestDevnetNetworkRuns: cip11 devnet -validators 4 -json runs a real
// in-process network and its report says the four agreed and lost no job.
func TestDevnetNetworkRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a four-validator network")
	}
	d := "6s"
	if raceEnabled() {
		d = "12s" // blocks come about 5× slower: the runners join later
	}
	code, out, errOut := cli("devnet", "-validators", "4", "-runners", "8", "-duration", d, "-json", "-quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep devnet.NetworkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	if rep.Validators != 4 || rep.Runners != 8 || rep.Submitted == 0 || rep.Completed == 0 || rep.Lost != 0 || !rep.AppHashesAgree || rep.HeightsCompared == 0 {
		t.Fatalf("report %+v", rep)
	}
	t.Logf("report %+v", rep)
}

func ptr[T any](v T) *T { return &v }
