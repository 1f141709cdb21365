package job

import (
	"bytes"
	"math"
	"slices"

	"github.com/cip11/cip11"
)

// Key is a job's place in a job listing (GET /jobs). Listings are newest
// first: by submission height, then job id, both descending. Both are
// chain data, so every validator of a network orders included jobs the
// same way; a job not yet in a block (SubmittedAt 0, known only to one
// validator's mempool) sorts as height math.MaxUint64, before every
// included job, and moves when a block includes it.
type Key struct {
	Height uint64
	ID     cip11.Hash
}

// KeyOf is v's listing key.
func KeyOf(v View) Key {
	h := v.SubmittedAt
	if h == 0 {
		h = math.MaxUint64
	}
	return Key{Height: h, ID: v.ID}
}

// Before reports whether k lists after o (k is older than o).
func (k Key) Before(o Key) bool {
	if k.Height != o.Height {
		return k.Height < o.Height
	}
	return bytes.Compare(k.ID[:], o.ID[:]) < 0
}

// Query selects jobs for a listing.
type Query struct {
	// State, if set, keeps only jobs in that state.
	State State
	// Submitter, if set, keeps only that submitter's jobs.
	Submitter *cip11.Address
	// After, if set, keeps only jobs that list after it (Key.Before): the
	// last key of the previous page.
	After *Key
	// Limit is the most jobs to return (≥ 1).
	Limit int
}

// Match reports whether v passes q's filters and cursor.
func (q Query) Match(v View) bool {
	return q.MatchKey(KeyOf(v), v.State, v.Submitter)
}

// MatchKey is Match on the parts of a view a listing index keeps.
func (q Query) MatchKey(k Key, s State, submitter cip11.Address) bool {
	if q.State != "" && s != q.State {
		return false
	}
	if q.Submitter != nil && submitter != *q.Submitter {
		return false
	}
	return q.After == nil || k.Before(*q.After)
}

// SortNewestFirst sorts views in listing order (newest first, by Key).
func SortNewestFirst(views []View) {
	slices.SortFunc(views, func(a, b View) int {
		ka, kb := KeyOf(a), KeyOf(b)
		switch {
		case kb.Before(ka):
			return -1
		case ka.Before(kb):
			return 1
		}
		return 0
	})
}
