package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"
)

// MetricPollRequests is the HTTP API's own series. The validator's series
// are node.Metrics' and the transport's quic.NewCollector's
// (docs/http-api.md lists every series by owner).
const MetricPollRequests = "cip11_poll_requests_total"

// MetricNames lists every metric name PrometheusMetrics registers.
func MetricNames() []string { return []string{MetricPollRequests} }

// Metrics is the HTTP API's Prometheus instrumentation (CometBFT's
// per-subsystem Metrics: PrometheusMetrics registers it, NopMetrics
// registers nothing). Every method is safe for concurrent use, and every
// method on a nil *Metrics is a no-op.
type Metrics struct {
	polls prometheus.Counter
}

// PrometheusMetrics creates the HTTP API's metrics and registers them
// with reg. A nil reg is ErrNilRegisterer.
func PrometheusMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, ErrNilRegisterer
	}
	m := NopMetrics()
	if err := reg.Register(m.polls); err != nil {
		return nil, err
	}
	return m, nil
}

// NopMetrics is a Metrics registered nowhere: it counts in memory and
// exports nothing.
func NopMetrics() *Metrics {
	return &Metrics{polls: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricPollRequests,
		Help: "Poll-fallback requests served (GET /runner/{addr}/jobs, §14)."})}
}

// PollServed counts one poll-fallback request answered
// (cip11_poll_requests_total, §14).
func (m *Metrics) PollServed() {
	if m != nil {
		m.polls.Inc()
	}
}
