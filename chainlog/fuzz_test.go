package chainlog

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecodeBlock checks that no line makes the decoder panic, that every
// rejection wraps ErrMalformed, and that an accepted line re-encodes to a
// line that decodes to the same block and re-encodes byte for byte.
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

// FuzzDecodeHeader checks that no header line panics the decoder and that
// every rejection wraps one of the two sentinels.
func FuzzDecodeHeader(f *testing.F) {
	line, err := EncodeHeader(sampleHeader())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(line)
	f.Add([]byte(`{"format":"cip11-chainlog","version":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		h, err := DecodeHeader(line)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
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
