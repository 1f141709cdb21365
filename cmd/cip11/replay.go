package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/pebble"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/replay"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
	"github.com/cip11/cip11/synth"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// snapshotCache is the replay's block-S candidate cache size (§9.2 allows
// a non-consensus cache; digests are identical without it).
const snapshotCache = 4096

// report is the -json summary.
type report struct {
	File string `json:"file"`
	replay.Summary
	Seconds      float64 `json:"seconds"`
	BlocksPerSec float64 `json:"blocks_per_second"`
	// Store is the pebble directory (-store), with its size after the run.
	Store     string `json:"store,omitempty"`
	StoreSize int64  `json:"store_bytes,omitempty"`
	// Snapshot is the height of the validator snapshot a pruned log was
	// replayed from (0: none).
	Snapshot uint64 `json:"snapshot,omitempty"`
}

// optString is a string flag that records whether it was given, so that
// "-store ”" (a fresh temporary directory) differs from no -store.
type optString struct {
	set bool
	v   string
}

func (o *optString) String() string     { return o.v }
func (o *optString) Set(v string) error { o.set, o.v = true, v; return nil }

func runReplay(args []string, stdout, stderr io.Writer) int {
	c := newCommand("replay", "[-blocks N] [-json] [-no-cache] [-quiet] [-store DIR [-fsync=false]] [-snapshots DIR] [FILE]", `
Re-execute a chain log (docs/chainlog.md) block by block and compare every
block's outputs and state digest with the log; exit 1 at the first
divergence. FILE is a chain log (.gz: gzip-compressed); without FILE the
sample chain embedded in the binary is replayed.

A validator's own block log may be pruned (its second line is a base
line: blocks 1 … B are gone). Replay then starts from the validator's
lowest snapshot above B (-snapshots, default the snapshots directory
beside FILE): its chunks are checked, its state imported into the -store
directory (default a temporary one), and the blocks from the snapshot's
height on are checked against FILE. An existing non-empty -store
directory is resumed instead.`)
	fs := c.fs
	var dir optString
	fs.Var(&dir, "store", "replay over the pebble store in `DIR` (\"\": a fresh temporary directory); a store holding blocks resumes after them")
	fsync := fs.Bool("fsync", true, "with -store: fsync every block commit (the store's production setting)")
	limit := c.intVar("blocks", 0, 0, math.MaxInt32, "stop after `N` blocks (0 = all; 0 to 2147483647)")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	noCache := fs.Bool("no-cache", false, "re-derive every block-S snapshot (no §9.2 candidate cache)")
	quiet := fs.Bool("quiet", false, "no progress bar even on a terminal")
	snaps := fs.String("snapshots", "", "for a pruned FILE: the validator's snapshots `DIR` (default: the snapshots directory beside FILE)")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 0, 1); !ok {
		return code
	}
	in, name := synth.Sample(), "embedded sample (synth/testdata/sample.jsonl.gz)"
	if fs.NArg() == 1 {
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			fmt.Fprintf(stderr, "replay: %v\n", err)
			return 1
		}
		defer f.Close()
		in, name = f, fs.Arg(0)
	}
	cfg := replay.Config{Limit: *limit}
	if !*noCache {
		cfg.SnapshotCache = snapshotCache
	}
	if bar := progressBar(stderr, *quiet); bar != nil {
		cfg.Progress = func(h uint64, _ *replay.Summary) { _ = bar.Set64(int64(h)) }
		defer func() { _ = bar.Finish() }()
	}
	r := report{File: name}
	var ps *prunedStart
	if fs.NArg() == 1 {
		var err error
		if ps, err = pruned(fs.Arg(0), *snaps, &dir); err != nil {
			fmt.Fprintf(stderr, "replay %s: FAILED: %v\n", name, err)
			return 1
		}
	}
	if ps != nil {
		if ps.tmp != "" {
			defer os.RemoveAll(ps.tmp)
		}
		fmt.Fprintln(stderr, ps.say)
		cfg.Pruned, r.Snapshot = true, ps.height
		*fsync = *fsync && ps.tmp == "" // a temporary store needs no fsync
	}
	if dir.set {
		if dir.v == "" {
			tmp, err := os.MkdirTemp("", "cip11-replay-")
			if err != nil {
				fmt.Fprintf(stderr, "replay: %v\n", err)
				return 1
			}
			defer os.RemoveAll(tmp)
			dir.v = filepath.Join(tmp, "store")
		}
		r.Store = dir.v
		sync := pebble.SyncAlways
		if !*fsync {
			sync = pebble.SyncNever
		}
		cfg.OpenStore = func(h chainlog.Header) (store.Store, error) {
			rc := state.ReputationConfig{Normalizer: uint64(h.Reputation.Normalizer), WMinFloorX1e6: uint64(h.Reputation.WMinFloorX1e6)}
			st, err := pebble.Open(dir.v, pebble.Options{Sync: sync, ReputationConfig: &rc})
			if err != nil {
				return nil, err
			}
			if err := checkChain(st, dir.v, h, ps != nil && ps.height > 0); err != nil {
				return nil, errors.Join(err, st.Close())
			}
			return st, nil
		}
	}
	start := time.Now()
	s, err := replay.Run(in, cfg)
	r.Summary, r.Seconds = s, time.Since(start).Seconds()
	if err != nil {
		fmt.Fprintf(stderr, "replay %s: FAILED: %v\n", name, err)
		return 1
	}
	if r.Store != "" {
		r.StoreSize = dirSize(r.Store)
	}
	printSummary(stdout, r, *asJSON)
	return 0
}

