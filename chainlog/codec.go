package chainlog

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// maxDepth bounds the nesting the strict checker follows (the format nests
// at most four levels; anything deeper is malformed).
const maxDepth = 8

// strictUnmarshal decodes one JSON value into dst, rejecting trailing data,
// and wraps any failure in ErrMalformed.
func strictUnmarshal(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, ErrMalformed) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: trailing data after the JSON value", ErrMalformed)
	}
	return nil
}

// strictObject decodes a JSON object into dst (a pointer to a struct) and
// then checks, at every level, that each key is exactly a field name and
// that every field without omitempty is present.
func strictObject(raw []byte, dst any) error {
	if err := strictUnmarshal(raw, dst); err != nil {
		return err
	}
	if err := noDuplicateKeys(raw); err != nil {
		return err
	}
	return checkKeys(raw, reflect.TypeOf(dst).Elem(), "", 0)
}

// noDuplicateKeys rejects a JSON text in which any object repeats a key
// (encoding/json would silently keep the last one).
func noDuplicateKeys(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		keys  map[string]bool
		isObj bool
		onKey bool // the next token in this object is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		top := len(stack) - 1
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:top]
			if top > 0 && stack[top-1].isObj {
				stack[top-1].onKey = true
			}
			continue
		}
		if top >= 0 && stack[top].isObj && stack[top].onKey {
			k, _ := tok.(string)
			if stack[top].keys[k] {
				return fmt.Errorf("%w: duplicate key %q", ErrMalformed, k)
			}
			stack[top].keys[k] = true
			stack[top].onKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{keys: make(map[string]bool), isObj: true, onKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		default:
			if top >= 0 && stack[top].isObj {
				stack[top].onKey = true
			}
		}
	}
}

func checkKeys(raw json.RawMessage, t reflect.Type, path string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: %s: nested too deeply", ErrMalformed, path)
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			if t.Kind() == reflect.Slice && !isText(t) {
				return fmt.Errorf("%w: %s: null where an array is required", ErrMalformed, path)
			}
			return nil
		}
		return fmt.Errorf("%w: %s: null not allowed", ErrMalformed, path)
	}
	if isText(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkKeys(raw, t.Elem(), path, depth+1)
	case reflect.Slice:
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrMalformed, path, err)
		}
		for i, e := range elems {
			if err := checkKeys(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
	case reflect.Struct:
		return checkStruct(raw, t, path, depth)
	}
	return nil
}

func checkStruct(raw json.RawMessage, t reflect.Type, path string, depth int) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformed, path, err)
	}
	known := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || name == "" {
			continue
		}
		known[name] = true
		v, ok := obj[name]
		if !ok {
			if opts == "omitempty" {
				continue
			}
			return fmt.Errorf("%w: %s: missing key %q", ErrMalformed, path, name)
		}
		if f.Type.Kind() == reflect.Map {
			continue
		}
		if err := checkKeys(v, f.Type, join(path, name), depth+1); err != nil {
			return err
		}
	}
	for k := range obj {
		if !known[k] {
			return fmt.Errorf("%w: %s: unknown key %q", ErrMalformed, path, k)
		}
	}
	return nil
}

