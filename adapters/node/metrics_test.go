package node

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/job"
)

// TestEverySeriesInTheDocs (issue 18 item 16): a validator with runners,
// its three metric owners on one registry, runs jobs to completion; the
// scrape has every series docs/http-api.md lists and nothing cip11_ it
// does not, and the counters that lied count what they say:
// cip11_results_forwarded_total counts results (not heartbeats) and the
// transport's series are read from the server.
func TestEverySeriesInTheDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(cip11_[a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	if len(documented) < 15 {
		t.Fatalf("found %d series in the docs' table", len(documented))
	}
	reg := prometheus.NewRegistry()
	vm, err := PrometheusMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	am, err := httpapi.PrometheusMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := GenerateGenesis(GenesisOptions{Seed: 21, Runners: 3, QUIC: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, NoSync: true, Metrics: vm, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs := startRunners(t, ctx, d, v)
	defer closeRunners(rs)
	h, err := httpapi.NewHandler(Backend{v}, httpapi.Options{Gatherer: reg, Metrics: am})
	if err != nil {
		t.Fatal(err)
	}
	// every runner connected and present, so every job goes by push (a
	// runner with no link polls, §14, and that delivery is not a push)
	waitPresent(t, v, len(d.RunnerKeys))
	waitLinked(t, v, rs)
	for i := range 3 {
		if _, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{1}, Kind: 1, Runners: 1, TimeoutBlocks: 20, Nonce: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
		if c, _ := v.JobStates(); c[job.StateCompleted] == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	a := d.RunnerKeys[0].Address()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/runner/"+a.String()+"/jobs", nil))
	var body []byte
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		// the server classifies a push (§10.6) just after it forwards the
		// result, so the outcome may trail the block that includes it
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ = io.ReadAll(rec.Body)
		if strings.Contains(string(body), `cip11_pushes_total{outcome="success"} 3`+"\n") || time.Now().After(end) {
			break
		}
	}
	scraped := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (cip11_[a-z_]+) `).FindAllStringSubmatch(string(body), -1) {
		scraped[m[1]] = true
	}
	for name := range documented {
		if !scraped[name] {
			t.Errorf("documented series %s is not served", name)
		}
	}
	for name := range scraped {
		if !documented[name] {
			t.Errorf("served series %s is not documented", name)
		}
	}
	text := string(body)
	for _, line := range []string{
		"cip11_results_forwarded_total 3", // three M = 1 reveals; the runners' heartbeats are not results
		`cip11_jobs{state="completed"} 3`,
		"cip11_runners_connected 3",
		"cip11_admissions_total 3",
		`cip11_pushes_total{outcome="success"} 3`,
		"cip11_poll_requests_total 1",
		`cip11_queue_dropped_total{queue="inbox"} 0`,
		`cip11_queue_dropped_total{queue="send"} 0`,
		"cip11_earliest_block_height 1",
		"cip11_snapshot_height 0",
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("scrape lacks %q", line)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", body)
	}
}
