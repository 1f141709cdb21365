package chain

import (
	"fmt"
	"slices"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/wire"
)

// MaxJobEvents bounds one job's history.
const MaxJobEvents = 64

// MaxFailures is how many recent failure events the core keeps.
const MaxFailures = 64

// job is the node's non-consensus record of one job: its spec, the
// committee as of the last block, the verifier's commit/reveal state and
// its event history.
type trackedJob struct {
	id        cip11.Hash
	p         []byte // the encoded spec (nil for a job known only from the block log)
	payload   []byte // the spec's payload
	submitter cip11.Address
	kind      uint8
	runners   uint32
	timeout   uint64
	state     job.State
	submitted uint64 // block S (0 until included)
	deadline  uint64
	assigned  uint64 // the height of the last (re)selection
	ended     uint64 // the height it became terminal
	committee []cip11.Address
	delivered map[cip11.Address]bool       // ResultSubmit included
	commits   map[cip11.Address]cip11.Hash // admitted commitments
	reveals   map[cip11.Address]cip11.Hash // verified reveals: runner → result
	// commitTx and revealTx are the admitted commit and reveal
	// transactions, which a network block carries beside the ResultSubmit
	// and Verified derived from them (SPEC-NOTES C7).
	commitTx, revealTx map[cip11.Address][]byte
	// outputs are the outputs the verified reveals carry (runner → output,
	// none for a 64-byte reveal), until the job's Verified commits.
	outputs  map[cip11.Address][]byte
	verified bool // Verified placed in a block
	// matched is the committed Verified's matching set; output (hasOutput)
	// the output of its first member whose reveal carried one.
	matched   map[cip11.Address]bool
	output    []byte
	hasOutput bool
	// reoffer: recovered from the journal under an engine's mempool, which
	// lost it with the restart; the engine may hand it back once
	// (Core.Recovered, SubmitJob).
	reoffer   bool
	appliedAt time.Time // when the last assignment block committed
	events    []job.Event
}

type endedJob struct {
	id cip11.Hash
	h  uint64
}

func stateIndex(s job.State) int {
	switch s {
	case job.StateSubmitted:
		return 0
	case job.StatePending:
		return 1
	case job.StateAssigned:
		return 2
	case job.StateCompleted:
		return 3
	}
	return 4
}

func (c *Core) track(spec *JobSpec) *trackedJob {
	return c.trackEncoded(spec, spec.ID(), spec.Encode())
}

// trackEncoded is track of a spec whose id and encoding p the caller has.
func (c *Core) trackEncoded(spec *JobSpec, id cip11.Hash, p []byte) *trackedJob {
	return c.add(&trackedJob{id: id, p: p, payload: spec.Payload, submitter: spec.Submitter, kind: spec.Kind, runners: spec.Runners,
		timeout: spec.TimeoutBlocks})
}

// trackIncluded records a job the block log includes but the journal no
// longer holds (it ended before the journal was compacted).
func (c *Core) trackIncluded(s *chainlog.Submit) *trackedJob {
	return c.add(&trackedJob{id: s.JobID, submitter: s.Submitter, kind: s.JobKind, runners: s.CommitteeSize,
		timeout: uint64(s.TimeoutBlocks)})
}

// add enters t into the tracker as submitted.
func (c *Core) add(t *trackedJob) *trackedJob {
	t.state = job.StateSubmitted
	t.delivered = map[cip11.Address]bool{}
	t.commits = map[cip11.Address]cip11.Hash{}
	t.reveals = map[cip11.Address]cip11.Hash{}
	t.commitTx, t.revealTx = map[cip11.Address][]byte{}, map[cip11.Address][]byte{}
	t.outputs = map[cip11.Address][]byte{}
	c.jobs[t.id] = t
	c.live = append(c.live, t.id)
	c.counts[stateIndex(t.state)]++
	c.stats.Accepted++
	return t
}

func (c *Core) setState(t *trackedJob, s job.State, h uint64) {
	if t.state == s {
		return
	}
	c.counts[stateIndex(t.state)]--
	c.counts[stateIndex(s)]++
	t.state = s
	if s.Terminal() {
		t.ended = h
		c.ended = append(c.ended, endedJob{t.id, h})
	}
}

