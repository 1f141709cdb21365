package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/wire"
)

func TestNewHandlerNilBackend(t *testing.T) {
	if _, err := NewHandler(nil, Options{}); !errors.Is(err, ErrNilBackend) {
		t.Fatalf("nil backend: %v, want ErrNilBackend", err)
	}
	var typed *fakeBackend
	if _, err := NewHandler(typed, Options{}); !errors.Is(err, ErrNilBackend) {
		t.Fatalf("typed nil backend: %v, want ErrNilBackend", err)
	}
	if h, err := NewHandler(&fakeBackend{}, Options{}); err != nil || h == nil {
		t.Fatalf("zero Options: %v", err)
	}
}

func TestSubmitJob(t *testing.T) {
	b := &fakeBackend{}
	h, _ := newTestHandler(t, b, Options{})
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", ""} {
		rec := do(h, http.MethodPost, "/jobs", ct, []byte(validJob()))
		wantStatus(t, rec, http.StatusCreated)
		v := decode[job.View](t, rec)
		if got, want := rec.Header().Get("Location"), "/jobs/"+hexOf(v.ID[:]); got != want {
			t.Fatalf("Location %q, want %q", got, want)
		}
		if v.State != job.StateSubmitted || v.Runners != 2 || v.JobKind != 3 || v.Submitter != addr(0xab) {
			t.Fatalf("view %+v", v)
		}
		if v.Committee == nil || len(v.Events) != 1 || v.Events[0].Kind != job.EventSubmitted {
			t.Fatalf("committee %v events %v", v.Committee, v.Events)
		}
	}
	got := b.gotJobs[0]
	want := JobRequest{Submitter: addr(0xab), JobKind: 3, Runners: 2, TimeoutBlocks: 20, WorkMillis: 150,
		Payload: wire.Bytes{0xc0, 0xff, 0xee}, Nonce: 9}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("backend got %+v, want %+v", got, want)
	}

	// Optional fields default to zero.
	rec := do(h, http.MethodPost, "/jobs", "", []byte(`{"submitter":"`+addrHex(1)+`","job_kind":0,"runners":1,"timeout_blocks":"1"}`))
	wantStatus(t, rec, http.StatusCreated)
	if got := b.gotJobs[len(b.gotJobs)-1]; got.WorkMillis != 0 || len(got.Payload) != 0 || got.Nonce != 0 {
		t.Fatalf("defaults %+v", got)
	}
	// Heights in the response are decimal strings (D18).
	if !strings.Contains(rec.Body.String(), `"submitted_at":"0"`) || !strings.Contains(rec.Body.String(), `"height":"7"`) {
		t.Fatalf("u64 fields not decimal strings: %s", rec.Body.String())
	}
}

