package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/devkeys"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/wire"
)

// SPEC-NOTES N10: the §14 phase is derived from the delivery flags, which
// must be cumulative; the shadow and hard-exclude flags do not change it.
func TestPhaseOf(t *testing.T) {
	base := cip11.DefaultParams()
	for _, tc := range []struct {
		name                          string
		transport, presentFirst, poll bool
		want                          Phase
		bad                           bool
	}{
		{"all off", false, false, false, PhaseOff, false},
		{"transport", true, false, false, Phase1, false},
		{"transport+present-first", true, true, false, Phase2, false},
		{"all three", true, true, true, Phase3, false},
		{"present-first without transport", false, true, false, 0, true},
		{"poll disabled without present-first", true, false, true, 0, true},
		{"poll disabled alone", false, false, true, 0, true},
	} {
		p := base
		p.TransportEnabled, p.PresentFirstEnabled, p.PollDisabled = tc.transport, tc.presentFirst, tc.poll
		p.PresenceShadowEnabled, p.PresenceHardExcludeEnabled = true, true
		got, err := PhaseOf(p)
		if tc.bad {
			if !errors.Is(err, ErrPhaseFlags) {
				t.Errorf("%s: %v, want ErrPhaseFlags", tc.name, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: phase %v %v, want %v", tc.name, got, err, tc.want)
		}
		q, err := WithPhase(base, tc.want)
		if err != nil || q.TransportEnabled != tc.transport || q.PresentFirstEnabled != tc.presentFirst || q.PollDisabled != tc.poll {
			t.Errorf("WithPhase(%v) = %+v %v", tc.want, q, err)
		}
	}
	if _, err := WithPhase(base, 4); !errors.Is(err, ErrPhaseFlags) {
		t.Errorf("WithPhase(4): %v", err)
	}
	// §14 poll by phase: primary in off and 1 (a connected runner polls),
	// fallback in 2, never in 3.
	for _, tc := range []struct {
		ph                    Phase
		connected, connected2 bool
	}{{PhaseOff, true, true}, {Phase1, true, true}, {Phase2, false, true}, {Phase3, false, false}} {
		if tc.ph.Polls(true) != tc.connected || tc.ph.Polls(false) != tc.connected2 {
			t.Errorf("phase %v: polls when connected %v, when not %v", tc.ph, tc.ph.Polls(true), tc.ph.Polls(false))
		}
	}
	// A genesis with flags that name no phase is refused.
	d := testDevnet(t, 1, nil)
	d.Genesis.Params.TransportEnabled = false
	if err := d.Genesis.Validate(); !errors.Is(err, ErrGenesis) || !errors.Is(err, ErrPhaseFlags) {
		t.Fatalf("genesis with present-first but no transport: %v", err)
	}
}

// §14 off: the validator opens no QUIC listener (no server, no address),
// and §14 Phase 3: the poll fallback is ErrPollDisabled (HTTP 410).
func TestValidatorPhaseTransportAndPoll(t *testing.T) {
	off := testDevnet(t, 1, func(p *cip11.Params) { *p, _ = WithPhase(*p, PhaseOff) })
	v := newTestValidator(t, off, t.TempDir())
	defer v.Close()
	if v.Server() != nil || v.Addr() != nil || v.Phase() != PhaseOff {
		t.Fatalf("transport off: server %v, addr %v, phase %v", v.Server(), v.Addr(), v.Phase())
	}
	if err := v.ProduceBlock(); err != nil {
		t.Fatal(err)
	}
	if st := v.Status(); st.QUICAddr != "off" || st.Height != 1 {
		t.Fatalf("status %+v", st)
	}
	if _, err := v.RunnerJobs(off.RunnerKeys[0].Address()); err != nil {
		t.Fatalf("poll in phase off: %v", err)
	}
	_ = v.dashboard() // no server to read: must not panic

	p3 := testDevnet(t, 1, func(p *cip11.Params) { *p, _ = WithPhase(*p, Phase3) })
	v3 := newTestValidator(t, p3, t.TempDir())
	defer v3.Close()
	if _, err := (LocalChain{V: v3}).Poll(context.Background(), p3.RunnerKeys[0].Address()); !errors.Is(err, ErrPollDisabled) {
		t.Fatalf("poll in phase 3: %v, want ErrPollDisabled", err)
	}
}

// §10.1 "accept at most one" across push and poll (issue 18 item A2): a
// job the runner accepted over QUIC is still executing when the validator
// drops the connection and holds the runner off; the runner, now without
// a connection, polls (Phase 2 fallback) and gets the same job back. It
// must not execute it a second time, and the job completes through the
// retained result's rebroadcast (§10.3). Fails on the old runner, whose
// poll path did not know what the QUIC client had accepted.
func TestPushedJobNotRerunByPollAfterDrop(t *testing.T) {
	d := testDevnet(t, 1, nil) // Phase 2
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: t.TempDir(), NoSync: true,
		BlockTime: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- v.Run(ctx) }()
	defer func() {
		cancel()
		<-ran
	}()
	rk := d.RunnerKeys[0]
	r, err := NewRunner(ctx, RunnerConfig{Genesis: d.Genesis, Key: rk, Chain: LocalChain{V: v}, Tick: 10 * time.Millisecond,
		Validator: v.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	waitFor(t, "runner present", func() bool { return v.Server().IsPresent(rk.Address()) })
	id, err := v.SubmitJob(&JobSpec{Submitter: devkeys.Submitter(0), Runners: 1, TimeoutBlocks: 60, WorkMillis: 800, Nonce: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "job executing after its push", func() bool { return r.active.Load() == 1 })
	if r.Client().Stats().Delivered != 0 {
		t.Fatal("the job came by poll, not by push")
	}
	retry := uint64(30) // blocks the runner stays away: it polls meanwhile
	if err := v.Server().Goodbye(rk.Address(), wire.GoodbyeDraining, "drop", &retry); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "connection dropped", func() bool { return len(r.Client().Connected()) == 0 })
	waitFor(t, "job completed", func() bool {
		jv, ok := v.Job(id)
		return ok && jv.State == job.StateCompleted
	})
	waitFor(t, "executions over", func() bool { return r.active.Load() == 0 })
	polls, _ := v.RunnerJobs(rk.Address())
	if n := r.Executed(); n != 1 {
		t.Fatalf("the job ran %d times, want 1 (open assignments now %d)", n, len(polls))
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
