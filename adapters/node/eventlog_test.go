package node

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
)

// TestTransportHistorySurvivesRestart (issue 18 item 22): the pushed and
// acked events of a job, which no block holds, are still in its history
// after the validator restarts on its data directory (events.jsonl), in
// height order among the events the block log rebuilds; so is its output
// (issue 30), which rides in the reveal, not in the block log.
func TestTransportHistorySurvivesRestart(t *testing.T) {
	d, err := GenerateGenesis(GenesisOptions{Seed: 31, Runners: 2, QUIC: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rs := startRunners(t, ctx, d, v)
	waitPresent(t, v, len(rs))
	waitLinked(t, v, rs)
	id, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{3}, Kind: 1, Runners: 1, TimeoutBlocks: 20})
	if err != nil {
		t.Fatal(err)
	}
	has := func(jv job.View, k job.EventKind) bool {
		for _, e := range jv.Events {
			if e.Kind == k {
				return true
			}
		}
		return false
	}
	var before job.View
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
		before, _ = v.Job(id)
		if before.State == job.StateCompleted && has(before, job.EventPushed) && has(before, job.EventAcked) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("job not completed with push and ack events: %+v", before)
		}
	}
	cancel()
	closeRunners(rs)
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	v2, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	after, ok := v2.Job(id)
	if !ok || after.State != job.StateCompleted {
		t.Fatalf("after the restart: %v %+v", ok, after)
	}
	for _, k := range []job.EventKind{job.EventPushed, job.EventAcked, job.EventSelected, job.EventCompleted} {
		if !has(after, k) {
			t.Errorf("after the restart the history lacks %s: %+v", k, after.Events)
		}
	}
	// issue 30: the output rides in the reveal, which the block log does
	// not hold: events.jsonl keeps it too
	if before.Output == nil || len(*before.Output) == 0 {
		t.Fatalf("the completed job has no output before the restart: %+v", before)
	}
	if after.Output == nil || string(*after.Output) != string(*before.Output) {
		t.Fatalf("after the restart the output is %v, want %x", after.Output, *before.Output)
	}
	for i := 1; i < len(after.Events); i++ {
		if after.Events[i].Height < after.Events[i-1].Height {
			t.Fatalf("history out of height order after the restart: %+v", after.Events)
		}
	}
}

// TestEventLogCompactsWhileRunning: compact keeps only the lines of the
// jobs still wanted (in memory), as a start does, and later records append
// after them.
func TestEventLogCompactsWhileRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	keepAll := func(cip11.Hash, job.Event) bool { return true }
	l, err := openEventLog(path, slog.New(slog.DiscardHandler), keepAll, func(cip11.Hash, []byte) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	a, b := cip11.Hash{1}, cip11.Hash{2}
	for h := range uint64(50) {
		l.Record(a, job.Event{Height: h, Kind: job.EventPushed})
		l.Record(b, job.Event{Height: h, Kind: job.EventPushed})
	}
	l.RecordOutput(b, []byte("out"))
	l.compact(func(id cip11.Hash) bool { return id == a })
	l.Record(a, job.Event{Height: 99, Kind: job.EventAcked})
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	if len(lines) != 51 {
		t.Fatalf("%d lines after compaction and one more record, want 51", len(lines))
	}
	for _, ln := range lines {
		var el eventLine
		if err := json.Unmarshal(ln, &el); err != nil || el.Job != a {
			t.Fatalf("line %s (%v)", ln, err)
		}
	}
}
