package pebble_test

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/pebble"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/replay"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
	"github.com/cip11/cip11/synth"
)

// The crash child: `CIP11_CRASH_DIR=dir [CIP11_CRASH_AT=n:stage:delay_us]
// pebble.test -test.run '^TestCrash$'` replays the embedded sample over the
// pebble store in dir (fsync on), resuming after what it holds, and prints
// "committed H" after every commit. With CIP11_CRASH_AT it SIGKILLs itself
// inside its n-th Commit: at stage 0 (before the pebble commit) or 1 (after
// it, before the store's in-memory state moves), after delay_us
// microseconds (a goroutine, so the kill lands while the commit runs).
func crashChild(t *testing.T, dir string) {
	var n, stage, delay int
	if at := os.Getenv("CIP11_CRASH_AT"); at != "" {
		if _, err := fmt.Sscanf(at, "%d:%d:%d", &n, &stage, &delay); err != nil {
			t.Fatal(err)
		}
	}
	commits := 0
	hook := func(st int) {
		if st == 0 {
			commits++
		}
		if n == 0 || commits != n || st != stage {
			return
		}
		kill := func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
		if delay == 0 {
			kill()
		}
		go func() { time.Sleep(time.Duration(delay) * time.Microsecond); kill() }()
	}
	out := bufio.NewWriter(os.Stdout)
	s, err := replay.Run(synth.Sample(), replay.Config{
		Options: blockexec.Options{SnapshotCache: 4096, OpenStore: func(h chainlog.Header) (store.Store, error) {
			s, err := pebble.Open(dir, pebble.Options{ReputationConfig: repCfg(h)})
			if err == nil {
				pebble.SetCommitHook(s, hook)
			}
			return s, err
		}},
		Progress: func(h uint64, _ *replay.Summary) { fmt.Fprintf(out, "committed %d\n", h); out.Flush() },
	})
	if err != nil {
		fmt.Fprintf(out, "error %v\n", err)
		out.Flush()
		os.Exit(3)
	}
	fmt.Fprintf(out, "done %s\n", s.FinalDigest)
	out.Flush()
	os.Exit(0)
}

func repCfg(h chainlog.Header) *state.ReputationConfig {
	return &state.ReputationConfig{Normalizer: uint64(h.Reputation.Normalizer), WMinFloorX1e6: uint64(h.Reputation.WMinFloorX1e6)}
}

// sampleDigests is the state digest the sample records at every height.
func sampleDigests(t *testing.T) (chainlog.Header, map[uint64]cip11.Hash, uint64) {
	zr, err := gzip.NewReader(synth.Sample())
	if err != nil {
		t.Fatal(err)
	}
	r, err := chainlog.NewReader(zr)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[uint64]cip11.Hash)
	var last uint64
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		m[uint64(b.Height)], last = b.Out.StateDigest, uint64(b.Height)
	}
	return r.Header(), m, last
}

