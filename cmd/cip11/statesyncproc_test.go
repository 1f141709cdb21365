package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNetworkProcessesStateSync: cip11 genesis -rpc, three validator
// processes writing a snapshot every 10 blocks and keeping 256 blocks,
// then the fourth started on its empty home with -state-sync naming two
// of the others' RPC servers: it restores from their snapshot (its log
// says so, and /status reports the restored chain's height) and goes on
// deciding blocks with them.
func TestNetworkProcessesStateSync(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four validator processes")
	}
	dir := filepath.Join(t.TempDir(), "net")
	base := freeNetworkBase(t, 4)
	if code, out, errOut := cli("genesis", "-validators", "4", "-rpc", "-o", dir, "-runners", "2", "-base-port", fmt.Sprint(base)); code != 0 {
		t.Fatalf("genesis: exit %d: %s%s", code, out, errOut)
	}
	home := func(i int) string { return filepath.Join(dir, fmt.Sprintf("v%d", i)) }
	api := func(i int) string { return fmt.Sprintf("http://127.0.0.1:%d", base+10*i+2) }
	rpc := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", base+10*i+3) }
	procs := make([]*proc, 4)
	for i := range 3 {
		procs[i] = start(t, "validator", "-home", home(i), "-log", "warn", "-snapshot-interval", "10", "-keep-blocks", "256")
	}
	height := func(i int) uint64 {
		var st struct {
			Height uint64 `json:"height,string"`
		}
		if getJSON(api(i)+"/status", &st) != nil {
			return 0
		}
		return st.Height
	}
	waitFor(t, "three validators past height 25", 120*time.Second, func() bool {
		return height(0) > 25 && height(1) > 25 && height(2) > 25
	})
	target := height(0)
	startAt := time.Now()
	procs[3] = start(t, "validator", "-home", home(3), "-log", "info", "-snapshot-interval", "10",
		"-state-sync", rpc(0)+","+rpc(1))
	waitFor(t, "the state-synced validator level with the others", 90*time.Second, func() bool { return height(3) >= target })
	t.Logf("validator 3 reached %d %v after its start", target, time.Since(startAt).Round(time.Millisecond))
	// the restored height can reach /status a moment before the log line
	// reaches the process's output
	// (its output is logged if this fails)
	waitFor(t, "validator 3's log: state restored from a snapshot", 10*time.Second, func() bool {
		return strings.Contains(procs[3].out.String(), "state restored from a snapshot")
	})
	h := height(3)
	waitFor(t, "the state-synced validator deciding blocks with the others", 60*time.Second, func() bool { return height(3) >= h+5 })
	sigtermAll(t, procs)
}
