package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/wire"
)

// Sentinel errors. A [Backend] wraps one of the first four to choose the HTTP
// status of a failed request; any other error answers 500 Internal Server
// Error. Callers test them with errors.Is.
var (
	// ErrBadRequest: the request is malformed or invalid (400 Bad Request).
	ErrBadRequest = errors.New("httpapi: bad request")
	// ErrConflict: the request duplicates existing state, e.g. an already
	// known job or transaction (409 Conflict).
	ErrConflict = errors.New("httpapi: conflict")
	// ErrUnavailable: the node cannot serve the request right now, e.g. it is
	// syncing, shutting down or its mempool is full (503 Service Unavailable).
	ErrUnavailable = errors.New("httpapi: unavailable")
	// ErrNotFound: the requested object does not exist (404 Not Found).
	ErrNotFound = errors.New("httpapi: not found")
	// ErrNilBackend: [NewHandler] was given a nil [Backend].
	ErrNilBackend = errors.New("httpapi: nil backend")
	// ErrNilRegisterer: [PrometheusMetrics] was given a nil prometheus.Registerer.
	ErrNilRegisterer = errors.New("httpapi: nil prometheus registerer")
)

// Backend is what the node provides to the HTTP API. Its methods are called
// concurrently from request goroutines and must be safe for that. Each
// takes the request's context, bounded by Options.BackendTimeout: a
// backend that cannot start the work before it ends returns an error
// wrapping ErrUnavailable or the context's error (503), never blocks on.
type Backend interface {
	// SubmitJob admits a new job (POST /jobs). The request has already passed
	// [JobRequest.Validate]. Errors wrapping ErrBadRequest answer 400,
	// ErrConflict 409, ErrUnavailable 503, anything else 500.
	SubmitJob(ctx context.Context, req JobRequest) (job.View, error)
	// Job returns the job with the given id (GET /jobs/{id}); false answers
	// 404, an error as SubmitJob's.
	Job(ctx context.Context, id cip11.Hash) (job.View, bool, error)
	// RunnerJobs returns the assignments currently open for runner (GET
	// /runner/{addr}/jobs, the §14 poll fallback). It is not called when
	// Options.PollDisabled is set (CIP11_POLL_DISABLED: 410 Gone).
	RunnerJobs(ctx context.Context, runner cip11.Address) ([]*wire.JobAssignment, error)
	// Runner returns runner's Runner Registry record as of the node's
	// committed height (GET /runner/{addr}: the runner's on-chain
	// last_heartbeat, §7.1); false answers 404 (not registered).
	Runner(ctx context.Context, runner cip11.Address) (RunnerView, bool, error)
	// SubmitTx admits raw tx_bytes (the node's Transaction::write encoding)
	// through the normal transaction-admission path (POST /submit, §10.3).
	// Errors wrapping ErrBadRequest (undecodable or invalid transaction)
	// answer 400; ErrConflict (already known) answers 409 with the returned
	// SubmitResult still in the body; ErrUnavailable 503; anything else 500.
	SubmitTx(ctx context.Context, raw []byte) (SubmitResult, error)
	// Status reports the node's current state (GET /status; GET /healthz
	// answers 503 on an error).
	Status(ctx context.Context) (Status, error)
	// Dashboard returns the data behind GET / and GET /dashboard.json.
	Dashboard(ctx context.Context) (Dashboard, error)
}

// JobRequest is the body of POST /jobs. Submitter, job_kind, runners and
// timeout_blocks are required; work_ms, payload and nonce default to zero
// or empty.
type JobRequest struct {
	// Submitter is the account submitting the job (40 lowercase hex digits).
	Submitter cip11.Address `json:"submitter"`
	// JobKind is the job kind byte (0–255).
	JobKind uint8 `json:"job_kind"`
	// Runners is M = verification.runners, the committee size (≥ 1).
	Runners uint32 `json:"runners"`
	// TimeoutBlocks is job_spec.timeout_blocks (≥ 1), a decimal string.
	TimeoutBlocks uint64 `json:"timeout_blocks,string"`
	// WorkMillis is how long the (simulated) work takes, in milliseconds.
	WorkMillis uint32 `json:"work_ms"`
	// Payload is the opaque job input, lowercase hex.
	Payload wire.Bytes `json:"payload"`
	// Nonce distinguishes otherwise identical jobs of one submitter, a
	// decimal string.
	Nonce uint64 `json:"nonce,string"`
}