func (t *trackedJob) event(h uint64, kind job.EventKind, r *cip11.Address, detail string, at time.Time) {
	if len(t.events) >= MaxJobEvents {
		return
	}
	var rp *cip11.Address
	if r != nil {
		a := *r
		rp = &a
	}
	t.events = append(t.events, job.Event{Height: h, Kind: kind, Runner: rp, Detail: detail, Time: at})
}

// observe applies a committed block to the job tracker and returns the
// pushes (every new committee member of every assignment, §10.1) and the
// cancels (§10.5: a member a re-selection dropped, every member of an
// expired job) it calls for. present, if non-nil, is the block's present
// set (first-draw telemetry).
func (c *Core) observe(b *chainlog.Block, at time.Time, present func(cip11.Address) bool) *Committed {
	h := uint64(b.Height)
	res := &Committed{Block: b}
	for _, tx := range b.Txs {
		switch {
		case tx.Submit != nil:
			t := c.jobs[tx.Submit.JobID]
			if t == nil {
				t = c.trackIncluded(tx.Submit)
			}
			t.submitted = h
			c.setState(t, job.StatePending, h)
			c.stats.Submitted++
			t.event(h, job.EventSubmitted, nil, "", at)
		case tx.ResultSubmit != nil:
			if t := c.jobs[tx.ResultSubmit.JobID]; t != nil && slices.Contains(t.committee, tx.ResultSubmit.Runner) {
				r := tx.ResultSubmit.Runner
				t.delivered[r] = true
				t.event(h, job.EventResult, &r, "", at)
				c.noteOutcome(r, job.EventResult, h)
			}
		case tx.Verified != nil:
			if t := c.jobs[tx.Verified.JobID]; t != nil {
				t.verified = true
				t.settle(tx.Verified.Matching)
				if oh, ok := c.cfg.History.(OutputHistory); ok && t.hasOutput {
					oh.RecordOutput(t.id, t.output)
				}
				c.setState(t, job.StateCompleted, h)
				c.stats.Completed++
				c.stats.JobLatencyBlocks.Add(h - t.submitted)
				t.event(h, job.EventCompleted, nil, fmt.Sprintf("%d matching", len(tx.Verified.Matching)), at)
			}
		}
	}
	for _, a := range b.Out.Assignments {
		t := c.jobs[a.JobID]
		if t == nil {
			continue
		}
		prev := t.committee
		t.committee, t.deadline, t.assigned = slices.Clone(a.Committee), uint64(a.DeadlineBlock), uint64(a.AssignmentHeight)
		c.setState(t, job.StateAssigned, h)
		t.appliedAt = at
		kind := job.EventSelected
		if a.Reselection > 0 {
			kind = job.EventReselected
			c.stats.Reselections++
			c.failure(at, h, kind, t.id, nil, fmt.Sprintf("re-selection %d", a.Reselection))
		} else {
			c.stats.Assigned++
			if present != nil && len(a.Committee) > 0 {
				c.stats.FirstDraws++
				if present(a.Committee[0]) {
					c.stats.FirstDrawPresent++
				}
			}
		}
		t.event(h, kind, nil, fmt.Sprintf("committee %v, deadline %d", a.Committee, a.DeadlineBlock), at)
		for _, r := range prev {
			if !slices.Contains(t.committee, r) && !t.delivered[r] {
				res.Cancels = append(res.Cancels, Cancel{JobID: t.id, Runner: r, Reason: wire.CancelReassigned})
			}
		}
		if t.p == nil {
			if present != nil { // a live commit; restoring the block log pushes nothing (a job without its spec there has ended)
				c.log.Warn("no job spec for an assigned job: it cannot be pushed", "job", t.id)
			}
			continue
		}
		for _, r := range a.Committee {
			if slices.Contains(prev, r) {
				continue
			}
			res.Pushes = append(res.Pushes, Assignment{JobID: a.JobID, JobSpec: t.p, AssignmentHeight: uint64(a.AssignmentHeight),
				DeadlineBlock: uint64(a.DeadlineBlock), Runner: r, MultiRunner: t.runners > 1})
		}
	}
	for _, id := range b.Out.Expired {
		if t := c.jobs[id]; t != nil {
			c.setState(t, job.StateExpired, h)
			c.stats.Expired++
			reason, why := job.ExpiredReasonOf(t.events, len(t.committee))
			detail := string(reason) + ": " + why
			t.event(h, job.EventExpired, nil, detail, at)
			c.failure(at, h, job.EventExpired, id, nil, detail)
			for _, r := range t.committee {
				if !t.delivered[r] {
					res.Cancels = append(res.Cancels, Cancel{JobID: id, Runner: r, Reason: wire.CancelExpired})
				}
			}
		}
	}
	c.live = slices.DeleteFunc(c.live, func(id cip11.Hash) bool { return c.jobs[id].state.Terminal() })
	return res
}

