package devnet

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cip11/cip11/adapters/cometbft"
)

// soakComponents are the per-validator disk components the soak samples,
// in table order: CometBFT's data/ (its stores, one column each, the rest
// in cmt/other) and the node's files (docs/storage.md).
var soakComponents = []string{
	"cmt/blockstore.db", "cmt/state.db", "cmt/cs.wal", "cmt/evidence.db", "cmt/other",
	"node/state", "node/blocks.jsonl", "node/blocks.times", "node/events.jsonl",
	"node/jobs", "node/jobs.jsonl", "node/snapshots", "node/other", "total", "allocated",
}

// soakSample is one sample of the soak: the process heap after GC and the
// disk per validator by component (apparent file sizes, bytes; and
// "allocated": the blocks the home's files occupy, as du counts them —
// pebble preallocates its WAL files).
type soakSample struct {
	Height   uint64  `json:"height"`
	Elapsed  float64 `json:"elapsed_s"`
	HeapLive uint64  `json:"heap_alloc_after_gc"`
	// RSS is the process's resident set (VmRSS): beside the Go heap it
	// holds what HeapAlloc does not count, such as pebble's memtables and
	// block cache (C memory with cgo).
	RSS     uint64             `json:"rss"`
	LoadAvg string             `json:"loadavg"`
	Disk    []map[string]int64 `json:"disk"` // by validator
}

// soakTrace is a light sample, every soakTraceEvery blocks: the heap
// after GC and each validator's disk total. Both swing within a cycle:
// CometBFT's consensus WAL alone goes 0 to 10 MiB (its head file rotates
// at 10 MiB, which no option lowers), snapshots come and go every
// interval, and a snapshot being written holds its deflate state and
// chunk buffer (about 3 MiB a validator) — the point samples of an
// earlier run read 72.4 MiB at 6,000 blocks and 89.5 at 7,000. So one
// sample depends on where in those cycles it falls; the trace gives the
// disk's envelope (its largest total over a window) and the heap's
// median over a window.
type soakTrace struct {
	Height   uint64  `json:"height"`
	HeapLive uint64  `json:"heap_alloc_after_gc"`
	Totals   []int64 `json:"totals"` // by validator
}

const soakTraceEvery = 100

// soakJoiner is one joiner's catch-up: the network height it had to
// reach and how long it took.
type soakJoiner struct {
	Mode    string  `json:"mode"`
	Target  uint64  `json:"target_height"`
	Seconds float64 `json:"seconds"`
	// From: the height the joiner started from (the state-synced
	// snapshot's; 0 for block sync).
	From    uint64 `json:"restored_from"`
	LoadAvg string `json:"loadavg"`
}