// Validate checks the request's field ranges. Every error wraps
// ErrBadRequest. The handler calls it before SubmitJob; a backend may call it
// again.
func (r JobRequest) Validate() error {
	switch {
	case r.Runners < 1:
		return badRequest("runners must be at least 1")
	case r.TimeoutBlocks < 1:
		return badRequest("timeout_blocks must be at least 1")
	}
	return nil
}

// RunnerView is a runner's Runner Registry record (GET /runner/{addr}) as
// of the committed block Height.
type RunnerView struct {
	// Address is the runner.
	Address cip11.Address `json:"address"`
	// Health is the registry HealthStatus: "healthy", "unhealthy", "paused"
	// or "deregistered".
	Health string `json:"health"`
	// LastHeartbeat is the height of the runner's last included on-chain
	// heartbeat (§7.1 floor: eligible while Height − LastHeartbeat ≤
	// HEARTBEAT_TIMEOUT_BLOCKS).
	LastHeartbeat uint64 `json:"last_heartbeat,string"`
	// Height is the committed block the record is read at.
	Height uint64 `json:"height,string"`
}

// Submit statuses (SubmitResult.Status).
const (
	SubmitAccepted  = "accepted"  // the transaction entered the mempool
	SubmitDuplicate = "duplicate" // the transaction was already known (409)
)

// SubmitResult is the answer to POST /submit.
type SubmitResult struct {
	// TxHash is the transaction's hash.
	TxHash cip11.Hash `json:"tx_hash"`
	// Status is SubmitAccepted or SubmitDuplicate.
	Status string `json:"status"`
}

// Status is the node's current state (GET /status).
type Status struct {
	// ChainID is the chain id (decimal string).
	ChainID uint64 `json:"chain_id,string"`
	// Height is the last applied block (decimal string).
	Height uint64 `json:"height,string"`
	// BlockTimeMillis is the target block interval.
	BlockTimeMillis int64 `json:"block_time_ms"`
	// QUICAddr is the address the CIP-11 QUIC listener is bound to.
	QUICAddr string `json:"quic_addr"`
	// PeerKey is the validator's Ed25519 peer_pubkey, lowercase hex.
	PeerKey string `json:"peer_key"`
	// ValidatorSetHash identifies the active validator-set snapshot (§5.4).
	ValidatorSetHash cip11.Hash `json:"validator_set_hash"`
	// SubsetEpoch is the active subset epoch (§5.3, decimal string).
	SubsetEpoch uint64 `json:"subset_epoch,string"`
	// Runners is the number of registered runners.
	Runners int `json:"runners"`
	// Connected is the number of authenticated runner connections.
	Connected int `json:"connected"`
	// Present is the number of runners in local presence (§7.4).
	Present int `json:"present"`
	// Mempool is the number of transactions waiting in the mempool.
	Mempool int `json:"mempool"`
	// PollDisabled reports CIP11_POLL_DISABLED. The handler always sets it
	// from Options.PollDisabled, which decides what the poll endpoint does.
	PollDisabled bool `json:"poll_disabled"`
	// Version is the node software version.
	Version string `json:"version"`

	// Health (docs/http-api.md, GET /status and GET /healthz).

	// LatestBlockHeight is the consensus engine's latest block (CometBFT's
	// block store on a network validator; Height on a single validator).
	LatestBlockHeight uint64 `json:"latest_block_height,string"`
	// EarliestBlockHeight is the lowest height whose block this validator
	// still holds (retention, docs/storage.md "Retention"): 1 unless its
	// block log was pruned (ValidatorConfig.KeepBlocks) or it was restored
	// from a snapshot (the ended jobs submitted below it are then gone
	// from its job archive).
	EarliestBlockHeight uint64 `json:"earliest_block_height,string"`
	// LatestBlockTime is that block's time: its CometBFT header time on a
	// network validator, when it was applied on a single validator;
	// omitted before the first block this process knows a time for.
	LatestBlockTime time.Time `json:"latest_block_time,omitzero"`
	// LastBlockAgeMillis is how long ago, by this validator's clock, its
	// height last moved (since it started, when it has not moved since).
	LastBlockAgeMillis int64 `json:"last_block_age_ms"`
	// StallAfterMillis is the stall threshold: the stall block count
	// (cip11 validator -stall-blocks) times the nominal block interval.
	StallAfterMillis int64 `json:"stall_after_ms"`
	// Stalled: the height has not moved for StallAfterMillis.
	Stalled bool `json:"stalled"`
	// CatchingUp: the consensus engine is block-syncing from its peers
	// (CometBFT's catching_up); false on a single validator.
	CatchingUp bool `json:"catching_up"`
	// Peers is the number of connected consensus peers (0 on a single
	// validator).
	Peers int `json:"peers"`
	// Validators is the active validator set with each member's last
	// signed height (network validators only).
	Validators []ValidatorHealth `json:"validators,omitempty"`
	// Failed is the validator's fatal failure, if any (a failed validator
	// accepts nothing more and its process exits).
	Failed string `json:"failed,omitempty"`
}