// progressBar returns a bar on stderr when it is a terminal, else nil.
func progressBar(stderr io.Writer, quiet bool) *progressbar.ProgressBar {
	f, ok := stderr.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return progressbar.NewOptions64(-1, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription("replay"),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("blocks"),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
}

func printSummary(w io.Writer, r report, asJSON bool) {
	if r.Seconds > 0 {
		r.BlocksPerSec = float64(r.Blocks) / r.Seconds
	}
	if asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	s := r.Summary
	fmt.Fprintf(w, "replayed:           %s\n", r.File)
	if r.Store != "" {
		fmt.Fprintf(w, "store:              %s (pebble, %.1f MiB)\n", r.Store, float64(r.StoreSize)/(1<<20))
		if s.Resumed > 0 {
			fmt.Fprintf(w, "resumed after:      %d blocks already in the store\n", s.Resumed)
		}
	}
	if s.Base > 0 {
		from := "a store's state"
		if r.Snapshot > 0 {
			from = fmt.Sprintf("the snapshot at height %d", r.Snapshot)
		}
		fmt.Fprintf(w, "pruned log:         blocks 1 … %d gone; checked from %s\n", s.Base, from)
	}
	fmt.Fprintf(w, "last height:        %d\n", s.LastHeight)
	fmt.Fprintf(w, "blocks:             %d\n", s.Blocks)
	fmt.Fprintf(w, "jobs submitted:     %d (M == 1: %d, M > 1: %d)\n", s.Jobs, s.JobsM1, s.Jobs-s.JobsM1)
	fmt.Fprintf(w, "assignments:        %d (timeout re-selections: %d)\n", s.Assignments, s.Reselections)
	fmt.Fprintf(w, "expired:            %d\n", s.Expired)
	fmt.Fprintf(w, "pending written:    %d\n", s.PendingWritten)
	fmt.Fprintf(w, "pending consumed:   %d\n", s.PendingConsumed)
	fmt.Fprintf(w, "MRU writes:         %d\n", s.MRUWrites)
	fmt.Fprintf(w, "final state digest: %s\n", s.FinalDigest)
	fmt.Fprintf(w, "time:               %.2fs (%.0f blocks/s)\n", r.Seconds, r.BlocksPerSec)
	fmt.Fprintln(w, "OK: every block's outputs and state digest agree with the log")
}

// dirSize is the total size of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// chainIdentity names the chain of a log header: its chain id and the
// keccak256 of its header line without the informative generator field.
func chainIdentity(h chainlog.Header) (string, error) {
	h.Generator = ""
	b, err := chainlog.EncodeHeader(h)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("chain %q (header keccak256 %s)", h.ChainID, cip11.Keccak256(b)), nil
}

// checkChain refuses a store that holds another chain than the log's
// (issue 18 #15): a fresh store records the log's identity; a store that
// recorded one must match it. A store with blocks but no identity (written
// before identities were recorded) is left to the digest checks, unless
// imported (a validator snapshot of this log's chain, checked by
// node.ImportSnapshot): it records the identity.
func checkChain(st *pebble.Store, dir string, h chainlog.Header, imported bool) error {
	want, err := chainIdentity(h)
	if err != nil {
		return err
	}
	got, ok, err := st.ChainIdentity()
	if err != nil {
		return err
	}
	if ok {
		if string(got) != want {
			return fmt.Errorf("the store in %s holds %s, but this log is %s: use another -store directory", dir, got, want)
		}
		return nil
	}
	if _, committed, err := st.LastCommitted(); err != nil || (committed && !imported) {
		return err
	}
	return st.SetChainIdentity([]byte(want))
}
