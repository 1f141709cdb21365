package chain

import (
	"slices"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

// Stats are the core's cumulative counts (the devnet report). Latencies
// are histograms: their memory does not grow with the samples.
type Stats struct {
	// Accepted counts jobs the core tracked (submitted to it, re-loaded from
	// the journal or known from the block log).
	Accepted                                                           int64
	Submitted, Assigned, Pushed, PushFailed, Acked, Completed, Expired int64
	// SoftFailures and HardFailures count §10.6 push outcomes.
	SoftFailures, HardFailures   int64
	Reselections                 int64
	Cancels                      int64
	FirstDraws, FirstDrawPresent int64
	ResultsForwarded             int64
	// Mode-A certificates (§8.3): admitted to the mempool, and executed in
	// committed blocks (accepted, rejected), with the receipts and the
	// encoded receipt bytes those blocks carried (the §8.4 block-space
	// figure: 188 bytes per receipt).
	CertificatesAdmitted, CertificatesAccepted, CertificatesRejected int64
	CertificateReceipts, CertificateBytes                            int64
	// AckMicros: block committed → JobAck received, in microseconds.
	AckMicros job.Histogram
	// SentMicros: block committed → JobAssignment written (the dispatch
	// part of AckMicros), in microseconds.
	SentMicros job.Histogram
	// JobLatencyBlocks: submit → included verified result.
	JobLatencyBlocks job.Histogram
	Blocks           uint64
}

// Stats returns a copy of the cumulative counts.
func (c *Core) Stats() Stats { return c.stats }

// Failure is one recent failure event (the dashboard's failures panel).
type Failure struct {
	Time   time.Time      `json:"time"`
	Height uint64         `json:"height,string"`
	Kind   job.EventKind  `json:"kind"`
	Job    cip11.Hash     `json:"job"`
	Runner *cip11.Address `json:"runner,omitempty"`
	Detail string         `json:"detail,omitempty"`
}

func (c *Core) failure(at time.Time, h uint64, kind job.EventKind, id cip11.Hash, r *cip11.Address, detail string) {
	f := Failure{Time: at, Height: h, Kind: kind, Job: id, Detail: detail}
	if r != nil {
		a := *r
		f.Runner = &a
	}
	if len(c.failures) >= MaxFailures {
		copy(c.failures, c.failures[1:])
		c.failures = c.failures[:MaxFailures-1]
	}
	c.failures = append(c.failures, f)
}

// Failures returns the recent failure events, oldest first.
func (c *Core) Failures() []Failure { return slices.Clone(c.failures) }

// latRing keeps the last latRingSize push latencies (milliseconds) for the
// dashboard's histogram.
const latRingSize = 2000

type latRing struct {
	v    []float64
	next int
}

func (r *latRing) add(ms float64) {
	if len(r.v) < latRingSize {
		r.v = append(r.v, ms)
		return
	}
	r.v[r.next] = ms
	r.next = (r.next + 1) % latRingSize
}

// PushLatencies returns the recent push latencies in milliseconds.
func (c *Core) PushLatencies() []float64 { return slices.Clone(c.lat.v) }

// maxRecentBlocks is how many block summaries the core keeps.
const maxRecentBlocks = 60

// NoteBlock records a committed block's summary (the driver measures its
// execution time and counts its pushes).
func (c *Core) NoteBlock(s job.BlockSummary) {
	if len(c.recent) >= maxRecentBlocks {
		copy(c.recent, c.recent[1:])
		c.recent = c.recent[:maxRecentBlocks-1]
	}
	c.recent = append(c.recent, s)
}

// LastBlock is the newest block summary NoteBlock recorded (ok false:
// none).
func (c *Core) LastBlock() (s job.BlockSummary, ok bool) {
	if len(c.recent) == 0 {
		return job.BlockSummary{}, false
	}
	return c.recent[len(c.recent)-1], true
}

// RecentBlocks returns the recent block summaries, newest first.
func (c *Core) RecentBlocks() []job.BlockSummary {
	out := slices.Clone(c.recent)
	slices.Reverse(out)
	return out
}

// Pushed records a push the transport sent (§10.1).
func (c *Core) Pushed(a Assignment, h uint64, at time.Time) {
	c.stats.Pushed++
	if t := c.jobs[a.JobID]; t != nil && !t.appliedAt.IsZero() && !at.Before(t.appliedAt) {
		c.stats.SentMicros.Add(uint64(at.Sub(t.appliedAt).Microseconds()))
	}
	r := a.Runner
	c.tevent(a.JobID, h, job.EventPushed, &r, "", at)
}

// PushFailed records a push the transport could not send; the job goes on
// by its deadline and D26 re-selection, like any unanswered seat.
func (c *Core) PushFailed(a Assignment, h uint64, err error, at time.Time) {
	c.stats.PushFailed++
	r := a.Runner
	detail := ""
	if err != nil {
		detail = err.Error()
	}
	c.tevent(a.JobID, h, job.EventPushFailed, &r, detail, at)
	c.failure(at, h, job.EventPushFailed, a.JobID, &r, detail)
	c.noteOutcome(r, job.EventPushFailed, h)
}

// Cancelled records a JobCancel the transport sent (§10.5).
func (c *Core) Cancelled(x Cancel, at time.Time) {
	c.stats.Cancels++
	r := x.Runner
	c.tevent(x.JobID, c.Height(), job.EventCancelled, &r, x.Reason.String(), at)
}

// Outcome records the transport's §10.6 classification of a push.
func (c *Core) Outcome(id cip11.Hash, r cip11.Address, o local.Outcome, h uint64, err error, at time.Time) job.EventKind {
	kind := OutcomeKind(o)
	detail := ""
	if err != nil {
		detail = err.Error()
	}
	c.tevent(id, h, kind, &r, detail, at)
	switch o {
	case local.HardFailure:
		c.stats.HardFailures++
		c.failure(at, h, kind, id, &r, detail)
	case local.SoftFailure:
		c.stats.SoftFailures++
		c.failure(at, h, kind, id, &r, detail)
	}
	c.noteOutcome(r, kind, h)
	return kind
}

// OutcomeKind is the event kind of a §10.6 outcome.
func OutcomeKind(o local.Outcome) job.EventKind {
	switch o {
	case local.Success:
		return job.EventSuccess
	case local.Duplicate:
		return job.EventDuplicate
	case local.SoftFailure:
		return job.EventSoftFailure
	}
	return job.EventHardFailure
}

// Acked records a verified JobAck (§10.2) received at `at`; it returns the
// push latency (from the assignment block's commit) when it is one.
func (c *Core) Acked(id cip11.Hash, r cip11.Address, st wire.AckStatus, at time.Time) (time.Duration, bool) {
	t := c.jobs[id]
	if t == nil {
		return 0, false
	}
	c.tevent(id, c.Height(), job.EventAcked, &r, st.String(), at)
	if st.Kind != wire.AckAccepted {
		return 0, false
	}
	c.stats.Acked++
	if t.appliedAt.IsZero() || at.Before(t.appliedAt) {
		return 0, false
	}
	d := at.Sub(t.appliedAt)
	c.stats.AckMicros.Add(uint64(d.Microseconds()))
	c.lat.add(float64(d.Microseconds()) / 1000)
	return d, true
}

// LastOutcome is a runner's latest push outcome or failure (the dashboard's
// runner table).
type LastOutcome struct {
	Kind   job.EventKind
	Height uint64
}

// noteOutcome keeps r's latest outcome; only registered runners are kept
// (the map is bounded by the registry).
func (c *Core) noteOutcome(r cip11.Address, kind job.EventKind, h uint64) {
	if _, ok := c.runnerIdx[r]; !ok {
		return
	}
	if o, ok := c.outcomes[r]; ok && o.Height > h {
		return
	}
	if c.outcomes == nil {
		c.outcomes = map[cip11.Address]LastOutcome{}
	}
	c.outcomes[r] = LastOutcome{Kind: kind, Height: h}
}

// Runners lists the registered runners, in registration order.
func (c *Core) Runners() []cip11.Address {
	out := make([]cip11.Address, len(c.runnerIdx))
	for a, i := range c.runnerIdx {
		out[i] = a
	}
	return out
}

// RunnerActivity returns, per runner, the assigned jobs whose committee
// holds it and whose result it has not delivered, and its latest outcome.
func (c *Core) RunnerActivity() (inFlight map[cip11.Address]int, last map[cip11.Address]LastOutcome) {
	inFlight = map[cip11.Address]int{}
	for _, id := range c.live {
		t := c.jobs[id]
		if t.state != job.StateAssigned {
			continue
		}
		for _, r := range t.committee {
			if !t.delivered[r] {
				inFlight[r]++
			}
		}
	}
	last = make(map[cip11.Address]LastOutcome, len(c.outcomes))
	for a, o := range c.outcomes {
		last[a] = o
	}
	return inFlight, last
}

// tevent records a transport event in job id's history and tells History.
func (c *Core) tevent(id cip11.Hash, h uint64, kind job.EventKind, r *cip11.Address, detail string, at time.Time) {
	t := c.jobs[id]
	if t == nil {
		return
	}
	n := len(t.events)
	t.event(h, kind, r, detail, at)
	if c.cfg.History != nil && len(t.events) > n {
		c.cfg.History.Record(id, t.events[n])
	}
}

// RestoreOutput gives back a completed job's output an OutputHistory
// recorded before a restart (after the block log was restored: the
// reveals that carried it are not in the log). It reports whether the job
// is in memory (the record is worth keeping).
func (c *Core) RestoreOutput(id cip11.Hash, output []byte) bool {
	t := c.jobs[id]
	if t == nil || len(output) > MaxOutput {
		return false
	}
	t.output, t.hasOutput = slices.Clone(output), true
	return true
}

// Tracks reports whether job id is in the tracker (not archived, not
// unknown): what the event history keeps (the driver compacts it).
func (c *Core) Tracks(id cip11.Hash) bool { return c.jobs[id] != nil }

// RestoreHistory gives back a transport event History recorded before a
// restart (after the block log was restored): it is placed among the job's
// block events by height. It reports whether the job is in memory (the
// record is worth keeping).
func (c *Core) RestoreHistory(id cip11.Hash, e job.Event) bool {
	t := c.jobs[id]
	if t == nil {
		return false
	}
	if len(t.events) >= MaxJobEvents {
		return true
	}
	i := len(t.events)
	for i > 0 && t.events[i-1].Height > e.Height {
		i--
	}
	t.events = slices.Insert(t.events, i, e)
	return true
}
