package quic

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

// Metric names exported by [NewCollector]. The first seven keep the names,
// labels and help of the node's httpapi series they replace (docs/http-api.md
// "Metrics"), so dashboards keep working.
const (
	MetricRunnersConnected = "cip11_runners_connected"
	MetricRunnersPresent   = "cip11_runners_present"
	MetricAdmissions       = "cip11_admissions_total"
	MetricRefusals         = "cip11_admission_refusals_total"
	MetricPings            = "cip11_heartbeat_pings_total"
	MetricPushes           = "cip11_pushes_total"
	MetricResultsRejected  = "cip11_results_rejected_total"
	MetricPreHelloCloses   = "cip11_prehello_closes_total"
	MetricHalfOpen         = "cip11_half_open_connections"
	MetricGoodbyes         = "cip11_goodbyes_total"
	MetricPushesAbandoned  = "cip11_pushes_abandoned_total"
	MetricReceiptsIssued   = "cip11_presence_receipts_issued_total"
)

// outcomeLabels are the `outcome` label values of cip11_pushes_total, by
// local.Outcome (§10.6).
var outcomeLabels = [NumOutcomes]string{
	local.Success: "success", local.Duplicate: "duplicate", local.SoftFailure: "soft_failure", local.HardFailure: "hard_failure",
}

// collector reads [Server.Stats] at scrape time (client_golang's
// collectors.NewDBStatsCollector pattern): nothing is counted twice and
// nothing is bumped in a loop.
type collector struct {
	s                                              *Server
	connected, present, admissions, refusals       *prometheus.Desc
	pings, pushes, rejected, preHello, halfOpenNow *prometheus.Desc
	goodbyes, abandoned, receipts                  *prometheus.Desc
}

// NewCollector is a prometheus.Collector exporting s's transport metrics
// (§6.2 admission, §6.3 heartbeats, §6.6 half-open handshakes, §10.3
// result checks, §10.6 outcomes, §12.5 refusal reasons, Goodbyes sent and
// received by reason, §5.3 pushes abandoned at the overlap cutoff, §8.3
// Mode-A receipts issued). Every labelled
// series is present from the first scrape, zero-valued ones included.
// Register it once per Server.
func NewCollector(s *Server) prometheus.Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &collector{
		s:           s,
		connected:   d(MetricRunnersConnected, "Authenticated runner QUIC connections (§6.2)."),
		present:     d(MetricRunnersPresent, "Runners in this validator's local presence (§7.4)."),
		admissions:  d(MetricAdmissions, "Runner connections admitted after the handshake (§6.2)."),
		refusals:    d(MetricRefusals, "Runner connections refused, by Goodbye reason (§12.5).", "reason"),
		pings:       d(MetricPings, "HeartbeatPings received, by result (§6.3).", "result"),
		pushes:      d(MetricPushes, "JobAssignment pushes, by dispatch outcome (§10.6).", "outcome"),
		rejected:    d(MetricResultsRejected, "JobResultCommit/JobResult frames whose tx_bytes failed the §10.3 checks."),
		preHello:    d(MetricPreHelloCloses, "Runner connections closed before a Hello arrived (§6.6)."),
		halfOpenNow: d(MetricHalfOpen, "Runner connections between their first QUIC Initial and CIP-11 admission (§6.6)."),
		goodbyes:    d(MetricGoodbyes, "Goodbye frames sent to and received from runners, by direction and reason (§12.5).", "direction", "reason"),
		abandoned:   d(MetricPushesAbandoned, "Pushes abandoned because their connection's epoch pair expired (§5.3 point 4, §11.5)."),
		receipts:    d(MetricReceiptsIssued, "Mode-A PresenceReceipts signed for runners (§8.3, SPEC-NOTES N18)."),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.connected, c.present, c.admissions, c.refusals, c.pings, c.pushes, c.rejected, c.preHello, c.halfOpenNow, c.goodbyes, c.abandoned, c.receipts} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		m, err := prometheus.NewConstMetric(d, t, v, labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
	emit(c.connected, prometheus.GaugeValue, float64(st.Connected))
	emit(c.present, prometheus.GaugeValue, float64(st.Present))
	emit(c.admissions, prometheus.CounterValue, float64(st.Admitted))
	for r, n := range st.RefusedBy {
		emit(c.refusals, prometheus.CounterValue, float64(n), wire.GoodbyeReason(r).String())
	}
	emit(c.pings, prometheus.CounterValue, float64(st.PingsOK), "ok")
	emit(c.pings, prometheus.CounterValue, float64(st.PingsRejected), "rejected")
	for o, n := range st.Outcomes {
		emit(c.pushes, prometheus.CounterValue, float64(n), outcomeLabels[o])
	}
	emit(c.rejected, prometheus.CounterValue, float64(st.ResultsRejected))
	emit(c.preHello, prometheus.CounterValue, float64(st.PreHelloCloses))
	emit(c.halfOpenNow, prometheus.GaugeValue, float64(st.HalfOpen))
	for r := range st.GoodbyesSent {
		reason := wire.GoodbyeReason(r).String()
		emit(c.goodbyes, prometheus.CounterValue, float64(st.GoodbyesSent[r]), "sent", reason)
		emit(c.goodbyes, prometheus.CounterValue, float64(st.GoodbyesReceived[r]), "received", reason)
	}
	emit(c.abandoned, prometheus.CounterValue, float64(st.PushesAbandoned))
	emit(c.receipts, prometheus.CounterValue, float64(st.ReceiptsIssued))
}