func TestSubmitJobMalformed(t *testing.T) {
	sub := `"submitter":"` + addrHex(0xab) + `"`
	cases := []struct {
		name, ct, body string
		code           int
	}{
		{"bad json", "", `{"submitter":`, http.StatusBadRequest},
		{"not json", "", `hello`, http.StatusBadRequest},
		{"trailing comma", "", `{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":"5",}`, http.StatusBadRequest},
		{"missing colon", "", `{"submitter" "x"}`, http.StatusBadRequest},
		{"lone comma", "", `{,}`, http.StatusBadRequest},
		{"unclosed", "", `{` + sub, http.StatusBadRequest},
		{"whitespace only", "", " \n\t", http.StatusBadRequest},
		{"empty body", "", ``, http.StatusBadRequest},
		{"array", "", `[1,2]`, http.StatusBadRequest},
		{"null", "", `null`, http.StatusBadRequest},
		{"string", "", `"x"`, http.StatusBadRequest},
		{"unknown field", "", `{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":"5","color":"red"}`, http.StatusBadRequest},
		{"field case", "", `{"Submitter":"` + addrHex(1) + `","job_kind":1,"runners":1,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"duplicate field", "", `{` + sub + `,"job_kind":1,"runners":1,"runners":2,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"trailing data", "", validJob() + `{}`, http.StatusBadRequest},
		{"trailing garbage", "", validJob() + `x`, http.StatusBadRequest},
		{"missing submitter", "", `{"job_kind":1,"runners":1,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"missing job_kind", "", `{` + sub + `,"runners":1,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"missing runners", "", `{` + sub + `,"job_kind":1,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"missing timeout", "", `{` + sub + `,"job_kind":1,"runners":1}`, http.StatusBadRequest},
		{"null submitter", "", `{"submitter":null,"job_kind":1,"runners":1,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"runners 0", "", `{` + sub + `,"job_kind":1,"runners":0,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"runners negative", "", `{` + sub + `,"job_kind":1,"runners":-1,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"runners float", "", `{` + sub + `,"job_kind":1,"runners":1.5,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"timeout 0", "", `{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":"0"}`, http.StatusBadRequest},
		{"timeout number", "", `{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":5}`, http.StatusBadRequest},
		{"timeout leading zero", "", `{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":"05"}`, http.StatusBadRequest},
		{"timeout overflow", "", `{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":"18446744073709551616"}`, http.StatusBadRequest},
		{"nonce sign", "", `{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":"5","nonce":"+1"}`, http.StatusBadRequest},
		{"job_kind 256", "", `{` + sub + `,"job_kind":256,"runners":1,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"job_kind string", "", `{` + sub + `,"job_kind":"1","runners":1,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"submitter uppercase", "", `{"submitter":"` + strings.ToUpper(addrHex(0xab)) + `","job_kind":1,"runners":1,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"submitter short", "", `{"submitter":"abcd","job_kind":1,"runners":1,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"submitter 0x", "", `{"submitter":"0x` + addrHex(0xab)[:38] + `","job_kind":1,"runners":1,"timeout_blocks":"5"}`, http.StatusBadRequest},
		{"payload odd hex", "", `{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":"5","payload":"abc"}`, http.StatusBadRequest},
		{"payload not hex", "", `{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":"5","payload":"zz"}`, http.StatusBadRequest},
		{"wrong content type", "text/plain", validJob(), http.StatusUnsupportedMediaType},
		{"malformed content type", "application/", validJob(), http.StatusBadRequest},
		{"oversized", "", `{"payload":"` + strings.Repeat("00", 1<<20) + `"}`, http.StatusRequestEntityTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &fakeBackend{}
			h, _ := newTestHandler(t, b, Options{})
			msg := wantError(t, do(h, http.MethodPost, "/jobs", c.ct, []byte(c.body)), c.code)
			if n, _, _ := b.calls(); n != 0 {
				t.Fatalf("backend called for a malformed request (%s)", msg)
			}
		})
	}
}

func TestSubmitJobBodyLimit(t *testing.T) {
	h, _ := newTestHandler(t, &fakeBackend{}, Options{MaxBodyBytes: 64})
	wantError(t, do(h, http.MethodPost, "/jobs", "", []byte(validJob())), http.StatusRequestEntityTooLarge)
	h, _ = newTestHandler(t, &fakeBackend{}, Options{MaxBodyBytes: int64(len(validJob()))})
	wantStatus(t, do(h, http.MethodPost, "/jobs", "", []byte(validJob())), http.StatusCreated)
}

func TestSubmitJobBackendErrors(t *testing.T) {
	cases := []struct {
		err  error
		code int
	}{
		{fmt.Errorf("job_kind 9 unknown: %w", ErrBadRequest), http.StatusBadRequest},
		{fmt.Errorf("job exists: %w", ErrConflict), http.StatusConflict},
		{fmt.Errorf("syncing: %w", ErrUnavailable), http.StatusServiceUnavailable},
		{fmt.Errorf("no such thing: %w", ErrNotFound), http.StatusNotFound},
		{errBoom, http.StatusInternalServerError},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.code), func(t *testing.T) {
			h, logs := newTestHandler(t, &fakeBackend{jobErr: c.err}, Options{})
			msg := wantError(t, do(h, http.MethodPost, "/jobs", "", []byte(validJob())), c.code)
			if StatusFor(c.err) != c.code {
				t.Fatalf("StatusFor(%v) = %d", c.err, StatusFor(c.err))
			}
			if c.code == http.StatusInternalServerError {
				if msg != "internal error" {
					t.Fatalf("500 leaks the internal error: %q", msg)
				}
				if !strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), errBoom.Error()) {
					t.Fatalf("500 not logged at Error with its cause: %s", logs.String())
				}
			} else if !strings.Contains(msg, c.err.Error()) {
				t.Fatalf("message %q lacks %q", msg, c.err)
			}
		})
	}
}

func TestGetJob(t *testing.T) {
	b := &fakeBackend{}
	h, _ := newTestHandler(t, b, Options{})
	created := decode[job.View](t, do(h, http.MethodPost, "/jobs", "", []byte(validJob())))

	rec := do(h, http.MethodGet, "/jobs/"+hexOf(created.ID[:]), "", nil)
	wantStatus(t, rec, http.StatusOK)
	if got := decode[job.View](t, rec); got.ID != created.ID || got.State != job.StateSubmitted {
		t.Fatalf("got %+v", got)
	}
	// nil slices come out as [].
	b.jobs[cip11.Hash{1}] = job.View{ID: cip11.Hash{1}, State: job.StateAssigned}
	rec = do(h, http.MethodGet, "/jobs/"+hexOf((&cip11.Hash{1})[:]), "", nil)
	wantStatus(t, rec, http.StatusOK)
	if s := rec.Body.String(); !strings.Contains(s, `"committee":[]`) || !strings.Contains(s, `"events":[]`) {
		t.Fatalf("nil slices not []: %s", s)
	}

	unknown := cip11.Hash{0xee}
	wantError(t, do(h, http.MethodGet, "/jobs/"+hexOf(unknown[:]), "", nil), http.StatusNotFound)

	good := hexOf(created.ID[:])
	for _, id := range []string{strings.ToUpper(good), good[:62], good + "00", "0x" + good[2:], strings.Repeat("g", 64), "x"} {
		wantError(t, do(h, http.MethodGet, "/jobs/"+id, "", nil), http.StatusBadRequest)
	}
	wantError(t, do(h, http.MethodGet, "/jobs/", "", nil), http.StatusNotFound)
	wantError(t, do(h, http.MethodGet, "/jobs/"+good+"/more", "", nil), http.StatusNotFound)
}

func testAssignment() *wire.JobAssignment {
	var sig wire.ValidatorSig
	sig[0] = 0x5a
	// The secp256k1 generator, compressed, tagged 0x01.
	var runner wire.PubKey
	if err := runner.UnmarshalText([]byte("010279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798")); err != nil {
		panic(err)
	}
	return &wire.JobAssignment{RunnerPubKey: runner, JobID: cip11.Hash{9}, JobSpec: wire.Bytes{1, 2, 3}, JobSpecHash: cip11.Hash{8},
		AssignmentHeight: 12, AssignmentHash: cip11.Hash{7}, DeadlineBlock: 32,
		ValidatorPubKey: wire.ValidatorPubKey([32]byte{3}), ValidatorSigned: sig}
}

func TestRunnerJobs(t *testing.T) {
	b := &fakeBackend{poll: []*wire.JobAssignment{testAssignment(), nil}}
	h, _ := newTestHandler(t, b, Options{})
	a := addr(0x42)
	rec := do(h, http.MethodGet, "/runner/"+hexOf(a[:])+"/jobs", "", nil)
	wantStatus(t, rec, http.StatusOK)
	body := rec.Body.String()
	resp := decode[RunnerJobsResponse](t, rec)
	if resp.Runner != a || len(resp.Jobs) != 1 || resp.Jobs[0].JobID != (cip11.Hash{9}) || resp.Jobs[0].DeadlineBlock != 32 {
		t.Fatalf("response %+v", resp)
	}
	if !strings.Contains(body, `"deadline_block":"32"`) {
		t.Fatalf("deadline not a decimal string: %s", body)
	}
	if b.gotPolls[0] != a {
		t.Fatalf("backend polled for %x", b.gotPolls[0])
	}

	// No jobs: an empty array, not null.
	b.poll = nil
	rec = do(h, http.MethodGet, "/runner/"+hexOf(a[:])+"/jobs", "", nil)
	wantStatus(t, rec, http.StatusOK)
	if !strings.Contains(rec.Body.String(), `"jobs":[]`) {
		t.Fatalf("empty poll: %s", rec.Body.String())
	}

	good := addrHex(0xab)
	for _, s := range []string{strings.ToUpper(good), good[:38], good + "00", "0x" + good[2:], "zz"} {
		wantError(t, do(h, http.MethodGet, "/runner/"+s+"/jobs", "", nil), http.StatusBadRequest)
	}

	b.pollErr = fmt.Errorf("store closed: %w", ErrUnavailable)
	wantError(t, do(h, http.MethodGet, "/runner/"+good+"/jobs", "", nil), http.StatusServiceUnavailable)
}

func TestRunnerJobsPollDisabled(t *testing.T) {
	b := &fakeBackend{poll: []*wire.JobAssignment{testAssignment()}}
	h, _ := newTestHandler(t, b, Options{PollDisabled: true})
	a := addr(0x42)
	msg := wantError(t, do(h, http.MethodGet, "/runner/"+hexOf(a[:])+"/jobs", "", nil), http.StatusGone)
	if !strings.Contains(msg, "CIP11_POLL_DISABLED") {
		t.Fatalf("410 message %q", msg)
	}
	wantError(t, do(h, http.MethodGet, "/runner/nothex/jobs", "", nil), http.StatusGone)
	if _, _, n := b.calls(); n != 0 {
		t.Fatalf("backend polled %d times with polling disabled", n)
	}
	if s := decode[Status](t, do(h, http.MethodGet, "/status", "", nil)); !s.PollDisabled {
		t.Fatal("status does not report poll_disabled")
	}
}

func TestSubmitTx(t *testing.T) {
	tx := []byte{0, 0, 0, 3, 0xa1, 0x01, 0x02}
	b := &fakeBackend{}
	h, _ := newTestHandler(t, b, Options{})

	for _, ct := range []string{"", "application/json"} {
		rec := do(h, http.MethodPost, "/submit", ct, []byte(`{"tx":"`+hexOf(tx)+`"}`))
		wantStatus(t, rec, http.StatusOK)
		res := decode[SubmitResult](t, rec)
		if res.Status != SubmitAccepted || res.TxHash != cip11.Keccak256(tx) {
			t.Fatalf("result %+v", res)
		}
	}
	rec := do(h, http.MethodPost, "/submit", "application/octet-stream", tx)
	wantStatus(t, rec, http.StatusOK)
	for i, got := range b.gotTxs {
		if !bytes.Equal(got, tx) {
			t.Fatalf("submission %d: backend got %x, want %x", i, got, tx)
		}
	}

	// Duplicate: 409, body still JSON with the hash and status.
	b.txErr, b.txRes = fmt.Errorf("already in mempool: %w", ErrConflict), SubmitResult{TxHash: cip11.Keccak256(tx), Status: SubmitDuplicate}
	rec = do(h, http.MethodPost, "/submit", "application/octet-stream", tx)
	wantError(t, rec, http.StatusConflict)
	res := decode[map[string]any](t, rec)
	if res["status"] != SubmitDuplicate || res["tx_hash"] != hexOf(b.txRes.TxHash[:]) {
		t.Fatalf("409 body %v", res)
	}
	// A duplicate without a hash still says duplicate, without a zero hash.
	b.txRes = SubmitResult{}
	rec = do(h, http.MethodPost, "/submit", "", []byte(`{"tx":"`+hexOf(tx)+`"}`))
	wantError(t, rec, http.StatusConflict)
	if s := rec.Body.String(); strings.Contains(s, "tx_hash") || !strings.Contains(s, `"status":"duplicate"`) {
		t.Fatalf("409 body %s", s)
	}

	for _, c := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("bad signature: %w", ErrBadRequest), http.StatusBadRequest},
		{fmt.Errorf("mempool full: %w", ErrUnavailable), http.StatusServiceUnavailable},
		{errBoom, http.StatusInternalServerError},
	} {
		b.txErr = c.err
		wantError(t, do(h, http.MethodPost, "/submit", "application/octet-stream", tx), c.code)
	}
}

func TestSubmitTxMalformed(t *testing.T) {
	cases := []struct {
		name, ct, body string
		code           int
	}{
		{"bad json", "", `{"tx":`, http.StatusBadRequest},
		{"unknown field", "", `{"tx":"00","fee":"1"}`, http.StatusBadRequest},
		{"field case", "", `{"TX":"00"}`, http.StatusBadRequest},
		{"duplicate field", "", `{"tx":"00","tx":"01"}`, http.StatusBadRequest},
		{"trailing", "", `{"tx":"00"} {"tx":"01"}`, http.StatusBadRequest},
		{"missing tx", "", `{}`, http.StatusBadRequest},
		{"null tx", "", `{"tx":null}`, http.StatusBadRequest},
		{"empty tx", "", `{"tx":""}`, http.StatusBadRequest},
		{"tx not hex", "", `{"tx":"xyz0"}`, http.StatusBadRequest},
		{"tx uppercase", "", `{"tx":"AB"}`, http.StatusBadRequest},
		{"tx number", "", `{"tx":12}`, http.StatusBadRequest},
		{"empty body", "", ``, http.StatusBadRequest},
		{"empty octets", "application/octet-stream", ``, http.StatusBadRequest},
		{"wrong content type", "text/plain", `{"tx":"00"}`, http.StatusUnsupportedMediaType},
		{"oversized json", "", `{"tx":"` + strings.Repeat("00", 1<<20) + `"}`, http.StatusRequestEntityTooLarge},
		{"oversized octets", "application/octet-stream", strings.Repeat("x", 1<<20+1), http.StatusRequestEntityTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &fakeBackend{}
			h, _ := newTestHandler(t, b, Options{})
			wantError(t, do(h, http.MethodPost, "/submit", c.ct, []byte(c.body)), c.code)
			if _, n, _ := b.calls(); n != 0 {
				t.Fatal("backend called for a malformed submission")
			}
		})
	}
	// Exactly at the limit is fine.
	b := &fakeBackend{}
	h, _ := newTestHandler(t, b, Options{})
	wantStatus(t, do(h, http.MethodPost, "/submit", "application/octet-stream", bytes.Repeat([]byte{1}, 1<<20)), http.StatusOK)
}

