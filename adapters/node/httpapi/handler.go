package httpapi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"reflect"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/internal/textform"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/wire"
)

// Media types.
const (
	contentJSON   = "application/json"
	contentOctets = "application/octet-stream"
)

// handler is the http.Handler NewHandler returns.
type handler struct {
	b       Backend
	log     *slog.Logger
	poll    bool
	maxBody int64
	timeout time.Duration // Options.BackendTimeout; <= 0: none
	metrics http.Handler  // nil: /metrics answers 404
	m       *Metrics      // nil-safe
	mux     *http.ServeMux
}

// NewHandler returns the node's HTTP API over b (routes in docs/http-api.md).
// A nil b (including a typed nil pointer) is ErrNilBackend.
func NewHandler(b Backend, o Options) (http.Handler, error) {
	if isNil(b) {
		return nil, ErrNilBackend
	}
	h := &handler{b: b, log: o.Logger, poll: o.PollDisabled, m: o.Metrics, maxBody: o.MaxBodyBytes, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	switch h.timeout = o.BackendTimeout; {
	case h.timeout == 0:
		h.timeout = DefaultBackendTimeout
	case h.timeout < 0:
		h.timeout = 0
	}
	if !isNilValue(o.Gatherer) {
		h.metrics = promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{
			ErrorLog:      promLogger{h.log},
			ErrorHandling: promhttp.ContinueOnError,
		})
	}
	h.mux.HandleFunc("POST /jobs", h.submitJob)
	h.mux.HandleFunc("GET /jobs", h.listJobs)
	h.mux.HandleFunc("GET /jobs/{id}", h.job)
	h.mux.HandleFunc("GET /runner/{addr}/jobs", h.runnerJobs)
	h.mux.HandleFunc("GET /runner/{addr}", h.runner)
	h.mux.HandleFunc("POST /submit", h.submitTx)
	h.mux.HandleFunc("GET /status", h.status)
	h.mux.HandleFunc("GET /healthz", h.healthz)
	h.mux.HandleFunc("GET /epochs", h.epochs)
	h.mux.HandleFunc("GET /metrics", h.serveMetrics)
	h.mux.HandleFunc("GET /{$}", h.dashboardPage)
	h.mux.HandleFunc("GET /dashboard.js", h.dashboardScript)
	h.mux.HandleFunc("GET /dashboard.json", h.dashboardJSON)
	return h, nil
}

func isNil(b Backend) bool { return isNilValue(b) }

// ctx is r's context bounded by the backend timeout (Options.BackendTimeout).
func (h *handler) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	if h.timeout <= 0 {
		return context.WithCancel(r.Context())
	}
	return context.WithTimeout(r.Context(), h.timeout)
}

// isNilValue reports a nil interface or a typed nil inside one.
func isNilValue(b any) bool {
	if b == nil {
		return true
	}
	switch v := reflect.ValueOf(b); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// ServeHTTP routes r, logs it at Debug, and turns a panic into a 500.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	g := &guardWriter{ResponseWriter: w}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			h.log.Error("http: handler panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !g.wroteHeader {
				g.owned = true
				writeJSON(g, http.StatusInternalServerError, errorBody{Error: "internal error"})
			}
		}
		h.log.Debug("http request", "method", r.Method, "path", r.URL.Path, "status", g.status(),
			"bytes", g.written, "duration", time.Since(start), "remote", r.RemoteAddr)
	}()
	h.mux.ServeHTTP(g, r)
}

// guardWriter records the status for logging and rewrites the ServeMux's own
// plain-text answers (404, 405 with Allow, path-cleaning redirects) as JSON.
// The package's handlers set owned before writing.
type guardWriter struct {
	http.ResponseWriter
	owned       bool // a handler of this package writes the response
	wroteHeader bool
	swallow     bool // discard the mux's own body (already replaced)
	code        int
	written     int64
}

