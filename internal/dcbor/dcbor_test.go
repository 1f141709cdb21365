package dcbor

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// rec is a test schema covering every D8 type the profile's users have.
type rec struct {
	A uint64   `cbor:"0,keyasint"`
	B uint16   `cbor:"1,keyasint"`
	H [4]byte  `cbor:"2,keyasint"`
	T *string  `cbor:"3,keyasint"`
	L []string `cbor:"4,keyasint"`
	F bool     `cbor:"5,keyasint"`
}

// golden is rec{A: 1, B: 2, H: 01020304, T: nil, L: [], F: false}.
const golden = "a6" + "0001" + "0102" + "024401020304" + "03f6" + "0480" + "05f4"

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGolden(t *testing.T) {
	c := New()
	want := rec{A: 1, B: 2, H: [4]byte{1, 2, 3, 4}, L: []string{}}
	b, err := c.Marshal(&want)
	if err != nil || hex.EncodeToString(b) != golden {
		t.Fatalf("Marshal = %x, %v", b, err)
	}
	if b, _ := c.Marshal(&rec{A: 1, B: 2, H: [4]byte{1, 2, 3, 4}}); hex.EncodeToString(b) != golden {
		t.Fatalf("nil slice must encode as an empty array: %x", b)
	}
	var got rec
	if err := c.Unmarshal(unhex(t, golden), &got); err != nil || got.A != 1 || got.B != 2 || got.H != want.H || got.T != nil || len(got.L) != 0 {
		t.Fatalf("Unmarshal = %+v, %v", got, err)
	}
	if b, err := c.Append([]byte{0xee}, &want); err != nil || hex.EncodeToString(b) != "ee"+golden {
		t.Fatalf("Append = %x, %v", b, err)
	}
}

// TestDefects: every D9 defect fails with its own sentinel.
func TestDefects(t *testing.T) {
	for _, tc := range defects() {
		t.Run(tc.name, func(t *testing.T) {
			var r rec
			err := New().Unmarshal(unhex(t, tc.in), &r)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			for _, s := range sentinels() {
				if s != tc.want && errors.Is(err, s) {
					t.Fatalf("%v also wraps %v", err, s)
				}
			}
		})
	}
}

type defect struct {
	name, in string
	want     error
}