func TestStatus(t *testing.T) {
	st := Status{ChainID: 1337, Height: 18446744073709551615, BlockTimeMillis: 1000, QUICAddr: "127.0.0.1:7443",
		PeerKey: strings.Repeat("ab", 32), ValidatorSetHash: cip11.Hash{0x11}, SubsetEpoch: 2, Runners: 50,
		Connected: 40, Present: 38, Mempool: 3, PollDisabled: true, Version: "v0.1.0",
		LatestBlockHeight: 18446744073709551615, EarliestBlockHeight: 769, LatestBlockTime: time.Date(2026, 12, 4, 16, 0, 0, 123e6, time.UTC),
		LastBlockAgeMillis: 250, StallAfterMillis: 4800, CatchingUp: true, Peers: 3,
		Validators: []ValidatorHealth{{Index: 0, PeerKey: strings.Repeat("cd", 32), Address: "0A0B", Self: true, Connected: true, LastSignedHeight: 41},
			{Index: 1, PeerKey: strings.Repeat("ef", 32), Address: "0C0D", LastSignedHeight: 18446744073709551615}}}
	h, _ := newTestHandler(t, &fakeBackend{status: st}, Options{})
	rec := do(h, http.MethodGet, "/status", "", nil)
	wantStatus(t, rec, http.StatusOK)
	body := rec.Body.String()
	got := decode[Status](t, rec)
	want := st
	want.PollDisabled = false // Options decide
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("status %+v, want %+v", got, want)
	}
	for _, frag := range []string{`"chain_id":"1337"`, `"height":"18446744073709551615"`, `"subset_epoch":"2"`,
		`"block_time_ms":1000`, `"quic_addr":"127.0.0.1:7443"`, `"validator_set_hash":"11000000`, `"poll_disabled":false`,
		`"latest_block_height":"18446744073709551615"`, `"earliest_block_height":"769"`, `"latest_block_time":"2026-12-04T16:00:00.123Z"`, `"last_block_age_ms":250`,
		`"stall_after_ms":4800`, `"stalled":false`, `"catching_up":true`, `"peers":3`,
		`"validators":[{"index":0,"peer_key":"cdcd`, `"address":"0A0B","self":true,"connected":true,"last_signed_height":"41"}`,
		`"last_signed_height":"18446744073709551615"}]`} {
		if !strings.Contains(body, frag) {
			t.Fatalf("status body lacks %s: %s", frag, body)
		}
	}
	// A single validator's status (no validator set, no time yet, not
	// failed) omits validators, latest_block_time and failed.
	h, _ = newTestHandler(t, &fakeBackend{status: Status{Height: 3}}, Options{})
	body = do(h, http.MethodGet, "/status", "", nil).Body.String()
	for _, key := range []string{`"validators"`, `"latest_block_time"`, `"failed"`} {
		if strings.Contains(body, key) {
			t.Errorf("a single validator's status has %s: %s", key, body)
		}
	}
}