func isText(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// marshalCompact encodes v on one line without HTML escaping.
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// EncodeHeader returns the header line (without the newline).
func EncodeHeader(h Header) ([]byte, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	return marshalCompact(h)
}

// EncodeBlock returns the block line (without the newline). Nil slices are
// written as empty arrays; the block is validated first.
func EncodeBlock(b *Block) ([]byte, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	c := *b
	c.normalize()
	return marshalCompact(&c)
}

// DecodeBlock strictly decodes one block line and validates it; failures
// wrap [ErrMalformed].
//
// A line that is exactly what [EncodeBlock] writes for the block it decodes
// to (the canonical form every writer of this package emits) has each key
// once, exactly spelled, with nothing missing, so the key-by-key checks are
// skipped for it; any other line gets them in full.
func DecodeBlock(line []byte) (Block, error) {
	var b Block
	if err := strictUnmarshal(line, &b); err != nil {
		return Block{}, err
	}
	if err := b.Validate(); err != nil {
		return Block{}, err
	}
	b.normalize()
	if canon, err := marshalCompact(&b); err == nil && bytes.Equal(canon, bytes.TrimRight(line, "\r\n")) {
		return b, nil
	}
	if err := noDuplicateKeys(line); err != nil {
		return Block{}, err
	}
	if err := checkKeys(line, reflect.TypeOf(b), "", 0); err != nil {
		return Block{}, err
	}
	return b, nil
}

// normalize replaces nil slices by empty ones, so a decoded block and the
// block it was encoded from compare equal.
func (b *Block) normalize() {
	b.ConsumedSeeds = nonNil(b.ConsumedSeeds)
	b.Registry = orEmpty(b.Registry)
	b.Heartbeats = orEmpty(b.Heartbeats)
	b.Txs = orEmpty(b.Txs)
	for i := range b.Txs {
		if v := b.Txs[i].Verified; v != nil {
			v.Matching, v.RunnersToSlash, v.RunnersUnrewarded = orEmpty(v.Matching), orEmpty(v.RunnersToSlash), orEmpty(v.RunnersUnrewarded)
		}
		if r := b.Txs[i].Reconfigure; r != nil {
			r.Set = orEmpty(r.Set)
		}
		if c := b.Txs[i].Certificate; c != nil {
			c.Receipts = orEmpty(c.Receipts)
			for j := range c.Receipts {
				r := &c.Receipts[j]
				r.ValidatorPubKey, r.RunnerPubKey, r.ValidatorSigned = nonNil(r.ValidatorPubKey), nonNil(r.RunnerPubKey), nonNil(r.ValidatorSigned)
			}
		}
	}
	b.Out.Assignments = orEmpty(b.Out.Assignments)
	for i := range b.Out.Assignments {
		b.Out.Assignments[i].Committee = orEmpty(b.Out.Assignments[i].Committee)
	}
	b.Out.PendingWritten = orEmpty(b.Out.PendingWritten)
	b.Out.PendingConsumed = orEmpty(b.Out.PendingConsumed)
	b.Out.Expired = orEmpty(b.Out.Expired)
	b.Out.MRUWrites = orEmpty(b.Out.MRUWrites)
	if len(b.Out.Certificates) == 0 {
		b.Out.Certificates = nil // omitted when empty
	}
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Validate checks the rules of a block line that do not need the chain
// state: register ops carry stake and reputation, update ops change at
// least one field, committee sizes are ≥ 1, modes are 0 or 1, and the
// assignment branch is one of the three §9.2 names.
func (b *Block) Validate() error {
	for i, op := range b.Registry {
		switch op.Op {
		case OpRegister:
			if op.Stake == nil || op.ReputationX1e9 == nil {
				return fmt.Errorf("%w: block %d: registry[%d]: register needs stake and reputation_x1e9", ErrMalformed, b.Height, i)
			}
		case OpUpdate:
			if op.Health == nil && op.Stake == nil && op.DelegatedActive == nil && op.ReputationX1e9 == nil && op.LastHeartbeat == nil {
				return fmt.Errorf("%w: block %d: registry[%d]: update changes nothing", ErrMalformed, b.Height, i)
			}
		default:
			return fmt.Errorf("%w: block %d: registry[%d]: unknown op %q", ErrMalformed, b.Height, i, op.Op)
		}
		if op.Health != nil && *op.Health > Deregistered {
			return fmt.Errorf("%w: block %d: registry[%d]: health %d", ErrMalformed, b.Height, i, *op.Health)
		}
	}
	for i, tx := range b.Txs {
		n := 0
		for _, set := range []bool{tx.Submit != nil, tx.ResultSubmit != nil, tx.Verified != nil, tx.Certificate != nil, tx.Reconfigure != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%w: block %d: txs[%d]: %d transaction kinds, want exactly 1", ErrMalformed, b.Height, i, n)
		}
		if r := tx.Reconfigure; r != nil {
			if err := r.validate(); err != nil {
				return fmt.Errorf("block %d: txs[%d]: %w", b.Height, i, err)
			}
		}
		if tx.Submit != nil && tx.Submit.CommitteeSize == 0 {
			return fmt.Errorf("%w: block %d: txs[%d]: committee_size 0", ErrMalformed, b.Height, i)
		}
	}
	for i, a := range b.Out.Assignments {
		if a.Mode > 1 {
			return fmt.Errorf("%w: block %d: out.assignments[%d]: mode %d", ErrMalformed, b.Height, i, a.Mode)
		}
		if !validBranch(a.Branch) {
			return fmt.Errorf("%w: block %d: out.assignments[%d]: branch %q", ErrMalformed, b.Height, i, a.Branch)
		}
	}
	return nil
}

// validBranch accepts the §9.2 branch names as selection.Branch.String()
// spells them.
func validBranch(s string) bool {
	switch s {
	case "present_first", "full_set", "mode_a":
		return true
	}
	return false
}