// ValidatorHealth is one member of the active validator set, as a network
// validator sees it.
type ValidatorHealth struct {
	// Index is the member's position in the active set (share index − 1).
	Index int `json:"index"`
	// PeerKey is its Ed25519 peer_pubkey, lowercase hex.
	PeerKey string `json:"peer_key"`
	// Address is its CometBFT vote-key address, uppercase hex (as in
	// CometBFT's commits).
	Address string `json:"address"`
	// Self: this validator.
	Self bool `json:"self"`
	// Connected: a connected consensus peer (true for Self).
	Connected bool `json:"connected"`
	// LastSignedHeight is the greatest height whose commit, among the
	// recent ones this validator read, carries the member's signature
	// (decimal string; "0": none seen).
	LastSignedHeight uint64 `json:"last_signed_height,string"`
}

// Health is GET /healthz's body.
type Health struct {
	// Status is "ok" (answered 200) or why not (503): "failed",
	// "stalled" or "catching_up", in that order of precedence.
	Status string `json:"status"`
	// Reason says it in words ("" when ok).
	Reason string `json:"reason,omitempty"`
	// Height, LatestBlockTime, LastBlockAgeMillis, StallAfterMillis,
	// CatchingUp and Peers are GET /status's.
	Height             uint64    `json:"height,string"`
	LatestBlockTime    time.Time `json:"latest_block_time,omitzero"`
	LastBlockAgeMillis int64     `json:"last_block_age_ms"`
	StallAfterMillis   int64     `json:"stall_after_ms"`
	CatchingUp         bool      `json:"catching_up"`
	Peers              int       `json:"peers"`
}

// Health statuses.
const (
	HealthOK         = "ok"
	HealthFailed     = "failed"
	HealthStalled    = "stalled"
	HealthCatchingUp = "catching_up"
)

// HealthOf is the health a status reports: failed, then stalled, then
// catching up, else ok. A network validator's stall reason counts its
// consensus peers.
func HealthOf(s Status) Health {
	h := Health{Status: HealthOK, Height: s.Height, LatestBlockTime: s.LatestBlockTime, LastBlockAgeMillis: s.LastBlockAgeMillis,
		StallAfterMillis: s.StallAfterMillis, CatchingUp: s.CatchingUp, Peers: s.Peers}
	switch {
	case s.Failed != "":
		h.Status, h.Reason = HealthFailed, "the validator failed: "+s.Failed
	case s.Stalled:
		h.Status = HealthStalled
		h.Reason = fmt.Sprintf("no block for %d ms (height %d; stalled after %d ms)", s.LastBlockAgeMillis, s.Height, s.StallAfterMillis)
		if len(s.Validators) > 0 {
			h.Reason += fmt.Sprintf("; %d consensus peers", s.Peers)
		}
	case s.CatchingUp:
		h.Status = HealthCatchingUp
		h.Reason = fmt.Sprintf("block-syncing from %d peers (height %d)", s.Peers, s.Height)
	}
	return h
}

// Display caps applied by the handler to Dashboard lists.
const (
	// MaxDashboardRunners caps ConnectedRunners, PresentRunners and
	// Runners.
	MaxDashboardRunners = 200
	// MaxDashboardBlocks caps RecentBlocks (newest first, so the first
	// entries are kept).
	MaxDashboardBlocks = 100
	// MaxDashboardSamples caps PushLatencyMillis (the last entries are kept).
	MaxDashboardSamples = 4096
	// MaxDashboardFailures caps Failures (newest first, so the first
	// entries are kept).
	MaxDashboardFailures = 50
)