// retire moves jobs that ended more than RetainBlocks ago to the archive.
func (c *Core) retire(h uint64) {
	n := 0
	for n < len(c.ended) && c.ended[n].h+c.cfg.RetainBlocks <= h {
		n++
	}
	if n == 0 {
		return
	}
	views := make([]job.View, 0, n)
	for _, e := range c.ended[:n] {
		if t := c.jobs[e.id]; t != nil {
			views = append(views, t.view())
		}
	}
	if err := c.cfg.Archive.Put(views); err != nil {
		// The views stay in memory; the next block tries again.
		c.log.Warn("job archive write failed; keeping the jobs in memory", "jobs", len(views), "err", err)
		return
	}
	for _, e := range c.ended[:n] {
		if t := c.jobs[e.id]; t != nil {
			c.counts[stateIndex(t.state)]--
			c.archived[stateIndex(t.state)]++
			delete(c.jobs, e.id)
		}
	}
	c.ended = slices.Delete(c.ended, 0, n)
}

// settle records a committed Verified: the matching members and the
// majority's output, taken from the first matching member (in the
// block's order) whose reveal carried one. Matching members revealed the
// same result and an output's result is its keccak256 (nodetx.CheckReveal),
// so every matching output is the same bytes and every validator, having
// the reveals the block carries, records the same.
func (t *trackedJob) settle(matching []cip11.Address) {
	t.matched = make(map[cip11.Address]bool, len(matching))
	for _, r := range matching {
		t.matched[r] = true
		if o, ok := t.outputs[r]; ok && !t.hasOutput {
			t.output, t.hasOutput = o, true
		}
	}
	t.outputs = nil // only the majority's output is kept
}

func (t *trackedJob) view() job.View {
	v := job.View{ID: t.id, State: t.state, Submitter: t.submitter, JobKind: t.kind, Runners: t.runners, SubmittedAt: t.submitted,
		DeadlineBlock: t.deadline, AssignmentHeight: t.assigned, Committee: slices.Clone(t.committee), Events: slices.Clone(t.events),
		Payload: job.Bytes(slices.Clone(t.payload)), Members: make([]job.Member, 0, len(t.committee))}
	if t.hasOutput {
		o := job.Bytes(slices.Clone(t.output))
		if o == nil {
			o = job.Bytes{}
		}
		v.Output = &o
	}
	for _, r := range t.committee {
		v.Members = append(v.Members, job.Member{Runner: r, Revealed: t.delivered[r], Matched: t.matched[r]})
	}
	explain(&v)
	return v
}

// explain sets the view's expired reason and committee-short note from
// its state, events and committee (a view archived before they existed
// gets them when read).
func explain(v *job.View) {
	if v.State == job.StateExpired {
		v.ExpiredReason, _ = job.ExpiredReasonOf(v.Events, len(v.Committee))
	}
	if v.State == job.StateAssigned || v.State.Terminal() {
		v.CommitteeShort = job.CommitteeShortOf(v.Runners, len(v.Committee))
	}
}