// TestHealthz: GET /healthz answers 200 {"status":"ok"} for a healthy
// status and 503 with the status and a reason otherwise; a failure wins
// over a stall, a stall over catching up.
func TestHealthz(t *testing.T) {
	for _, tc := range []struct {
		name   string
		st     Status
		code   int
		status string
		reason string
	}{
		{"healthy", Status{Height: 9, LastBlockAgeMillis: 300, StallAfterMillis: 4800, Peers: 3}, http.StatusOK, "ok", ""},
		{"stalled", Status{Height: 9, LastBlockAgeMillis: 5000, StallAfterMillis: 4800, Stalled: true}, http.StatusServiceUnavailable,
			"stalled", "no block for 5000 ms (height 9; stalled after 4800 ms)"},
		{"catching up", Status{Height: 9, CatchingUp: true, Peers: 2}, http.StatusServiceUnavailable, "catching_up", "block-syncing from 2 peers (height 9)"},
		{"stalled and catching up", Status{Height: 9, CatchingUp: true, Stalled: true, LastBlockAgeMillis: 6000, StallAfterMillis: 4800, Peers: 1,
			Validators: []ValidatorHealth{{Self: true, Connected: true}, {}}},
			http.StatusServiceUnavailable, "stalled", "no block for 6000 ms (height 9; stalled after 4800 ms); 1 consensus peers"},
		{"failed", Status{Height: 9, Stalled: true, Failed: "validator failed: state store: no space left on device"}, http.StatusServiceUnavailable,
			"failed", "the validator failed: validator failed: state store: no space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestHandler(t, &fakeBackend{status: tc.st}, Options{})
			rec := do(h, http.MethodGet, "/healthz", "", nil)
			wantStatus(t, rec, tc.code)
			got := decode[Health](t, rec)
			if got.Status != tc.status || got.Reason != tc.reason || got.Height != 9 || got.LastBlockAgeMillis != tc.st.LastBlockAgeMillis ||
				got.StallAfterMillis != tc.st.StallAfterMillis || got.CatchingUp != tc.st.CatchingUp || got.Peers != tc.st.Peers {
				t.Fatalf("healthz %+v", got)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
		})
	}
}

