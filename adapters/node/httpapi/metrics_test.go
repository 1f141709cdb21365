package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func newRegistry(t testing.TB) (*prometheus.Registry, *Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := PrometheusMetrics(reg)
	if err != nil {
		t.Fatalf("PrometheusMetrics: %v", err)
	}
	return reg, m
}

// TestMetricsEndpoint: /metrics serves the gatherer, with the HTTP API's
// own poll counter counting GET /runner/{addr}/jobs.
func TestMetricsEndpoint(t *testing.T) {
	reg, m := newRegistry(t)
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
		if !strings.Contains(body, "# TYPE "+name+" ") {
			t.Fatalf("/metrics lacks %s:\n%s", name, body)
		}
	}
	if !strings.Contains(body, "cip11_poll_requests_total 1\n") {
		t.Fatalf("/metrics lacks the poll count:\n%s", body)
	}
}

func TestMetricsNotConfigured(t *testing.T) {
	h, _ := newTestHandler(t, &fakeBackend{}, Options{})
	wantError(t, do(h, http.MethodGet, "/metrics", "", nil), http.StatusNotFound)
}

func TestNewMetricsErrors(t *testing.T) {
	if _, err := PrometheusMetrics(nil); !errors.Is(err, ErrNilRegisterer) {
		t.Fatalf("nil registerer: %v", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := PrometheusMetrics(reg); err != nil {
		t.Fatal(err)
	}
	_, err := PrometheusMetrics(reg)
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second NewMetrics on one registry: %v, want AlreadyRegisteredError", err)
	}
}

func TestNilMetricsNoop(t *testing.T) {
	var m *Metrics
	m.PollServed()
}
