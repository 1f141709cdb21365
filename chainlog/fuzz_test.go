package chainlog

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecodeBlock checks that no line makes the decoder panic, that every
// rejection wraps ErrMalformed, that an accepted line has exactly one kind
// per transaction, and that it re-encodes to a line that decodes to the same
// block and re-encodes byte for byte.
func FuzzDecodeBlock(f *testing.F) {
	b := sampleBlock(5)
	line, err := EncodeBlock(&b)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(line)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"height":"1"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		b, err := DecodeBlock(line)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		for i, tx := range b.Txs {
			n := 0
			for _, set := range []bool{tx.Submit != nil, tx.ResultSubmit != nil, tx.Verified != nil, tx.Certificate != nil, tx.Reconfigure != nil} {
				if set {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("accepted txs[%d] with %d kinds", i, n)
			}
		}
		enc, err := EncodeBlock(&b)
		if err != nil {
			t.Fatalf("accepted block does not encode: %v", err)
		}
		b2, err := DecodeBlock(enc)
		if err != nil {
			t.Fatalf("re-encoded block rejected: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(b, b2) {
			t.Fatalf("decode(encode(b)) != b")
		}
		enc2, err := EncodeBlock(&b2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable: %v", err)
		}
	})
}

// FuzzDecodeHeader checks that no header line panics the decoder, that
// every rejection wraps one of the two sentinels, and that an accepted
// header has a validator-set schedule starting at height 0 with at least
// one participant at every height, and round-trips.
// FuzzDecodeReconfigure: DecodeReconfigure accepts only canonical bytes
// (decode then encode gives the same bytes) and refuses with ErrMalformed.
func FuzzDecodeReconfigure(f *testing.F) {
	r := sampleReconfigure()
	b, err := EncodeReconfigure(&r)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"epoch":"1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeReconfigure(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		again, err := EncodeReconfigure(r)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("decode then encode: %v, %q ≠ %q", err, again, b)
		}
	})
}

func FuzzDecodeHeader(f *testing.F) {
	line, err := EncodeHeader(withFormat(sampleHeader()))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(line)
	f.Add([]byte(v1Header))
	f.Add([]byte(`{"format":"cip11-chainlog","version":2}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		h, err := DecodeHeader(line)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if h.Version != Version || h.Format != FormatName {
			t.Fatalf("accepted format %q version %d", h.Format, h.Version)
		}
		if len(h.Validators) == 0 || h.Validators[0].ActivationHeight != 0 {
			t.Fatalf("accepted validator_sets %+v", h.Validators)
		}
		for _, v := range h.Validators {
			for _, at := range []uint64{uint64(v.ActivationHeight), uint64(v.ActivationHeight) + 1, ^uint64(0)} {
				if n, err := h.ParticipantsAt(at); err != nil || n < 1 {
					t.Fatalf("ParticipantsAt(%d) = %d, %v", at, n, err)
				}
			}
		}
		enc, err := EncodeHeader(h)
		if err != nil {
			t.Fatalf("accepted header does not encode: %v", err)
		}
		h2, err := DecodeHeader(enc)
		if err != nil || !reflect.DeepEqual(h, h2) {
			t.Fatalf("header round trip: %v", err)
		}
	})
}

// FuzzDecodeBase: no line panics the base-line decoder (a pruned log,
// base.go), and an accepted
// line encodes back to a line that decodes to the same base.
func FuzzDecodeBase(f *testing.F) {
	f.Add([]byte(`{"base":{"height":64,"reconfigurations":[]}}`))
	f.Add([]byte(`{"base":{"height":0,"reconfigurations":[]}}`))
	f.Add([]byte(`{"base":{"height":64}}`))
	f.Add([]byte(`{"base":{"height":"64","reconfigurations":[]}}`))
	f.Add([]byte(`{"base":null}`))
	f.Add([]byte(`{"base":{"height":1,"reconfigurations":[{"epoch":"1"}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		b, err := DecodeBase(line)
		if err != nil {
			return
		}
		enc, err := EncodeBase(b)
		if err != nil {
			t.Fatalf("accepted %q does not encode: %v", line, err)
		}
		b2, err := DecodeBase(enc)
		if err != nil || b2.Height != b.Height || len(b2.Reconfigurations) != len(b.Reconfigurations) {
			t.Fatalf("%q re-encodes to %q: %+v, %v", line, enc, b2, err)
		}
		if enc2, _ := EncodeBase(b2); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable: %q then %q", enc, enc2)
		}
	})
}
