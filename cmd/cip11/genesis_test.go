package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/cmd/internal/devnet"
)

// TestGenesisRefusesOverwrite (issue 18 #13): a second `cip11 genesis -o
// DIR` exits 1 naming the file and -force, and leaves the old genesis and
// keys as they were; with -force it replaces them.
func TestGenesisRefusesOverwrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	if code, _, errOut := cli("genesis", "-o", dir, "-runners", "2"); code != 0 {
		t.Fatalf("first genesis: exit %d: %s", code, errOut)
	}
	key := filepath.Join(dir, "validator.key")
	before, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli("genesis", "-o", dir, "-runners", "2", "-seed", "2")
	if code != 1 || out != "" || !strings.Contains(errOut, "-force") || !strings.Contains(errOut, "already exist") {
		t.Fatalf("second genesis: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if after, _ := os.ReadFile(key); !bytes.Equal(after, before) {
		t.Fatal("a refused genesis changed validator.key")
	}
	if code, _, errOut := cli("genesis", "-o", dir, "-runners", "2", "-seed", "2", "-force"); code != 0 {
		t.Fatalf("-force: exit %d: %s", code, errOut)
	}
	if after, _ := os.ReadFile(key); bytes.Equal(after, before) {
		t.Fatal("-force kept the old validator.key")
	}
}

// TestGenesisPhase (issue 18 A1, §14, SPEC-NOTES N10): -phase writes the
// phase's delivery flags into the genesis (default 2), -poll-disabled is
// phase 3, and the genesis reads back as that phase.
func TestGenesisPhase(t *testing.T) {
	for _, tc := range []struct {
		args                          []string
		want                          node.Phase
		transport, presentFirst, poll bool
	}{
		{nil, node.Phase2, true, true, false},
		{[]string{"-phase", "0"}, node.PhaseOff, false, false, false},
		{[]string{"-phase", "1"}, node.Phase1, true, false, false},
		{[]string{"-phase", "3"}, node.Phase3, true, true, true},
		{[]string{"-poll-disabled"}, node.Phase3, true, true, true},
		{[]string{"-poll-disabled", "-phase", "3"}, node.Phase3, true, true, true},
	} {
		dir := filepath.Join(t.TempDir(), "net")
		code, out, errOut := cli(append([]string{"genesis", "-o", dir, "-runners", "1"}, tc.args...)...)
		if code != 0 || !strings.Contains(out, "(phase "+tc.want.String()+")") {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q", tc.args, code, out, errOut)
		}
		g, err := node.LoadGenesis(filepath.Join(dir, "genesis.json"))
		if err != nil {
			t.Fatal(err)
		}
		p := g.P()
		ph, err := node.PhaseOf(p)
		if err != nil || ph != tc.want || p.TransportEnabled != tc.transport || p.PresentFirstEnabled != tc.presentFirst || p.PollDisabled != tc.poll {
			t.Fatalf("%q: phase %v %v, flags transport %v present-first %v poll-disabled %v", tc.args, ph, err,
				p.TransportEnabled, p.PresentFirstEnabled, p.PollDisabled)
		}
	}
}