// TestCrash is the crash test: a child process replays the sample
// over pebble (fsync on) and is killed with SIGKILL at least 20 times,
// by the parent at random moments and by itself inside Commit (before,
// during and after the pebble commit). After every kill the store must
// reopen at a committed prefix: a height h no lower than the last height
// the child reported committed and at most one above it, whose state
// digest equals the sample's recorded (in-memory) digest at h. A final
// uninterrupted child reaches the sample's final digest.
func TestCrash(t *testing.T) {
	if dir := os.Getenv("CIP11_CRASH_DIR"); dir != "" {
		crashChild(t, dir)
		return
	}
	if testing.Short() || raceOn {
		t.Skip("crash test: not in -short or -race (it replays the sample ~25 times)")
	}
	hdr, digests, final := sampleDigests(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	t.Logf("kill schedule seed from the clock; failures print each kill")
	type plan struct {
		self       string        // CIP11_CRASH_AT, or "" for a parent kill
		afterFirst time.Duration // parent kill: delay after the child's first commit line
	}
	var plans []plan
	for i := range 24 {
		switch i % 3 {
		case 0: // parent kill at a random moment
			plans = append(plans, plan{afterFirst: time.Duration(50+rng.IntN(700)) * time.Millisecond})
		case 1: // self kill inside Commit, synchronously at stage 0 or 1
			plans = append(plans, plan{self: fmt.Sprintf("%d:%d:0", 1+rng.IntN(15), rng.IntN(2))})
		default: // self kill while the pebble commit (its fsync) runs
			plans = append(plans, plan{self: fmt.Sprintf("%d:0:%d", 1+rng.IntN(15), 1+rng.IntN(3000))})
		}
	}
	var kills, verified int
	lastH, haveLast := uint64(0), false
	for i, p := range plans {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCrash$")
		cmd.Env = append(os.Environ(), "CIP11_CRASH_DIR="+dir)
		if p.self != "" {
			cmd.Env = append(cmd.Env, "CIP11_CRASH_AT="+p.self)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		reported, haveReported := lastH, haveLast
		sc := bufio.NewScanner(stdout)
		first := true
		var done string
		for sc.Scan() {
			line := sc.Text()
			if h, ok := strings.CutPrefix(line, "committed "); ok {
				v, err := strconv.ParseUint(h, 10, 64)
				if err != nil {
					t.Fatal(line)
				}
				reported, haveReported = v, true
				if first && p.self == "" {
					first = false
					time.AfterFunc(p.afterFirst, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
				}
				continue
			}
			done = line
		}
		err = cmd.Wait()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d (%+v): child was not killed: %v, last line %q", i, p, err, done)
		}
		kills++
		h, ok, d := reopen(t, dir, hdr)
		if !ok {
			if haveReported {
				t.Fatalf("kill %d (%+v): store empty after the child reported block %d", i, p, reported)
			}
			continue
		}
		if (haveReported && h < reported) || (haveReported && h > reported+1) || (!haveReported && h > 1) {
			t.Fatalf("kill %d (%+v): reopened at %d, child last reported %d (reported: %v)", i, p, h, reported, haveReported)
		}
		if haveLast && h < lastH {
			t.Fatalf("kill %d: reopened at %d, below the previous prefix %d", i, h, lastH)
		}
		if want := digests[h]; d != want {
			t.Fatalf("kill %d (%+v): digest at %d is %s, the sample records %s", i, p, h, d, want)
		}
		verified++
		lastH, haveLast = h, true
	}
	// The uninterrupted finish.
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCrash$")
	cmd.Env = append(os.Environ(), "CIP11_CRASH_DIR="+dir)
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("final run: %v\n%s", err, tail(outb))
	}
	lines := strings.Split(strings.TrimSpace(string(outb)), "\n")
	if want := "done " + digests[final].String(); lines[len(lines)-1] != want {
		t.Fatalf("final run ends %q, want %q", lines[len(lines)-1], want)
	}
	if h, ok, d := reopen(t, dir, hdr); !ok || h != final || d != digests[final] {
		t.Fatalf("final store at %d (%v), digest %s", h, ok, d)
	}
	t.Logf("%d SIGKILLs, %d verified committed prefixes (last at %d), final digest %s at %d", kills, verified, lastH, digests[final], final)
	if kills < 20 {
		t.Fatalf("only %d kills", kills)
	}
}

func tail(b []byte) string {
	if len(b) > 500 {
		b = b[len(b)-500:]
	}
	return string(b)
}

// reopen opens the store read-only in spirit (no block is executed), and
// returns its last committed height and the state digest there.
func reopen(t *testing.T, dir string, hdr chainlog.Header) (uint64, bool, cip11.Hash) {
	t.Helper()
	x, err := blockexec.New(hdr, blockexec.Options{OpenStore: func(h chainlog.Header) (store.Store, error) {
		return pebble.Open(dir, pebble.Options{ReputationConfig: repCfg(h)})
	}})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer x.Close()
	h, ok := x.LastCommitted()
	if !ok {
		return 0, false, cip11.Hash{}
	}
	d, err := x.Digest()
	if err != nil {
		t.Fatalf("digest after reopen: %v", err)
	}
	return h, true, d
}
