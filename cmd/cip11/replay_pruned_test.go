package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/chainlog"
)

// prunedDataDir runs a single validator with a snapshot every 64 blocks
// (4 KiB chunks) and KeepBlocks 256 for 420 blocks, one job before each,
// and returns its data directory (closed), its height and its pruned
// block log's base.
func prunedDataDir(t *testing.T) (dir string, height, base uint64) {
	t.Helper()
	p := node.DefaultGenesisParams()
	d, err := node.GenerateGenesis(node.GenesisOptions{Seed: 9, Runners: 4, QUIC: "127.0.0.1:0", Params: &p})
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	v, err := node.NewValidator(node.ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: dir, NoSync: true,
		SnapshotInterval: 64, SnapshotChunkSize: 4096, KeepBlocks: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for i := range 420 {
		h := v.Height()
		spec := &node.JobSpec{Submitter: cip11.Address{1, byte(h >> 8), byte(h)}, Runners: 1, TimeoutBlocks: 3, Payload: []byte{byte(i)}}
		if _, err := v.SubmitJob(spec); err != nil {
			t.Fatal(err)
		}
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
		// the snapshot writer is asynchronous: wait for the one due
		want := v.Height() / 64 * 64
		for deadline := time.Now().Add(10 * time.Second); want > 0; time.Sleep(2 * time.Millisecond) {
			if s := v.Snapshots(); len(s) > 0 && s[0].Height >= want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no snapshot at %d", want)
			}
		}
	}
	height = v.Height()
	if v.EarliestHeight() <= 1 {
		t.Fatalf("the block log is not pruned (earliest height %d)", v.EarliestHeight())
	}
	return dir, height, v.EarliestHeight() - 1
}

// replayJSON is what the tests read of replay's -json summary.
type replayJSON struct {
	LastHeight uint64 `json:"last_height"`
	Base       uint64 `json:"base"`
	Snapshot   uint64 `json:"snapshot"`
	Resumed    int    `json:"resumed"`
	Blocks     int    `json:"blocks"`
}

func runReplayJSON(t *testing.T, args ...string) (int, replayJSON, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runReplay(append([]string{"-quiet", "-json"}, args...), &out, &errb)
	var r replayJSON
	if code == 0 {
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("-json output %q: %v", out.String(), err)
		}
	} else if out.Len() > 0 {
		t.Errorf("exit %d with stdout %q", code, out.String())
	}
	return code, r, errb.String()
}

// TestRetainReplayFromSnapshot: cip11 replay of a validator's pruned
// blocks.jsonl starts from its lowest snapshot above the base line (the
// snapshots directory beside the file), says so on stderr, and checks
// every block from there to the validator's height; with -store the
// imported store is kept and a second run resumes it; the same file read
// as a plain chain log would be refused (chainlog.ErrPruned).
func TestRetainReplayFromSnapshot(t *testing.T) {
	dir, height, base := prunedDataDir(t)
	file := filepath.Join(dir, "blocks.jsonl")
	snaps := filepath.Join(dir, "snapshots")
	hs, err := node.SnapshotHeights(snaps)
	if err != nil || len(hs) == 0 {
		t.Fatalf("snapshots %v %v", hs, err)
	}
	var s uint64
	for _, h := range hs {
		if h > base {
			s = h
			break
		}
	}
	if s == 0 {
		t.Fatalf("no snapshot above the base %d: %v", base, hs)
	}
	code, r, errOut := runReplayJSON(t, file)
	want := fmt.Sprintf("pruned log: blocks 1 … %d are gone; starting from the snapshot at height %d (%s)", base, s, node.SnapshotDir(snaps, s))
	if code != 0 || !strings.Contains(errOut, want) {
		t.Fatalf("exit %d, stderr %q, want the line %q", code, errOut, want)
	}
	if r.LastHeight != height || r.Base != base || r.Snapshot != s || uint64(r.Resumed) != s-base || uint64(r.Blocks) != height-s {
		t.Fatalf("summary %+v: validator at %d, base %d, snapshot %d", r, height, base, s)
	}

	// -store: the import is kept, and a second run resumes it
	store := filepath.Join(t.TempDir(), "store")
	if code, r, errOut := runReplayJSON(t, "-store", store, "-fsync=false", file); code != 0 || r.LastHeight != height || !strings.Contains(errOut, "starting from the snapshot") {
		t.Fatalf("-store: exit %d %+v %q", code, r, errOut)
	}
	code, r, errOut = runReplayJSON(t, "-store", store, "-fsync=false", file)
	if code != 0 || r.LastHeight != height || r.Blocks != 0 || !strings.Contains(errOut, "resuming the store in "+store) {
		t.Fatalf("-store again: exit %d %+v %q", code, r, errOut)
	}

	// the text summary names the base and the snapshot
	var out, errb bytes.Buffer
	if code := runReplay([]string{"-quiet", "-snapshots", snaps, file}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), fmt.Sprintf("blocks 1 … %d gone; checked from the snapshot at height %d", base, s)) ||
		!strings.Contains(out.String(), fmt.Sprintf("last height:        %d\n", height)) {
		t.Fatalf("text: exit %d\n%s%s", code, out.String(), errb.String())
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cr, err := chainlog.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cr.Next(); err == nil || !strings.Contains(err.Error(), "base line") {
		t.Fatalf("the pruned file read from block 1: %v", err)
	}
}

