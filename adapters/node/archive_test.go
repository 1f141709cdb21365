package node

import (
	"log/slog"
	"path/filepath"
	"testing"

	pdb "github.com/cockroachdb/pebble/v2"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
)

// The archive's listing index: written with each view, replaced when a
// view is re-archived at another key, rebuilt once for an archive written
// before the index existed, and walked newest first from a cursor.
func TestArchiveListingIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "archive")
	a, err := openArchive(dir, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	var views []job.View
	for i := range 6 {
		st := job.StateCompleted
		if i%2 == 1 {
			st = job.StateExpired
		}
		views = append(views, job.View{ID: cip11.Hash{byte(i + 1)}, State: st, Submitter: cip11.Address{byte(i % 2)}, SubmittedAt: uint64(10 + i/2)})
	}
	if err := a.Put(views); err != nil {
		t.Fatal(err)
	}
	// re-archiving a view at another height moves its index entry
	moved := views[0]
	moved.SubmittedAt = 99
	if err := a.Put([]job.View{moved}); err != nil {
		t.Fatal(err)
	}
	ids := func(vs []job.View) []byte {
		var out []byte
		for _, v := range vs {
			out = append(out, v.ID[0])
		}
		return out
	}
	want := func(what string, q job.Query, w ...byte) {
		t.Helper()
		got, err := a.List(q)
		if err != nil {
			t.Fatal(err)
		}
		if string(ids(got)) != string(w) {
			t.Fatalf("%s: listed %v, want %v", what, ids(got), w)
		}
	}
	want("all", job.Query{Limit: 10}, 1, 6, 5, 4, 3, 2)
	want("limit", job.Query{Limit: 2}, 1, 6)
	k := job.KeyOf(views[4])
	want("after job 5", job.Query{Limit: 10, After: &k}, 4, 3, 2)
	want("expired", job.Query{Limit: 10, State: job.StateExpired}, 6, 4, 2)
	sub := cip11.Address{0}
	want("submitter", job.Query{Limit: 10, Submitter: &sub}, 1, 5, 3)
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	// an archive from before the index: drop every index entry and the marker
	db, err := pdb.Open(dir, &pdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange([]byte("\x00"), []byte("\x01"), pdb.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if a, err = openArchive(dir, slog.Default()); err != nil {
		t.Fatal(err)
	}
	defer a.close()
	want("rebuilt", job.Query{Limit: 10}, 1, 6, 5, 4, 3, 2)
	if v, ok, err := a.Get(cip11.Hash{1}); err != nil || !ok || v.SubmittedAt != 99 {
		t.Fatalf("Get after rebuild: %+v %v %v", v, ok, err)
	}
}
