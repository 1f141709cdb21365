package node

import (
	"context"
	"encoding/hex"
	"net/http"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

// This file is the runner's chain view beyond height and admission: its
// own registry record (the on-chain last_heartbeat its §6.6 schedule runs
// from, §7.1) and whether it is still assigned to a job at the
// assignment_height a push names (§10.1).

// ValidatorAddr is the validator QUIC address the runner dials: the
// Validator override, else the genesis validator.quic (the `cip11 runner`
// banner prints it). A nil Genesis gives the override alone.
func (c *RunnerConfig) ValidatorAddr() string {
	if c.Validator != "" || c.Genesis == nil {
		return c.Validator
	}
	return c.Genesis.Validator.QUIC
}

// healthName is the registry HealthStatus as GET /runner/{addr} spells it.
func healthName(h state.Health) string {
	switch h {
	case state.Healthy:
		return "healthy"
	case state.Unhealthy:
		return "unhealthy"
	case state.Paused:
		return "paused"
	case state.Deregistered:
		return "deregistered"
	}
	return "unknown"
}

// Runner returns runner's Runner Registry record as of the last committed
// block (GET /runner/{addr}); ok is false when it is not registered (or no
// block is committed yet).
func (v *Validator) Runner(runner cip11.Address) (rv httpapi.RunnerView, ok bool, err error) {
	return v.runner(context.Background(), runner)
}

// runner is Runner for a caller with a context (the HTTP API).
func (v *Validator) runner(ctx context.Context, runner cip11.Address) (rv httpapi.RunnerView, ok bool, err error) {
	derr := v.doCtx(ctx, func(c *chain.Core) {
		h := c.Height()
		if h == 0 {
			return
		}
		view, e := v.registry().At(h)
		if e != nil {
			err = e
			return
		}
		var r state.Runner
		if r, ok = view.Runner(runner); ok {
			rv = httpapi.RunnerView{Address: runner, Health: healthName(r.Health), LastHeartbeat: r.LastHeartbeat, Height: h}
		}
	})
	if derr != nil {
		return httpapi.RunnerView{}, false, derr
	}
	return rv, ok, err
}

// LastHeartbeat is runner's on-chain last_heartbeat as of the last
// committed block (§7.1); ok is false when it is not registered.
func (v *Validator) LastHeartbeat(runner cip11.Address) (uint64, bool, error) {
	rv, ok, err := v.Runner(runner)
	return rv.LastHeartbeat, ok, err
}

// Assigned reports whether runner is in job id's current committee, selected
// at height (§10.1: a runner re-selected away, or pushed an assignment the
// chain has since replaced, is no longer assigned at that height).
func (v *Validator) Assigned(id cip11.Hash, runner cip11.Address, height uint64) (bool, error) {
	if m := v.fresh.Load(); m != nil {
		// a seat the last committed block created is assigned as of the
		// committed tip: no later block changed it yet
		if f, ok := (*m)[id]; ok && f.height == height && slices.Contains(f.runners, runner) {
			return true, nil
		}
	}
	var jv job.View
	var ok bool
	if err := v.do(func(c *chain.Core) { jv, ok = c.Job(id) }); err != nil {
		return false, err
	}
	return ok && assignedIn(jv, runner, height), nil
}

// assignedIn is the §10.1 still-assigned check over a job view: the job
// is assigned, its current assignment is the one made at height, and
// runner is in that committee.
func assignedIn(jv job.View, runner cip11.Address, height uint64) bool {
	return jv.State == job.StateAssigned && jv.AssignmentHeight == height && slices.Contains(jv.Committee, runner)
}

// Runner implements httpapi.Backend (GET /runner/{addr}).
func (b Backend) Runner(ctx context.Context, r cip11.Address) (httpapi.RunnerView, bool, error) {
	rv, ok, err := b.V.runner(ctx, r)
	return rv, ok, mapErr(err)
}

// LastHeartbeat implements Chain (GET /runner/{addr}; 404 is not
// registered).
func (c HTTPChain) LastHeartbeat(ctx context.Context, runner cip11.Address) (last uint64, ok bool, err error) {
	err = c.each(ctx, func(ctx context.Context, one HTTPChain) (int, error) {
		var rv httpapi.RunnerView
		code, e := one.get(ctx, "/runner/"+hex.EncodeToString(runner[:]), &rv)
		if code == http.StatusNotFound {
			last, ok = 0, false
			return code, nil
		}
		last, ok = rv.LastHeartbeat, e == nil
		return code, e
	})
	return last, ok, err
}

// Assigned implements Chain (GET /jobs/{id}; 404 is not assigned). Over
// several validators it waits, until ctx ends, for one whose answer
// covers height: a validator that has not applied the assignment block
// yet does not know the job or knows an older assignment of it, and its
// answer is not taken as "no longer assigned" (§10.1; httpchain.go).
func (c HTTPChain) Assigned(ctx context.Context, job cip11.Hash, runner cip11.Address, height uint64) (bool, error) {
	if c.pool != nil {
		return c.pool.assigned(ctx, c, job, runner, height)
	}
	jv, _, found, err := c.job(ctx, job)
	if err != nil || !found {
		return false, err // an unknown job is not assigned
	}
	return assignedIn(jv, runner, height), nil
}

// freshSeats are one job's seats created by the last committed block.
type freshSeats struct {
	height  uint64
	runners []cip11.Address
}

// RunnerAPIs lists the validator HTTP APIs a runner process reads its
// chain facts from (HTTPChain over several validators, NewHTTPChain),
// first choice first: first, if not empty, (usually the -api flag);
// then the validators of the runner's Sub(R) in the genesis epoch (§5,
// the ones that push to it); then every other validator of every genesis
// epoch. A single-validator chain gives first or its validator alone.
// Each entry is http://host:port.
func RunnerAPIs(g *Genesis, runner wire.PubKey, first string) []string {
	var out []string
	add := func(base string) {
		if base != "" && !slices.Contains(out, base) {
			out = append(out, base)
		}
	}
	add(first)
	if !g.Network() {
		add("http://" + g.Validator.HTTP)
		return out
	}
	if sn, err := (EpochSet{Epoch: 0, Activation: 1, GroupKey: g.Validator.ThresholdPubKey, Set: g.Set}).snapshot(); err == nil {
		if sub, err := sn.Sub(runner, g.P()); err == nil {
			for _, pk := range sub {
				if i := IndexIn(g.Set, cip11.Hash(pk)); i >= 0 {
					add("http://" + g.Set[i].HTTP)
				}
			}
		}
	}
	for _, e := range g.EpochSets() {
		for _, v := range e.Set {
			add("http://" + v.HTTP)
		}
	}
	return out
}
