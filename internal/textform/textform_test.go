package textform

import (
	"bytes"
	"errors"
	"math/big"
	"testing"

	"pgregory.net/rapid"
)

func TestHexRoundTrip(t *testing.T) {
	for _, s := range []string{"", "00", "0123456789abcdef", "ff00"} {
		b, err := ParseHex(s)
		if err != nil {
			t.Fatalf("ParseHex(%q): %v", s, err)
		}
		if got := Hex(b); got != s {
			t.Fatalf("Hex(ParseHex(%q)) = %q", s, got)
		}
		if got := string(AppendHex([]byte("x"), b)); got != "x"+s {
			t.Fatalf("AppendHex = %q", got)
		}
	}
	if b, err := ParseHex(""); err != nil || b == nil {
		t.Fatalf("ParseHex(\"\") = %v, %v; want empty non-nil", b, err)
	}
}

func TestHexRejects(t *testing.T) {
	for _, c := range []struct {
		in   string
		want error
	}{
		{"AB", ErrUppercaseHex},
		{"aB", ErrUppercaseHex},
		{"0xab", ErrBadHex},
		{" ab", ErrBadHex},
		{"ab\n", ErrBadHex},
		{"g0", ErrBadHex},
		{"abc", ErrOddHex},
		{"0", ErrOddHex},
	} {
		if _, err := ParseHex(c.in); !errors.Is(err, c.want) {
			t.Errorf("ParseHex(%q) = %v, want %v", c.in, err, c.want)
		}
		if _, err := ParseHex([]byte(c.in)); !errors.Is(err, c.want) {
			t.Errorf("ParseHex([]byte(%q)) = %v, want %v", c.in, err, c.want)
		}
	}
}

func TestParseHexInto(t *testing.T) {
	var dst [2]byte
	if err := ParseHexInto(dst[:], "beef"); err != nil || dst != [2]byte{0xbe, 0xef} {
		t.Fatalf("got %x, %v", dst, err)
	}
	for _, c := range []struct {
		in   string
		want error
	}{{"be", ErrHexLength}, {"beefbe", ErrHexLength}, {"", ErrHexLength}, {"BEEF", ErrUppercaseHex}, {"bee", ErrOddHex}, {"be-f", ErrBadHex}} {
		if err := ParseHexInto(dst[:], c.in); !errors.Is(err, c.want) {
			t.Errorf("ParseHexInto(%q) = %v, want %v", c.in, err, c.want)
		}
		if dst != [2]byte{0xbe, 0xef} {
			t.Fatalf("ParseHexInto(%q) changed dst on error: %x", c.in, dst)
		}
	}
}

func TestDecimalRejects(t *testing.T) {
	for _, c := range []struct {
		in        string
		u64, u128 error
	}{
		{"", ErrBadDecimal, ErrBadDecimal},
		{"-1", ErrBadDecimal, ErrBadDecimal},
		{"+1", ErrBadDecimal, ErrBadDecimal},
		{" 1", ErrBadDecimal, ErrBadDecimal},
		{"1 ", ErrBadDecimal, ErrBadDecimal},
		{"1e3", ErrBadDecimal, ErrBadDecimal},
		{"1.0", ErrBadDecimal, ErrBadDecimal},
		{"0x10", ErrBadDecimal, ErrBadDecimal},
		{"١", ErrBadDecimal, ErrBadDecimal},
		{"00", ErrLeadingZero, ErrLeadingZero},
		{"01", ErrLeadingZero, ErrLeadingZero},
		{"18446744073709551616", ErrOutOfRange, nil},
		{"340282366920938463463374607431768211456", ErrOutOfRange, ErrOutOfRange},
		{"999999999999999999999999999999999999999999", ErrOutOfRange, ErrOutOfRange},
	} {
		if _, err := ParseU64(c.in); !errors.Is(err, c.u64) {
			t.Errorf("ParseU64(%q) = %v, want %v", c.in, err, c.u64)
		}
		if _, _, err := ParseU128(c.in); !errors.Is(err, c.u128) && !(c.u128 == nil && err == nil) {
			t.Errorf("ParseU128(%q) = %v, want %v", c.in, err, c.u128)
		}
	}
}

func TestDecimalBoundaries(t *testing.T) {
	for _, c := range []struct {
		s      string
		hi, lo uint64
	}{
		{"0", 0, 0},
		{"18446744073709551615", 0, ^uint64(0)},
		{"18446744073709551616", 1, 0},
		{"10000000000000000000", 0, 10_000_000_000_000_000_000},
		{"340282366920938463463374607431768211455", ^uint64(0), ^uint64(0)},
	} {
		hi, lo, err := ParseU128(c.s)
		if err != nil || hi != c.hi || lo != c.lo {
			t.Errorf("ParseU128(%q) = %d, %d, %v", c.s, hi, lo, err)
		}
		if got := FormatU128(c.hi, c.lo); got != c.s {
			t.Errorf("FormatU128(%d, %d) = %q, want %q", c.hi, c.lo, got, c.s)
		}
	}
	if v, err := ParseU64("18446744073709551615"); err != nil || v != ^uint64(0) || FormatU64(v) != "18446744073709551615" {
		t.Fatalf("max u64: %d, %v", v, err)
	}
	if got := string(AppendU64([]byte("n="), 7)); got != "n=7" {
		t.Fatalf("AppendU64 = %q", got)
	}
}

// TestDecimalMatchesBig checks the u128 codec against math/big.
func TestDecimalMatchesBig(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		hi := rapid.OneOf(rapid.Just(uint64(0)), rapid.Uint64()).Draw(t, "hi")
		lo := rapid.Uint64().Draw(t, "lo")
		want := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
		want.Or(want, new(big.Int).SetUint64(lo))
		s := FormatU128(hi, lo)
		if s != want.String() {
			t.Fatalf("FormatU128(%d, %d) = %s, want %s", hi, lo, s, want)
		}
		if h, l, err := ParseU128([]byte(s)); err != nil || h != hi || l != lo {
			t.Fatalf("ParseU128(%s) = %d, %d, %v", s, h, l, err)
		}
	})
}

// FuzzTextForm checks canonicality: whatever a parser accepts, formatting
// the result reproduces the input exactly. Seeds: testdata/fuzz/FuzzTextForm.
func FuzzTextForm(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		if b, err := ParseHex(s); err == nil {
			if Hex(b) != s {
				t.Fatalf("hex %q re-formats as %q", s, Hex(b))
			}
			dst := bytes.Repeat([]byte{0x5a}, len(b))
			if err := ParseHexInto(dst, s); err != nil || !bytes.Equal(dst, b) {
				t.Fatalf("ParseHexInto(%q) = %x, %v", s, dst, err)
			}
		}
		if v, err := ParseU64(s); err == nil && FormatU64(v) != s {
			t.Fatalf("u64 %q re-formats as %q", s, FormatU64(v))
		}
		if hi, lo, err := ParseU128(s); err == nil && FormatU128(hi, lo) != s {
			t.Fatalf("u128 %q re-formats as %q", s, FormatU128(hi, lo))
		}
	})
}
