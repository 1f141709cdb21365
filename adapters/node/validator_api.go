package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/adapters/node/httpapi"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

// What the validator answers: the QUIC server's callbacks, admission of
// transactions and jobs (its Mempool), and the queries of the HTTP API
// and of in-process runners.

func (v *Validator) onOutcome(o cquic.Outcome) {
	v.inbox.post(event{kind: evOutcome, at: v.now(), o: o})
}

// onPushError records a paced push that failed after Applied returned.
func (v *Validator) onPushError(a cquic.Assignment, err error) {
	v.inbox.post(event{kind: evPushFailed, at: v.now(), h: v.Height(), err: err,
		a: chain.Assignment{JobID: a.JobID, Runner: a.Runner}})
}

// onPushed records a JobAssignment the server sent (§10.1).
func (v *Validator) onPushed(a cquic.Assignment) {
	v.inbox.post(event{kind: evPushed, at: v.now(), h: v.Height(), a: chain.Assignment{JobID: a.JobID, Runner: a.Runner}})
}

// onAck is a verified JobAck (§10.2): push latency is measured from the
// block's commit to here.
func (v *Validator) onAck(id cip11.Hash, r cip11.Address, st wire.AckStatus) {
	if st.Kind == wire.AckDuplicate {
		v.dupAcks.Add(1) // the runner took another validator's push first (D33)
	}
	v.inbox.post(event{kind: evAck, at: v.now(), a: chain.Assignment{JobID: id, Runner: r}, ack: st})
}

// validatorMempool is the server's Mempool: forwarded result transactions
// (§10.3) enter the same path as POST /submit.
type validatorMempool Validator

func (m *validatorMempool) Submit(raw []byte, _ wire.Transaction) error {
	_, err := (*Validator)(m).SubmitTx(raw)
	if errors.Is(err, ErrDuplicate) {
		return nil
	}
	return err
}

// SubmitTx is transaction admission (POST /submit and the QUIC result
// path): decode and verify, then hand to the mempool or the verifier. With
// external consensus the transaction goes to the engine's mempool, whose admission
// check is AdmitTx on every validator.
func (v *Validator) SubmitTx(raw []byte) (*Tx, error) { return v.submitTx(context.Background(), raw) }

