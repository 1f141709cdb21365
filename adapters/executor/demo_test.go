package executor

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cip11/cip11"
)

func jobInput(n int, payload string) Input {
	return Input{JobID: cip11.Keccak256([]byte("executor-test"), []byte{byte(n >> 8), byte(n)}),
		Kind: 1, Runners: 2, Payload: []byte(payload), DeadlineBlock: 1234, AssignmentHeight: 1200}
}

// TestDemoOutputIsTheDevnetResult: the demo's output is the 32 bytes
// keccak256("cip11-devnet-result" ‖ job_id ‖ payload), the result the
// runner's built-in executor has always revealed.
func TestDemoOutputIsTheDevnetResult(t *testing.T) {
	d, err := NewDemo(DemoConfig{WorkTime: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	in := jobInput(1, "payload")
	out, err := d.Execute(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := cip11.Keccak256([]byte("cip11-devnet-result"), in.JobID[:], []byte("payload"))
	if !bytes.Equal(out, want[:]) || len(out) != 32 {
		t.Fatalf("output %x, want %x", out, want)
	}
	if !bytes.Equal(DemoOutput(in.JobID, in.Payload), want[:]) {
		t.Fatal("DemoOutput differs")
	}
}

// TestDemoWaitsTheWorkTime: WorkMillis, or the configured default when
// the spec has none (lower bounds only).
func TestDemoWaitsTheWorkTime(t *testing.T) {
	d, err := NewDemo(DemoConfig{WorkTime: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := d.Execute(context.Background(), jobInput(1, "")); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("default work time: returned after %v", took)
	}
	in := jobInput(2, "")
	in.WorkMillis = 300
	start = time.Now()
	if _, err := d.Execute(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("work_ms 300: returned after %v", took)
	}
}

// TestDemoCancel: a cancelled context ends a long job at once with the
// context's error.
func TestDemoCancel(t *testing.T) {
	d, err := NewDemo(DemoConfig{})
	if err != nil {
		t.Fatal(err)
	}
	in := jobInput(1, "")
	in.WorkMillis = 600_000
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err = d.Execute(ctx, in)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("cancel took %v", took)
	}
}

// TestDemoFailureRate: 0 never fails, 1000 always does, and two demos of
// one seed fail the same executions; the draw is safe from many
// goroutines (-race).
func TestDemoFailureRate(t *testing.T) {
	never, _ := NewDemo(DemoConfig{WorkTime: time.Nanosecond})
	always, _ := NewDemo(DemoConfig{WorkTime: time.Nanosecond, FailPerMille: 1000})
	for i := range 50 {
		if _, err := never.Execute(context.Background(), jobInput(i, "")); err != nil {
			t.Fatal(err)
		}
		if _, err := always.Execute(context.Background(), jobInput(i, "")); !errors.Is(err, ErrDemoFailure) {
			t.Fatalf("err %v, want ErrDemoFailure", err)
		}
	}
	pattern := func(d *Demo) []bool {
		var fails []bool
		for i := range 200 {
			_, err := d.Execute(context.Background(), jobInput(i, ""))
			fails = append(fails, err != nil)
		}
		return fails
	}
	a, _ := NewDemo(DemoConfig{WorkTime: time.Nanosecond, FailPerMille: 500, Seed: 7})
	b, _ := NewDemo(DemoConfig{WorkTime: time.Nanosecond, FailPerMille: 500, Rand: rand.New(rand.NewPCG(7, 0xfa11))})
	pa, pb := pattern(a), pattern(b)
	n := 0
	for i := range pa {
		if pa[i] != pb[i] {
			t.Fatalf("execution %d: seeded demos differ", i)
		}
		if pa[i] {
			n++
		}
	}
	if n < 50 || n > 150 {
		t.Fatalf("%d of 200 failed at 500 per mille", n)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				_, _ = a.Execute(context.Background(), jobInput(i*100+j, ""))
			}
		})
	}
	wg.Wait()
}

// TestDemoRejects: bad configs and nil receivers are errors, not panics.
func TestDemoRejects(t *testing.T) {
	if _, err := NewDemo(DemoConfig{WorkTime: -1}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("negative work time: %v", err)
	}
	if _, err := NewDemo(DemoConfig{FailPerMille: 1001}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("1001 per mille: %v", err)
	}
	var d *Demo
	if _, err := d.Execute(context.Background(), Input{}); !errors.Is(err, ErrNilExecutor) {
		t.Fatalf("nil demo: %v", err)
	}
	if _, err := (&Demo{}).Execute(context.Background(), Input{}); !errors.Is(err, ErrNilExecutor) {
		t.Fatalf("zero demo: %v", err)
	}
	var f ExecutorFunc
	if _, err := f.Execute(context.Background(), Input{}); !errors.Is(err, ErrNilExecutor) {
		t.Fatalf("nil func: %v", err)
	}
	var e Executor = ExecutorFunc(func(context.Context, Input) ([]byte, error) { return []byte("x"), nil })
	if out, err := e.Execute(context.Background(), Input{}); err != nil || string(out) != "x" {
		t.Fatalf("func: %q %v", out, err)
	}
}
