// Package job is the vocabulary a node shares about jobs: a job's states
// and history events, its view (what the HTTP API answers for one job),
// a block's job activity summary and a fixed-size latency histogram. The
// chain core records in these terms, the HTTP API serves them as JSON
// (docs/http-api.md), the archive and events.jsonl persist them and a
// runner's chain view parses them. The package is pure: no I/O, no clock,
// no network or metrics code.
package job

import (
	"fmt"
	"strings"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/textform"
)

// State is a job's place in its life cycle (View.State, the `state`
// label of cip11_jobs and the keys of Dashboard.Jobs). The node's job
// tracker uses these values; docs/http-api.md lists them.
type State string

// Job states.
const (
	StateSubmitted State = "submitted" // accepted by the API, not yet in a block
	StatePending   State = "pending"   // in a block, selection not yet done (M > 1 pending pass, §9.2)
	StateAssigned  State = "assigned"  // a committee is selected and the job is being delivered
	StateCompleted State = "completed" // the result is canonically included
	StateExpired   State = "expired"   // the job ran out of re-selections (§11.2)
)

// Terminal reports whether no block can change the state again.
func (s State) Terminal() bool { return s == StateCompleted || s == StateExpired }

// States lists the job states in lifecycle order.
func States() []State {
	return []State{StateSubmitted, StatePending, StateAssigned, StateCompleted, StateExpired}
}

// EventKind names one step of a job's history (Event.Kind). Every kind the
// node emits is listed here and in docs/http-api.md.
type EventKind string

// Event kinds.
const (
	EventSubmitted   EventKind = "submitted"    // the job was included in a block
	EventSelected    EventKind = "selected"     // a committee was drawn (§9.2); Detail lists it
	EventPushed      EventKind = "pushed"       // a JobAssignment was sent to a runner (§10.1)
	EventPushFailed  EventKind = "push_failed"  // a push could not be sent; Detail is the error
	EventAcked       EventKind = "acked"        // the runner's JobAck arrived (§10.2); Detail is the status
	EventSuccess     EventKind = "success"      // §10.6 push outcome: the runner delivered
	EventDuplicate   EventKind = "duplicate"    // §10.6 push outcome: the runner already had the job
	EventSoftFailure EventKind = "soft_failure" // §10.6 push outcome: soft failure
	EventHardFailure EventKind = "hard_failure" // §10.6 push outcome: hard failure
	EventCommit      EventKind = "commit"       // a JobResultCommit transaction was admitted (CIP-2)
	EventRevealed    EventKind = "revealed"     // a JobResult reveal was admitted and verified
	EventResult      EventKind = "result"       // a runner's result was included in a block (§10.3)
	EventCompleted   EventKind = "completed"    // the result was canonically included
	EventExpired     EventKind = "expired"      // the job expired (§11.2)
	EventReselected  EventKind = "reselected"   // timeout re-selection drew a new committee (§11.2)
	EventCancelled   EventKind = "cancelled"    // a JobCancel was sent (§10.5); Detail is the reason
)

// EventKinds lists every event kind.
func EventKinds() []EventKind {
	return []EventKind{EventSubmitted, EventSelected, EventPushed, EventPushFailed, EventAcked, EventSuccess,
		EventDuplicate, EventSoftFailure, EventHardFailure, EventCommit, EventRevealed, EventResult,
		EventCompleted, EventExpired, EventReselected, EventCancelled}
}

// View is a node's picture of one job (the HTTP API's POST /jobs and
// GET /jobs/{id}).
type View struct {
	// ID is the job id.
	ID cip11.Hash `json:"id"`
	// State is one of the State* constants.
	State State `json:"state"`
	// Submitter is the submitting account.
	Submitter cip11.Address `json:"submitter"`
	// JobKind is the job kind byte.
	JobKind uint8 `json:"job_kind"`
	// Runners is M = verification.runners.
	Runners uint32 `json:"runners"`
	// SubmittedAt is the block the job was included in (0 while submitted).
	SubmittedAt uint64 `json:"submitted_at,string"`
	// DeadlineBlock is the current deadline_block (§10.1, 0 until assigned).
	DeadlineBlock uint64 `json:"deadline_block,string"`
	// AssignmentHeight is the assignment_height of the current committee
	// (§10.1: the block of the last (re)selection; 0 until assigned). A
	// runner checks it is still assigned at the height a push names.
	AssignmentHeight uint64 `json:"assignment_height,string"`
	// Committee is the currently selected runners (always a JSON array).
	Committee []cip11.Address `json:"committee"`
	// Events is the job's history, oldest first (always a JSON array).
	Events []Event `json:"events"`
	// ExpiredReason, set only when State is expired, is why (one of the
	// Expired* constants, docs/http-api.md).
	ExpiredReason ExpiredReason `json:"expired_reason,omitempty"`
	// CommitteeShort, set only when the committee has fewer than Runners
	// members, says so: "asked for 3 runners, the committee has 1 …".
	CommitteeShort string `json:"committee_short,omitempty"`
	// Payload is the job spec's payload (empty when the node knows the job
	// only from the block log).
	Payload Bytes `json:"payload"`
	// Output is the completed job's output: the output the reveals of the
	// verified majority carry (for M = 1 the one reveal's), at most
	// nodetx.MaxOutput bytes. Nil (JSON null) until the job completes, and
	// for a majority whose reveals carried no output.
	Output *Bytes `json:"output"`
	// Members is, per member of the current committee, whether its result
	// is included (revealed) and whether it is among the verified
	// majority (matched); both come from blocks, so every validator of a
	// network answers the same (always a JSON array).
	Members []Member `json:"members"`
}

