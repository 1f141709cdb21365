package node

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/job"
)

// GET /jobs over a real validator: more jobs than a page, some moved to
// the on-disk archive, one still in the mempool. Paging newest first
// (submission height, then id) visits every job exactly once, filters
// hold across pages, and the listing survives a restart (the archive's
// index is on disk).
func TestListJobsOverHTTP(t *testing.T) {
	d := testDevnet(t, 2, nil)
	dir := t.TempDir()
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: dir, NoSync: true, RetainBlocks: 2})
	if err != nil {
		t.Fatal(err)
	}
	subA, subB := cip11.Address{0xa}, cip11.Address{0xb}
	var ids []cip11.Hash
	submit := func(i int) {
		sub := subA
		if i%3 == 2 {
			sub = subB
		}
		id, err := v.SubmitJob(&JobSpec{Submitter: sub, Runners: 1, TimeoutBlocks: 1, Nonce: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i := range 6 {
		submit(i)
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 { // no runner connected: the early jobs expire and move to the archive
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
	}
	submit(6) // in the mempool until the next block
	check := func(v *Validator, wantMempool bool) {
		t.Helper()
		h, err := httpapi.NewHandler(Backend{v}, httpapi.Options{})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		page := func(query string) httpapi.JobList {
			t.Helper()
			resp, err := http.Get(srv.URL + "/jobs" + query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /jobs%s: %d %s", query, resp.StatusCode, b)
			}
			var l httpapi.JobList
			if err := json.Unmarshal(b, &l); err != nil {
				t.Fatal(err)
			}
			return l
		}
		all := func(filter string) []job.View {
			t.Helper()
			var out []job.View
			l := page("?limit=3" + filter)
			for pages := 1; ; pages++ {
				if len(l.Jobs) > 3 {
					t.Fatalf("page of %d jobs at limit 3", len(l.Jobs))
				}
				out = append(out, l.Jobs...)
				if l.NextCursor == "" {
					break
				}
				if pages > 10 {
					t.Fatal("paging does not end")
				}
				l = page("?limit=3&cursor=" + l.NextCursor + filter)
			}
			return out
		}
		got := all("")
		if len(got) != 7 {
			t.Fatalf("listed %d jobs, want 7", len(got))
		}
		seen := map[cip11.Hash]bool{}
		for i, jv := range got {
			if seen[jv.ID] {
				t.Fatalf("job %s listed twice", jv.ID)
			}
			seen[jv.ID] = true
			if i > 0 && !job.KeyOf(jv).Before(job.KeyOf(got[i-1])) {
				t.Fatalf("job %d (%s at %d) not after job %d (%s at %d)", i, jv.ID, jv.SubmittedAt, i-1, got[i-1].ID, got[i-1].SubmittedAt)
			}
			if len(jv.Events) != 0 {
				t.Fatalf("a listing carries events: %+v", jv.Events)
			}
		}
		if wantMempool && (got[0].ID != ids[6] || got[0].State != job.StateSubmitted) {
			t.Fatalf("first listed %s %s, want the mempool job %s first", got[0].ID, got[0].State, ids[6])
		}
		if got[len(got)-1].ID != ids[0] {
			t.Fatalf("last listed %s, want the oldest job %s", got[len(got)-1].ID, ids[0])
		}
		bs := all(fmt.Sprintf("&submitter=%s", subB))
		if len(bs) != 2 || bs[0].ID != ids[5] || bs[1].ID != ids[2] {
			t.Fatalf("submitter filter: %d jobs %v", len(bs), bs)
		}
		exp := all("&state=expired")
		if len(exp) < 4 {
			t.Fatalf("state=expired listed %d jobs", len(exp))
		}
		for _, jv := range exp {
			if jv.State != job.StateExpired {
				t.Fatalf("state filter let %s through", jv.State)
			}
		}
	}
	check(v, true)
	archived := 0
	_ = v.do(func(c *chain.Core) { archived = 7 - c.InMemory() })
	if archived < 3 {
		t.Fatalf("only %d jobs archived; the test wants some in the archive", archived)
	}
	if err := v.ProduceBlock(); err != nil { // includes the last job
		t.Fatal(err)
	}
	v.Close()
	v, err = NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: dir, NoSync: true, RetainBlocks: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	check(v, false)
}

// Issue 30: an expired job says why, and a committee smaller than M says
// so. Two registered runners, none connected, a job asking for both: the
// first committee is full; D26 re-selection excludes both timed-out
// runners, so the committee ends empty (committee_short) and the job
// expires as no_runner_connected, as does a one-runner job.
func TestExpiredJobSaysWhy(t *testing.T) {
	d := testDevnet(t, 2, nil)
	v := newTestValidator(t, d, "")
	defer v.Close()
	if err := v.ProduceBlock(); err != nil { // registers the runners
		t.Fatal(err)
	}
	both, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{1}, Runners: 2, TimeoutBlocks: 1})
	if err != nil {
		t.Fatal(err)
	}
	one, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{1}, Runners: 1, TimeoutBlocks: 1, Nonce: 1})
	if err != nil {
		t.Fatal(err)
	}
	sawShort := false
	for range 30 {
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
		jv, _ := v.Job(both)
		if jv.State == job.StateAssigned && len(jv.Committee) < 2 {
			if jv.CommitteeShort == "" {
				t.Fatalf("committee of %d for M=2 and no committee_short", len(jv.Committee))
			}
			sawShort = true
		}
		o, _ := v.Job(one)
		if jv.State == job.StateExpired && o.State == job.StateExpired {
			break
		}
	}
	jv, _ := v.Job(both)
	if jv.State != job.StateExpired || jv.ExpiredReason != job.ExpiredNoRunner || !sawShort ||
		jv.CommitteeShort != "asked for 2 runners, the committee has 0" {
		t.Fatalf("M=2 job: state %s, expired_reason %q, committee_short %q (seen short while assigned: %v)",
			jv.State, jv.ExpiredReason, jv.CommitteeShort, sawShort)
	}
	last := jv.Events[len(jv.Events)-1]
	if last.Kind != job.EventExpired || !strings.HasPrefix(last.Detail, string(job.ExpiredNoRunner)+": ") {
		t.Fatalf("expired event %+v", last)
	}
	o, _ := v.Job(one)
	if o.State != job.StateExpired || o.ExpiredReason != job.ExpiredNoRunner || o.CommitteeShort != "asked for 1 runner, the committee has 0" {
		t.Fatalf("M=1 job: state %s, expired_reason %q, committee_short %q", o.State, o.ExpiredReason, o.CommitteeShort)
	}
	raw, _ := json.Marshal(o)
	if !strings.Contains(string(raw), `"expired_reason":"no_runner_connected"`) {
		t.Fatalf("view JSON %s", raw)
	}
}
