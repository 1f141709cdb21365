package httpapi

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cip11/cip11/wire"
)

// Push outcomes (§10.6), the `outcome` label of cip11_pushes_total.
const (
	OutcomeSuccess     = "success"      // JobAck{Accepted}, then the result frame(s), tx forwarded
	OutcomeDuplicate   = "duplicate"    // JobAck{Duplicate}
	OutcomeSoftFailure = "soft_failure" // JobAck{Reject(_)} or another framed response
	OutcomeHardFailure = "hard_failure" // no framed response within ACK_TIMEOUT_BLOCKS
)

// Ping results, the `result` label of cip11_heartbeat_pings_total.
const (
	PingOK       = "ok"       // a valid HeartbeatPing, answered
	PingRejected = "rejected" // a HeartbeatPing that failed verification
)

// LabelOther is the label value for an unrecognised reason or outcome, so
// a caller's typo cannot create unbounded label sets.
const LabelOther = "other"

// Metric names, all registered by NewMetrics.
const (
	MetricRunnersConnected = "cip11_runners_connected"
	MetricRunnersPresent   = "cip11_runners_present"
	MetricAdmissions       = "cip11_admissions_total"
	MetricRefusals         = "cip11_admission_refusals_total"
	MetricPings            = "cip11_heartbeat_pings_total"
	MetricPushes           = "cip11_pushes_total"
	MetricAckLatency       = "cip11_ack_latency_seconds"
	MetricJobs             = "cip11_jobs"
	MetricBlockExecution   = "cip11_block_execution_seconds"
	MetricBlocksProduced   = "cip11_blocks_produced_total"
	MetricBlockHeight      = "cip11_block_height"
	MetricMempool          = "cip11_mempool_transactions"
	MetricResultsForwarded = "cip11_results_forwarded_total"
	MetricResultsRejected  = "cip11_results_rejected_total"
	MetricPollRequests     = "cip11_poll_requests_total"
)

// MetricNames lists every metric name NewMetrics registers.
func MetricNames() []string {
	return []string{MetricRunnersConnected, MetricRunnersPresent, MetricAdmissions, MetricRefusals,
		MetricPings, MetricPushes, MetricAckLatency, MetricJobs, MetricBlockExecution,
		MetricBlocksProduced, MetricBlockHeight, MetricMempool, MetricResultsForwarded,
		MetricResultsRejected, MetricPollRequests}
}

// AckLatencyBuckets are the cip11_ack_latency_seconds buckets: 1 ms to 10 s
// in 1-2-5 steps.
func AckLatencyBuckets() []float64 {
	return []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10}
}

// BlockExecutionBuckets are the cip11_block_execution_seconds buckets:
// 100 µs to 10 s in 1-2.5-5 steps.
func BlockExecutionBuckets() []float64 {
	return []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
}

// Metrics is the node's Prometheus instrumentation. Every method is safe for
// concurrent use, and every method on a nil *Metrics is a no-op, so a node
// built without metrics can call them unconditionally.
type Metrics struct {
	connected        prometheus.Gauge
	present          prometheus.Gauge
	admissions       prometheus.Counter
	refusals         *prometheus.CounterVec
	pings            *prometheus.CounterVec
	pushes           *prometheus.CounterVec
	ackLatency       prometheus.Histogram
	jobs             *prometheus.GaugeVec
	blockExec        prometheus.Histogram
	blocks           prometheus.Counter
	height           prometheus.Gauge
	mempool          prometheus.Gauge
	resultsForwarded prometheus.Counter
	resultsRejected  prometheus.Counter
	polls            prometheus.Counter

	mu        sync.Mutex
	jobStates map[JobState]bool // every state label ever set, so SetJobs can zero absent ones
}

// NewMetrics creates the metrics and registers them with reg. If any
// registration fails (e.g. prometheus.AlreadyRegisteredError), the ones
// already registered are unregistered and the error is returned. A nil reg
// is ErrNilRegisterer.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, ErrNilRegisterer
	}
	m := &Metrics{
		connected: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricRunnersConnected,
			Help: "Authenticated runner QUIC connections (§6.2)."}),
		present: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricRunnersPresent,
			Help: "Runners in this validator's local presence (§7.4)."}),
		admissions: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricAdmissions,
			Help: "Runner connections admitted after the handshake (§6.2)."}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRefusals,
			Help: "Runner connections refused, by Goodbye reason (§12.5)."}, []string{"reason"}),
		pings: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPings,
			Help: "HeartbeatPings received, by result (§6.3)."}, []string{"result"}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPushes,
			Help: "JobAssignment pushes, by dispatch outcome (§10.6)."}, []string{"outcome"}),
		ackLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricAckLatency,
			Help:    "Time from the assignment block being applied to the runner's JobAck arriving (§10.1–10.2).",
			Buckets: AckLatencyBuckets()}),
		jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricJobs,
			Help: "Jobs known to the node, by state."}, []string{"state"}),
		blockExec: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricBlockExecution,
			Help: "Time to execute and apply one block.", Buckets: BlockExecutionBuckets()}),
		blocks: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricBlocksProduced,
			Help: "Blocks produced by this validator."}),
		height: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricBlockHeight,
			Help: "Height of the last applied block."}),
		mempool: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricMempool,
			Help: "Transactions waiting in the mempool."}),
		resultsForwarded: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricResultsForwarded,
			Help: "JobResultCommit/JobResult transactions forwarded to admission (§10.3)."}),
		resultsRejected: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricResultsRejected,
			Help: "JobResultCommit/JobResult frames whose tx_bytes failed the §10.3 checks."}),
		polls: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricPollRequests,
			Help: "Poll-fallback requests served (GET /runner/{addr}/jobs, §14)."}),
		jobStates: make(map[JobState]bool),
	}
	cs := []prometheus.Collector{m.connected, m.present, m.admissions, m.refusals, m.pings, m.pushes,
		m.ackLatency, m.jobs, m.blockExec, m.blocks, m.height, m.mempool, m.resultsForwarded,
		m.resultsRejected, m.polls}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("httpapi: registering metrics: %w", err)
		}
	}
	// Every known label value starts at 0, so dashboards and rate() see the
	// series before the first event.
	for _, r := range goodbyeReasons() {
		m.refusals.WithLabelValues(r)
	}
	m.refusals.WithLabelValues(LabelOther)
	m.pings.WithLabelValues(PingOK)
	m.pings.WithLabelValues(PingRejected)
	for _, o := range outcomes() {
		m.pushes.WithLabelValues(o)
	}
	for _, s := range JobStates() {
		m.jobs.WithLabelValues(string(s)).Set(0)
		m.jobStates[s] = true
	}
	return m, nil
}

