package presence

import (
	"bytes"
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeCases are hand-computed §7.2 encodings. The present indices {0,3,9}
// over 10 runners are, as a bitmap, byte 0 = bits 0,3 = 0x09 and byte 1 =
// bit 1 (index 9) = 0x02.
var decodeCases = []struct {
	name string
	n    int
	in   string
	want []int
	err  error
}{
	{"bitmap_0_3_9_of_10", 10, "01000902", []int{0, 3, 9}, nil},
	{"sparse_0_3_9_of_10", 10, "0101" + "00000003" + "00000000" + "00000003" + "00000009", []int{0, 3, 9}, nil},
	{"bitmap_empty_of_10", 10, "01000000", []int{}, nil},
	{"sparse_empty_of_10", 10, "0101" + "00000000", []int{}, nil},
	{"bitmap_registry_0", 0, "0100", []int{}, nil},
	{"sparse_registry_0", 0, "0101" + "00000000", []int{}, nil},
	{"bitmap_all_of_8", 8, "0100ff", []int{0, 1, 2, 3, 4, 5, 6, 7}, nil},
	{"bitmap_last_of_65", 65, "0100" + "0000000000000000" + "01", []int{64}, nil},
	{"bitmap_63_64_of_70", 70, "0100" + "0000000000000080" + "01", []int{63, 64}, nil},

	{"empty_input", 10, "", nil, ErrTruncatedHeader},
	{"version_only", 10, "01", nil, ErrTruncatedHeader},
	{"wrong_version_byte_only", 10, "02", nil, ErrUnknownVersion},
	{"wrong_version_0x00", 10, "00000000", nil, ErrUnknownVersion},
	{"wrong_version_0x02", 10, "02000902", nil, ErrUnknownVersion},
	{"unknown_kind_0x02", 10, "01020902", nil, ErrUnknownKind},
	{"unknown_kind_0xff", 0, "01ff", nil, ErrUnknownKind},
	{"bitmap_too_short", 10, "010009", nil, ErrBitmapLength},
	{"bitmap_too_long", 10, "0100090200", nil, ErrBitmapLength},
	{"bitmap_nonempty_registry_0", 0, "010000", nil, ErrBitmapLength},
	{"bitmap_missing_body", 1, "0100", nil, ErrBitmapLength},
	{"bitmap_bit_10_of_10", 10, "01000904", nil, ErrBitBeyondRegistry},
	{"bitmap_bit_7_of_1", 1, "010080", nil, ErrBitBeyondRegistry},
	{"bitmap_bit_69_of_69", 69, "0100" + "0000000000000000" + "20", nil, ErrBitBeyondRegistry},
	{"sparse_missing_count", 10, "0101", nil, ErrSparseLength},
	{"sparse_short_count", 10, "0101000000", nil, ErrSparseLength},
	{"sparse_count_1_no_index", 10, "0101" + "00000001", nil, ErrSparseLength},
	{"sparse_trailing_byte", 10, "0101" + "00000001" + "00000003" + "00", nil, ErrSparseLength},
	{"sparse_count_max", 10, "0101" + "ffffffff", nil, ErrSparseLength},
	{"sparse_duplicate", 10, "0101" + "00000002" + "00000003" + "00000003", nil, ErrSparseNotAscending},
	{"sparse_descending", 10, "0101" + "00000002" + "00000003" + "00000002", nil, ErrSparseNotAscending},
	{"sparse_index_10_of_10", 10, "0101" + "00000001" + "0000000a", nil, ErrIndexBeyondRegistry},
	{"sparse_index_0_of_0", 0, "0101" + "00000001" + "00000000", nil, ErrIndexBeyondRegistry},
	{"sparse_index_max", 10, "0101" + "00000001" + "ffffffff", nil, ErrIndexBeyondRegistry},
	{"sparse_descending_then_out_of_range", 10, "0101" + "00000002" + "00000005" + "00000003", nil, ErrSparseNotAscending},
	{"sparse_out_of_range_then_descending", 10, "0101" + "00000002" + "0000000b" + "00000003", nil, ErrIndexBeyondRegistry},
}

func TestDecodeCases(t *testing.T) {
	for _, c := range decodeCases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Decode(unhex(t, c.in), c.n)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Indices(); !slices.Equal(got, c.want) {
				t.Fatalf("indices %v, want %v", got, c.want)
			}
			if s.Len() != len(c.want) || s.RegistrySize() != c.n {
				t.Fatalf("Len %d RegistrySize %d", s.Len(), s.RegistrySize())
			}
			// decode → encode with the same kind reproduces the input (§7.2: no re-canonicalization).
			if b, _ := EncodeKind(s, Kind(unhex(t, c.in)[1])); !bytes.Equal(b, unhex(t, c.in)) {
				t.Fatalf("re-encoded %x", b)
			}
		})
	}
}

func TestSetHas(t *testing.T) {
	s, err := Decode(unhex(t, "01000902"), 10)
	if err != nil {
		t.Fatal(err)
	}
	for i := -1; i <= 70; i++ {
		want := i == 0 || i == 3 || i == 9
		if s.Has(i) != want {
			t.Errorf("Has(%d) = %v", i, !want)
		}
	}
	var zero Set
	if zero.Has(0) || zero.Len() != 0 || zero.RegistrySize() != 0 || len(zero.Indices()) != 0 {
		t.Error("zero Set is not the empty set over an empty registry")
	}
}

