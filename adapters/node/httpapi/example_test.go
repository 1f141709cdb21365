package httpapi

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

func ExampleNewHandler() {
	reg := prometheus.NewRegistry()
	m, err := PrometheusMetrics(reg)
	if err != nil {
		panic(err)
	}
	h, err := NewHandler(rejectBackend{}, Options{PollDisabled: true, Gatherer: reg, Metrics: m})
	if err != nil {
		panic(err)
	}
	for _, target := range []string{"/runner/" + strings.Repeat("ab", 20) + "/jobs", "/jobs/ABC"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	// Output:
	// 410 {"error":"poll fallback disabled (CIP11_POLL_DISABLED): jobs are pushed over QUIC"}
	// 400 {"error":"job id must be 64 lowercase hex digits"}
}

func ExampleMetrics() {
	reg := prometheus.NewRegistry()
	m, err := PrometheusMetrics(reg)
	if err != nil {
		panic(err)
	}
	m.PollServed()
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			if c := mt.GetCounter(); c != nil && c.GetValue() > 0 {
				fmt.Println(mf.GetName(), c.GetValue())
			}
		}
	}
	// Output:
	// cip11_poll_requests_total 1
}
