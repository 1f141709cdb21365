package cometbft

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cip11/cip11/adapters/node"
)

// writeNet writes an n-validator network into a temporary directory and
// returns the homes.
func writeNet(t *testing.T, n int) []string {
	t.Helper()
	nw, err := NewNetwork(NetworkOptions{Validators: n, Seed: 1, BasePort: freeBase(t, n)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := nw.Write(dir); err != nil {
		t.Fatal(err)
	}
	homes := make([]string, n)
	for i := range homes {
		homes[i] = filepath.Join(dir, "v"+string(rune('0'+i)))
	}
	return homes
}

// TestResetHome: after a validator ran, ResetHome removes CometBFT's
// stores and the validator's node/ directory and keeps the last-sign
// state byte for byte, with the keys, configuration and genesis.
func TestResetHome(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a validator")
	}
	home := writeNet(t, 1)[0]
	nd, err := StartNode(context.Background(), NodeConfig{Home: home, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	waitHeight(t, []*Node{nd}, 3, 60*time.Second)
	if err := nd.Close(); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(home, "data", "priv_validator_state.json")
	before, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ResetHome(home, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Wrote || rep.SignedHeight < 3 || rep.SignState != statePath {
		t.Fatalf("report %+v", rep)
	}
	for _, want := range []string{filepath.Join(home, "data", "blockstore.db"), filepath.Join(home, "data", "state.db"), filepath.Join(home, "node")} {
		if !slices.Contains(rep.Removed, want) {
			t.Errorf("removed %v, want %s among them", rep.Removed, want)
		}
	}
	after, err := os.ReadFile(statePath)
	if err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the last-sign state changed: %v\nbefore %s\nafter %s", err, before, after)
	}
	ents, err := os.ReadDir(filepath.Join(home, "data"))
	if err != nil || len(ents) != 1 || ents[0].Name() != "priv_validator_state.json" {
		t.Fatalf("data/ after the reset: %v %v", ents, err)
	}
	if _, err := os.Stat(filepath.Join(home, "node")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("node/ after the reset: %v", err)
	}
	if _, err := ReadHome(home); err != nil { // keys, config, genesis kept
		t.Fatal(err)
	}
}

// TestMissingSignState: a home without data/priv_validator_state.json is
// refused by StartNode and by a plain ResetHome with ErrSignStateMissing,
// naming the file, the double-sign risk and the remedy; ResetHome with a
// signed height writes a state at the next height (signs nothing at or
// below it), which StartNode accepts, and never lowers a greater one.
func TestMissingSignState(t *testing.T) {
	home := writeNet(t, 1)[0]
	statePath := filepath.Join(home, "data", "priv_validator_state.json")
	if err := os.Remove(statePath); err != nil {
		t.Fatal(err)
	}
	_, err := StartNode(context.Background(), NodeConfig{Home: home, NoSync: true})
	checkMissing := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrSignStateMissing) || !errors.Is(err, node.ErrKeyFile) {
			t.Fatalf("%s: %v; want ErrSignStateMissing", what, err)
		}
		for _, want := range []string{statePath + " does not exist", "double signing", "cip11 reset -home HOME -signed-height H", "Wiped homes"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: %q lacks %q", what, err, want)
			}
		}
	}
	checkMissing("StartNode", err)
	_, err = ResetHome(home, 0)
	checkMissing("ResetHome without a signed height", err)

	rep, err := ResetHome(home, 40)
	if err != nil || !rep.Wrote || rep.SignedHeight != 41 {
		t.Fatalf("ResetHome(40): %+v, %v", rep, err)
	}
	st, err := readSignState(statePath)
	if err != nil || st.Height != 41 || st.Round != 0 || st.Step != 0 || st.Signature != nil {
		t.Fatalf("written state %+v, %v", st, err)
	}
	if fi, err := os.Stat(statePath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode: %v %v", fi.Mode(), err)
	}
	if err := checkSignState(mustHome(t, home).Config); err != nil {
		t.Fatalf("the written state does not load: %v", err)
	}
	// a lower height keeps the existing, greater state
	rep, err = ResetHome(home, 7)
	if err != nil || rep.Wrote || rep.SignedHeight != 41 {
		t.Fatalf("ResetHome(7) over height 41: %+v, %v", rep, err)
	}
	// an undecodable state is refused too
	if err := os.WriteFile(statePath, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ResetHome(home, 0); !errors.Is(err, node.ErrKeyFile) || !strings.Contains(err.Error(), "does not decode") {
		t.Fatalf("ResetHome over a corrupt state: %v", err)
	}
}

func mustHome(t *testing.T, dir string) *Home {
	t.Helper()
	h, err := ReadHome(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
