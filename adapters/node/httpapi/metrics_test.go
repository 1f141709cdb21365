package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cip11/cip11/wire"
)

func newRegistry(t testing.TB) (*prometheus.Registry, *Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	return reg, m
}

func TestMetricsEndpoint(t *testing.T) {
	reg, m := newRegistry(t)
	m.SetConnected(12)
	m.SetPresent(10)
	m.Admitted()
	m.Refused("NotInSubset")
	m.RefusedWith(wire.GoodbyeRateLimited)
	m.Refused("made up")
	m.Ping(true)
	m.Ping(false)
	m.Push(OutcomeSuccess)
	m.Push(OutcomeDuplicate)
	m.Push(OutcomeSoftFailure)
	m.Push(OutcomeHardFailure)
	m.Push("exploded")
	m.ObserveAck(3 * time.Millisecond)
	m.ObserveAck(-time.Second)
	m.SetJobs(map[JobState]int{StateAssigned: 4, StateCompleted: 9})
	m.ObserveBlock(20 * time.Millisecond)
	m.BlockProduced(42)
	m.SetHeight(43)
	m.SetMempool(6)
	m.ResultForwarded()
	m.ResultRejected()

	b := &fakeBackend{}
	h, _ := newTestHandler(t, b, Options{Gatherer: reg, Metrics: m})
	a := addr(1)
	do(h, http.MethodGet, "/runner/"+hexOf(a[:])+"/jobs", "", nil) // PollServed

	rec := do(h, http.MethodGet, "/metrics", "", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("/metrics Content-Type %q", ct)
	}
	body := rec.Body.String()
	for _, name := range MetricNames() {
		if !strings.HasPrefix(name, "cip11_") {
			t.Fatalf("metric %s lacks the cip11_ prefix", name)
		}
		if !strings.Contains(body, "# TYPE "+name+" ") {
			t.Fatalf("/metrics lacks %s:\n%s", name, body)
		}
	}
	for _, line := range []string{
		"cip11_runners_connected 12",
		"cip11_runners_present 10",
		"cip11_admissions_total 1",
		`cip11_admission_refusals_total{reason="NotInSubset"} 1`,
		`cip11_admission_refusals_total{reason="RateLimited"} 1`,
		`cip11_admission_refusals_total{reason="other"} 1`,
		`cip11_admission_refusals_total{reason="Shutdown"} 0`,
		`cip11_heartbeat_pings_total{result="ok"} 1`,
		`cip11_heartbeat_pings_total{result="rejected"} 1`,
		`cip11_pushes_total{outcome="success"} 1`,
		`cip11_pushes_total{outcome="duplicate"} 1`,
		`cip11_pushes_total{outcome="soft_failure"} 1`,
		`cip11_pushes_total{outcome="hard_failure"} 1`,
		`cip11_pushes_total{outcome="other"} 1`,
		`cip11_ack_latency_seconds_bucket{le="0.001"} 1`,
		`cip11_ack_latency_seconds_bucket{le="0.005"} 2`,
		`cip11_ack_latency_seconds_bucket{le="10"} 2`,
		"cip11_ack_latency_seconds_count 2",
		`cip11_jobs{state="assigned"} 4`,
		`cip11_jobs{state="completed"} 9`,
		`cip11_jobs{state="pending"} 0`,
		`cip11_block_execution_seconds_bucket{le="0.025"} 1`,
		"cip11_block_execution_seconds_count 1",
		"cip11_blocks_produced_total 1",
		"cip11_block_height 43",
		"cip11_mempool_transactions 6",
		"cip11_results_forwarded_total 1",
		"cip11_results_rejected_total 1",
		"cip11_poll_requests_total 1",
	} {
		if !strings.Contains(body, line+"\n") {
			t.Fatalf("/metrics lacks %q:\n%s", line, body)
		}
	}

	// A state absent from the next SetJobs drops to 0.
	m.SetJobs(map[JobState]int{StateExpired: 1, "weird": 2})
	m.SetJobs(map[JobState]int{StateExpired: 1})
	body = do(h, http.MethodGet, "/metrics", "", nil).Body.String()
	for _, line := range []string{`cip11_jobs{state="assigned"} 0`, `cip11_jobs{state="expired"} 1`, `cip11_jobs{state="weird"} 0`} {
		if !strings.Contains(body, line+"\n") {
			t.Fatalf("/metrics lacks %q after SetJobs", line)
		}
	}
}

func TestMetricsNotConfigured(t *testing.T) {
	h, _ := newTestHandler(t, &fakeBackend{}, Options{})
	wantError(t, do(h, http.MethodGet, "/metrics", "", nil), http.StatusNotFound)
}

func TestNewMetricsErrors(t *testing.T) {
	if _, err := NewMetrics(nil); !errors.Is(err, ErrNilRegisterer) {
		t.Fatalf("nil registerer: %v", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	_, err := NewMetrics(reg)
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second NewMetrics on one registry: %v, want AlreadyRegisteredError", err)
	}
	// A failed registration leaves nothing behind: a registry holding one
	// clashing metric keeps only it.
	reg = prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: MetricResultsForwarded, Help: "clash"}))
	if _, err := NewMetrics(reg); err == nil {
		t.Fatal("NewMetrics over a clashing metric succeeded")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != MetricResultsForwarded {
		t.Fatalf("registry after failed NewMetrics holds %d families", len(mfs))
	}
}

func TestNilMetricsNoop(t *testing.T) {
	var m *Metrics
	m.SetConnected(1)
	m.SetPresent(1)
	m.Admitted()
	m.Refused("AuthFailed")
	m.RefusedWith(wire.GoodbyeAuthFailed)
	m.Ping(true)
	m.Push(OutcomeSuccess)
	m.ObserveAck(time.Millisecond)
	m.SetJobs(map[JobState]int{StateAssigned: 1})
	m.ObserveBlock(time.Millisecond)
	m.BlockProduced(1)
	m.SetHeight(1)
	m.SetMempool(1)
	m.ResultForwarded()
	m.ResultRejected()
	m.PollServed()
}

func TestBuckets(t *testing.T) {
	for name, bs := range map[string][]float64{"ack": AckLatencyBuckets(), "block": BlockExecutionBuckets()} {
		for i := 1; i < len(bs); i++ {
			if bs[i] <= bs[i-1] {
				t.Fatalf("%s buckets not increasing: %v", name, bs)
			}
		}
	}
	if bs := AckLatencyBuckets(); bs[0] != 0.001 || bs[len(bs)-1] != 10 {
		t.Fatalf("ack buckets span %v…%v, want 1 ms…10 s", bs[0], bs[len(bs)-1])
	}
}
