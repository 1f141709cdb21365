package node

import (
	"fmt"
	"sync"
	"time"

	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/job"
	"github.com/prometheus/client_golang/prometheus"
)

// The validator's own series (the chain core and its driver). The
// transport's series come from quic.NewCollector and the queue drops from
// the validator's own collector, both read at scrape time and registered
// by the validator on ValidatorConfig.Registerer; the HTTP API's from
// httpapi.PrometheusMetrics (docs/http-api.md lists them all, by owner).
const (
	MetricAckLatency       = "cip11_ack_latency_seconds"
	MetricJobs             = "cip11_jobs"
	MetricBlockExecution   = "cip11_block_execution_seconds"
	MetricBlocksProduced   = "cip11_blocks_produced_total"
	MetricBlockHeight      = "cip11_block_height"
	MetricMempool          = "cip11_mempool_transactions"
	MetricResultsForwarded = "cip11_results_forwarded_total"
	MetricProvenRunners    = "cip11_presence_proven_runners"
	MetricCertificates     = "cip11_presence_certificates_total"
	MetricPushesSkipped    = "cip11_pushes_skipped_total"
	// MetricQueueDropped counts the posts a full bounded queue dropped, by
	// queue (QueueNames): the loop's inbox of transport events and the
	// sender's backlog of committed blocks.
	MetricQueueDropped = "cip11_queue_dropped_total"
	// MetricEarliestBlock is the lowest height whose block the validator
	// keeps (retention; 1 on an unpruned log), MetricSnapshotHeight the
	// height of its newest snapshot (0: none).
	MetricEarliestBlock  = "cip11_earliest_block_height"
	MetricSnapshotHeight = "cip11_snapshot_height"
	// The state store's (adapters/pebble Store.Stats, read at scrape time).
	MetricStoreFailed         = "cip11_store_failed"
	MetricStoreFailures       = "cip11_store_failures_total"
	MetricStoreDiskUsage      = "cip11_store_disk_usage_bytes"
	MetricStoreCompactionDebt = "cip11_store_compaction_debt_bytes"
	MetricStoreReadAmp        = "cip11_store_read_amplification"
	MetricStoreFlushes        = "cip11_store_flushes_total"
	MetricStoreCompactions    = "cip11_store_compactions_total"
	MetricStoreWALBytes       = "cip11_store_wal_bytes_written_total"
)

// The queue label values of cip11_queue_dropped_total.
const (
	QueueInbox = "inbox" // transport events waiting for the loop
	QueueSend  = "send"  // committed blocks whose pushes wait for the sender
)

// QueueNames lists the queue label values.
func QueueNames() []string { return []string{QueueInbox, QueueSend} }

// AckLatencyBuckets are the cip11_ack_latency_seconds buckets: 1 ms to 10 s.
func AckLatencyBuckets() []float64 {
	return []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10}
}

// BlockExecutionBuckets are the cip11_block_execution_seconds buckets:
// 100 µs to 10 s in 1-2.5-5 steps.
func BlockExecutionBuckets() []float64 {
	return []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
}

// Metrics is the validator's Prometheus instrumentation (CometBFT's
// per-subsystem Metrics: PrometheusMetrics registers it, NopMetrics
// registers nothing). Every method is safe for concurrent use and a no-op
// on a nil *Metrics. One Metrics may serve successive validators (the
// devnet's restarts): its counters go on.
type Metrics struct {
	ackLatency       prometheus.Histogram
	jobs             *prometheus.GaugeVec
	blockExec        prometheus.Histogram
	blocks           prometheus.Counter
	height           prometheus.Gauge
	mempool          prometheus.Gauge
	resultsForwarded prometheus.Counter
	provenRunners    prometheus.Gauge
	certificates     *prometheus.CounterVec
	pushesSkipped    *prometheus.CounterVec

	mu        sync.Mutex
	jobStates map[job.State]bool
}