func outcomes() []string {
	return []string{OutcomeSuccess, OutcomeDuplicate, OutcomeSoftFailure, OutcomeHardFailure}
}

// goodbyeReasons are the §12.5 GoodbyeReason names.
func goodbyeReasons() []string {
	var out []string
	for r := wire.GoodbyeUnsupportedVersion; r <= wire.GoodbyeShutdown; r++ {
		out = append(out, r.String())
	}
	return out
}

// SetConnected sets cip11_runners_connected to n, the number of
// authenticated runner connections.
func (m *Metrics) SetConnected(n int) {
	if m != nil {
		m.connected.Set(float64(n))
	}
}

// SetPresent sets cip11_runners_present to n, the size of local presence.
func (m *Metrics) SetPresent(n int) {
	if m != nil {
		m.present.Set(float64(n))
	}
}

// Admitted counts one admitted runner connection (cip11_admissions_total).
func (m *Metrics) Admitted() {
	if m != nil {
		m.admissions.Inc()
	}
}

// Refused counts one refused connection (cip11_admission_refusals_total)
// under reason, a §12.5 GoodbyeReason name such as "NotInSubset" (see
// wire.GoodbyeReason.String); any other string counts as "other".
func (m *Metrics) Refused(reason string) {
	if m == nil {
		return
	}
	if !contains(goodbyeReasons(), reason) {
		reason = LabelOther
	}
	m.refusals.WithLabelValues(reason).Inc()
}

// RefusedWith is Refused(r.String()).
func (m *Metrics) RefusedWith(r wire.GoodbyeReason) { m.Refused(r.String()) }

// Ping counts one HeartbeatPing (cip11_heartbeat_pings_total): result "ok"
// if ok, else "rejected".
func (m *Metrics) Ping(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.pings.WithLabelValues(PingOK).Inc()
	} else {
		m.pings.WithLabelValues(PingRejected).Inc()
	}
}

// Push counts one dispatch (cip11_pushes_total) under its §10.6 outcome, one
// of the Outcome* constants; any other string counts as "other".
func (m *Metrics) Push(outcome string) {
	if m == nil {
		return
	}
	if !contains(outcomes(), outcome) {
		outcome = LabelOther
	}
	m.pushes.WithLabelValues(outcome).Inc()
}

// ObserveAck records one ack latency (cip11_ack_latency_seconds): the time
// from the assignment block being applied to the JobAck being received.
// Negative durations are recorded as 0.
func (m *Metrics) ObserveAck(d time.Duration) {
	if m != nil {
		m.ackLatency.Observe(max(d, 0).Seconds())
	}
}

// SetJobs sets cip11_jobs{state} from counts (keys are the State*
// constants). A state absent from counts, including one set by an earlier
// call, is set to 0.
func (m *Metrics) SetJobs(counts map[JobState]int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for s := range m.jobStates {
		if _, ok := counts[s]; !ok {
			m.jobs.WithLabelValues(string(s)).Set(0)
		}
	}
	for s, n := range counts {
		m.jobStates[s] = true
		m.jobs.WithLabelValues(string(s)).Set(float64(n))
	}
}

// ObserveBlock records one block's execution time
// (cip11_block_execution_seconds). Negative durations are recorded as 0.
func (m *Metrics) ObserveBlock(d time.Duration) {
	if m != nil {
		m.blockExec.Observe(max(d, 0).Seconds())
	}
}

// BlockProduced counts one block produced by this validator
// (cip11_blocks_produced_total) and sets cip11_block_height to height.
func (m *Metrics) BlockProduced(height uint64) {
	if m != nil {
		m.blocks.Inc()
		m.height.Set(float64(height))
	}
}

// SetHeight sets cip11_block_height, the last applied block, without
// counting a produced block (e.g. at startup after replay).
func (m *Metrics) SetHeight(height uint64) {
	if m != nil {
		m.height.Set(float64(height))
	}
}

// SetMempool sets cip11_mempool_transactions to n.
func (m *Metrics) SetMempool(n int) {
	if m != nil {
		m.mempool.Set(float64(n))
	}
}

// ResultForwarded counts one result-phase transaction (JobResultCommit or
// JobResult tx_bytes) forwarded to admission (cip11_results_forwarded_total,
// §10.3).
func (m *Metrics) ResultForwarded() {
	if m != nil {
		m.resultsForwarded.Inc()
	}
}

// ResultRejected counts one result frame whose tx_bytes failed the §10.3
// checks and was not forwarded (cip11_results_rejected_total).
func (m *Metrics) ResultRejected() {
	if m != nil {
		m.resultsRejected.Inc()
	}
}

// PollServed counts one poll-fallback request answered
// (cip11_poll_requests_total, §14).
func (m *Metrics) PollServed() {
	if m != nil {
		m.polls.Inc()
	}
}
