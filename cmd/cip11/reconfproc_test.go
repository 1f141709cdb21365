package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReconfigurationProcesses (issue 20 §2, SPEC-NOTES C9): cip11 genesis
// -validators 4 -reconfigure writes five homes; five cip11 validator
// processes (the fifth a full node until it joins at height 12, v0 leaving
// at 24) go through both changes with a runner process connected: every
// process keeps deciding blocks, /status reports epoch 2 and its
// validator_set_hash at the end, all five block logs carry the same state
// digest at every shared height, and the joiner's and the leaver's logs
// replay.
func TestReconfigurationProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five validator processes")
	}
	const n, addAt, removeAt, overlap = 5, 12, 24, 6
	dir := filepath.Join(t.TempDir(), "net")
	base := freeNetworkBase(t, n)
	code, out, errOut := cli("genesis", "-validators", "4", "-reconfigure", "-add-at", fmt.Sprint(addAt), "-remove-at", fmt.Sprint(removeAt),
		"-overlap", fmt.Sprint(overlap), "-o", dir, "-runners", "2", "-base-port", fmt.Sprint(base))
	if code != 0 || !strings.Contains(out, "epoch 2 activates at height 24 with 4 validators (OVERLAP_BLOCKS 6)") {
		t.Fatalf("genesis: exit %d: %s%s", code, out, errOut)
	}
	home := func(i int) string { return filepath.Join(dir, fmt.Sprintf("v%d", i)) }
	api := func(i int) string { return fmt.Sprintf("http://127.0.0.1:%d", base+10*i+2) }
	procs := make([]*proc, n)
	for i := range procs {
		procs[i] = start(t, "validator", "-home", home(i), "-log", "warn")
	}
	for i := range 2 {
		start(t, "runner", "-genesis", filepath.Join(home(1), "cip11.json"), "-key", filepath.Join(dir, fmt.Sprintf("runner-%04d.key", i)),
			"-work", "20ms", "-log", "warn")
	}
	type status struct {
		Height uint64 `json:"height,string"`
		Epoch  uint64 `json:"subset_epoch,string"`
		Hash   string `json:"validator_set_hash"`
	}
	st := func(i int) (status, bool) {
		var s status
		return s, getJSON(api(i)+"/status", &s) == nil
	}
	const until = removeAt + overlap + 6
	waitFor(t, fmt.Sprintf("every process past height %d", until), 150*time.Second, func() bool {
		for i := range n {
			if s, ok := st(i); !ok || s.Height < until {
				return false
			}
		}
		return true
	})
	first, _ := st(0)
	for i := range n {
		s, _ := st(i)
		if s.Epoch != 2 || s.Hash != first.Hash {
			t.Fatalf("validator %d: /status epoch %d hash %s, want epoch 2 and validator 0's %s", i, s.Epoch, s.Hash, first.Hash)
		}
	}
	sigtermAll(t, procs)
	homes := make([]string, n)
	for i := range homes {
		homes[i] = home(i)
	}
	_, common := agreeingLogs(t, homes)
	if common < until {
		t.Fatalf("the logs share only %d heights", common)
	}
	for _, i := range []int{0, 4} {
		if code, out, errOut := cli("replay", "-quiet", filepath.Join(home(i), "node", "blocks.jsonl")); code != 0 {
			t.Fatalf("replay of v%d: exit %d\n%s%s", i, code, out, errOut)
		}
	}
	t.Logf("%d heights agree across the five block logs; /status epoch 2 on all", common)
}
