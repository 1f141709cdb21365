package node

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/job"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/wire"
)

// Backend adapts a Validator to the HTTP API (httpapi.Backend).
type Backend struct{ V *Validator }

var _ httpapi.Backend = Backend{}

// mapErr maps node errors to the API's status sentinels.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrBadRequest), errors.Is(err, ErrTx):
		return fmt.Errorf("%w: %w", httpapi.ErrBadRequest, err)
	case errors.Is(err, ErrDuplicate):
		return fmt.Errorf("%w: %w", httpapi.ErrConflict, err)
	case errors.Is(err, ErrClosed), errors.Is(err, ErrBusy), errors.Is(err, chain.ErrMempoolFull), errors.Is(err, chain.ErrFailed):
		return fmt.Errorf("%w: %w", httpapi.ErrUnavailable, err)
	}
	return err
}

// SubmitJob implements httpapi.Backend.
func (b Backend) SubmitJob(ctx context.Context, req httpapi.JobRequest) (job.View, error) {
	spec := &JobSpec{Submitter: req.Submitter, Kind: req.JobKind, Runners: req.Runners, TimeoutBlocks: req.TimeoutBlocks,
		WorkMillis: req.WorkMillis, Nonce: req.Nonce, Payload: req.Payload}
	id, err := b.V.submitJob(ctx, spec)
	if err != nil {
		return job.View{}, mapErr(err)
	}
	jv, _, err := b.V.job(ctx, id)
	return jv, mapErr(err)
}

// Job implements httpapi.Backend.
func (b Backend) Job(ctx context.Context, id cip11.Hash) (job.View, bool, error) {
	jv, ok, err := b.V.job(ctx, id)
	if errors.Is(err, ErrClosed) {
		return jv, ok, nil // as before: a closing validator knows no job
	}
	return jv, ok, mapErr(err)
}

// RunnerJobs implements httpapi.Backend.
func (b Backend) RunnerJobs(ctx context.Context, r cip11.Address) ([]*wire.JobAssignment, error) {
	return b.V.runnerJobs(ctx, r)
}

// RunnerJobsFor implements httpapi.KeyedPoller.
func (b Backend) RunnerJobsFor(ctx context.Context, r cip11.Address, key wire.PubKey) ([]*wire.JobAssignment, error) {
	return b.V.runnerJobsFor(ctx, r, key)
}

var _ httpapi.KeyedPoller = Backend{}

// SubmitTx implements httpapi.Backend.
func (b Backend) SubmitTx(ctx context.Context, raw []byte) (httpapi.SubmitResult, error) {
	tx, err := b.V.submitTx(ctx, raw)
	res := httpapi.SubmitResult{Status: httpapi.SubmitAccepted}
	if tx != nil {
		res.TxHash = tx.Hash()
	}
	if errors.Is(err, ErrDuplicate) {
		res.Status = httpapi.SubmitDuplicate
	}
	return res, mapErr(err)
}

// Status implements httpapi.Backend.
func (b Backend) Status(ctx context.Context) (httpapi.Status, error) {
	st, err := b.V.status(ctx)
	return st, mapErr(err)
}

// Dashboard implements httpapi.Backend (dashboard_data.go).
func (b Backend) Dashboard(ctx context.Context) (httpapi.Dashboard, error) {
	d, err := b.V.dashboardCtx(ctx)
	return d, mapErr(err)
}

// Epochs implements httpapi.EpochsBackend (GET /epochs): the committed
// epochs as chain-log reconfigurations (epoch 0: the genesis set, active
// from 1; a member without a consensus key shows a zero one).
func (b Backend) Epochs() []chainlog.Reconfigure {
	var out []chainlog.Reconfigure
	for _, e := range b.V.Epochs() {
		out = append(out, e.reconfigure())
	}
	return out
}

var _ httpapi.EpochsBackend = Backend{}

func settled(state job.State, events []job.Event, runner cip11.Address) bool {
	if state == job.StateCompleted || state == job.StateExpired {
		return true
	}
	for _, e := range events {
		if e.Kind == job.EventResult && e.Runner != nil && *e.Runner == runner {
			return true
		}
	}
	return false
}

// HTTPChain is a Chain over validators' HTTP APIs (a runner in its own
// process): Base alone, or — built by NewHTTPChain — several validators
// (the runner's Sub(R), httpchain.go), with failover on error or stall and
// the highest height preferred.
type HTTPChain struct {
	Base   string // http://host:port
	Client *http.Client
	pool   *apiPool // NewHTTPChain's endpoints; nil: Base alone
}

func (c HTTPChain) client() *http.Client {
	if c.Client != nil {
		return c.Client
	}
	return defaultAPIClient
}

var defaultAPIClient = &http.Client{Timeout: 5 * time.Second}