// defects are inputs with exactly one defect each, and its sentinel; they
// also seed FuzzUnmarshal (testdata/fuzz).
func defects() []defect {
	g := golden
	return []defect{
		{"empty", "", ErrTruncated},
		{"truncated head", "a6 00 19 01", ErrTruncated},
		{"truncated bytes", "a6 00 01 01 02 02 44 0102", ErrTruncated},
		{"count beyond input", "a6 00 01 01 02 02 44 01020304 03 f6 04 9a7fffffff", ErrTruncated},
		{"count beyond int", "a6 00 01 01 02 02 44 01020304 03 f6 04 9bffffffffffffffff", ErrTruncated},
		{"length beyond int", "a6 00 01 01 02 02 5bffffffffffffffff", ErrTruncated},
		{"trailing byte", g + "00", ErrTrailingBytes},
		{"two items", g + g, ErrTrailingBytes},
		{"defect before trailing bytes", strings.Replace(g, "0001", "001801", 1) + "00", ErrNonShortestInt},
		{"unknown key before trailing bytes", "a7" + g[2:] + "0600" + "00", ErrUnknownKey},
		{"reserved additional information", "a6 00 1c", ErrMalformed},
		{"stray break", "ff", ErrMalformed},
		{"two-byte simple below 32", "a6 00 01 01 02 02 44 01020304 03 f6 04 80 05 f814", ErrMalformed},
		{"non-shortest uint", strings.Replace(g, "0001", "001801", 1), ErrNonShortestInt},
		{"non-shortest uint64", strings.Replace(g, "0001", "001b0000000000000001", 1), ErrNonShortestInt},
		{"non-shortest map head", "b806" + g[2:], ErrNonShortestInt},
		{"non-shortest key", strings.Replace(g, "0001", "180001", 1), ErrNonShortestInt},
		{"non-shortest byte length", strings.Replace(g, "0244", "025804", 1), ErrNonShortestInt},
		{"non-shortest array head", strings.Replace(g, "0480", "049800", 1), ErrNonShortestInt},
		{"indefinite map", "bf" + g[2:] + "ff", ErrIndefiniteLength},
		{"indefinite bytes", strings.Replace(g, "024401020304", "025f4401020304ff", 1), ErrIndefiniteLength},
		{"indefinite array", strings.Replace(g, "0480", "049fff", 1), ErrIndefiniteLength},
		{"tag on item", "c0" + g, ErrTag},
		{"tag on field", strings.Replace(g, "0001", "00c101", 1), ErrTag},
		{"negative int", strings.Replace(g, "0001", "0020", 1), ErrUnexpectedType},
		{"float", strings.Replace(g, "0001", "00f93c00", 1), ErrUnexpectedType},
		{"float64", strings.Replace(g, "0001", "00fb3ff0000000000000", 1), ErrUnexpectedType},
		{"null for uint", strings.Replace(g, "0001", "00f6", 1), ErrUnexpectedType},
		{"undefined for bool", strings.Replace(g, "05f4", "05f7", 1), ErrUnexpectedType},
		{"int for bool", strings.Replace(g, "05f4", "0500", 1), ErrUnexpectedType},
		{"null for array", strings.Replace(g, "0480", "04f6", 1), ErrUnexpectedType},
		{"null for bytes", strings.Replace(g, "024401020304", "02f6", 1), ErrUnexpectedType},
		{"text for bytes", strings.Replace(g, "024401020304", "026401020304", 1), ErrUnexpectedType},
		{"invalid utf-8 text for bytes", strings.Replace(g, "024401020304", "0264ff020304", 1), ErrUnexpectedType},
		{"bytes for text", strings.Replace(g, "03f6", "0340", 1), ErrUnexpectedType},
		{"undefined for option", strings.Replace(g, "03f6", "03f7", 1), ErrUnexpectedType},
		{"not a map", "80", ErrUnexpectedType},
		{"text key", strings.Replace(g, "a600", "a66130", 1), ErrUnknownKey},
		{"too deep", strings.Replace(g, "0480", "04"+strings.Repeat("81", MaxDepth)+"80", 1), ErrUnexpectedType},
		{"u16 overflow", strings.Replace(g, "0102", "011a00010000", 1), ErrIntRange},
		{"invalid utf-8", strings.Replace(g, "03f6", "0362c328", 1), ErrInvalidUTF8},
		{"invalid utf-8 in list", strings.Replace(g, "0480", "048162c328", 1), ErrInvalidUTF8},
		{"keys unsorted", "a6" + "0102" + "0001" + g[10:], ErrKeyOrder},
		{"duplicate key", strings.Replace(g, "0102", "0002", 1), ErrDuplicateKey},
		{"unknown key", "a7" + g[2:] + "0600", ErrUnknownKey},
		{"missing key", "a5" + strings.Replace(g[2:], "05f4", "", 1), ErrMissingKey},
		{"missing first key", "a5" + g[6:], ErrMissingKey},
		{"short bytes", strings.Replace(g, "024401020304", "0243010203", 1), ErrByteLength},
		{"long bytes", strings.Replace(g, "024401020304", "02450102030405", 1), ErrByteLength},
	}
}

func sentinels() []error {
	return []error{ErrTruncated, ErrTrailingBytes, ErrMalformed, ErrNonShortestInt, ErrIndefiniteLength, ErrTag,
		ErrUnexpectedType, ErrIntRange, ErrInvalidUTF8, ErrKeyOrder, ErrDuplicateKey, ErrUnknownKey, ErrMissingKey,
		ErrByteLength, ErrNotCanonical}
}

func TestZeroCodec(t *testing.T) {
	var c Codec
	if _, err := c.Marshal(1); !errors.Is(err, ErrCodec) {
		t.Fatalf("Marshal: %v", err)
	}
	if err := c.Unmarshal([]byte{0}, new(uint64)); !errors.Is(err, ErrCodec) {
		t.Fatalf("Unmarshal: %v", err)
	}
	if err := New().Unmarshal([]byte{0}, nil); !errors.Is(err, ErrCodec) {
		t.Fatalf("nil target: %v", err)
	}
	if _, err := New().Marshal(make(chan int)); !errors.Is(err, ErrCodec) {
		t.Fatalf("unsupported type: %v", err)
	}
}

// FuzzUnmarshal: no input panics, every rejection wraps exactly one
// sentinel, and every accepted input re-encodes to itself.
func FuzzUnmarshal(f *testing.F) {
	f.Add(unhex(f, golden))
	c := New()
	f.Fuzz(func(t *testing.T, in []byte) {
		var r rec
		err := c.Unmarshal(in, &r)
		if err != nil {
			n := 0
			for _, s := range sentinels() {
				if errors.Is(err, s) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%x: %v wraps %d sentinels", in, err, n)
			}
			return
		}
		out, err := c.Marshal(&r)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("decode→encode: %x → %x (%v)", in, out, err)
		}
	})
}