// Dashboard is the data behind the dashboard page (GET /dashboard.json).
type Dashboard struct {
	// Status is the node status, as in GET /status.
	Status Status `json:"status"`
	// RecentBlocks is the latest blocks, newest first.
	RecentBlocks []job.BlockSummary `json:"recent_blocks"`
	// Jobs counts jobs by state (State* keys).
	Jobs map[job.State]int `json:"jobs"`
	// PushLatencyMillis holds recent push→ack latency samples in
	// milliseconds; the page draws their histogram. Non-finite or negative
	// samples are dropped.
	PushLatencyMillis []float64 `json:"push_latency_ms"`
	// ConnectedRunners lists authenticated runners (capped at
	// MaxDashboardRunners; Status.Connected has the full count).
	ConnectedRunners []cip11.Address `json:"connected_runners"`
	// PresentRunners lists runners in local presence (capped at
	// MaxDashboardRunners; Status.Present has the full count).
	PresentRunners []cip11.Address `json:"present_runners"`

	// Now is the node's clock when the snapshot was taken; the page divides
	// the change of Totals between two snapshots by the change of Now.
	Now time.Time `json:"now"`
	// StartedAt is when this validator process opened its data directory
	// (a change between two snapshots is a restart).
	StartedAt time.Time `json:"started_at"`
	// Totals are cumulative counters (throughput is their rate).
	Totals Totals `json:"totals"`
	// Failures is the last failure events, newest first (capped at
	// MaxDashboardFailures).
	Failures []Failure `json:"failures"`
	// Runners is one row per known runner, ascending by address (capped at
	// MaxDashboardRunners; Status.Runners has the registered count).
	Runners []RunnerRow `json:"runners"`
	// ModeA is the §8.3 proven-until coverage; absent unless the chain has
	// Mode-A certificates (PRESENCE_HARD_EXCLUDE_ENABLED).
	ModeA *ModeAStatus `json:"mode_a,omitempty"`
}

// ModeAStatus is the dashboard's §8.3 Mode-A summary.
type ModeAStatus struct {
	// Effective: the §8.4 guard holds, so PresenceInput is the proven set
	// (hard exclude); otherwise the certificates are shadow state.
	Effective bool `json:"effective"`
	// Proven counts registered runners whose presence_proven_until covers
	// the next block; Registered the registered runners.
	Proven     int `json:"proven"`
	Registered int `json:"registered"`
	// Accepted and Rejected count the certificates executed in blocks this
	// process applied.
	Accepted int64 `json:"certificates_accepted"`
	Rejected int64 `json:"certificates_rejected"`
}

// Totals are the node's cumulative counters since its start. Counters
// rebuilt from the block log on start (Submitted, Assigned, Completed,
// Expired, Reselections, Blocks) survive a restart; the others are counted
// by this process and start again from zero, which the page treats as a
// counter reset.
type Totals struct {
	// Accepted is the jobs POST /jobs accepted (including those not yet in
	// a block), as recovered from the job file on start.
	Accepted int64 `json:"accepted"`
	// Submitted is the jobs included in a block (submitted → pending).
	Submitted int64 `json:"submitted"`
	// Assigned is the jobs given their first committee (§9.2).
	Assigned int64 `json:"assigned"`
	// Pushed is the JobAssignment pushes sent (§10.1).
	Pushed int64 `json:"pushed"`
	// PushFailed is the pushes that could not be sent.
	PushFailed int64 `json:"push_failed"`
	// Acked is the accepted JobAcks (§10.2).
	Acked int64 `json:"acked"`
	// Completed is the jobs whose result was canonically included.
	Completed int64 `json:"completed"`
	// Expired is the jobs that ran out of re-selections (§11.2).
	Expired int64 `json:"expired"`
	// Reselections is the timeout re-selections (§11.2).
	Reselections int64 `json:"reselections"`
	// SoftFailures and HardFailures count §10.6 push outcomes of those
	// kinds, as recorded in the jobs' histories: a soft failure is a
	// JobAck{Reject} or another framed answer, a hard failure no framed
	// answer within ACK_TIMEOUT_BLOCKS (a timed-out push).
	SoftFailures int64 `json:"soft_failures"`
	HardFailures int64 `json:"hard_failures"`
	// Refused counts refused runner handshakes by §12.5 Goodbye reason
	// name (always a JSON object).
	Refused map[string]int64 `json:"refused"`
	// Restarts is the validator restarts the node knows of: 1 when this
	// process recovered an existing chain from its data directory, else 0.
	Restarts int64 `json:"restarts"`
	// Blocks is the last committed height.
	Blocks uint64 `json:"blocks"`
	// PingsOK and PingsRejected count runner HeartbeatPings (§6.3).
	PingsOK       int64 `json:"pings_ok"`
	PingsRejected int64 `json:"pings_rejected"`
}

// FailureKind names a failure event (Failure.Kind): the failing job event
// kinds plus a refused handshake and a validator restart.
type FailureKind string