func (c HTTPChain) get(ctx context.Context, path string, dst any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.Base, "/")+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(body))
	}
	return resp.StatusCode, json.Unmarshal(body, dst)
}

// Epochs implements EpochSource (GET /epochs): a runner process follows
// the network's in-band reconfigurations (SPEC-NOTES C11).
func (c HTTPChain) Epochs(ctx context.Context) (out []EpochSet, err error) {
	err = c.each(ctx, func(ctx context.Context, one HTTPChain) (int, error) {
		var e error
		out, e = one.epochs(ctx)
		return 0, e
	})
	return out, err
}

func (c HTTPChain) epochs(ctx context.Context) ([]EpochSet, error) {
	var res httpapi.EpochsResponse
	if _, err := c.get(ctx, "/epochs", &res); err != nil {
		return nil, err
	}
	out := make([]EpochSet, 0, len(res.Epochs))
	for i := range res.Epochs {
		r := &res.Epochs[i]
		if uint64(r.Epoch) != uint64(i) {
			return nil, fmt.Errorf("GET /epochs: entry %d is epoch %d", i, r.Epoch)
		}
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("GET /epochs: epoch %d: %w", i, err)
		}
		out = append(out, EpochSetOf(r))
	}
	return out, nil
}

// Height implements Chain (GET /status). Over several validators it is
// the highest height any of them reported (httpchain.go).
func (c HTTPChain) Height(ctx context.Context) (uint64, error) {
	if c.pool != nil {
		return c.pool.height(ctx, c)
	}
	var st httpapi.Status
	_, err := c.get(ctx, "/status", &st)
	return st.Height, err
}

// Submit implements Chain (POST /submit with the Submission envelope),
// through the first validator that answers.
func (c HTTPChain) Submit(ctx context.Context, tx []byte) error {
	return c.each(ctx, func(ctx context.Context, one HTTPChain) (int, error) { return one.submit(ctx, tx) })
}

func (c HTTPChain) submit(ctx context.Context, tx []byte) (int, error) {
	body, _ := json.Marshal(map[string]string{"tx": hex.EncodeToString(tx)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.Base, "/")+"/submit", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusConflict: // duplicate: not a failure (§10.3)
		return resp.StatusCode, nil
	}
	return resp.StatusCode, fmt.Errorf("POST /submit: %s: %s", resp.Status, bytes.TrimSpace(msg))
}

// Settled implements Chain (GET /jobs/{id}).
func (c HTTPChain) Settled(ctx context.Context, job cip11.Hash, runner cip11.Address) (ok bool, err error) {
	err = c.each(ctx, func(ctx context.Context, one HTTPChain) (int, error) {
		jv, code, found, e := one.job(ctx, job)
		if e == nil {
			ok = !found || settled(jv.State, jv.Events, runner) // an unknown job is settled
		}
		return code, e
	})
	return ok, err
}

// job is GET /jobs/{id}; found is false on 404.
func (c HTTPChain) job(ctx context.Context, id cip11.Hash) (jv job.View, code int, found bool, err error) {
	code, err = c.get(ctx, "/jobs/"+hex.EncodeToString(id[:]), &jv)
	if code == http.StatusNotFound {
		return jv, code, false, nil
	}
	return jv, code, err == nil, err
}

// Poll implements Chain (GET /runner/{addr}/jobs; 410 Gone is no jobs).
func (c HTTPChain) Poll(ctx context.Context, runner cip11.Address) ([]*wire.JobAssignment, error) {
	return c.poll(ctx, "/runner/"+hex.EncodeToString(runner[:])+"/jobs")
}

// PollKeyed implements KeyedChain (GET /runner/{addr}/jobs?pubkey=HEX).
func (c HTTPChain) PollKeyed(ctx context.Context, runner cip11.Address, key wire.PubKey) ([]*wire.JobAssignment, error) {
	return c.poll(ctx, "/runner/"+hex.EncodeToString(runner[:])+"/jobs?pubkey="+hex.EncodeToString(key.Bytes()))
}

func (c HTTPChain) poll(ctx context.Context, path string) (jobs []*wire.JobAssignment, err error) {
	err = c.each(ctx, func(ctx context.Context, one HTTPChain) (int, error) {
		var r httpapi.RunnerJobsResponse
		code, e := one.get(ctx, path, &r)
		if code == http.StatusGone {
			jobs = nil
			return code, nil
		}
		jobs = r.Jobs
		return code, e
	})
	return jobs, err
}

var _ httpapi.JobLister = Backend{}

// ListJobs implements httpapi.JobLister (GET /jobs).
func (b Backend) ListJobs(ctx context.Context, q job.Query) ([]job.View, error) {
	views, err := b.V.ListJobs(ctx, q)
	return views, mapErr(err)
}