// TestGenesisExternalRunners (issue 18 #13): -runner and -runners-file
// register runners without key files; malformed, duplicate or zero-stake
// entries are usage errors.
func TestGenesisExternalRunners(t *testing.T) {
	tmp := t.TempDir()
	a := strings.Repeat("a1", 20)
	b := strings.Repeat("b2", 20)
	c := strings.Repeat("c3", 20)
	file := filepath.Join(tmp, "runners.txt")
	if err := os.WriteFile(file, []byte("# operators\n"+b+" 42\n\n"+c+"   # default stake\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "net")
	code, out, errOut := cli("genesis", "-o", dir, "-runners", "1", "-runner", a+":7", "-runners-file", file)
	if code != 0 || !strings.Contains(out, "3 more runners") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	g, err := node.LoadGenesis(filepath.Join(dir, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range g.Runners[1:] {
		got = append(got, r.Address.String()+" "+r.Stake.String())
	}
	want := []string{a + " 7", b + " 42", c + " 1000000000000000"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("runners %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "runner-0001.key")); err == nil {
		t.Error("a key file was written for an external runner")
	}

	write := func(name, s string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-runner", "zz"}, "-runner"},
		{[]string{"-runner", a + ":0"}, "zero"},
		{[]string{"-runner", a, "-runner", a + ":5"}, "twice"},
		{[]string{"-runners-file", write("dup", a+"\n"+a+"\n")}, "line 2"},
		{[]string{"-runners-file", write("zero", a+" 0\n")}, "zero"},
		{[]string{"-runners-file", write("hex", "0xnothex\n")}, "line 1"},
		{[]string{"-runner", a, "-runners-file", write("both", a+"\n")}, "also given by -runner"},
		{[]string{"-runners-file", filepath.Join(tmp, "missing")}, "-runners-file"},
	} {
		args := append([]string{"genesis", "-o", filepath.Join(tmp, "bad")}, tc.args...)
		code, out, errOut := cli(args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 naming %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "bad")); err == nil {
		t.Error("a rejected genesis wrote files")
	}
}

// TestReplayStoreOtherChain (issue 18 #15): replaying a log over a store
// of another chain says which chain the store holds and which the log is,
// instead of a digest divergence at the first resumed block.
func TestReplayStoreOtherChain(t *testing.T) {
	a := genFile(t, "a.jsonl", "-seed", "4", "-runners", "30", "-blocks", "12")
	b := genFile(t, "b.jsonl", "-seed", "5", "-runners", "30", "-blocks", "12")
	dir := filepath.Join(t.TempDir(), "st")
	if code, _, errOut := cli("replay", "-fsync=false", "-blocks", "6", "-store", dir, a); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, out, errOut := cli("replay", "-fsync=false", "-store", dir, b)
	if code != 1 || out != "" || !strings.Contains(errOut, "the store in "+dir+" holds chain") ||
		!strings.Contains(errOut, "but this log is chain") || strings.Contains(errOut, "digest") {
		t.Fatalf("other chain: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The store is untouched: its own chain still resumes.
	if code, out, errOut := cli("replay", "-fsync=false", "-store", dir, a); code != 0 || !strings.Contains(out, "resumed after:      6 blocks") {
		t.Fatalf("own chain: exit %d: %s%s", code, out, errOut)
	}
}

// TestDevnetPhaseReport (issue 18 A1): cip11 devnet -phase runs that §14
// phase and the report says which one ran; with the transport off no job
// is pushed and every job still completes (by poll).
func TestDevnetPhaseReport(t *testing.T) {
	if testing.Short() {
		t.Skip("devnet run")
	}
	code, out, errOut := cli("devnet", "-phase", "0", "-runners", "3", "-duration", "600ms", "-block-time", "50ms", "-json", "-quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep devnet.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	if rep.Phase != "off" || rep.Pushed != 0 || rep.Submitted == 0 || rep.Completed != rep.Submitted || rep.Polled == 0 {
		t.Fatalf("report %+v", rep)
	}
	if !strings.Contains(out, `"phase":"off"`) {
		t.Fatalf("JSON report without the phase: %s", out)
	}
}

// TestGenesisScheduleInsideOverlap (§5.4, SPEC-NOTES C9): cip11 genesis
// -reconfigure refuses activations closer than OVERLAP_BLOCKS (epoch E−1
// stays admissible until activation(E) + OVERLAP_BLOCKS): exit 2, the reason
// on stderr, nothing written.
func TestGenesisScheduleInsideOverlap(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-add-at", "20", "-remove-at", "30"}, "-remove-at 30"}, // OVERLAP_BLOCKS 15 (the default)
		{[]string{"-add-at", "20", "-remove-at", "30", "-overlap", "11"}, "-remove-at 30"},
		{[]string{"-add-at", "10", "-remove-at", "40", "-overlap", "10"}, "-add-at 10"}, // epoch 0 activates at 1
	} {
		dir := filepath.Join(t.TempDir(), "net")
		code, out, errOut := cli(append([]string{"genesis", "-validators", "4", "-reconfigure", "-o", dir}, tc.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "OVERLAP_BLOCKS") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and stderr naming %s and OVERLAP_BLOCKS", tc.args, code, out, errOut, tc.want)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%q: %s was written", tc.args, dir)
		}
	}
	// the boundary is a schedule: activation(E+1) = activation(E) + OVERLAP_BLOCKS
	dir := filepath.Join(t.TempDir(), "net")
	if code, out, errOut := cli("genesis", "-validators", "4", "-reconfigure", "-add-at", "11", "-remove-at", "21", "-overlap", "10", "-o", dir, "-base-port", "40000"); code != 0 {
		t.Fatalf("activations 11, 21 with -overlap 10: exit %d: %s%s", code, out, errOut)
	}
}

// TestGenesisTimeoutCommit: -timeout-commit sets CometBFT's timeout_commit
// in every home of a network (default 0: blocks back to back), whose
// CometBFT genesis bounds evidence age to 256 blocks and 1 second; it is
// refused without -validators and out of range (exit 2).
func TestGenesisTimeoutCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	if code, _, errOut := cli("genesis", "-validators", "2", "-o", dir, "-runners", "1", "-timeout-commit", "350ms"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, v := range []string{"v0", "v1"} {
		b, err := os.ReadFile(filepath.Join(dir, v, "config", "config.toml"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `timeout_commit = "350ms"`) {
			t.Fatalf("%s config.toml has no timeout_commit = \"350ms\"", v)
		}
		// the evidence age CometBFT's pruning keeps headers for (issue 31)
		g, err := os.ReadFile(filepath.Join(dir, v, "config", "genesis.json"))
		if err != nil {
			t.Fatal(err)
		}
		var gd struct {
			ConsensusParams struct {
				Evidence struct {
					Blocks   string `json:"max_age_num_blocks"`
					Duration string `json:"max_age_duration"`
				} `json:"evidence"`
			} `json:"consensus_params"`
		}
		if err := json.Unmarshal(g, &gd); err != nil || gd.ConsensusParams.Evidence.Blocks != "256" || gd.ConsensusParams.Evidence.Duration != "1000000000" {
			t.Fatalf("%s genesis.json evidence %+v (%v), want 256 blocks and 1 s", v, gd.ConsensusParams.Evidence, err)
		}
	}
	for _, args := range [][]string{
		{"genesis", "-o", filepath.Join(t.TempDir(), "s"), "-timeout-commit", "1s"},
		{"genesis", "-validators", "2", "-o", filepath.Join(t.TempDir(), "n"), "-timeout-commit", "2m"},
		{"genesis", "-validators", "2", "-o", filepath.Join(t.TempDir(), "n"), "-timeout-commit", "-1s"},
	} {
		if code, _, errOut := cli(args...); code != 2 || !strings.Contains(errOut, "timeout-commit") {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