// TestNetworkSoak is the network soak harness (issue 31), run with
// CIP11_SOAK=1 (CIP11_SOAK_BLOCKS overrides the 10,000 blocks,
// CIP11_SOAK_KEEP the retention of 1,000 blocks; CIP11_SOAK_OUT names a
// file for the JSON samples, CIP11_SOAK_PPROF a directory for a heap
// profile at each sample). A 4-validator network with 50 runners and
// two jobs a block, CometBFT's timeout_commit 0 (blocks back to back),
// each validator writing a snapshot every min(100, keep) blocks (a
// state-sync joiner block-syncs at most that many after its snapshot);
// validators v1–v3 prune to the retention window (KeepBlocks), v0 keeps
// every block: an archive node. A fresh node without state sync can only
// block-sync from genesis, and CometBFT's block sync fetches each height
// from a peer whose store still holds it — with every validator pruning
// none would have blocks 1 … base, and that joiner could never start; so
// v0 stays the archive a block-sync joiner syncs from.
//
// Every tenth of the run (1,000 blocks of 10,000) it samples the heap
// after runtime.GC() — HeapAlloc of the whole process: the four
// validators with their CometBFT nodes and the 50 runners all live in it;
// the process's RSS beside it holds pebble's memtables and block cache,
// C memory the Go heap does not count — and each validator's disk by
// component (apparent sizes, and the allocated total). After the last block, with the
// network still up, a fresh full node (a spare home) block-syncs to the
// network's height, then another fresh home state-syncs (its light client
// on v1's and v2's RPC); both are timed.
//
// At 10,000 blocks or more it asserts issue 31's bounds: the heap at the
// end within 1.2× of the heap at a fifth of the run (2,000) — the median
// of its samples (every 100 blocks) over the 1,000 blocks up to each, the
// point samples reported beside it; each pruning
// validator's disk flat within 1.2× between half the run and its end —
// the largest of its totals (sampled every 100 blocks) over the last
// 1,000 blocks against the largest over 4,500–5,500, the point samples at
// 5,000 and 10,000 reported beside it; the state-sync joiner level in under 10 s and faster than the
// block-sync one. A shorter run reports them only. Always: no job lost,
// every validator's state digest agrees at every height.
func TestNetworkSoak(t *testing.T) {
	if os.Getenv("CIP11_SOAK") != "1" {
		t.Skip("set CIP11_SOAK=1 to run the network soak harness")
	}
	blocks, keep := uint64(10_000), uint64(1000)
	for _, e := range []struct {
		name string
		v    *uint64
		min  uint64
	}{{"CIP11_SOAK_BLOCKS", &blocks, 1000}, {"CIP11_SOAK_KEEP", &keep, 256}} {
		if s := os.Getenv(e.name); s != "" {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil || n < e.min {
				t.Fatalf("%s=%q: want a whole number ≥ %d", e.name, s, e.min)
			}
			*e.v = n
		}
	}
	full := blocks >= 10_000
	interval := min(100, keep)
	step := blocks / 10
	dir := t.TempDir()
	const validators = 4
	home := func(i int) string { return filepath.Join(dir, fmt.Sprintf("v%d", i)) }

	start := time.Now()
	var samples []soakSample
	var joiners []soakJoiner
	var trace []soakTrace
	nextTrace := uint64(soakTraceEvery / 2) // between the snapshot heights (multiples of the interval)
	sample := func(h uint64) {
		s := soakSample{Height: h, Elapsed: time.Since(start).Seconds(), HeapLive: heapAfterGC(), RSS: rss(), LoadAvg: loadAvg()}
		for i := range validators {
			s.Disk = append(s.Disk, diskUsage(home(i)))
		}
		samples = append(samples, s)
		if d := os.Getenv("CIP11_SOAK_PPROF"); d != "" { // heap profiles, for go tool pprof -base
			if f, err := os.Create(filepath.Join(d, fmt.Sprintf("heap-%06d.pprof", h))); err == nil {
				_ = pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
		t.Logf("sample at %d (%.0f s, load %s): heap %.1f MiB, RSS %.1f MiB; disk v0 %.1f MiB, v1 %.1f MiB", h, s.Elapsed, s.LoadAvg,
			mib(s.HeapLive), mib(s.RSS), mib(uint64(s.Disk[0]["total"])), mib(uint64(s.Disk[1]["total"])))
	}
	next := step
	cfg := NetworkConfig{Validators: validators, Runners: 50, JobsPerBlock: 2, Blocks: blocks, Duration: time.Hour, NoSync: true, Seed: 31, Dir: dir,
		SnapshotInterval: interval, KeepBlocks: keep, Archives: 1, RPC: true, Spares: 2,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Sample: func(h uint64) {
			if h >= nextTrace {
				tr := soakTrace{Height: h, HeapLive: heapAfterGC()}
				for i := range validators {
					tr.Totals = append(tr.Totals, diskUsage(home(i))["total"])
				}
				trace = append(trace, tr)
				for nextTrace <= h {
					nextTrace += soakTraceEvery
				}
			}
			if h >= next && next <= blocks {
				sample(h)
				for next <= h {
					next += step
				}
			}
		},
		BeforeStop: func(l *Live) error {
			rpc := func(i int) string { return strings.TrimPrefix(l.Net.Homes[i].Config.RPC.ListenAddress, "tcp://") }
			for _, j := range []struct {
				mode string
				ss   *cometbft.StateSyncOptions
			}{{"block sync", nil}, {"state sync", &cometbft.StateSyncOptions{RPCServers: []string{rpc(1), rpc(2)}}}} {
				i := validators + len(joiners)
				r, err := join(l, i, j.ss)
				if err != nil {
					return fmt.Errorf("%s joiner v%d: %w", j.mode, i, err)
				}
				r.Mode = j.mode
				joiners = append(joiners, r)
				t.Logf("%s joiner v%d level with the network at %d (from %d) after %.2f s (load %s)", j.mode, i, r.Target, r.From, r.Seconds, r.LoadAvg)
			}
			return nil
		},
	}
	rep, err := RunNetwork(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(rep)
	t.Logf("report: %s", js)
	t.Logf("%s", soakTable(samples))
	if out := os.Getenv("CIP11_SOAK_OUT"); out != "" {
		b, _ := json.MarshalIndent(map[string]any{"blocks": blocks, "keep_blocks": keep, "snapshot_interval": interval, "validators": validators,
			"runners": cfg.Runners, "jobs_per_block": cfg.JobsPerBlock, "archives": []int{0}, "components": soakComponents,
			"heap_note": "HeapAlloc after runtime.GC() of the whole test process: four validators, their CometBFT nodes and the runners; rss (VmRSS) also holds pebble's memtables and block cache, C memory outside the Go heap",
			"samples":   samples, "disk_trace": trace, "joiners": joiners, "report": rep}, "", "  ")
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Error(err)
		}
	}

	if rep.Lost != 0 || rep.Completed == 0 || !rep.AppHashesAgree || rep.HeightsCompared+2 < rep.Blocks {
		t.Errorf("jobs: submitted %d completed %d expired %d lost %d; AppHashes agree %v over %d of %d heights",
			rep.Submitted, rep.Completed, rep.Expired, rep.Lost, rep.AppHashesAgree, rep.HeightsCompared, rep.Blocks)
	}
	if len(samples) < 10 || len(joiners) != 2 {
		t.Fatalf("%d samples, %d joiners", len(samples), len(joiners))
	}
	at := func(h uint64) soakSample {
		for _, s := range samples {
			if s.Height >= h {
				return s
			}
		}
		return samples[len(samples)-1]
	}
	// check reports a bound: an error at full length, a log line otherwise
	check := func(ok bool, format string, args ...any) {
		switch {
		case ok:
			t.Logf("ok: "+format, args...)
		case full:
			t.Errorf(format, args...)
		default:
			t.Logf("OVER (reported only below 10,000 blocks): "+format, args...)
		}
	}
	early, mid, last := at(blocks/5), at(blocks/2), samples[len(samples)-1]
	t.Logf("heap at %d %.1f MiB, at %d %.1f MiB (point ratio %.2f)", last.Height, mib(last.HeapLive), early.Height, mib(early.HeapLive),
		float64(last.HeapLive)/float64(early.HeapLive))
	// The bound is on the median of the heap samples (every
	// soakTraceEvery) of the step blocks up to each mark.
	he, hl := traceHeapMedian(trace, blocks/5-step+1, blocks/5), traceHeapMedian(trace, blocks-step+1, blocks)
	check(he > 0 && float64(hl) <= 1.2*float64(he), "heap, the median of blocks %d–%d %.1f MiB against the median of %d–%d %.1f MiB (ratio %.2f, bound 1.2)",
		blocks-step+1, blocks, mib(hl), blocks/5-step+1, blocks/5, mib(he), float64(hl)/float64(he))
	// The point samples at half the run and at its end, reported; the
	// bound is on the envelope: each pruning validator's largest total in
	// the last tenth of the run (its last step blocks, every
	// soakTraceEvery) against its largest in the tenth around half the run.
	for i := 1; i < validators; i++ {
		a, b := mid.Disk[i]["total"], last.Disk[i]["total"]
		t.Logf("v%d disk at %d %.1f MiB, at %d %.1f MiB (point ratio %.2f)", i, last.Height, mib(uint64(b)), mid.Height, mib(uint64(a)), float64(b)/float64(a))
		ma, mb := traceMax(trace, i, blocks/2-step/2, blocks/2+step/2), traceMax(trace, i, blocks-step, blocks)
		check(ma > 0 && float64(mb) <= 1.2*float64(ma), "v%d disk, the largest of blocks %d–%d %.1f MiB against the largest of %d–%d %.1f MiB (ratio %.2f, bound 1.2)",
			i, blocks-step, blocks, mib(uint64(mb)), blocks/2-step/2, blocks/2+step/2, mib(uint64(ma)), float64(mb)/float64(ma))
	}
	bs, ss := joiners[0], joiners[1]
	if ss.From == 0 {
		t.Errorf("the state-sync joiner restored from no snapshot")
	}
	check(ss.Seconds < 10, "state-sync joiner level in %.2f s (bound 10 s)", ss.Seconds)
	if ss.Seconds >= bs.Seconds {
		t.Errorf("state sync %.2f s, not faster than block sync %.2f s", ss.Seconds, bs.Seconds)
	}
}

// join starts spare home i fresh (block sync, or state sync with ss) and
// returns how long it took to reach the network's height at its start;
// it stops the joiner before returning.
func join(l *Live, i int, ss *cometbft.StateSyncOptions) (soakJoiner, error) {
	target := l.Height()
	start := time.Now()
	nd, err := cometbft.StartNode(context.Background(), cometbft.NodeConfig{Home: l.Homes[i], NoSync: true, StateSync: ss})
	if err != nil {
		return soakJoiner{}, err
	}
	defer nd.Close()
	deadline := start.Add(20 * time.Minute)
	for nd.V.Height() < target {
		if err := cometbft.FirstFailure([]*cometbft.Node{nd}); err != nil {
			return soakJoiner{}, err
		}
		if time.Now().After(deadline) {
			return soakJoiner{}, fmt.Errorf("at %d after %v, target %d", nd.V.Height(), time.Since(start), target)
		}
		time.Sleep(10 * time.Millisecond)
	}
	d := time.Since(start)
	return soakJoiner{Target: target, Seconds: d.Seconds(), From: nd.V.RestoredFrom(), LoadAvg: loadAvg()}, nil
}

// traceMax is validator i's largest total in the trace at heights lo … hi.
func traceMax(trace []soakTrace, i int, lo, hi uint64) int64 {
	var m int64
	for _, tr := range trace {
		if tr.Height >= lo && tr.Height <= hi && i < len(tr.Totals) {
			m = max(m, tr.Totals[i])
		}
	}
	return m
}

// traceHeapMedian is the median heap sample of the trace at heights lo … hi
// (0 when it has none).
func traceHeapMedian(trace []soakTrace, lo, hi uint64) uint64 {
	var hs []uint64
	for _, tr := range trace {
		if tr.Height >= lo && tr.Height <= hi {
			hs = append(hs, tr.HeapLive)
		}
	}
	if len(hs) == 0 {
		return 0
	}
	slices.Sort(hs)
	return hs[len(hs)/2]
}

// heapAfterGC is the process's HeapAlloc after two collections.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// rss is the process's VmRSS (0 if unknown).
func rss() uint64 {
	b, _ := os.ReadFile("/proc/self/status")
	for l := range strings.Lines(string(b)) {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// diskUsage sums the apparent sizes of a validator home's files by
// soakComponents (a file moving under the walk is skipped).
func diskUsage(home string) map[string]int64 {
	m := map[string]int64{}
	_ = filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(home, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		c := "other"
		switch {
		case len(parts) >= 2 && parts[0] == "data":
			c = "cmt/other"
			if k := "cmt/" + parts[1]; slices.Contains(soakComponents, k) {
				c = k
			}
		case len(parts) >= 2 && parts[0] == "node":
			c = "node/other"
			if k := "node/" + parts[1]; slices.Contains(soakComponents, k) {
				c = k
			}
		}
		m[c] += info.Size()
		m["total"] += info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			m["allocated"] += st.Blocks * 512
		}
		return nil
	})
	return m
}

// soakTable renders the samples: the heap, then per validator a row of
// its components (KiB).
func soakTable(samples []soakSample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nheight  elapsed_s  heap_MiB  rss_MiB  loadavg\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "%6d  %9.0f  %8.1f  %7.1f  %s\n", s.Height, s.Elapsed, mib(s.HeapLive), mib(s.RSS), s.LoadAvg)
	}
	fmt.Fprintf(&b, "\ndisk by component, KiB (cmt = CometBFT data/)\nheight  v")
	for _, c := range soakComponents {
		fmt.Fprintf(&b, " %*s", max(len(c), 9), c)
	}
	b.WriteString("\n")
	for _, s := range samples {
		for i, d := range s.Disk {
			fmt.Fprintf(&b, "%6d  %d", s.Height, i)
			for _, c := range soakComponents {
				fmt.Fprintf(&b, " %*d", max(len(c), 9), d[c]>>10)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}
