package httpapi

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
)

func sampleDashboard() Dashboard {
	var many []cip11.Address
	for i := range 300 {
		many = append(many, cip11.Address{byte(i), byte(i >> 8)})
	}
	return Dashboard{
		Status: Status{ChainID: 7, Height: 100, Connected: 300, Present: 2},
		RecentBlocks: []job.BlockSummary{
			{Height: 100, Time: time.Date(2026, 12, 3, 10, 0, 1, 0, time.UTC), Txs: 3, Assignments: 2, Pushed: 2, ExecMillis: 1.25},
			{Height: 99, Time: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), ExecMillis: math.NaN()},
		},
		Jobs:              map[job.State]int{job.StateAssigned: 2, job.StateCompleted: 40},
		PushLatencyMillis: []float64{1.5, 12, math.Inf(1), -1, math.NaN(), 800},
		ConnectedRunners:  many,
		PresentRunners:    many[:2],
		Totals:            Totals{Completed: 40, Refused: map[string]int64{"wrong_chain": 2}},
		Failures:          manyFailures(MaxDashboardFailures + 5),
		Runners:           manyRows(many),
	}
}

func manyFailures(n int) []Failure {
	out := make([]Failure, n)
	for i := range out {
		out[i] = Failure{Height: uint64(n - i), Kind: FailurePushFailed}
	}
	return out
}

func manyRows(a []cip11.Address) []RunnerRow {
	out := make([]RunnerRow, len(a))
	for i := range a {
		out[i] = RunnerRow{Address: a[i], Connected: true}
	}
	return out
}

func TestDashboardPage(t *testing.T) {
	h, _ := newTestHandler(t, &fakeBackend{}, Options{})
	rec := do(h, http.MethodGet, "/", "", nil)
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	page := rec.Body.String()
	for _, s := range []string{"<canvas", `<script src="dashboard.js">`, "Recent blocks", `id="failuresPanel"`, `id="banner"`, `id="jobForm"`, `id="runnerRows"`, "Job pipeline"} {
		if !strings.Contains(page, s) {
			t.Fatalf("page lacks %q", s)
		}
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Fatal("page references an external resource")
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("CSP %q", csp)
	}

	rec = do(h, http.MethodGet, "/dashboard.js", "", nil)
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/javascript") {
		t.Fatalf("GET /dashboard.js: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	js := rec.Body.String()
	for _, s := range []string{"fetchJSON('dashboard.json')", "setTimeout(tick, 1000)", "push_latency_ms", "recent_blocks", "d.totals", "d.failures", "d.runners", "'jobs/' + id", "unreachable"} {
		if !strings.Contains(js, s) {
			t.Fatalf("script lacks %q", s)
		}
	}
	if strings.Contains(js, "innerHTML") || strings.Contains(js, "http://") || strings.Contains(js, "https://") {
		t.Fatal("script uses innerHTML or an external resource")
	}
}

func TestDashboardJSON(t *testing.T) {
	h, _ := newTestHandler(t, &fakeBackend{dash: sampleDashboard()}, Options{PollDisabled: true})
	rec := do(h, http.MethodGet, "/dashboard.json", "", nil)
	wantStatus(t, rec, http.StatusOK)
	d := decode[Dashboard](t, rec)
	if d.Status.ChainID != 7 || !d.Status.PollDisabled {
		t.Fatalf("status %+v", d.Status)
	}
	if len(d.ConnectedRunners) != MaxDashboardRunners || len(d.PresentRunners) != 2 {
		t.Fatalf("runner lists %d/%d", len(d.ConnectedRunners), len(d.PresentRunners))
	}
	if got := d.PushLatencyMillis; len(got) != 3 || got[0] != 1.5 || got[2] != 800 {
		t.Fatalf("latency samples %v", got)
	}
	if len(d.RecentBlocks) != 2 || d.RecentBlocks[1].ExecMillis != 0 || d.RecentBlocks[0].ExecMillis != 1.25 {
		t.Fatalf("blocks %+v", d.RecentBlocks)
	}
	for _, s := range job.States() {
		if _, ok := d.Jobs[s]; !ok {
			t.Fatalf("jobs lacks state %s: %v", s, d.Jobs)
		}
	}
	if d.Jobs[job.StateCompleted] != 40 {
		t.Fatalf("jobs %v", d.Jobs)
	}
	// the new lists are capped, newest failures first (the first kept)
	if len(d.Failures) != MaxDashboardFailures || d.Failures[0].Height != MaxDashboardFailures+5 {
		t.Fatalf("failures: %d, first %+v", len(d.Failures), d.Failures[0])
	}
	if len(d.Runners) != MaxDashboardRunners || d.Totals.Completed != 40 || d.Totals.Refused["wrong_chain"] != 2 {
		t.Fatalf("runners %d, totals %+v", len(d.Runners), d.Totals)
	}

	// An empty dashboard still has arrays, never null.
	h, _ = newTestHandler(t, &fakeBackend{}, Options{})
	rec = do(h, http.MethodGet, "/dashboard.json", "", nil)
	wantStatus(t, rec, http.StatusOK)
	for _, k := range []string{`"recent_blocks":[]`, `"push_latency_ms":[]`, `"connected_runners":[]`, `"present_runners":[]`, `"jobs":{`,
		`"failures":[]`, `"runners":[]`, `"refused":{}`} {
		if !strings.Contains(rec.Body.String(), k) {
			t.Fatalf("empty dashboard lacks %s: %s", k, rec.Body.String())
		}
	}
}