// Job returns a job's view: from memory, or from the archive for a job
// pruned after it ended.
func (c *Core) Job(id cip11.Hash) (job.View, bool) {
	if t := c.jobs[id]; t != nil {
		return t.view(), true
	}
	v, ok, err := c.cfg.Archive.Get(id)
	if err != nil || !ok {
		return job.View{}, false
	}
	explain(&v)
	return v, true
}

// Settled reports whether runner's part of job is over: the job ended, or
// its result for runner is included (a pruned or unknown job is settled).
func (c *Core) Settled(id cip11.Hash, runner cip11.Address) bool {
	t := c.jobs[id]
	return t == nil || t.state.Terminal() || t.delivered[runner]
}

// Counts is the number of jobs by state, pruned ones included.
func (c *Core) Counts() map[job.State]int {
	m := make(map[job.State]int, 5)
	for i, s := range job.States() {
		m[s] = c.counts[i] + c.archived[i]
	}
	return m
}

// Open lists the jobs not yet terminal, in submission order.
func (c *Core) Open() []cip11.Hash {
	var out []cip11.Hash
	for _, id := range c.live {
		if !c.jobs[id].state.Terminal() {
			out = append(out, id)
		}
	}
	return out
}

// InMemory is the number of jobs the tracker holds (terminal ones not yet
// pruned included).
func (c *Core) InMemory() int { return len(c.jobs) }

// MempoolLen is the number of entries waiting for a block.
func (c *Core) MempoolLen() int { return c.mem.Len() }

// LearnRunnerKey records key for runner (a poll that named its key, §14)
// when runner is registered; the caller has checked the key is runner's.
func (c *Core) LearnRunnerKey(runner cip11.Address, key wire.PubKey) {
	if _, ok := c.runnerIdx[runner]; ok {
		c.pubkeys[runner] = key
	}
}

// RunnerJobs is the poll fallback (§14): the signed assignments of every
// job whose current committee holds runner and whose result it has not
// delivered. A runner's key is learned from its first transaction.
func (c *Core) RunnerJobs(runner cip11.Address) ([]*wire.JobAssignment, error) {
	out := []*wire.JobAssignment{}
	pk, ok := c.pubkeys[runner]
	if !ok {
		return out, nil
	}
	for _, id := range c.live {
		t := c.jobs[id]
		if t.state != job.StateAssigned || t.p == nil || t.delivered[runner] || !slices.Contains(t.committee, runner) {
			continue
		}
		a := &wire.JobAssignment{JobID: id, JobSpec: t.p, JobSpecHash: wire.JobSpecHash(t.p),
			AssignmentHeight: t.assigned, DeadlineBlock: t.deadline, RunnerPubKey: pk}
		if err := a.Sign(c.cfg.ChainID, c.cfg.Key); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Spec is the encoded spec of a job the core tracks (nil when it knows the
// job only from a block: ended before the journal was compacted).
func (c *Core) Spec(id cip11.Hash) []byte {
	if t := c.jobs[id]; t != nil {
		return t.p
	}
	return nil
}

// List is a page of the job listing (GET /jobs): at most q.Limit jobs
// matching q, newest first (job.Key), from memory and, when the archive
// is an [ArchiveLister], from the archive. Views carry no events.
func (c *Core) List(q job.Query) ([]job.View, error) {
	if q.Limit < 1 {
		return nil, nil
	}
	var out []job.View
	seen := map[cip11.Hash]bool{}
	for _, t := range c.jobs {
		v := t.summary()
		if q.Match(v) {
			out = append(out, v)
			seen[v.ID] = true
		}
	}
	job.SortNewestFirst(out)
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	if al, ok := c.cfg.Archive.(ArchiveLister); ok {
		arch, err := al.List(q)
		if err != nil {
			return nil, fmt.Errorf("job archive: %w", err)
		}
		for _, v := range arch {
			if !seen[v.ID] {
				explain(&v)
				v.Events = nil
				out = append(out, v)
			}
		}
		job.SortNewestFirst(out)
		if len(out) > q.Limit {
			out = out[:q.Limit]
		}
	}
	return out, nil
}

// summary is the job's view without its events.
func (t *trackedJob) summary() job.View {
	v := t.view()
	v.Events = nil
	return v
}