// Failure kinds.
const (
	FailurePushFailed              = FailureKind(job.EventPushFailed)  // a push could not be sent
	FailureSoftFailure             = FailureKind(job.EventSoftFailure) // §10.6 soft failure: JobAck{Reject} or another framed answer (runner alive)
	FailureHardFailure             = FailureKind(job.EventHardFailure) // §10.6 hard failure: no framed answer within ACK_TIMEOUT_BLOCKS (timed out)
	FailureReselected              = FailureKind(job.EventReselected)  // §11.2 timeout re-selection
	FailureExpired                 = FailureKind(job.EventExpired)     // §11.2 the job expired
	FailureRefused     FailureKind = "refused"                         // a runner handshake was refused (§12.5); Detail is the reason
	FailureRestart     FailureKind = "restart"                         // the validator started over an existing chain
)

// FailureKinds lists every failure kind.
func FailureKinds() []FailureKind {
	return []FailureKind{FailurePushFailed, FailureSoftFailure, FailureHardFailure, FailureReselected, FailureExpired,
		FailureRefused, FailureRestart}
}

// Failure is one failure event of the dashboard's failures panel.
type Failure struct {
	// Time is the wall-clock time the node recorded it (zero for events
	// rebuilt from the block log on start).
	Time time.Time `json:"time"`
	// Height is the block height it belongs to.
	Height uint64 `json:"height,string"`
	// Kind is one of the Failure* constants.
	Kind FailureKind `json:"kind"`
	// Job is the job concerned, if any.
	Job *cip11.Hash `json:"job,omitempty"`
	// Runner is the runner concerned, if any.
	Runner *cip11.Address `json:"runner,omitempty"`
	// Detail is free text (error, reason, committee).
	Detail string `json:"detail,omitempty"`
}

// RunnerRow is one row of the dashboard's runner table.
type RunnerRow struct {
	// Address is the runner's address.
	Address cip11.Address `json:"address"`
	// Connected: the runner has an authenticated connection (§6.2).
	Connected bool `json:"connected"`
	// Present: the runner is in local presence (§7.4).
	Present bool `json:"present"`
	// LastPingHeight is the height of its last valid HeartbeatPing (§6.3);
	// 0 means none since the validator started.
	LastPingHeight uint64 `json:"last_ping_height,string"`
	// InFlight is the assigned jobs whose current committee holds the
	// runner and whose result it has not delivered.
	InFlight int `json:"in_flight"`
	// LastOutcome is the runner's latest push outcome or failure event
	// (success, duplicate, soft_failure, hard_failure, push_failed,
	// result), empty if none.
	LastOutcome job.EventKind `json:"last_outcome,omitempty"`
	// LastOutcomeHeight is the height of LastOutcome.
	LastOutcomeHeight uint64 `json:"last_outcome_height,string"`
	// Elsewhere: a peer validator reports the runner present (presence
	// gossip, §8.2): it holds a link to another member of its Sub(R).
	// Network validators only; omitted when false.
	Elsewhere bool `json:"elsewhere,omitempty"`
}

// DefaultMaxBodyBytes is the request body limit when Options.MaxBodyBytes is
// not positive.
const DefaultMaxBodyBytes int64 = 1 << 20

// DefaultBackendTimeout bounds each Backend call when
// Options.BackendTimeout is zero: a node whose loop is stuck behind a slow
// block commit answers 503 then instead of holding the request.
const DefaultBackendTimeout = 10 * time.Second

// Options configures [NewHandler]. The zero value is usable.
type Options struct {
	// PollDisabled is CIP11_POLL_DISABLED (§14 phase 3): GET
	// /runner/{addr}/jobs answers 410 Gone.
	PollDisabled bool
	// Logger receives a Debug record per request and an Error record per
	// 5xx answer. Nil discards.
	Logger *slog.Logger
	// Gatherer is served at GET /metrics (e.g. a *prometheus.Registry, or
	// prometheus.DefaultGatherer). Nil: /metrics answers 404 Not Found.
	Gatherer prometheus.Gatherer
	// MaxBodyBytes limits request bodies (413 beyond it). Zero or negative:
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// BackendTimeout bounds each Backend call: the request's context is
	// given this deadline (503 when the backend cannot serve within it).
	// Zero: DefaultBackendTimeout; negative: the request's context alone.
	BackendTimeout time.Duration
	// Metrics, if set, counts the poll-fallback requests the handler serves
	// (Metrics.PollServed). Nil: not counted.
	Metrics *Metrics
}