func TestWrongMethod(t *testing.T) {
	h, _ := newTestHandler(t, &fakeBackend{}, Options{})
	id := strings.Repeat("00", 32)
	cases := []struct{ method, path, allow string }{
		{http.MethodPut, "/jobs", "GET, HEAD, POST"},
		{http.MethodDelete, "/jobs/" + id, "GET, HEAD"},
		{http.MethodPost, "/runner/" + strings.Repeat("00", 20) + "/jobs", "GET, HEAD"},
		{http.MethodGet, "/submit", "POST"},
		{http.MethodPost, "/status", "GET, HEAD"},
		{http.MethodPost, "/metrics", "GET, HEAD"},
		{http.MethodPost, "/", "GET, HEAD"},
		{http.MethodPost, "/dashboard.json", "GET, HEAD"},
	}
	for _, c := range cases {
		rec := do(h, c.method, c.path, "", nil)
		msg := wantError(t, rec, http.StatusMethodNotAllowed)
		if got := rec.Header().Get("Allow"); got != c.allow {
			t.Fatalf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
		if msg != "method not allowed" {
			t.Fatalf("%s %s: message %q", c.method, c.path, msg)
		}
	}
}

func TestNotFound(t *testing.T) {
	h, _ := newTestHandler(t, &fakeBackend{}, Options{})
	for _, p := range []string{"/nope", "/jobs/", "/runner/" + strings.Repeat("00", 20), "/status/x", "/index.html"} {
		wantError(t, do(h, http.MethodGet, p, "", nil), http.StatusNotFound)
	}
	// The mux's path-cleaning redirect also answers JSON.
	rec := do(h, http.MethodGet, "/x/../status", "", nil)
	if rec.Code != http.StatusMovedPermanently && rec.Code != http.StatusTemporaryRedirect {
		t.Fatalf("redirect status %d", rec.Code)
	}
	wantError(t, rec, rec.Code)
	if rec.Header().Get("Location") != "/status" {
		t.Fatalf("Location %q", rec.Header().Get("Location"))
	}
}

func TestPanicBecomes500(t *testing.T) {
	h, logs := newTestHandler(t, &fakeBackend{panicked: true}, Options{})
	msg := wantError(t, do(h, http.MethodGet, "/status", "", nil), http.StatusInternalServerError)
	if msg != "internal error" || !strings.Contains(logs.String(), "status exploded") {
		t.Fatalf("message %q, logs %s", msg, logs.String())
	}
}

func TestRequestLogging(t *testing.T) {
	h, logs := newTestHandler(t, &fakeBackend{}, Options{})
	do(h, http.MethodGet, "/status", "", nil)
	out := logs.String()
	if !strings.Contains(out, `"level":"DEBUG"`) || !strings.Contains(out, `"path":"/status"`) || !strings.Contains(out, `"status":200`) {
		t.Fatalf("no Debug request record: %s", out)
	}
	if strings.Contains(out, `"level":"ERROR"`) {
		t.Fatalf("Error record for a 200: %s", out)
	}
}

// TestConcurrent exercises every endpoint from many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	reg, m := newRegistry(t)
	b := &fakeBackend{poll: []*wire.JobAssignment{testAssignment()}, dash: sampleDashboard()}
	h, _ := newTestHandler(t, b, Options{Gatherer: reg, Metrics: m})
	a := addr(5)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				m.PollServed()
				for _, r := range []struct{ method, path, body string }{
					{http.MethodPost, "/jobs", validJob()},
					{http.MethodGet, "/runner/" + hexOf(a[:]) + "/jobs", ""},
					{http.MethodPost, "/submit", `{"tx":"0102"}`},
					{http.MethodGet, "/status", ""},
					{http.MethodGet, "/metrics", ""},
					{http.MethodGet, "/dashboard.json", ""},
				} {
					if rec := do(h, r.method, r.path, "", []byte(r.body)); rec.Code >= 300 {
						t.Errorf("%s %s: %d %s", r.method, r.path, rec.Code, rec.Body.String())
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestErrorMessagesNameTheField(t *testing.T) {
	sub := `"submitter":"` + addrHex(0xab) + `"`
	for body, want := range map[string]string{
		`{"submitter":"AB","job_kind":1,"runners":1,"timeout_blocks":"5"}`:        `field "submitter"`,
		`{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":"05"}`:            `field "timeout_blocks"`,
		`{` + sub + `,"job_kind":300,"runners":1,"timeout_blocks":"5"}`:           `field "job_kind"`,
		`{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":"5","payload":1}`: `field "payload"`,
		`{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":"5","Nonce":"1"}`: `unknown field "Nonce"`,
		`{` + sub + `,"job_kind":1}`:                                              `runners, timeout_blocks`,
		`{` + sub + `,"job_kind":1,"runners":1,"timeout_blocks":"5"}{}`:           `trailing data`,
		`[]`: `not an array`,
	} {
		_, err := ParseJobRequest([]byte(body))
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrBadRequest mentioning %q", body, err, want)
		}
	}
	if _, err := ParseSubmission([]byte(`{"tx":"0"}`)); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), `field "tx"`) {
		t.Errorf("odd tx hex: %v", err)
	}
	if tx, err := ParseSubmission([]byte(` {"tx":"00ff"} `)); err != nil || !bytes.Equal(tx, []byte{0, 0xff}) {
		t.Errorf("ParseSubmission: %x, %v", tx, err)
	}
}

