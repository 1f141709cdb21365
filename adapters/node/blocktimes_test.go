package node

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
)

// TestJobHistoryTimesSurviveRestart (issue 18 #22): a job's history rebuilt
// from the block log at a restart keeps the times its events had (the
// events the block log holds; see sameEvents). Before,
// every rebuilt event read 0001-01-01T00:00:00Z. The validator's clock is
// set to a distinct time before each block; after a restart (with the
// clock far later) the job's events are the same, times included; the
// blocks.times file beside the block log holds one line per block; a torn
// last line of it is dropped, and a block without a time (a lost line) is
// restored with the zero time rather than a neighbour's.
func TestJobHistoryTimesSurviveRestart(t *testing.T) {
	d := testDevnet(t, 3, nil)
	dir := t.TempDir()
	// The clock is read by the validator's goroutines too.
	var clock atomic.Int64
	clock.Store(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	open := func() *Validator {
		t.Helper()
		v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: dir, NoSync: true, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := open()
	spec := &JobSpec{Submitter: cip11.Address{7}, Kind: 1, Runners: 1, TimeoutBlocks: 3}
	for i := range 8 {
		if i == 2 {
			if _, err := v.SubmitJob(spec); err != nil {
				t.Fatal(err)
			}
		}
		clock.Add(int64(time.Second))
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
	}
	before, ok := v.Job(spec.ID())
	if !ok || len(fromBlocks(before.Events)) < 3 {
		t.Fatalf("job before the restart: %v %+v", ok, before)
	}
	for _, e := range before.Events {
		if e.Time.IsZero() {
			t.Fatalf("event %s at %d has no time before the restart", e.Kind, e.Height)
		}
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}

	clock.Add(int64(time.Hour)) // a restart much later
	v = open()
	after, ok := v.Job(spec.ID())
	if !ok {
		t.Fatal("job unknown after the restart")
	}
	sameEvents(t, "after a restart", before.Events, after.Events)
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}

	// blocks.times: one line per block, 1..8.
	tp := filepath.Join(dir, "blocks.times")
	b, err := os.ReadFile(tp)
	if err != nil {
		t.Fatal(err)
	}
	lines := splitLines(b)
	if len(lines) != 8 || lines[0][:2] != "1 " || lines[7][:2] != "8 " {
		t.Fatalf("blocks.times holds %q, want 8 lines for blocks 1 to 8", lines)
	}
	// A torn last line is dropped; the blocks still restore with their times.
	if err := os.WriteFile(tp, append(b, "9 17"...), 0o644); err != nil {
		t.Fatal(err)
	}
	v = open()
	after, _ = v.Job(spec.ID())
	sameEvents(t, "after a torn blocks.times line", before.Events, after.Events)
	v.Close()
	if b2, _ := os.ReadFile(tp); string(b2) != string(b) {
		t.Fatalf("blocks.times after a torn line: %q, want it cut back to %q", b2, b)
	}
	// Block 3's line lost (the job's submission block): its events have the
	// zero time, the others keep theirs.
	var kept []byte
	for i, l := range lines {
		if i != 2 {
			kept = append(kept, l+"\n"...)
		}
	}
	if err := os.WriteFile(tp, kept, 0o644); err != nil {
		t.Fatal(err)
	}
	v = open()
	defer v.Close()
	after, _ = v.Job(spec.ID())
	want := append([]job.Event(nil), before.Events...)
	for i := range want {
		if want[i].Height == 3 {
			want[i].Time = time.Time{}
		}
	}
	sameEvents(t, "without block 3's time", want, after.Events)
}

// sameEvents compares the events the block log holds (submitted,
// selected, reselected, result, completed, expired): the driver's events
// (pushed, push_failed, acked, …) arrive asynchronously and are not in the
// block log, so a restart does not rebuild them (not yet part of #22).
func sameEvents(t *testing.T, what string, want, got []job.Event) {
	t.Helper()
	want, got = fromBlocks(want), fromBlocks(got)
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d:\n got %+v\nwant %+v", what, len(got), len(want), got, want)
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.Height != w.Height || g.Kind != w.Kind || !g.Time.Equal(w.Time) || (g.Runner == nil) != (w.Runner == nil) ||
			(g.Runner != nil && *g.Runner != *w.Runner) {
			t.Errorf("%s: event %d = %d %s %v, want %d %s %v", what, i, g.Height, g.Kind, g.Time, w.Height, w.Kind, w.Time)
		}
	}
}

func fromBlocks(evs []job.Event) []job.Event {
	var out []job.Event
	for _, e := range evs {
		switch e.Kind {
		case job.EventSubmitted, job.EventSelected, job.EventReselected, job.EventResult,
			job.EventCompleted, job.EventExpired:
			out = append(out, e)
		}
	}
	return out
}

func splitLines(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	return out
}