// PrometheusMetrics creates the validator's metrics and registers them
// with reg; on a registration error those already registered are
// unregistered. A nil reg wraps ErrNilConfig.
func PrometheusMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: prometheus registerer", ErrNilConfig)
	}
	m := newMetrics()
	for i, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			for _, done := range m.collectors()[:i] {
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	return m, nil
}

// NopMetrics is a Metrics registered nowhere: it counts in memory and
// exports nothing.
func NopMetrics() *Metrics { return newMetrics() }

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.ackLatency, m.jobs, m.blockExec, m.blocks, m.height, m.mempool, m.resultsForwarded, m.provenRunners, m.certificates, m.pushesSkipped}
}

func newMetrics() *Metrics {
	m := &Metrics{
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
			Help: "JobResultCommit/JobResult transactions admitted (§10.3), from QUIC or POST /submit."}),
		provenRunners: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricProvenRunners,
			Help: "Registered runners whose presence_proven_until covers the next block (§8.3 Mode-A proven-until coverage)."}),
		certificates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricCertificates,
			Help: "SubmitPresenceCertificate transactions executed in applied blocks (§8.3), by result."}, []string{"result"}),
		pushesSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPushesSkipped,
			Help: "Pushes (§10.1) not sent because the validator was catching up (replaying, block-syncing or behind the head), by reason."}, []string{"reason"}),
		jobStates: map[job.State]bool{},
	}
	for _, s := range job.States() {
		m.jobs.WithLabelValues(string(s)).Set(0)
		m.jobStates[s] = true
	}
	m.certificates.WithLabelValues("accepted")
	m.certificates.WithLabelValues("rejected")
	for _, r := range SkipReasons() {
		m.pushesSkipped.WithLabelValues(r)
	}
	return m
}

// validatorCollector is what a validator registers on
// ValidatorConfig.Registerer: the transport's series (quic.NewCollector),
// the validator's queue drops and its state store's health and pebble
// metrics (pebble.Store.Stats), all read at scrape time
// (collectors.NewDBStatsCollector's pattern).
type validatorCollector struct {
	transport prometheus.Collector
	v         *Validator
	dropped   *prometheus.Desc
	earliest  *prometheus.Desc
	snapshot  *prometheus.Desc
	store     [8]*prometheus.Desc // in storeSeries order
}

// storeSeries are the cip11_store_* series: name, help and whether a
// counter.
var storeSeries = [8]struct {
	name, help string
	counter    bool
}{
	{MetricStoreFailed, "1 once the state store recorded a storage failure (a flush or commit that could not write); the validator stops.", false},
	{MetricStoreFailures, "Storage failures of the state store, the first and those after it.", true},
	{MetricStoreDiskUsage, "Disk space the state store's pebble database uses.", false},
	{MetricStoreCompactionDebt, "Estimated bytes pebble must compact for the state store's LSM to settle.", false},
	{MetricStoreReadAmp, "Read amplification of the state store's pebble database.", false},
	{MetricStoreFlushes, "Memtable flushes of the state store since it opened.", true},
	{MetricStoreCompactions, "Compactions of the state store since it opened.", true},
	{MetricStoreWALBytes, "Bytes written to the state store's write-ahead log since it opened.", true},
}

