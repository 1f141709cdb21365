package node

import (
	"context"
	"testing"
	"time"
)

// startRunners starts one in-process runner per devnet key against v over
// real QUIC (5 ms tick, 1 ms of work a job). The caller closes them
// (closeRunners, or one by one where the close itself is under test).
func startRunners(t testing.TB, ctx context.Context, d *GeneratedGenesis, v *Validator) []*Runner {
	t.Helper()
	var rs []*Runner
	for i := range d.RunnerKeys {
		r, err := NewRunner(ctx, RunnerConfig{Genesis: d.Genesis, Key: d.RunnerKeys[i], Chain: LocalChain{V: v},
			Validator: v.Addr().String(), Tick: 5 * time.Millisecond, WorkTime: time.Millisecond})
		if err != nil {
			closeRunners(rs)
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

func closeRunners(rs []*Runner) {
	for _, r := range rs {
		r.Close()
	}
}

// waitPresent produces blocks until n runners are in v's local presence
// (10 s at most): block 1 registers the genesis runners, and a runner is
// present once a ping was answered.
func waitPresent(t testing.TB, v *Validator, n int) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
		if got := len(v.Server().Present()); got >= n {
			return
		} else if time.Now().After(end) {
			t.Fatalf("%d of %d runners present", got, n)
		}
	}
}

// waitLinked produces blocks until every runner's client holds an admitted
// link (the runner side of waitPresent: a runner whose link is not yet up
// polls on each new height, §14 phase 2, and a job it polls is no push).
func waitLinked(t testing.TB, v *Validator, rs []*Runner) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		up := 0
		for _, r := range rs {
			if len(r.Client().Connected()) > 0 {
				up++
			}
		}
		if up == len(rs) {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d of %d runners hold an admitted link", up, len(rs))
		}
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
	}
}
