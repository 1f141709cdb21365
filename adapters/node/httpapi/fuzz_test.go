package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/wire"
)

// rejectBackend accepts nothing: every submission is a bad request and no
// job exists.
type rejectBackend struct{}

func (rejectBackend) SubmitJob(context.Context, JobRequest) (job.View, error) {
	return job.View{}, fmt.Errorf("rejected: %w", ErrBadRequest)
}
func (rejectBackend) Job(context.Context, cip11.Hash) (job.View, bool, error) {
	return job.View{}, false, nil
}
func (rejectBackend) RunnerJobs(context.Context, cip11.Address) ([]*wire.JobAssignment, error) {
	return nil, fmt.Errorf("unknown runner: %w", ErrNotFound)
}
func (rejectBackend) SubmitTx(context.Context, []byte) (SubmitResult, error) {
	return SubmitResult{}, fmt.Errorf("undecodable transaction: %w", ErrBadRequest)
}
func (rejectBackend) Runner(context.Context, cip11.Address) (RunnerView, bool, error) {
	return RunnerView{}, false, nil
}
func (rejectBackend) Status(context.Context) (Status, error)       { return Status{}, nil }
func (rejectBackend) Dashboard(context.Context) (Dashboard, error) { return Dashboard{}, nil }

// listingBackend is rejectBackend that lists jobs (GET /jobs): no job
// matches, and a query the handler lets through has a limit in range
// (it asks one more than the page, to know whether a next page exists).
type listingBackend struct{ rejectBackend }

func (listingBackend) ListJobs(_ context.Context, q job.Query) ([]job.View, error) {
	if q.Limit < 2 || q.Limit > MaxListLimit+1 {
		panic(fmt.Sprintf("ListJobs with limit %d", q.Limit))
	}
	return nil, nil
}

// fuzzContentTypes are the Content-Type headers target selects among (besides
// the fuzzed one).
func fuzzContentTypes() []string {
	return []string{"", "application/json", "application/octet-stream", "text/plain", "application/json; charset=utf-8"}
}

// FuzzHandler posts arbitrary bodies to POST /jobs and POST /submit over a
// backend that accepts nothing: the handler must not panic, and must answer a
// status below 500 with a JSON {"error": "…"} body. target's low bit picks
// the endpoint; the rest picks a Content-Type (or the fuzzed contentType).
func FuzzHandler(f *testing.F) {
	for i, body := range []string{
		validJob(),
		`{"submitter":"` + addrHex(1) + `","job_kind":1,"runners":0,"timeout_blocks":"1"}`,
		`{"tx":"0001020304"}`,
		`{"tx":""}`,
		`{"tx":"00","tx":"01"}`,
		`{"Tx":"00"}`,
		`[{"tx":"00"}]`,
		`{"submitter":null}`,
		`{"timeout_blocks":"99999999999999999999"}`,
		`{"job_kind":1e400}`,
		"\x00\x00\x00\x03\xa1\x01\x02",
		"",
		"{",
		`{}{}`,
	} {
		f.Add(uint8(i), "", []byte(body))
	}
	f.Add(uint8(0), "application/json; charset=\"", []byte(validJob()))
	h, err := NewHandler(rejectBackend{}, Options{MaxBodyBytes: 4096})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target uint8, contentType string, body []byte) {
		path := "/jobs"
		if target&1 == 1 {
			path = "/submit"
		}
		cts := fuzzContentTypes()
		ct := contentType
		if i := int(target>>1) % (len(cts) + 1); i < len(cts) {
			ct = cts[i]
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		if ct != "" {
			req.Header["Content-Type"] = []string{ct}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkErrorAnswer(t, rec)
	})
}

// FuzzPath sends GET requests for arbitrary paths and queries to a backend
// that lists jobs: no panic, no 5xx, and every answer outside the dashboard
// assets and /metrics is JSON. (A backend that does not list jobs answers
// GET /jobs 501, TestListJobsStrictQuery.)
func FuzzPath(f *testing.F) {
	for _, p := range []string{"/", "/jobs/" + addrHex(1) + addrHex(2) + "abcdefab", "/runner/" + addrHex(3) + "/jobs",
		"/status", "/dashboard.json", "/dashboard.js", "/metrics", "/jobs/%zz", "//", "/jobs/../status", "/runner/x/jobs/",
		"/jobs", "/jobs?limit=500&state=pending", "/jobs?submitter=0x" + addrHex(4) + "&limit=1", "/jobs?cursor=AAAA&limit=0", "/jobs?limit=9999999999999999999"} {
		f.Add(p)
	}
	h, err := NewHandler(listingBackend{}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		u, err := url.ParseRequestURI(p)
		if err != nil {
			t.Skip()
		}
		req := &http.Request{Method: http.MethodGet, URL: u, RequestURI: p, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: make(http.Header), Host: "example.com", RemoteAddr: "192.0.2.1:1234", Body: http.NoBody}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("GET %q: %d %s", p, rec.Code, rec.Body.String())
		}
		switch ct := rec.Header().Get("Content-Type"); {
		case rec.Code == http.StatusOK && ct != contentJSON:
			// the dashboard page, its script, /metrics
		case ct != contentJSON || !json.Valid(rec.Body.Bytes()):
			t.Fatalf("GET %q: %d with %q body %q", p, rec.Code, ct, rec.Body.String())
		}
	})
}

func checkErrorAnswer(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 || rec.Code < 400 {
		t.Fatalf("status %d (want 4xx), body %s", rec.Code, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != contentJSON {
		t.Fatalf("Content-Type %q", ct)
	}
	var e struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == nil || *e.Error == "" {
		t.Fatalf("body %q is not a JSON error (%v)", rec.Body.String(), err)
	}
}