func newValidatorCollector(v *Validator, srv *cquic.Server) *validatorCollector {
	c := &validatorCollector{transport: cquic.NewCollector(srv), v: v,
		dropped: prometheus.NewDesc(MetricQueueDropped, "Posts a full bounded queue dropped, by queue (inbox: transport events for the loop; send: committed blocks for the sender).",
			[]string{"queue"}, nil),
		earliest: prometheus.NewDesc(MetricEarliestBlock, "The lowest height whose block this validator keeps (retention; 1: every block).", nil, nil),
		snapshot: prometheus.NewDesc(MetricSnapshotHeight, "The height of this validator's newest snapshot (0: none).", nil, nil)}
	for i, s := range storeSeries {
		c.store[i] = prometheus.NewDesc(s.name, s.help, nil, nil)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *validatorCollector) Describe(ch chan<- *prometheus.Desc) {
	c.transport.Describe(ch)
	ch <- c.dropped
	ch <- c.earliest
	ch <- c.snapshot
	if c.v.ps.Load() != nil {
		for _, d := range c.store {
			ch <- d
		}
	}
}

// Collect implements prometheus.Collector.
func (c *validatorCollector) Collect(ch chan<- prometheus.Metric) {
	c.transport.Collect(ch)
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(c.v.inbox.drops()), QueueInbox)
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(c.v.sendq.drops()), QueueSend)
	ch <- prometheus.MustNewConstMetric(c.earliest, prometheus.GaugeValue, float64(c.v.EarliestHeight()))
	var snap uint64
	if l := c.v.Snapshots(); len(l) > 0 {
		snap = l[0].Height
	}
	ch <- prometheus.MustNewConstMetric(c.snapshot, prometheus.GaugeValue, float64(snap))
	ps := c.v.ps.Load() // replaced only by InstallSnapshot
	if ps == nil {
		return
	}
	st := ps.Stats()
	failed := 0.0
	if st.Failed {
		failed = 1
	}
	for i, v := range [8]float64{failed, float64(st.Failures), float64(st.DiskUsageBytes), float64(st.CompactionDebtBytes),
		float64(st.ReadAmp), float64(st.Flushes), float64(st.Compactions), float64(st.WALBytesWritten)} {
		t := prometheus.GaugeValue
		if storeSeries[i].counter {
			t = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(c.store[i], t, v)
	}
}

// ObserveAck records one ack latency; negative durations count as 0.
func (m *Metrics) ObserveAck(d time.Duration) {
	if m != nil {
		m.ackLatency.Observe(max(d, 0).Seconds())
	}
}

// SetJobs sets cip11_jobs{state} from counts; a state absent from counts is
// set to 0.
func (m *Metrics) SetJobs(counts map[job.State]int) {
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

// ObserveBlock records one block's execution time.
func (m *Metrics) ObserveBlock(d time.Duration) {
	if m != nil {
		m.blockExec.Observe(max(d, 0).Seconds())
	}
}

// BlockProduced counts one block and sets the height.
func (m *Metrics) BlockProduced(height uint64) {
	if m != nil {
		m.blocks.Inc()
		m.height.Set(float64(height))
	}
}

// SetHeight sets cip11_block_height without counting a block (at start).
func (m *Metrics) SetHeight(height uint64) {
	if m != nil {
		m.height.Set(float64(height))
	}
}

// SetMempool sets cip11_mempool_transactions.
func (m *Metrics) SetMempool(n int) {
	if m != nil {
		m.mempool.Set(float64(n))
	}
}

// ResultForwarded counts one admitted JobResultCommit or JobResult
// transaction (heartbeats and registrations are not results).
func (m *Metrics) ResultForwarded() {
	if m != nil {
		m.resultsForwarded.Inc()
	}
}

// SetProvenRunners sets cip11_presence_proven_runners (§8.3).
func (m *Metrics) SetProvenRunners(n int) {
	if m != nil {
		m.provenRunners.Set(float64(n))
	}
}

// CertificatesExecuted counts an applied block's §8.3 certificate outcomes
// in cip11_presence_certificates_total{result="accepted"|"rejected"}.
func (m *Metrics) CertificatesExecuted(accepted, rejected int) {
	if m != nil {
		m.certificates.WithLabelValues("accepted").Add(float64(accepted))
		m.certificates.WithLabelValues("rejected").Add(float64(rejected))
	}
}

// PushesSkipped counts n pushes skipped while catching up in
// cip11_pushes_skipped_total{reason} (SkipReasons).
func (m *Metrics) PushesSkipped(reason string, n int) {
	if m != nil && n > 0 {
		m.pushesSkipped.WithLabelValues(reason).Add(float64(n))
	}
}