func (g *guardWriter) status() int {
	if !g.wroteHeader {
		return http.StatusOK
	}
	return g.code
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (g *guardWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// WriteHeader implements http.ResponseWriter.
func (g *guardWriter) WriteHeader(code int) {
	if code < 200 { // informational: not the final status
		g.ResponseWriter.WriteHeader(code)
		return
	}
	if g.wroteHeader {
		return
	}
	g.wroteHeader, g.code = true, code
	if g.owned || code < 300 {
		g.ResponseWriter.WriteHeader(code)
		return
	}
	// The ServeMux answering for itself: same status and headers (Allow,
	// Location), JSON body.
	msg := strings.ToLower(http.StatusText(code))
	if msg == "" {
		msg = fmt.Sprintf("status %d", code)
	}
	body, _ := json.Marshal(errorBody{Error: msg})
	body = append(body, '\n')
	hd := g.ResponseWriter.Header()
	hd.Set("Content-Type", contentJSON)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Del("Content-Length")
	g.ResponseWriter.WriteHeader(code)
	n, _ := g.ResponseWriter.Write(body)
	g.written += int64(n)
	g.swallow = true
}

// Write implements http.ResponseWriter.
func (g *guardWriter) Write(p []byte) (int, error) {
	if !g.wroteHeader {
		g.WriteHeader(http.StatusOK)
	}
	if g.swallow {
		return len(p), nil
	}
	n, err := g.ResponseWriter.Write(p)
	g.written += int64(n)
	return n, err
}

// own marks w's response as written by this package (see guardWriter).
func own(w http.ResponseWriter) {
	if g, ok := w.(*guardWriter); ok {
		g.owned = true
	}
}

// errorBody is every error response: {"error":"…"}.
type errorBody struct {
	Error string `json:"error"`
}

// writeJSON writes v as the JSON response with the given status.
func writeJSON(w http.ResponseWriter, code int, v any) {
	own(w)
	body, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		body, _ = json.Marshal(errorBody{Error: "internal error: encoding response"})
	}
	body = append(body, '\n')
	hd := w.Header()
	hd.Set("Content-Type", contentJSON)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// reply writes v with the given status; an encoding failure is a logged 500.
func (h *handler) reply(w http.ResponseWriter, r *http.Request, code int, v any) {
	if _, err := json.Marshal(v); err != nil {
		h.fail(w, r, http.StatusInternalServerError, "internal error", fmt.Errorf("encoding response: %w", err))
		return
	}
	writeJSON(w, code, v)
}

// fail writes {"error": msg} with the given status, logging a 500 at
// Error. A 503 (the node said why it cannot serve: mempool full, failed,
// shutting down) is logged at Debug, so that a failed node's log is not
// one line per refused request.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, code int, msg string, err error) {
	switch {
	case code == http.StatusServiceUnavailable:
		h.log.Debug("http: request refused", "method", r.Method, "path", r.URL.Path, "status", code, "error", err)
	case code >= 500:
		h.log.Error("http: request failed", "method", r.Method, "path", r.URL.Path, "status", code, "error", err)
	}
	writeJSON(w, code, errorBody{Error: msg})
}

// failBackend answers a Backend error with the status its sentinel selects.
func (h *handler) failBackend(w http.ResponseWriter, r *http.Request, err error) {
	code := StatusFor(err)
	msg := err.Error()
	if code == http.StatusInternalServerError {
		msg = "internal error"
	}
	h.fail(w, r, code, msg, err)
}

// StatusFor maps a Backend error to its HTTP status: ErrBadRequest 400,
// ErrNotFound 404, ErrConflict 409, ErrUnavailable 503 (also a cancelled or
// timed-out request context), anything else 500.
func StatusFor(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrUnavailable), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func badRequest(msg string) error { return fmt.Errorf("%w: %s", ErrBadRequest, msg) }

// POST /jobs
func (h *handler) submitJob(w http.ResponseWriter, r *http.Request) {
	mt, ok := h.mediaType(w, r)
	if !ok {
		return
	}
	if mt != "" && mt != contentJSON {
		h.fail(w, r, http.StatusUnsupportedMediaType, "Content-Type must be "+contentJSON, nil)
		return
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	req, err := ParseJobRequest(body)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err.Error(), nil)
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	v, err := h.b.SubmitJob(ctx, req)
	if err != nil {
		h.failBackend(w, r, err)
		return
	}
	w.Header().Set("Location", "/jobs/"+textform.Hex(v.ID[:]))
	h.reply(w, r, http.StatusCreated, normalizeJob(v))
}

// GET /jobs/{id}
func (h *handler) job(w http.ResponseWriter, r *http.Request) {
	var id cip11.Hash
	if err := id.UnmarshalText([]byte(r.PathValue("id"))); err != nil {
		h.fail(w, r, http.StatusBadRequest, "job id must be 64 lowercase hex digits", nil)
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	v, ok, err := h.b.Job(ctx, id)
	if err != nil {
		h.failBackend(w, r, err)
		return
	}
	if !ok {
		h.fail(w, r, http.StatusNotFound, "job not found", nil)
		return
	}
	h.reply(w, r, http.StatusOK, normalizeJob(v))
}

func normalizeJob(v job.View) job.View {
	if v.Committee == nil {
		v.Committee = []cip11.Address{}
	}
	if v.Events == nil {
		v.Events = []job.Event{}
	}
	if v.Members == nil {
		v.Members = []job.Member{}
	}
	return v
}

// RunnerJobsResponse is the body of GET /runner/{addr}/jobs.
type RunnerJobsResponse struct {
	// Runner is the polling runner's address.
	Runner cip11.Address `json:"runner"`
	// Jobs is its open assignments (always a JSON array).
	Jobs []*wire.JobAssignment `json:"jobs"`
}

// KeyedPoller is an optional Backend extension: the poll answered for a
// runner that named its public key (GET /runner/{addr}/jobs?pubkey=HEX),
// so that a validator that does not know the key yet (it learns keys from
// transactions, and a restart forgets them) can still sign the runner's
// assignments (§14). The handler has checked that the key is a runner key
// whose address is runner.
type KeyedPoller interface {
	RunnerJobsFor(ctx context.Context, runner cip11.Address, key wire.PubKey) ([]*wire.JobAssignment, error)
}

// parseRunnerKey parses a compressed secp256k1 runner key in lowercase hex
// and checks that it is runner's.
func parseRunnerKey(q string, runner cip11.Address) (wire.PubKey, error) {
	b, err := hex.DecodeString(q)
	if err != nil || strings.ToLower(q) != q {
		return wire.PubKey{}, errors.New("pubkey must be lowercase hex")
	}
	pk, err := wire.ParsePubKey(b)
	if err != nil {
		return wire.PubKey{}, fmt.Errorf("pubkey: %v", err)
	}
	a, err := pk.RunnerAddress()
	if err != nil {
		return wire.PubKey{}, fmt.Errorf("pubkey is not a runner key: %v", err)
	}
	if a != runner {
		return wire.PubKey{}, fmt.Errorf("pubkey is %s's, not %s's", a, runner)
	}
	return pk, nil
}

// GET /runner/{addr}/jobs
func (h *handler) runnerJobs(w http.ResponseWriter, r *http.Request) {
	if h.poll {
		h.fail(w, r, http.StatusGone, "poll fallback disabled (CIP11_POLL_DISABLED): jobs are pushed over QUIC", nil)
		return
	}
	var addr cip11.Address
	if err := addr.UnmarshalText([]byte(r.PathValue("addr"))); err != nil {
		h.fail(w, r, http.StatusBadRequest, "runner address must be 40 lowercase hex digits", nil)
		return
	}
	var (
		jobs []*wire.JobAssignment
		err  error
	)
	ctx, cancel := h.ctx(r)
	defer cancel()
	if q := r.URL.Query().Get("pubkey"); q != "" {
		pk, perr := parseRunnerKey(q, addr)
		if perr != nil {
			h.fail(w, r, http.StatusBadRequest, perr.Error(), nil)
			return
		}
		if kp, ok := h.b.(KeyedPoller); ok {
			jobs, err = kp.RunnerJobsFor(ctx, addr, pk)
		} else {
			jobs, err = h.b.RunnerJobs(ctx, addr)
		}
	} else {
		jobs, err = h.b.RunnerJobs(ctx, addr)
	}
	if err != nil {
		h.failBackend(w, r, err)
		return
	}
	out := RunnerJobsResponse{Runner: addr, Jobs: make([]*wire.JobAssignment, 0, len(jobs))}
	for _, j := range jobs {
		if j != nil {
			out.Jobs = append(out.Jobs, j)
		}
	}
	h.m.PollServed()
	h.reply(w, r, http.StatusOK, out)
}

// GET /runner/{addr}
func (h *handler) runner(w http.ResponseWriter, r *http.Request) {
	var addr cip11.Address
	if err := addr.UnmarshalText([]byte(r.PathValue("addr"))); err != nil {
		h.fail(w, r, http.StatusBadRequest, "runner address must be 40 lowercase hex digits", nil)
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	v, ok, err := h.b.Runner(ctx, addr)
	if err != nil {
		h.failBackend(w, r, err)
		return
	}
	if !ok {
		h.fail(w, r, http.StatusNotFound, "runner not registered", nil)
		return
	}
	h.reply(w, r, http.StatusOK, v)
}

// submitConflict is the 409 body of POST /submit.
type submitConflict struct {
	TxHash *cip11.Hash `json:"tx_hash,omitempty"`
	Status string      `json:"status"`
	Error  string      `json:"error"`
}

// POST /submit
func (h *handler) submitTx(w http.ResponseWriter, r *http.Request) {
	mt, ok := h.mediaType(w, r)
	if !ok {
		return
	}
	if mt != "" && mt != contentJSON && mt != contentOctets {
		h.fail(w, r, http.StatusUnsupportedMediaType, "Content-Type must be "+contentJSON+" or "+contentOctets, nil)
		return
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	raw := body
	if mt == contentOctets {
		if len(raw) == 0 {
			h.fail(w, r, http.StatusBadRequest, "empty transaction", nil)
			return
		}
	} else {
		var err error
		if raw, err = ParseSubmission(body); err != nil {
			h.fail(w, r, http.StatusBadRequest, err.Error(), nil)
			return
		}
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	res, err := h.b.SubmitTx(ctx, raw)
	if err != nil {
		if errors.Is(err, ErrConflict) {
			c := submitConflict{Status: SubmitDuplicate, Error: err.Error()}
			if res.TxHash != (cip11.Hash{}) {
				c.TxHash = &res.TxHash
			}
			h.reply(w, r, http.StatusConflict, c)
			return
		}
		h.failBackend(w, r, err)
		return
	}
	if res.Status == "" {
		res.Status = SubmitAccepted
	}
	h.reply(w, r, http.StatusOK, res)
}

// GET /status
func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	s, err := h.b.Status(ctx)
	if err != nil {
		h.failBackend(w, r, err)
		return
	}
	s.PollDisabled = h.poll
	h.reply(w, r, http.StatusOK, s)
}

// GET /healthz: 200 with {"status":"ok",…} when healthy, else 503 with
// the status and the reason (HealthOf).
func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	s, err := h.b.Status(ctx)
	if err != nil {
		h.failBackend(w, r, err) // 503 for a busy or closing node
		return
	}
	hl := HealthOf(s)
	code := http.StatusOK
	if hl.Status != HealthOK {
		code = http.StatusServiceUnavailable
	}
	h.reply(w, r, code, hl)
}

// GET /metrics
func (h *handler) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if h.metrics == nil {
		h.fail(w, r, http.StatusNotFound, "metrics registry not configured", nil)
		return
	}
	own(w)
	h.metrics.ServeHTTP(w, r)
}

// GET /dashboard.json
func (h *handler) dashboardJSON(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	d, err := h.b.Dashboard(ctx)
	if err != nil {
		h.failBackend(w, r, err)
		return
	}
	d.Status.PollDisabled = h.poll
	h.reply(w, r, http.StatusOK, sanitizeDashboard(d))
}

// sanitizeDashboard applies the display caps, makes every list a JSON array,
// lists every job state and drops values JSON cannot carry.
func sanitizeDashboard(d Dashboard) Dashboard {
	out := Dashboard{Status: d.Status, Jobs: make(map[job.State]int, len(d.Jobs)+5)}
	for _, s := range job.States() {
		out.Jobs[s] = 0
	}
	for k, v := range d.Jobs {
		out.Jobs[k] = v
	}
	blocks := d.RecentBlocks
	if len(blocks) > MaxDashboardBlocks {
		blocks = blocks[:MaxDashboardBlocks]
	}
	out.RecentBlocks = make([]job.BlockSummary, len(blocks))
	for i, b := range blocks {
		if math.IsNaN(b.ExecMillis) || math.IsInf(b.ExecMillis, 0) {
			b.ExecMillis = 0
		}
		out.RecentBlocks[i] = b
	}
	samples := d.PushLatencyMillis
	if len(samples) > MaxDashboardSamples {
		samples = samples[len(samples)-MaxDashboardSamples:]
	}
	out.PushLatencyMillis = make([]float64, 0, len(samples))
	for _, s := range samples {
		if !math.IsNaN(s) && !math.IsInf(s, 0) && s >= 0 {
			out.PushLatencyMillis = append(out.PushLatencyMillis, s)
		}
	}
	out.ConnectedRunners = capRunners(d.ConnectedRunners)
	out.PresentRunners = capRunners(d.PresentRunners)
	out.Now, out.StartedAt = d.Now, d.StartedAt
	out.Totals = d.Totals
	out.Totals.Refused = make(map[string]int64, len(d.Totals.Refused))
	for k, v := range d.Totals.Refused {
		out.Totals.Refused[k] = v
	}
	failures := d.Failures
	if len(failures) > MaxDashboardFailures {
		failures = failures[:MaxDashboardFailures]
	}
	out.Failures = append(make([]Failure, 0, len(failures)), failures...)
	rows := d.Runners
	if len(rows) > MaxDashboardRunners {
		rows = rows[:MaxDashboardRunners]
	}
	out.Runners = append(make([]RunnerRow, 0, len(rows)), rows...)
	if d.ModeA != nil {
		ma := *d.ModeA
		out.ModeA = &ma
	}
	return out
}

func capRunners(a []cip11.Address) []cip11.Address {
	if len(a) > MaxDashboardRunners {
		a = a[:MaxDashboardRunners]
	}
	return append(make([]cip11.Address, 0, len(a)), a...)
}

// promLogger adapts slog to promhttp's error log.
type promLogger struct{ log *slog.Logger }

// Println implements promhttp.Logger.
func (p promLogger) Println(v ...any) { p.log.Error("http: /metrics: " + fmt.Sprint(v...)) }

// EpochsBackend is a Backend that knows a network's committed validator-set
// epochs (GET /epochs): the genesis's and every in-band reconfiguration's
// (SPEC-NOTES C11), ascending; empty on a single-validator chain.
type EpochsBackend interface {
	Epochs() []chainlog.Reconfigure
}

// EpochsResponse is GET /epochs' body.
type EpochsResponse struct {
	Epochs []chainlog.Reconfigure `json:"epochs"`
}

func (h *handler) epochs(w http.ResponseWriter, r *http.Request) {
	eb, ok := h.b.(EpochsBackend)
	var es []chainlog.Reconfigure
	if ok {
		es = eb.Epochs()
	}
	if len(es) == 0 {
		h.fail(w, r, http.StatusNotFound, "this chain has no validator-set epochs (a single validator)", nil)
		return
	}
	h.reply(w, r, http.StatusOK, EpochsResponse{Epochs: es})
}
