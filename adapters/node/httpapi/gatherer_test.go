package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Options.Gatherer is what /metrics serves: any prometheus.Gatherer (here
// a GathererFunc with one family no Registry of this package built); nil and
// a typed nil *Registry answer 404.
func TestMetricsServesTheGatherer(t *testing.T) {
	name, help, v := "custom_total", "a family only this gatherer has", 42.0
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		typ := dto.MetricType_COUNTER
		return []*dto.MetricFamily{{Name: &name, Help: &help, Type: &typ,
			Metric: []*dto.Metric{{Counter: &dto.Counter{Value: &v}}}}}, nil
	})
	h, _ := newTestHandler(t, &fakeBackend{}, Options{Gatherer: g})
	rec := do(h, http.MethodGet, "/metrics", "", nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "custom_total 42") {
		t.Fatalf("/metrics with a GathererFunc: %d\n%s", rec.Code, rec.Body.String())
	}

	var typedNil *prometheus.Registry
	for name, o := range map[string]Options{"nil": {}, "typed nil": {Gatherer: typedNil}} {
		h, _ := newTestHandler(t, &fakeBackend{}, o)
		rec := do(h, http.MethodGet, "/metrics", "", nil)
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "not configured") {
			t.Fatalf("/metrics with a %s gatherer: %d %s", name, rec.Code, rec.Body.String())
		}
	}
}