// TestRetainReplayFromSnapshotMissing: a pruned log without its snapshots
// directory, or with no snapshot above its base, is exit 1 naming what is
// missing, and nothing on stdout.
func TestRetainReplayFromSnapshotMissing(t *testing.T) {
	dir, _, base := prunedDataDir(t)
	file := filepath.Join(dir, "blocks.jsonl")
	snaps := filepath.Join(dir, "snapshots")
	other := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(snaps, other); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runReplayJSON(t, file)
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("pruned log: blocks 1 … %d are gone, and there is no snapshot to start from", base)) ||
		!strings.Contains(errOut, snaps) || !strings.Contains(errOut, "-snapshots") {
		t.Fatalf("no snapshots directory: exit %d, stderr %q", code, errOut)
	}
	// -snapshots finds them elsewhere
	if code, _, errOut := runReplayJSON(t, "-snapshots", other, file); code != 0 {
		t.Fatalf("-snapshots %s: exit %d %q", other, code, errOut)
	}
	// an empty snapshots directory
	empty := t.TempDir()
	code, _, errOut = runReplayJSON(t, "-snapshots", empty, file)
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("%s holds no snapshot above height %d", empty, base)) {
		t.Fatalf("empty snapshots directory: exit %d, stderr %q", code, errOut)
	}
}

// TestRetainReplayFromSnapshotCorruptChunk: a snapshot chunk with one
// flipped byte is exit 1 naming the chunk (node.ErrSnapshotChunk), and
// no store is left behind in -store.
func TestRetainReplayFromSnapshotCorruptChunk(t *testing.T) {
	dir, _, base := prunedDataDir(t)
	file := filepath.Join(dir, "blocks.jsonl")
	snaps := filepath.Join(dir, "snapshots")
	hs, _ := node.SnapshotHeights(snaps)
	var s uint64
	for _, h := range hs {
		if h > base {
			s = h
			break
		}
	}
	chunk := filepath.Join(node.SnapshotDir(snaps, s), "chunk-000001")
	b, err := os.ReadFile(chunk)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(chunk, b, 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	code, _, errOut := runReplayJSON(t, "-store", store, file)
	if code != 1 || !strings.Contains(errOut, chunk+" does not hash") || !strings.Contains(errOut, node.ErrSnapshotChunk.Error()) {
		t.Fatalf("flipped chunk: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Fatalf("a store is left in %s: %v", store, err)
	}
	if err := os.Remove(chunk); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runReplayJSON(t, file); code != 1 || !strings.Contains(errOut, chunk) {
		t.Fatalf("missing chunk: exit %d, stderr %q", code, errOut)
	}
}
