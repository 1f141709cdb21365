package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/wire"
)

// fakeBackend is a scriptable Backend. Zero value: accepts every job and
// transaction, knows the jobs it accepted.
type fakeBackend struct {
	mu sync.Mutex

	jobErr   error // SubmitJob answers this if set
	txErr    error // SubmitTx answers this (with txRes) if set
	txRes    SubmitResult
	pollErr  error
	poll     []*wire.JobAssignment
	status   Status
	dash     Dashboard
	panicked bool // Status panics

	jobs      map[cip11.Hash]job.View
	runners   map[cip11.Address]RunnerView
	runnerErr error
	gotJobs   []JobRequest
	gotTxs    [][]byte
	gotPolls  []cip11.Address
}

func (f *fakeBackend) SubmitJob(_ context.Context, req JobRequest) (job.View, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gotJobs = append(f.gotJobs, req)
	if f.jobErr != nil {
		return job.View{}, f.jobErr
	}
	id := cip11.Keccak256(req.Submitter[:], []byte{req.JobKind}, fmt.Appendf(nil, "%d/%d", req.Nonce, len(f.jobs)))
	v := job.View{ID: id, State: job.StateSubmitted, Submitter: req.Submitter, JobKind: req.JobKind, Runners: req.Runners,
		Events: []job.Event{{Height: 7, Kind: job.EventSubmitted, Time: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}}}
	if f.jobs == nil {
		f.jobs = make(map[cip11.Hash]job.View)
	}
	f.jobs[id] = v
	return v, nil
}

func (f *fakeBackend) Job(_ context.Context, id cip11.Hash) (job.View, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.jobs[id]
	return v, ok, nil
}

func (f *fakeBackend) RunnerJobs(_ context.Context, runner cip11.Address) ([]*wire.JobAssignment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gotPolls = append(f.gotPolls, runner)
	return f.poll, f.pollErr
}

func (f *fakeBackend) SubmitTx(_ context.Context, raw []byte) (SubmitResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gotTxs = append(f.gotTxs, append([]byte(nil), raw...))
	if f.txErr != nil {
		return f.txRes, f.txErr
	}
	return SubmitResult{TxHash: cip11.Keccak256(raw), Status: SubmitAccepted}, nil
}

func (f *fakeBackend) Runner(_ context.Context, addr cip11.Address) (RunnerView, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.runners[addr]
	return v, ok, f.runnerErr
}

func (f *fakeBackend) Status(context.Context) (Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panicked {
		panic("fake backend: status exploded")
	}
	return f.status, nil
}

func (f *fakeBackend) Dashboard(context.Context) (Dashboard, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dash, nil
}

func (f *fakeBackend) calls() (jobs, txs, polls int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.gotJobs), len(f.gotTxs), len(f.gotPolls)
}

// logBuffer collects slog records for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newTestHandler builds a handler over b with a Debug logger into the
// returned buffer.
func newTestHandler(t testing.TB, b Backend, o Options) (http.Handler, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	h, err := NewHandler(b, o)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	return h, logs
}

// do runs one request through h.
func do(h http.Handler, method, target, contentType string, body []byte) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// wantStatus checks the status and that the body is JSON.
func wantStatus(t *testing.T, rec *httptest.ResponseRecorder, code int) {
	t.Helper()
	if rec.Code != code {
		t.Fatalf("status %d, want %d; body %s", rec.Code, code, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != contentJSON {
		t.Fatalf("Content-Type %q, want %q", ct, contentJSON)
	}
	if !json.Valid(rec.Body.Bytes()) {
		t.Fatalf("body is not JSON: %q", rec.Body.String())
	}
}

// wantError checks a JSON error answer and returns its message.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, code int) string {
	t.Helper()
	wantStatus(t, rec, code)
	var e map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %q: %v", rec.Body.String(), err)
	}
	msg, ok := e["error"].(string)
	if !ok || msg == "" {
		t.Fatalf("error body %q has no \"error\" string", rec.Body.String())
	}
	return msg
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %T: %v", v, err)
	}
	return v
}

func addr(b byte) cip11.Address {
	var a cip11.Address
	for i := range a {
		a[i] = b
	}
	return a
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte(digits[c>>4])
		sb.WriteByte(digits[c&15])
	}
	return sb.String()
}

// validJob is a well-formed POST /jobs body.
func validJob() string {
	return `{"submitter":"` + addrHex(0xab) + `","job_kind":3,"runners":2,"timeout_blocks":"20","work_ms":150,"payload":"c0ffee","nonce":"9"}`
}

var errBoom = errors.New("disk on fire")

func addrHex(b byte) string {
	a := addr(b)
	return hexOf(a[:])
}
