package dcbor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/fxamacker/cbor/v2"
)

// MaxDepth bounds the nesting of arrays and maps a decoder accepts; no
// profile schema nests deeper than 3.
const MaxDepth = 16

// Codec encodes and strictly decodes the §12.6 profile. It is immutable and
// safe for concurrent use.
type Codec struct {
	enc cbor.EncMode
	dec cbor.DecMode
	err error // non-nil only if the fixed options were refused (never, in practice)
}

// profile is the one codec New returns: its modes are built once per
// process (building one cost about as much as decoding a small record, and
// every frame, pending record and block header used to build its own).
var profile = build()

// New returns the profile codec.
func New() Codec { return profile }

func build() Codec {
	enc, err := encOptions().EncMode()
	if err != nil {
		return Codec{err: fmt.Errorf("%w: encode options: %v", ErrCodec, err)}
	}
	dec, err := decOptions().DecMode()
	if err != nil {
		return Codec{err: fmt.Errorf("%w: decode options: %v", ErrCodec, err)}
	}
	return Codec{enc: enc, dec: dec}
}

// encOptions is RFC 8949 §4.2.1 core deterministic encoding; a nil slice is
// an empty byte string or array, never null (D8: Vec<T> is an array).
func encOptions() cbor.EncOptions {
	o := cbor.CoreDetEncOptions()
	o.NilContainers = cbor.NilContainerAsEmpty
	o.TagsMd = cbor.TagsForbidden
	o.BinaryMarshaler = cbor.BinaryMarshalerNone
	o.TextMarshaler = cbor.TextMarshalerNone
	return o
}

// decOptions are the library's strict decode options. Array and map counts
// are left unbounded so that a count beyond the input is truncation, which
// the library finds before allocating anything of that size.
func decOptions() cbor.DecOptions {
	return cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		MaxNestedLevels:   MaxDepth,
		MaxArrayElements:  1<<31 - 1,
		MaxMapPairs:       1<<31 - 1,
		UTF8:              cbor.UTF8RejectInvalid,
		BinaryUnmarshaler: cbor.BinaryUnmarshalerNone,
		TextUnmarshaler:   cbor.TextUnmarshalerNone,
	}
}

// Marshal returns the profile encoding of v.
func (c Codec) Marshal(v any) ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	if c.enc == nil {
		return nil, fmt.Errorf("%w: zero Codec (use New)", ErrCodec)
	}
	b, err := c.enc.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCodec, err)
	}
	return b, nil
}

// Append appends the profile encoding of v to dst.
func (c Codec) Append(dst []byte, v any) ([]byte, error) {
	b, err := c.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// Unmarshal strictly decodes data into v (a non-nil pointer): data must be
// exactly one item that the profile encoding of the decoded value
// reproduces byte for byte. A failure wraps one profile sentinel; v may then
// be partly written. Defects are reported in reading order where the
// library allows: those inside the item before trailing bytes.
func (c Codec) Unmarshal(data []byte, v any) error {
	if c.err != nil {
		return c.err
	}
	if c.dec == nil {
		return fmt.Errorf("%w: zero Codec (use New)", ErrCodec)
	}
	rest, err := c.dec.UnmarshalFirst(data, v)
	if err != nil {
		return libraryError(err, data, v)
	}
	item := data[:len(data)-len(rest)]
	again, err := c.enc.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCodec, err)
	}
	if !bytes.Equal(again, item) {
		return explain(item, again)
	}
	if len(rest) > 0 {
		return fmt.Errorf("%w: %d at offset %d", ErrTrailingBytes, len(rest), len(item))
	}
	return nil
}

// libraryError maps a decode error of fxamacker/cbor onto its sentinel.
// data and v are the input and target, for one second look (see below).
func libraryError(err error, data []byte, v any) error {
	var (
		syntax   *cbor.SyntaxError
		semantic *cbor.SemanticError
		indef    *cbor.IndefiniteLengthError
		tags     *cbor.TagsMdError
		depth    *cbor.MaxNestedLevelError
		dup      *cbor.DupMapKeyError
		unknown  *cbor.UnknownFieldError
		typ      *cbor.UnmarshalTypeError
		item     *cbor.UnacceptableDataItemError
		key      *cbor.InvalidMapKeyTypeError
		target   *cbor.InvalidUnmarshalError
	)
	sentinel := ErrMalformed
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		sentinel = ErrTruncated
	case errors.As(err, &indef):
		sentinel = ErrIndefiniteLength
	case errors.As(err, &tags):
		sentinel = ErrTag
	case errors.As(err, &dup):
		sentinel = ErrDuplicateKey
	case errors.As(err, &unknown):
		sentinel = ErrUnknownKey
	case errors.As(err, &semantic):
		// The library's only semantic error is invalid UTF-8, found while
		// reading a text string before asking whether a text string may
		// stand there. A text string where the schema has none is the
		// earlier defect: look again with UTF-8 unchecked.
		if typeErr := lenientTypeError(data, v); typeErr != nil {
			return typeErr
		}
		sentinel = ErrInvalidUTF8
	case errors.As(err, &typ):
		sentinel = ErrUnexpectedType
		// A positive integer into an integer field of its own kind fails
		// only by overflow; "Go's int64" names a map key or an any value.
		if msg := typ.Error(); strings.Contains(msg, " overflows ") && !strings.Contains(msg, "Go's int64") {
			sentinel = ErrIntRange
		}
	case errors.As(err, &depth), errors.As(err, &item), errors.As(err, &key):
		sentinel = ErrUnexpectedType
	case errors.As(err, &target):
		return fmt.Errorf("%w: %v", ErrCodec, err)
	case errors.As(err, &syntax):
	case strings.Contains(err.Error(), "too large"):
		// A string length or count beyond the int range: more than any
		// input holds.
		sentinel = ErrTruncated
	}
	return fmt.Errorf("%w: %v", sentinel, err)
}

// lenientTypeError decodes data into a fresh value of v's type with UTF-8
// unchecked and returns the type error that decode meets, if any. It runs
// only on the invalid-UTF-8 error path, so the extra mode is built there.
func lenientTypeError(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return nil
	}
	o := decOptions()
	o.UTF8 = cbor.UTF8DecodeInvalid
	dec, err := o.DecMode()
	if err != nil {
		return nil
	}
	var typ *cbor.UnmarshalTypeError
	if _, err := dec.UnmarshalFirst(data, reflect.New(t.Elem()).Interface()); errors.As(err, &typ) {
		return libraryError(err, data, v)
	}
	return nil
}

// Raw is one item of a schema left undecoded, for a second [Codec.Unmarshal]
// once the caller knows its shape (an enum variant that is an int or an
// array). The outer decode has already refused indefinite lengths and tags
// in it; encoding copies its bytes verbatim.
type Raw = cbor.RawMessage
