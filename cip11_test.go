package cip11

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/cip11/cip11/internal/textform"
)

// TestKeccakIsLegacy pins D1: Keccak-256 (Ethereum), not NIST SHA3-256.
func TestKeccakIsLegacy(t *testing.T) {
	if got := Keccak256().String(); got != "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470" {
		t.Fatalf("keccak256(\"\") = %s", got)
	}
	if got := Keccak256([]byte("abc")).String(); got != "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45" {
		t.Fatalf("keccak256(\"abc\") = %s", got)
	}
	if Keccak256([]byte("ab"), []byte("c")) != Keccak256([]byte("abc")) {
		t.Fatal("parts are not concatenated")
	}
}

func TestU128Saturates(t *testing.T) {
	if MaxU128().AddSat(U128From64(1)) != MaxU128() {
		t.Fatal("add does not saturate")
	}
	if (U128{Hi: 1 << 63}).MulSat64(2) != MaxU128() {
		t.Fatal("mul does not saturate at 2^128")
	}
	if got := (U128{Hi: 1<<63 - 1, Lo: ^uint64(0)}).MulSat64(2); got != (U128{Hi: ^uint64(0), Lo: ^uint64(0) - 1}) {
		t.Fatalf("(2^127-1)*2 = %v", got)
	}
	if MaxU128().String() != "340282366920938463463374607431768211455" {
		t.Fatal(MaxU128().String())
	}
}

func TestParseU128Rejects(t *testing.T) {
	for _, c := range []struct {
		in   string
		want error
	}{
		{"", textform.ErrBadDecimal}, {"-1", textform.ErrBadDecimal}, {"1e3", textform.ErrBadDecimal},
		{" 1", textform.ErrBadDecimal}, {"0x10", textform.ErrBadDecimal}, {"01", textform.ErrLeadingZero},
		{"340282366920938463463374607431768211456", textform.ErrOutOfRange},
	} {
		if _, err := ParseU128(c.in); !errors.Is(err, c.want) {
			t.Errorf("ParseU128(%q) = %v, want %v", c.in, err, c.want)
		}
		u := U128{Lo: 7}
		if err := u.UnmarshalText([]byte(c.in)); !errors.Is(err, c.want) || u != (U128{Lo: 7}) {
			t.Errorf("UnmarshalText(%q) = %v, left %v", c.in, err, u)
		}
	}
}

// TestHexTextStrict pins D18 for Address and Hash: lowercase hex of exactly
// the type's length, nothing else; a failed decode leaves the value alone.
func TestHexTextStrict(t *testing.T) {
	var a Address
	if err := a.UnmarshalText([]byte("00112233445566778899aabbccddeeff00112233")); err != nil || a.String() != "00112233445566778899aabbccddeeff00112233" {
		t.Fatalf("round trip: %v, %v", a, err)
	}
	for _, c := range []struct {
		in   string
		want error
	}{
		{"00112233445566778899AABBCCDDEEFF00112233", textform.ErrUppercaseHex},
		{"0x112233445566778899aabbccddeeff00112233", textform.ErrBadHex},
		{"00112233445566778899aabbccddeeff0011223", textform.ErrOddHex},
		{"00112233445566778899aabbccddeeff0011", textform.ErrHexLength},
	} {
		b := a
		if err := b.UnmarshalText([]byte(c.in)); !errors.Is(err, c.want) || b != a {
			t.Errorf("Address.UnmarshalText(%q) = %v, want %v (value %v)", c.in, err, c.want, b)
		}
	}
	var h Hash
	if err := h.UnmarshalText([]byte(Keccak256().String())); err != nil || h != Keccak256() {
		t.Fatalf("hash round trip: %v", err)
	}
	if err := h.UnmarshalText([]byte("C5D2460186F7233C927E7DB2DCC703C0E500B653CA82273B7BFAD8045D85A470")); !errors.Is(err, textform.ErrUppercaseHex) {
		t.Fatalf("uppercase hash: %v", err)
	}
}

// TestU128MatchesBig checks the saturating ops against 256-bit arithmetic.
func TestU128MatchesBig(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := U128{rapid.Uint64().Draw(t, "ah"), rapid.Uint64().Draw(t, "al")}
		b := U128{rapid.Uint64().Draw(t, "bh"), rapid.Uint64().Draw(t, "bl")}
		m := rapid.Uint64().Draw(t, "m")
		sum := a.Uint256()
		sum.Add(sum, b.Uint256())
		if a.AddSat(b) != U128FromUint256Sat(sum) {
			t.Fatal("AddSat")
		}
		prod := a.Uint256()
		prod.Mul(prod, U128From64(m).Uint256())
		if a.MulSat64(m) != U128FromUint256Sat(prod) {
			t.Fatal("MulSat64")
		}
		if p, err := ParseU128(a.String()); err != nil || p != a {
			t.Fatal("decimal round trip")
		}
	})
}

func TestParamsValidate(t *testing.T) {
	if err := DefaultParams().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Params){
		func(p *Params) { p.MinSubset = 0 },
		func(p *Params) { p.MaxSubset = 2 },
		func(p *Params) { p.KHardMin = 19 },
		func(p *Params) { p.SelectionSeedDelayViews = 2 },
		func(p *Params) { p.TRoute = 2 },
		func(p *Params) { p.MRUWeightMultiplier = 0 },
		func(p *Params) { p.PollDisabled = true },
		func(p *Params) { p.PresenceTimeoutBlocks = 0 },
	}
	for i, f := range bad {
		p := DefaultParams()
		f(&p)
		if err := p.Validate(); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("case %d: %v", i, err)
		}
	}
}

// TestModeAGuard pins the §8.4 activation guard: the flag alone is not enough.
func TestModeAGuard(t *testing.T) {
	p := DefaultParams()
	if p.ModeAEffective(100) {
		t.Fatal("flag off")
	}
	p.PresenceHardExcludeEnabled = true
	if p.ModeAEffective(20) {
		t.Fatal("D24: no Mode A while CIP11_PRESENT_FIRST_ENABLED is off")
	}
	p.PresentFirstEnabled = true
	cases := []struct {
		k, tHard uint32
		want     bool
	}{{19, 11, false}, {20, 11, true}, {20, 10, false}, {21, 11, true}, {22, 11, false}, {22, 12, true}}
	for _, c := range cases {
		p.THard = c.tHard
		if got := p.ModeAEffective(c.k); got != c.want {
			t.Errorf("k=%d t_hard=%d: %v", c.k, c.tHard, got)
		}
	}
}
