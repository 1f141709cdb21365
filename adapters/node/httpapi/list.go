package httpapi

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
)

// Job listing limits (GET /jobs?limit=).
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
)

// JobLister is a [Backend] that lists jobs (GET /jobs). A backend without
// it answers GET /jobs with 501 Not Implemented.
type JobLister interface {
	// ListJobs returns at most q.Limit jobs matching q, newest first
	// (job.Key order: submission height, then job id, both descending).
	// Errors as SubmitJob's.
	ListJobs(ctx context.Context, q job.Query) ([]job.View, error)
}

// JobList is the body of GET /jobs.
type JobList struct {
	// Jobs is the page, newest first (always a JSON array). Each view
	// carries no events (GET /jobs/{id} has them).
	Jobs []job.View `json:"jobs"`
	// NextCursor, absent on the last page, is the opaque cursor of the
	// next page (GET /jobs?cursor=).
	NextCursor string `json:"next_cursor,omitempty"`
}

// EncodeCursor is the cursor of the page after the job with key k: 80 hex
// digits (k.Height as 8 big-endian bytes, then k.ID). Clients treat it as
// opaque.
func EncodeCursor(k job.Key) string {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 40), k.Height)
	return hex.EncodeToString(append(b, k.ID[:]...))
}

// DecodeCursor parses a cursor from EncodeCursor; errors wrap ErrBadRequest.
func DecodeCursor(s string) (job.Key, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8+len(cip11.Hash{}) {
		return job.Key{}, badRequest("cursor must be a next_cursor value from GET /jobs")
	}
	k := job.Key{Height: binary.BigEndian.Uint64(b)}
	copy(k.ID[:], b[8:])
	return k, nil
}

// ParseListQuery parses GET /jobs's query string strictly: only state,
// submitter, limit and cursor, each at most once, each valid. Errors wrap
// ErrBadRequest. The returned Limit is the page size; a lister is asked
// for one more to learn whether a next page exists.
func ParseListQuery(v url.Values) (job.Query, error) {
	q := job.Query{Limit: DefaultListLimit}
	for name, vals := range v {
		if len(vals) != 1 {
			return q, badRequest(fmt.Sprintf("query parameter %q given %d times", name, len(vals)))
		}
		val := vals[0]
		switch name {
		case "state":
			s := job.State(val)
			if !slices.Contains(job.States(), s) {
				return q, badRequest(fmt.Sprintf("state must be one of %v", job.States()))
			}
			q.State = s
		case "submitter":
			var a cip11.Address
			if err := a.UnmarshalText([]byte(val)); err != nil {
				return q, badRequest("submitter must be 40 lowercase hex digits")
			}
			q.Submitter = &a
		case "limit":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || n > MaxListLimit {
				return q, badRequest(fmt.Sprintf("limit must be a decimal integer from 1 to %d", MaxListLimit))
			}
			q.Limit = n
		case "cursor":
			k, err := DecodeCursor(val)
			if err != nil {
				return q, err
			}
			q.After = &k
		default:
			return q, badRequest(fmt.Sprintf("unknown query parameter %q (known: state, submitter, limit, cursor)", name))
		}
	}
	return q, nil
}

// GET /jobs
func (h *handler) listJobs(w http.ResponseWriter, r *http.Request) {
	l, ok := h.b.(JobLister)
	if !ok {
		h.fail(w, r, http.StatusNotImplemented, "this node does not list jobs", nil)
		return
	}
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, badRequest("malformed query string").Error(), nil)
		return
	}
	q, err := ParseListQuery(vals)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err.Error(), nil)
		return
	}
	limit := q.Limit
	q.Limit++
	ctx, cancel := h.ctx(r)
	defer cancel()
	views, err := l.ListJobs(ctx, q)
	if err != nil {
		h.failBackend(w, r, err)
		return
	}
	out := JobList{Jobs: make([]job.View, 0, min(len(views), limit))}
	for _, v := range views[:min(len(views), limit)] {
		v = normalizeJob(v)
		// a page stays small: no history, payload or output (each up to
		// 4 KiB); GET /jobs/{id} has them
		v.Events, v.Payload, v.Output = []job.Event{}, nil, nil
		out.Jobs = append(out.Jobs, v)
	}
	if len(views) > limit {
		out.NextCursor = EncodeCursor(job.KeyOf(out.Jobs[limit-1]))
	}
	h.reply(w, r, http.StatusOK, out)
}
