package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cip11/cip11/replay"
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
}

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	limit := fs.Int("blocks", 0, "stop after N blocks (0 = all)")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	noCache := fs.Bool("no-cache", false, "re-derive every block-S snapshot (no §9.2 candidate cache)")
	quiet := fs.Bool("quiet", false, "no progress bar even on a terminal")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *limit < 0 || fs.NArg() > 1 {
		fmt.Fprintln(stderr, "usage: cip11 replay [-blocks N ≥ 0] [-json] [-no-cache] [-quiet] [FILE]")
		return 2
	}
	in, name := replay.Sample(), "embedded sample (replay/testdata/sample.jsonl.gz)"
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
	start := time.Now()
	s, err := replay.Run(in, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "replay %s: FAILED: %v\n", name, err)
		return 1
	}
	printSummary(stdout, report{File: name, Summary: s, Seconds: time.Since(start).Seconds()}, *asJSON)
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
