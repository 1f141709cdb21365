package presence

import (
	"bytes"
	"errors"
	"testing"
)

var malformations = []error{
	ErrTruncatedHeader, ErrUnknownVersion, ErrUnknownKind, ErrBitmapLength,
	ErrSparseLength, ErrBitBeyondRegistry, ErrSparseNotAscending, ErrIndexBeyondRegistry,
}

// FuzzDecode: Decode never panics; a rejected input wraps exactly one
// malformation sentinel; an accepted input re-encodes with its own kind to
// the same bytes (no re-canonicalization, §7.2) and its canonical encoding
// decodes to the same set. The seed corpus in testdata/fuzz/FuzzDecode is the
// presence_input conformance vectors.
func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases {
		f.Add(unhex(f, c.in), uint16(c.n))
	}
	f.Fuzz(func(t *testing.T, b []byte, n uint16) {
		in := bytes.Clone(b)
		s, err := Decode(b, int(n))
		if !bytes.Equal(in, b) {
			t.Fatal("Decode modified its input")
		}
		if err != nil {
			matched := 0
			for _, m := range malformations {
				if errors.Is(err, m) {
					matched++
				}
			}
			if matched != 1 {
				t.Fatalf("error %v wraps %d malformation sentinels, want 1", err, matched)
			}
			return
		}
		idx := s.Indices()
		if len(idx) != s.Len() || s.RegistrySize() != int(n) || (len(idx) > 0 && idx[len(idx)-1] >= int(n)) {
			t.Fatalf("inconsistent set: %d indices, Len %d, domain %d", len(idx), s.Len(), s.RegistrySize())
		}
		re, err := EncodeKind(s, Kind(b[1]))
		if err != nil || !bytes.Equal(re, b) {
			t.Fatalf("same-kind re-encode %x (%v), want %x", re, err, b)
		}
		canon, err := Decode(Encode(s), int(n))
		if err != nil || !canon.Equal(s) {
			t.Fatalf("canonical encoding decodes to %v (%v), want %v", canon.Indices(), err, idx)
		}
	})
}