// GET /runner/{addr}: the registry record the runner schedules its §6.6
// heartbeats from (§7.1 last_heartbeat); it is served with the poll
// fallback disabled too (it is not a poll).
func TestRunnerRecord(t *testing.T) {
	a := addr(0x42)
	b := &fakeBackend{runners: map[cip11.Address]RunnerView{a: {Address: a, Health: "healthy", LastHeartbeat: 77, Height: 90}}}
	h, _ := newTestHandler(t, b, Options{PollDisabled: true})
	rec := do(h, http.MethodGet, "/runner/"+hexOf(a[:]), "", nil)
	wantStatus(t, rec, http.StatusOK)
	if body := rec.Body.String(); !strings.Contains(body, `"last_heartbeat":"77"`) || !strings.Contains(body, `"height":"90"`) ||
		!strings.Contains(body, `"health":"healthy"`) {
		t.Fatalf("body %s", body)
	}
	if v := decode[RunnerView](t, rec); v.Address != a || v.LastHeartbeat != 77 {
		t.Fatalf("view %+v", v)
	}
	other := addrHex(0xab)
	wantError(t, do(h, http.MethodGet, "/runner/"+other, "", nil), http.StatusNotFound)
	for _, s := range []string{strings.ToUpper(other), other[:38], "0x" + other[2:]} {
		wantError(t, do(h, http.MethodGet, "/runner/"+s, "", nil), http.StatusBadRequest)
	}
	b.runnerErr = fmt.Errorf("store closed: %w", ErrUnavailable)
	wantError(t, do(h, http.MethodGet, "/runner/"+hexOf(a[:]), "", nil), http.StatusServiceUnavailable)
}
