package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cip11/cip11"
)

// This file is HTTPChain over several validators' HTTP APIs: a runner
// process reads chain facts from the validators of its Sub(R) and leans
// on none of them alone (issue 28). Every request goes to the preferred
// validator — the one at the highest height it reported, the first named
// on a tie — and, on a transport error, a timeout or a 5xx, to the next;
// a validator that failed is skipped for a backoff that doubles per
// failure (apiBackoffMin … apiBackoffMax). Height also notices a stall:
// when the preferred validator's height has not moved for apiStallAfter,
// it asks the next validator too, so a paused or lagging one is passed
// over within about a second (or within apiRequestTimeout when it does
// not answer at all), and Hint feeds in heights learned elsewhere (the
// verified HeartbeatPongs of the runner's QUIC links).

const (
	// apiRequestTimeout bounds one request to one validator; past it the
	// next validator is asked (a paused process accepts the connection
	// and never answers).
	apiRequestTimeout = 2 * time.Second
	apiBackoffMin     = 250 * time.Millisecond
	apiBackoffMax     = 5 * time.Second
	// apiStallAfter is how long the preferred validator's height may stay
	// put before Height asks another validator as well.
	apiStallAfter = time.Second
	// assignedRetry is how long Assigned waits before asking again when no
	// validator has applied the assignment block yet.
	assignedRetry = 10 * time.Millisecond
)

// ErrNoValidatorAPI: no validator's HTTP API answered a request.
var ErrNoValidatorAPI = errors.New("node: no validator HTTP API answered")

// NewHTTPChain is a Chain over the HTTP APIs at bases (each
// http://host:port), first choice first; duplicates and empty entries are
// dropped. Copies share the failover state. One base gives the plain
// HTTPChain{Base: base}.
func NewHTTPChain(bases []string, client *http.Client) (HTTPChain, error) {
	var uniq []string
	for _, b := range bases {
		b = strings.TrimSuffix(strings.TrimSpace(b), "/")
		if b != "" && !slices.Contains(uniq, b) {
			uniq = append(uniq, b)
		}
	}
	switch len(uniq) {
	case 0:
		return HTTPChain{}, fmt.Errorf("%w: no validator HTTP API", ErrBadRequest)
	case 1:
		return HTTPChain{Base: uniq[0], Client: client}, nil
	}
	p := &apiPool{eps: make([]apiEndpoint, len(uniq))}
	for i, b := range uniq {
		p.eps[i].base = b
	}
	return HTTPChain{Base: uniq[0], Client: client, pool: p}, nil
}

// Bases lists the validator APIs c reads, first choice first.
func (c HTTPChain) Bases() []string {
	if c.pool == nil {
		return []string{c.Base}
	}
	out := make([]string, len(c.pool.eps))
	for i := range c.pool.eps {
		out[i] = c.pool.eps[i].base
	}
	return out
}

// Hint records that the validator whose API is base was at height h
// (learned elsewhere, e.g. from a verified HeartbeatPong), so requests
// prefer it when it is ahead. Unknown bases are ignored.
func (c HTTPChain) Hint(base string, h uint64) {
	if c.pool == nil {
		return
	}
	c.pool.observe(strings.TrimSuffix(base, "/"), h, time.Now())
}

// apiPool is the failover state of an HTTPChain over several APIs.
type apiPool struct {
	mu    sync.Mutex
	eps   []apiEndpoint
	probe int // the next endpoint a stall probe asks (round robin)
}

type apiEndpoint struct {
	base      string
	height    uint64    // the highest height it reported
	movedAt   time.Time // when that height last rose
	downUntil time.Time // skipped until then after a failure
	fails     uint32    // consecutive failures (the backoff doubles)
}

// order is the endpoints to ask, best first: those not backing off, at
// the highest height first, the first named on a tie; then those backing
// off (the soonest back first), so that a request is never refused while
// any endpoint might answer.
func (p *apiPool) order(now time.Time) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	idx := make([]int, len(p.eps))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ea, eb := &p.eps[a], &p.eps[b]
		da, db := ea.downUntil.After(now), eb.downUntil.After(now)
		switch {
		case da != db:
			if da {
				return 1
			}
			return -1
		case da:
			return ea.downUntil.Compare(eb.downUntil)
		case ea.height != eb.height:
			if ea.height > eb.height {
				return -1
			}
			return 1
		}
		return 0
	})
	return idx
}

func (p *apiPool) index(base string) int {
	for i := range p.eps {
		if p.eps[i].base == base {
			return i
		}
	}
	return -1
}

func (p *apiPool) observe(base string, h uint64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := p.index(base); i >= 0 && h > p.eps[i].height {
		p.eps[i].height, p.eps[i].movedAt = h, now
	}
}

func (p *apiPool) ok(i int) {
	p.mu.Lock()
	p.eps[i].fails, p.eps[i].downUntil = 0, time.Time{}
	p.mu.Unlock()
}

func (p *apiPool) failed(i int, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := &p.eps[i]
	d := apiBackoffMin << min(e.fails, 5)
	e.fails = min(e.fails+1, 32)
	e.downUntil = now.Add(min(d, apiBackoffMax))
}