// ExpiredReason is why a job expired (View.ExpiredReason). Every job
// expires the same way on chain (D26: its re-selections ran out, §11.2);
// the reason is what the node saw of the job's runners before that.
type ExpiredReason string

// Expired reasons.
const (
	// ExpiredNoRunner: no push of the job reached a runner (none was
	// connected, or every push failed) and no runner's result arrived.
	ExpiredNoRunner ExpiredReason = "no_runner_connected"
	// ExpiredNoResult: a runner took the job (delivered push, accepted
	// ack) but no result was included by the last deadline.
	ExpiredNoResult ExpiredReason = "no_result_by_deadline"
	// ExpiredReselectionsUsedUp: runners delivered (a commit, reveal or
	// result), but the job never completed before its re-selections ran
	// out (M > 1 without enough matching results).
	ExpiredReselectionsUsedUp ExpiredReason = "reselections_used_up"
)

// ExpiredReasons lists every expired reason.
func ExpiredReasons() []ExpiredReason {
	return []ExpiredReason{ExpiredNoRunner, ExpiredNoResult, ExpiredReselectionsUsedUp}
}

// ExpiredReasonOf is why a job with history events and final committee
// size committee expired, and a sentence saying so.
func ExpiredReasonOf(events []Event, committee int) (ExpiredReason, string) {
	var took, delivered bool
	for _, e := range events {
		switch e.Kind {
		case EventSuccess, EventDuplicate:
			took = true
		case EventAcked:
			took = took || !strings.HasPrefix(e.Detail, "Reject")
		case EventCommit, EventRevealed, EventResult:
			delivered = true
		}
	}
	tail := " before its re-selections ran out (§11.2, D26)"
	if committee == 0 {
		tail += "; no eligible runner was left to draw"
	}
	switch {
	case delivered:
		return ExpiredReselectionsUsedUp, "runners delivered, but no matching result completed the job" + tail
	case took:
		return ExpiredNoResult, "a runner took the job, but no result was included by its deadline" + tail
	}
	return ExpiredNoRunner, "no push reached a runner (none of the committee was connected)" + tail
}

// CommitteeShortOf is View.CommitteeShort for a job that asked for m
// runners and has a committee of n ("" when n ≥ m).
func CommitteeShortOf(m uint32, n int) string {
	switch {
	case n >= int(m):
		return ""
	case n == 1:
		return fmt.Sprintf("asked for %d runners, the committee has 1: its result is unchecked by any other runner", m)
	case m == 1:
		return "asked for 1 runner, the committee has 0"
	}
	return fmt.Sprintf("asked for %d runners, the committee has %d", m, n)
}

// Member is one committee member's part in a job (View.Members).
type Member struct {
	// Runner is the member's address.
	Runner cip11.Address `json:"runner"`
	// Revealed: a block included its result (ResultSubmit).
	Revealed bool `json:"revealed"`
	// Matched: its result is the verified majority's (Verified.matching).
	Matched bool `json:"matched"`
}

// Bytes is a byte string written as lowercase hex in JSON.
type Bytes []byte

// MarshalText writes lowercase hex.
func (b Bytes) MarshalText() ([]byte, error) { return textform.AppendHex(nil, b), nil }

// UnmarshalText accepts lowercase hex of even length.
func (b *Bytes) UnmarshalText(s []byte) error {
	v, err := textform.ParseHex(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Event is one step in a job's history.
type Event struct {
	// Height is the block height the event belongs to.
	Height uint64 `json:"height,string"`
	// Kind is one of the Event* constants.
	Kind EventKind `json:"kind"`
	// Runner is the runner concerned, if any.
	Runner *cip11.Address `json:"runner,omitempty"`
	// Detail is free text (ack status, cancel reason, …).
	Detail string `json:"detail,omitempty"`
	// Time is the wall-clock time the node recorded the event.
	Time time.Time `json:"time"`
}

// BlockSummary is a block's job activity: one row of the dashboard's
// recent-blocks table.
type BlockSummary struct {
	// Height is the block height (decimal string).
	Height uint64 `json:"height,string"`
	// Time is when the block was applied.
	Time time.Time `json:"time"`
	// Txs is the number of transactions in the block.
	Txs int `json:"txs"`
	// Assignments is the number of job assignments the block made.
	Assignments int `json:"assignments"`
	// Pushed is the number of JobAssignment pushes sent for the block.
	Pushed int `json:"pushed"`
	// ExecMillis is the block's execution time in milliseconds (display
	// only; a non-finite value is sent as 0).
	ExecMillis float64 `json:"exec_ms"`
}
