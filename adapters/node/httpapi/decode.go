package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/textform"
	"github.com/cip11/cip11/wire"
)

// Request bodies: strict JSON objects (unknown, duplicate and mistyped
// fields refused), the job request and the raw submission.

// readBody reads the request body up to the limit; false means an error
// response was written (413 beyond the limit).
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			h.fail(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", h.maxBody), nil)
			return nil, false
		}
		h.fail(w, r, http.StatusBadRequest, "reading request body: "+err.Error(), nil)
		return nil, false
	}
	return body, true
}

// mediaType is the request's Content-Type without parameters ("" if absent);
// false means a 400 was written for an unparsable header.
func (h *handler) mediaType(w http.ResponseWriter, r *http.Request) (string, bool) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return "", true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, "malformed Content-Type header", nil)
		return "", false
	}
	return mt, true
}

// decodeObject decodes a body that must be exactly one JSON object whose
// keys are all in fields, each exactly (case-sensitive) and at most once; it
// rejects unknown fields (like json.Decoder.DisallowUnknownFields, but also
// catching the case-insensitive matches encoding/json would accept),
// duplicate fields and trailing data. Each present key's value is unmarshaled
// into its fields pointer; an error names the field.
func decodeObject(body []byte, fields map[string]any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("empty request body")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return jsonError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("request body must be a JSON object, not %s", jsonKind(tok))
	}
	raws := make(map[string]json.RawMessage, len(fields))
	var order []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return jsonError(err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return jsonError(err)
		}
		if _, ok := fields[key]; !ok {
			return fmt.Errorf("unknown field %q", key)
		}
		if _, dup := raws[key]; dup {
			return fmt.Errorf("duplicate field %q", key)
		}
		raws[key] = raw
		order = append(order, key)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF { // Token returns io.EOF bare
		return errors.New("trailing data after the JSON object")
	}
	for _, key := range order {
		if err := json.Unmarshal(raws[key], fields[key]); err != nil {
			var typ *json.UnmarshalTypeError
			if errors.As(err, &typ) {
				return fmt.Errorf("field %q: cannot use a JSON %s here", key, typ.Value)
			}
			return fmt.Errorf("field %q: %s", key, strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	return nil
}

// jsonKind names the JSON value a first token starts.
func jsonKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "something else"
}

// jsonError rewords an encoding/json error for a client.
func jsonError(err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("truncated JSON")
	case errors.As(err, &syn):
		return fmt.Errorf("invalid JSON at offset %d: %s", syn.Offset, syn.Error())
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

// decU64 is a u64 written as a D18 decimal string (canonical: no sign, no
// leading zero, in range).
type decU64 uint64

// UnmarshalJSON accepts only a JSON string holding a canonical decimal.
func (d *decU64) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("must be a decimal string")
	}
	v, err := textform.ParseU64(s)
	if err != nil {
		return err
	}
	*d = decU64(v)
	return nil
}

// jobRequestJSON is JobRequest as decoded: pointers tell absent (or null)
// from zero.
type jobRequestJSON struct {
	Submitter     *cip11.Address
	JobKind       *uint8
	Runners       *uint32
	TimeoutBlocks *decU64
	WorkMillis    *uint32
	Payload       *wire.Bytes
	Nonce         *decU64
}

// fields maps the JSON keys of a JobRequest to j's fields.
func (j *jobRequestJSON) fields() map[string]any {
	return map[string]any{"submitter": &j.Submitter, "job_kind": &j.JobKind, "runners": &j.Runners,
		"timeout_blocks": &j.TimeoutBlocks, "work_ms": &j.WorkMillis, "payload": &j.Payload, "nonce": &j.Nonce}
}

// ParseJobRequest decodes and validates a POST /jobs body. Every error wraps
// ErrBadRequest.
func ParseJobRequest(body []byte) (JobRequest, error) {
	var j jobRequestJSON
	if err := decodeObject(body, j.fields()); err != nil {
		return JobRequest{}, badRequest(err.Error())
	}
	var missing []string
	if j.Submitter == nil {
		missing = append(missing, "submitter")
	}
	if j.JobKind == nil {
		missing = append(missing, "job_kind")
	}
	if j.Runners == nil {
		missing = append(missing, "runners")
	}
	if j.TimeoutBlocks == nil {
		missing = append(missing, "timeout_blocks")
	}
	if len(missing) > 0 {
		return JobRequest{}, badRequest("missing required field(s): " + strings.Join(missing, ", "))
	}
	req := JobRequest{Submitter: *j.Submitter, JobKind: *j.JobKind, Runners: *j.Runners, TimeoutBlocks: uint64(*j.TimeoutBlocks)}
	if j.WorkMillis != nil {
		req.WorkMillis = *j.WorkMillis
	}
	if j.Payload != nil {
		req.Payload = *j.Payload
	}
	if j.Nonce != nil {
		req.Nonce = uint64(*j.Nonce)
	}
	if err := req.Validate(); err != nil {
		return JobRequest{}, err
	}
	return req, nil
}

// ParseSubmission decodes a POST /submit JSON body (the Submission envelope)
// to its tx_bytes. Every error wraps ErrBadRequest.
func ParseSubmission(body []byte) ([]byte, error) {
	var tx *wire.Bytes // the Submission envelope: {"tx":"<hex tx_bytes>"}
	if err := decodeObject(body, map[string]any{"tx": &tx}); err != nil {
		return nil, badRequest(err.Error())
	}
	if tx == nil || len(*tx) == 0 {
		return nil, badRequest("missing required field: tx")
	}
	return *tx, nil
}
