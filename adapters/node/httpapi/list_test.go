package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
)

// listBackend lists views (already newest first) through job.Query.
type listBackend struct {
	fakeBackend
	views []job.View
	got   []job.Query
	err   error
}

func (l *listBackend) ListJobs(_ context.Context, q job.Query) ([]job.View, error) {
	l.got = append(l.got, q)
	if l.err != nil {
		return nil, l.err
	}
	var out []job.View
	for _, v := range l.views {
		if q.Match(v) && len(out) < q.Limit {
			out = append(out, v)
		}
	}
	return out, nil
}

func listViews(n int) []job.View {
	var out []job.View
	for i := range n {
		st := job.StateCompleted
		if i%2 == 1 {
			st = job.StateExpired
		}
		out = append(out, job.View{ID: cip11.Hash{byte(100 - i)}, State: st, Submitter: cip11.Address{byte(i % 3)},
			SubmittedAt: uint64(100 - i), Events: []job.Event{{Height: 1, Kind: job.EventSubmitted}}})
	}
	job.SortNewestFirst(out)
	return out
}

func TestListJobsPaging(t *testing.T) {
	b := &listBackend{views: listViews(7)}
	h, _ := newTestHandler(t, b, Options{})
	var ids []cip11.Hash
	target := "/jobs?limit=3"
	for pages := 0; ; pages++ {
		rec := do(h, http.MethodGet, target, "", nil)
		wantStatus(t, rec, http.StatusOK)
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		var l JobList
		_ = json.Unmarshal(rec.Body.Bytes(), &l)
		for _, v := range l.Jobs {
			ids = append(ids, v.ID)
			if len(v.Events) != 0 {
				t.Fatal("a listed job carries events")
			}
		}
		if !strings.Contains(rec.Body.String(), `"events":[]`) {
			t.Fatalf("events not an empty array: %s", rec.Body)
		}
		if _, ok := raw["next_cursor"]; ok != (l.NextCursor != "") || pages > 5 {
			t.Fatalf("next_cursor: %s", rec.Body)
		}
		if l.NextCursor == "" {
			if len(l.Jobs) != 1 {
				t.Fatalf("last page has %d jobs, want 1", len(l.Jobs))
			}
			break
		}
		target = "/jobs?limit=3&cursor=" + url.QueryEscape(l.NextCursor)
	}
	if len(ids) != 7 {
		t.Fatalf("paged %d jobs, want 7", len(ids))
	}
	for i, id := range ids {
		if id != b.views[i].ID {
			t.Fatalf("job %d is %s, want %s", i, id, b.views[i].ID)
		}
	}
	if b.got[0].Limit != 4 {
		t.Fatalf("asked the backend for %d jobs, want limit+1 = 4", b.got[0].Limit)
	}
	// defaults, filters
	do(h, http.MethodGet, "/jobs?state=expired&submitter="+strings.Repeat("00", 20), "", nil)
	q := b.got[len(b.got)-1]
	if q.Limit != DefaultListLimit+1 || q.State != job.StateExpired || q.Submitter == nil || *q.Submitter != (cip11.Address{}) || q.After != nil {
		t.Fatalf("query %+v", q)
	}
	// an empty listing is an empty array, no cursor
	rec := do(h, http.MethodGet, "/jobs?state=pending", "", nil)
	wantStatus(t, rec, http.StatusOK)
	if got := strings.TrimSpace(rec.Body.String()); got != `{"jobs":[]}` {
		t.Fatalf("empty listing: %s", got)
	}
	// backend errors map as elsewhere
	b.err = ErrUnavailable
	wantError(t, do(h, http.MethodGet, "/jobs", "", nil), http.StatusServiceUnavailable)
	b.err = errors.New("disk on fire")
	if msg := wantError(t, do(h, http.MethodGet, "/jobs", "", nil), http.StatusInternalServerError); msg != "internal error" {
		t.Fatalf("500 message %q", msg)
	}
}

func TestListJobsStrictQuery(t *testing.T) {
	h, _ := newTestHandler(t, &listBackend{}, Options{})
	good := EncodeCursor(job.Key{Height: 5, ID: cip11.Hash{1}})
	if k, err := DecodeCursor(good); err != nil || k.Height != 5 || k.ID != (cip11.Hash{1}) {
		t.Fatalf("cursor round trip: %+v %v", k, err)
	}
	bad := map[string]string{
		"unknown parameter":  "?page=2",
		"state unknown":      "?state=running",
		"state twice":        "?state=expired&state=completed",
		"state empty":        "?state=",
		"submitter short":    "?submitter=abcd",
		"submitter 0x":       "?submitter=0x" + strings.Repeat("00", 20),
		"submitter upper":    "?submitter=" + strings.Repeat("AB", 20),
		"limit zero":         "?limit=0",
		"limit negative":     "?limit=-1",
		"limit over max":     "?limit=501",
		"limit not a number": "?limit=ten",
		"limit empty":        "?limit=",
		"cursor garbage":     "?cursor=zz",
		"cursor short":       "?cursor=" + good[:78],
		"malformed query":    "?limit=%zz",
	}
	for name, q := range bad {
		msg := wantError(t, do(h, http.MethodGet, "/jobs"+q, "", nil), http.StatusBadRequest)
		if !strings.Contains(msg, "bad request") {
			t.Errorf("%s: message %q", name, msg)
		}
	}
	for _, q := range []string{"?limit=1", "?limit=500", "?cursor=" + good, "?state=submitted"} {
		wantStatus(t, do(h, http.MethodGet, "/jobs"+q, "", nil), http.StatusOK)
	}
	if _, err := ParseListQuery(url.Values{"limit": {"0"}}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("ParseListQuery error %v, want ErrBadRequest", err)
	}
	// a backend that cannot list says so
	h2, _ := newTestHandler(t, &fakeBackend{}, Options{})
	wantError(t, do(h2, http.MethodGet, "/jobs", "", nil), http.StatusNotImplemented)
}