func TestNewSet(t *testing.T) {
	s, err := NewSet(10, []int{9, 0, 3, 3})
	if err != nil {
		t.Fatal(err)
	}
	if b := Encode(s); hex.EncodeToString(b) != "01000902" {
		t.Fatalf("Encode = %x", b)
	}
	for _, bad := range []struct {
		n   int
		idx []int
		err error
	}{{10, []int{10}, ErrIndexBeyondRegistry}, {10, []int{-1}, ErrIndexBeyondRegistry}, {-1, nil, ErrRegistrySize}} {
		if _, err := NewSet(bad.n, bad.idx); !errors.Is(err, bad.err) {
			t.Errorf("NewSet(%d, %v) err = %v, want %v", bad.n, bad.idx, err, bad.err)
		}
	}
	if _, err := Decode([]byte{1, 0}, -1); !errors.Is(err, ErrRegistrySize) {
		t.Errorf("negative registry size: %v", err)
	}
}

// TestEncodeChoosesShorter pins D17: the shorter kind, bitmap on a tie.
func TestEncodeChoosesShorter(t *testing.T) {
	cases := []struct {
		n    int
		idx  []int
		want string
	}{
		{0, nil, "0100"},                                      // bitmap 0 bytes < sparse 4
		{32, nil, "010000000000"},                             // tie 4 = 4 → bitmap
		{33, nil, "010100000000"},                             // sparse 4 < bitmap 5
		{64, []int{5}, "0100" + "2000000000000000"},           // tie 8 = 8 → bitmap
		{65, []int{5}, "0101" + "00000001" + "00000005"},      // sparse 8 < bitmap 9
		{10, []int{0, 3, 9}, "01000902"},                      // bitmap 2 < sparse 16
		{5000, []int{4999}, "0101" + "00000001" + "00001387"}, // sparse 8 < bitmap 625
	}
	for _, c := range cases {
		s, err := NewSet(c.n, c.idx)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(Encode(s)); got != c.want {
			t.Errorf("Encode(n=%d, %v) = %s, want %s", c.n, c.idx, got, c.want)
		}
	}
}

func TestEncodeKindUnknown(t *testing.T) {
	if _, err := EncodeKind(Set{}, 2); !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("err = %v", err)
	}
}

func genSet(t *rapid.T) Set {
	n := rapid.IntRange(0, 300).Draw(t, "n")
	var idx []int
	if n > 0 {
		idx = rapid.SliceOfN(rapid.IntRange(0, n-1), 0, n).Draw(t, "indices")
	}
	s, err := NewSet(n, idx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRoundTrip: a canonical encoding decodes to the same set and re-encodes
// to the same bytes; both kinds decode to the same set and reproduce their
// own bytes.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSet(t)
		canon := Encode(s)
		got, err := Decode(canon, s.RegistrySize())
		if err != nil || !got.Equal(s) {
			t.Fatalf("Decode(Encode) = %v, %v", got.Indices(), err)
		}
		if again := Encode(got); !bytes.Equal(again, canon) {
			t.Fatalf("decode→encode %x, want %x", again, canon)
		}
		bm, _ := EncodeKind(s, KindBitmap)
		sp, _ := EncodeKind(s, KindSparse)
		if len(canon) != min(len(bm), len(sp)) {
			t.Fatalf("canonical length %d, bitmap %d, sparse %d", len(canon), len(bm), len(sp))
		}
		for _, b := range [][]byte{bm, sp} {
			d, err := Decode(b, s.RegistrySize())
			if err != nil || !d.Equal(s) {
				t.Fatalf("Decode(%x) = %v, %v; want %v", b, d.Indices(), err, s.Indices())
			}
			if re, _ := EncodeKind(d, Kind(b[1])); !bytes.Equal(re, b) {
				t.Fatalf("same-kind re-encode %x, want %x", re, b)
			}
		}
	})
}

// TestDecodeDoesNotAliasInput: the decoded set owns its memory.
func TestDecodeDoesNotAliasInput(t *testing.T) {
	b := unhex(t, "0100"+"ffffffffffffffff"+"01")
	s, err := Decode(b, 65)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b[2:] {
		b[2+i] = 0
	}
	if s.Len() != 65 || !s.Has(64) {
		t.Fatal("set changed with the input buffer")
	}
}

func TestDecodeAllocs(t *testing.T) {
	s, _ := NewSet(5000, []int{0, 17, 4999})
	bm, _ := EncodeKind(s, KindBitmap)
	sp, _ := EncodeKind(s, KindSparse)
	for _, b := range [][]byte{bm, sp} {
		if n := testing.AllocsPerRun(10, func() { Decode(b, 5000) }); n > 1 {
			t.Errorf("Decode kind %d allocates %v times, want 1", b[1], n)
		}
	}
}

func makeSet(b *testing.B, n, every int) Set {
	var idx []int
	for i := 0; i < n; i += every {
		idx = append(idx, i)
	}
	s, err := NewSet(n, idx)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func benchDecode(b *testing.B, s Set, k Kind) {
	in, _ := EncodeKind(s, k)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(in, s.RegistrySize()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeBitmap5000 decodes a 627-byte bitmap over 5,000 runners with
// half of them present (§7.2: "~625 bytes at ~5,000 runners").
func BenchmarkDecodeBitmap5000(b *testing.B) { benchDecode(b, makeSet(b, 5000, 2), KindBitmap) }

// BenchmarkDecodeSparse5000All decodes the worst sparse input over 5,000
// runners: every runner present (20,006 bytes).
func BenchmarkDecodeSparse5000All(b *testing.B) { benchDecode(b, makeSet(b, 5000, 1), KindSparse) }

// BenchmarkDecodeSparse5000Few decodes the canonical sparse case: 100 of
// 5,000 runners present.
func BenchmarkDecodeSparse5000Few(b *testing.B) { benchDecode(b, makeSet(b, 5000, 50), KindSparse) }

func BenchmarkEncode5000(b *testing.B) {
	s := makeSet(b, 5000, 2)
	b.ReportAllocs()
	for b.Loop() {
		Encode(s)
	}
}