// tip is the highest height any endpoint reported.
func (p *apiPool) tip() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var h uint64
	for i := range p.eps {
		h = max(h, p.eps[i].height)
	}
	return h
}

// retryable reports whether a request's failure is the validator's (it
// did not answer, timed out or failed with a 5xx) rather than an answer.
func retryable(code int, err error) bool {
	return err != nil && (code == 0 || code >= http.StatusInternalServerError)
}

// each runs fn against the endpoints in order until one answers (fn
// returns nil or an error that is not retryable). Without a pool it is fn
// on c itself.
func (c HTTPChain) each(ctx context.Context, fn func(ctx context.Context, one HTTPChain) (int, error)) error {
	if c.pool == nil {
		_, err := fn(ctx, c)
		return err
	}
	p := c.pool
	var errs []error
	for _, i := range p.order(time.Now()) {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		code, err := c.try(ctx, i, fn)
		if !retryable(code, err) {
			return err
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("%w: %w", ErrNoValidatorAPI, errors.Join(errs...))
}

// try is fn against endpoint i, bounded by apiRequestTimeout, recording
// the outcome.
func (c HTTPChain) try(ctx context.Context, i int, fn func(ctx context.Context, one HTTPChain) (int, error)) (int, error) {
	p := c.pool
	p.mu.Lock()
	base := p.eps[i].base
	p.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, apiRequestTimeout)
	defer cancel()
	code, err := fn(rctx, HTTPChain{Base: base, Client: c.Client})
	if retryable(code, err) {
		if ctx.Err() == nil { // the validator's failure, not the caller giving up
			p.failed(i, time.Now())
		}
		return code, err
	}
	p.ok(i)
	return code, err
}

// height asks the preferred endpoint for its height (the next on
// failure) and, when that height has not moved for apiStallAfter, one
// more endpoint (round robin); it returns the highest height any
// endpoint reported.
func (p *apiPool) height(ctx context.Context, c HTTPChain) (uint64, error) {
	ask := func(ctx context.Context, one HTTPChain) (int, error) {
		h, err := one.Height(ctx)
		if err == nil {
			p.observe(one.Base, h, time.Now())
		}
		return 0, err
	}
	err := c.each(ctx, ask)
	now := time.Now()
	p.mu.Lock()
	best := p.order0(now)
	stalled := best >= 0 && !p.eps[best].movedAt.IsZero() && now.Sub(p.eps[best].movedAt) >= apiStallAfter
	other := -1
	if stalled {
		for range p.eps {
			p.probe = (p.probe + 1) % len(p.eps)
			if p.probe != best && !p.eps[p.probe].downUntil.After(now) {
				other = p.probe
				break
			}
		}
	}
	p.mu.Unlock()
	if other >= 0 {
		_, _ = c.try(ctx, other, ask)
	}
	if tip := p.tip(); tip > 0 {
		return tip, nil
	}
	return 0, err
}

// order0 is order's first endpoint (p.mu held); -1 when there is none.
func (p *apiPool) order0(now time.Time) int {
	best := -1
	for i := range p.eps {
		e := &p.eps[i]
		if e.downUntil.After(now) {
			continue
		}
		if best < 0 || e.height > p.eps[best].height {
			best = i
		}
	}
	return best
}

// assigned is the §10.1 still-assigned check over several validators
// (SPEC-NOTES N9): an answer counts only from a validator that has
// applied height — one whose reported height was already ≥ height, or
// whose job view shows an assignment at height or later. A validator
// behind (the job unknown, or its assignment older than height) is passed
// over; when none has caught up, the question is asked again every
// assignedRetry until ctx ends, and then the check fails with the error.
func (p *apiPool) assigned(ctx context.Context, c HTTPChain, job cip11.Hash, runner cip11.Address, height uint64) (bool, error) {
	errBehind := fmt.Errorf("no validator API has applied height %d", height)
	for {
		var last error = errBehind
		for _, i := range p.order(time.Now()) {
			p.mu.Lock()
			applied := p.eps[i].height >= height
			p.mu.Unlock()
			var ans, definite bool
			code, err := c.try(ctx, i, func(ctx context.Context, one HTTPChain) (int, error) {
				jv, code, found, err := one.job(ctx, job)
				if err == nil {
					definite = applied || (found && jv.AssignmentHeight >= height)
					ans = found && assignedIn(jv, runner, height)
				}
				return code, err
			})
			switch {
			case err == nil && definite:
				return ans, nil
			case err != nil && !retryable(code, err):
				return false, err
			case err != nil:
				last = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		t := time.NewTimer(assignedRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, fmt.Errorf("%w: %w", last, ctx.Err())
		case <-t.C:
		}
	}
}

// HeightAt reads the height of the validator whose API is base (GET
// /status) and records it like Height does; base need not be one of c's.
func (c HTTPChain) HeightAt(ctx context.Context, base string) (uint64, error) {
	base = strings.TrimSuffix(base, "/")
	rctx, cancel := context.WithTimeout(ctx, apiRequestTimeout)
	defer cancel()
	h, err := HTTPChain{Base: base, Client: c.Client}.Height(rctx)
	if err == nil && c.pool != nil {
		c.pool.observe(base, h, time.Now())
	}
	return h, err
}