// submitTx is SubmitTx for a caller with a context (the HTTP API): without
// external consensus, ErrBusy when the loop does not take the admission before ctx
// ends.
func (v *Validator) submitTx(ctx context.Context, raw []byte) (*Tx, error) {
	if e := v.cfg.Broadcaster; e != nil {
		tx, err := DecodeTx(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		return tx, e.BroadcastTx(raw)
	}
	return v.admitTx(ctx, raw)
}

// AdmitTx is the core's transaction admission (SubmitTx without external consensus;
// the engine's mempool check with one).
func (v *Validator) AdmitTx(raw []byte) (*Tx, error) { return v.admitTx(context.Background(), raw) }

func (v *Validator) admitTx(ctx context.Context, raw []byte) (*Tx, error) {
	var tx *Tx
	var err error
	if derr := v.doCtx(ctx, func(c *chain.Core) { tx, err = c.SubmitTx(raw, v.now()) }); derr != nil {
		return nil, derr
	}
	if err == nil && tx != nil && (tx.Kind == TxCommit || tx.Kind == TxReveal) {
		v.cfg.Metrics.ResultForwarded()
	}
	if err == nil && tx != nil && tx.Kind == TxCommit && v.srv != nil && v.cfg.Broadcaster == nil {
		// §10.3: a reveal the server holds for this runner's push may go
		// once the commitment is included (issue 18 item 7). On one
		// validator its core is the chain: the admitted commitment is the
		// state every later block executes against, no block carries it
		// and no mempool gossips, so admission is its inclusion. With
		// external consensus admission is only CometBFT's mempool (gossiped at once):
		// the reveal waits for a committed block that carries the
		// commitment (FinalizeBlock, released at its commit).
		_ = v.srv.ReleaseReveal(tx.JobID, tx.From)
	}
	return tx, err
}

// SubmitJob accepts a job: the spec is checked, written to jobs.jsonl
// (fsynced unless NoSync) and queued for the next block. With external consensus
// the spec goes to the engine's mempool, whose admission check is
// AdmitJob on every validator.
func (v *Validator) SubmitJob(spec *JobSpec) (cip11.Hash, error) {
	return v.submitJob(context.Background(), spec)
}

// submitJob is SubmitJob for a caller with a context (the HTTP API):
// without external consensus, ErrBusy when the loop does not take the admission
// before ctx ends.
func (v *Validator) submitJob(ctx context.Context, spec *JobSpec) (cip11.Hash, error) {
	if e := v.cfg.Broadcaster; e != nil {
		if err := spec.Check(); err != nil {
			return spec.ID(), err
		}
		return spec.ID(), e.BroadcastJob(spec.Encode())
	}
	return v.admitJob(ctx, spec)
}

// AdmitJob is the core's job admission (SubmitJob without external consensus; the
// engine's mempool check with one, where the job is journaled and tracked
// but pooled only in the engine's mempool).
func (v *Validator) AdmitJob(spec *JobSpec) (cip11.Hash, error) {
	return v.admitJob(context.Background(), spec)
}

func (v *Validator) admitJob(ctx context.Context, spec *JobSpec) (cip11.Hash, error) {
	var id cip11.Hash
	var err error
	if derr := v.doCtx(ctx, func(c *chain.Core) {
		id, err = c.SubmitJob(spec, v.now())
		if err != nil && c.Err() != nil {
			err = v.fail(c, err)
		}
	}); derr != nil {
		return id, derr
	}
	return id, err
}

// ModeACoverage is the §8.3 proven-until coverage after the last applied
// block: registered runners whose presence_proven_until covers the next
// block, and registered runners.
func (v *Validator) ModeACoverage() (proven, registered int, err error) {
	if derr := v.do(func(c *chain.Core) { proven, registered, err = c.ModeACoverage() }); derr != nil {
		return 0, 0, derr
	}
	return proven, registered, err
}

// Stats returns a copy of the cumulative counts.
func (v *Validator) Stats() Stats {
	var s Stats
	_ = v.do(func(c *chain.Core) { s = c.Stats() })
	return s
}

// JobStates counts jobs by state, and lists those not terminal.
func (v *Validator) JobStates() (counts map[job.State]int, open []cip11.Hash) {
	_ = v.do(func(c *chain.Core) { counts, open = c.Counts(), c.Open() })
	return counts, open
}

// Job returns a job's view (an ended job's from the archive once it left
// memory).
func (v *Validator) Job(id cip11.Hash) (jv job.View, ok bool) {
	jv, ok, _ = v.job(context.Background(), id)
	return jv, ok
}

// job is Job for a caller with a context (the HTTP API).
func (v *Validator) job(ctx context.Context, id cip11.Hash) (jv job.View, ok bool, err error) {
	err = v.doCtx(ctx, func(c *chain.Core) { jv, ok = c.Job(id) })
	return jv, ok, err
}

// Settled reports whether runner's part of job is over.
func (v *Validator) Settled(id cip11.Hash, runner cip11.Address) (settled bool, err error) {
	err = v.do(func(c *chain.Core) { settled = c.Settled(id, runner) })
	return settled, err
}

// RunnerJobs is the poll fallback (§14): the signed assignments of every
// job whose current committee holds runner and whose result it has not
// delivered. In Phase3 (CIP11_POLL_DISABLED) it is ErrPollDisabled, the
// HTTP API's 410 Gone.
func (v *Validator) RunnerJobs(runner cip11.Address) (out []*wire.JobAssignment, err error) {
	return v.runnerJobs(context.Background(), runner)
}

// runnerJobs is RunnerJobs for a caller with a context (the HTTP API).
func (v *Validator) runnerJobs(ctx context.Context, runner cip11.Address) (out []*wire.JobAssignment, err error) {
	if v.p.PollDisabled {
		return nil, ErrPollDisabled
	}
	if derr := v.doCtx(ctx, func(c *chain.Core) { out, err = c.RunnerJobs(runner) }); derr != nil {
		return nil, derr
	}
	return out, err
}

// RunnerJobsFor is RunnerJobs for a runner that named its public key
// (httpapi.KeyedPoller): the key is learned first, so a validator that
// restarted answers before the runner's next transaction.
func (v *Validator) RunnerJobsFor(runner cip11.Address, key wire.PubKey) (out []*wire.JobAssignment, err error) {
	return v.runnerJobsFor(context.Background(), runner, key)
}

// runnerJobsFor is RunnerJobsFor for a caller with a context (the HTTP API).
func (v *Validator) runnerJobsFor(ctx context.Context, runner cip11.Address, key wire.PubKey) ([]*wire.JobAssignment, error) {
	if a, aerr := key.RunnerAddress(); aerr != nil || a != runner {
		return nil, fmt.Errorf("%w: the key is not runner %s's", ErrBadRequest, runner)
	}
	if derr := v.doCtx(ctx, func(c *chain.Core) { c.LearnRunnerKey(runner, key) }); derr != nil {
		return nil, derr
	}
	return v.runnerJobs(ctx, runner)
}

// Status is the node's identity and counts (GET /status).
func (v *Validator) Status() httpapi.Status {
	st, _ := v.status(context.Background())
	return st
}

// status is Status for the HTTP API. It never waits for the loop: the
// core's facts are those the loop published after its last step
// (publishFacts), so a validator busy committing a block, or wedged,
// still answers (a wedged one says stalled once its height stops moving).
func (v *Validator) status(context.Context) (httpapi.Status, error) {
	quicAddr := "off"
	var connected, present int
	if v.srv != nil {
		quicAddr = v.srv.Addr().String()
		connected, present = v.srv.RunnerCounts()
	}
	facts, engine := v.consensusFacts()
	lf := v.facts.Load()
	snap := v.activeSnapshot(lf.height)
	st := httpapi.Status{
		ChainID: uint64(v.g.ChainID), Height: lf.height, BlockTimeMillis: v.blockTimeMillis(),
		QUICAddr: quicAddr, PeerKey: fmt.Sprintf("%x", v.PeerKey()), ValidatorSetHash: snap.Hash(),
		SubsetEpoch: snap.Epoch(), Runners: int(lf.runners), Connected: connected, Present: present,
		Mempool: v.mempoolLen(lf.mempool), PollDisabled: v.p.PollDisabled, Version: "cip11 r1.3.1",
	}
	v.addHealth(&st, v.now(), lf.last, lf.ok, facts, engine) // health.go
	return st, nil
}

// mempoolLen is what waits for a block: the engine's mempool when it is
// the only one and reports its size (MempoolSizer), else the core's pool
// of core transactions.
func (v *Validator) mempoolLen(core int) int {
	if e, ok := v.cfg.Broadcaster.(MempoolSizer); ok {
		return e.Size()
	}
	return core
}

// committedRegistry is the QUIC server's view of the registry: views at
// heights the validator has committed, never the block the loop is
// executing (quic.CommittedRegistry). A later height wraps
// state.ErrUnknownHeight, which admission answers retryably.
type committedRegistry struct{ v *Validator }

func (r committedRegistry) At(h uint64) (state.RegistryView, error) {
	if c := r.v.height.Load(); h > c {
		return nil, fmt.Errorf("%w: height %d is not committed yet (at %d)", state.ErrUnknownHeight, h, c)
	}
	return r.v.registry().At(h)
}

// registryRef holds the state store's registry (Validator.reg).
type registryRef struct{ state.Registry }

// registry is the state store's registry, safe off the loop: the store
// changes only when a snapshot is installed (InstallSnapshot).
func (v *Validator) registry() state.Registry { return v.reg.Load().Registry }

// blockTimeMillis is the configured block time; 0 under external consensus, whose
// consensus decides when blocks come.
func (v *Validator) blockTimeMillis() int64 {
	if v.cfg.Broadcaster != nil {
		return 0
	}
	return v.cfg.BlockTime.Milliseconds()
}

// ListJobs is a page of the job listing (GET /jobs): at most q.Limit jobs
// matching q, newest first (job.Key), from memory and the job archive.
// Included jobs list the same on every validator of a network; a job in
// this validator's mempool only (state submitted) lists first here and
// nowhere else.
func (v *Validator) ListJobs(ctx context.Context, q job.Query) (views []job.View, err error) {
	if derr := v.doCtx(ctx, func(c *chain.Core) { views, err = c.List(q) }); derr != nil {
		return nil, derr
	}
	return views, err
}
