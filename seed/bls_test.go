package seed

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Malformed points found by search and frozen here (DECISIONS D12).
const (
	// fieldP is the BLS12-381 base-field modulus, big-endian.
	fieldP = "1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab"
	// g1NotInSubgroup is (0, 2): on the curve, of order 3.
	g1NotInSubgroup = "80" + zeros46 + "00"
	// g1NotOnCurve: x = 1 has no y with y² = x³ + 4.
	g1NotOnCurve = "80" + zeros46 + "01"
	// g2NotOnCurve: x = 0 has no y on the twist.
	g2NotOnCurve = "80" + zeros46 + "00" + zeros46 + "0000"
	// g2NotInSubgroup: x = 2 (c1 = 0, c0 = 2) lies on the twist outside G2.
	g2NotInSubgroup = "80" + zeros46 + "00" + zeros46 + "0002"
	zeros46         = "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
	g1Infinity      = "c0" + zeros46 + "00"
)

// TestSeedMessageFrozen pins the D12 message; varints worked by hand:
// 300 = 0b10_0101100 → ac 02; 2^64−1 → ff×9 01; len("ns_SEED") = 7.
func TestSeedMessageFrozen(t *testing.T) {
	for _, tc := range []struct {
		ns   string
		r    Round
		want string
	}{
		{"ns", Round{0, 0}, "076e735f534545440000"},
		{"ns", Round{300, 1}, "076e735f53454544ac0201"},
		{"", Round{127, 128}, "055f534545447f8001"},
		{"ns", Round{^uint64(0), 2}, "076e735f53454544ffffffffffffffffff0102"},
		{strings.Repeat("a", 123), Round{1, 1}, "8001" + strings.Repeat("61", 123) + "5f534545440101"},
	} {
		got := SeedMessage([]byte(tc.ns), tc.r)
		if want := mustHex(t, tc.want); !bytes.Equal(got, want) {
			t.Errorf("SeedMessage(%q, %v) = %x, want %s", tc.ns, tc.r, got, tc.want)
		}
	}
}

func testKey(t testing.TB) (SecretKey, []byte, *Verifier) {
	sk := DeriveSecretKey([]byte("seed package test key"))
	pk := sk.PublicKey()
	v, err := NewVerifier(pk[:], []byte("cowboy-test"))
	if err != nil {
		t.Fatal(err)
	}
	return sk, pk[:], v
}

// TestSeedSignVerify covers §9.2 "verify the seed signature … and that
// R.round equals the expected absolute seed round".
func TestSeedSignVerify(t *testing.T) {
	sk, pk, v := testKey(t)
	ns := []byte("cowboy-test")
	r := Round{2, 300}
	sig, err := SignSeed(sk, ns, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(r, sig[:]); err != nil {
		t.Fatalf("Verifier: %v", err)
	}
	if err := VerifySeed(pk, ns, r, sig[:]); err != nil {
		t.Fatalf("VerifySeed: %v", err)
	}
	if err := v.Verify(r, sig[:]); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	other := DeriveSecretKey([]byte("another key")).PublicKey()
	neg := sig
	neg[0] ^= flagLargestY // −sig: a valid subgroup point that is not the signature
	for name, fn := range map[string]func() error{
		"wrong view":      func() error { return v.Verify(Round{2, 301}, sig[:]) },
		"wrong epoch":     func() error { return v.Verify(Round{3, 300}, sig[:]) },
		"wrong namespace": func() error { return VerifySeed(pk, []byte("cowboy-tesT"), r, sig[:]) },
		"wrong key":       func() error { return VerifySeed(other[:], ns, r, sig[:]) },
		"negated sig":     func() error { return v.Verify(r, neg[:]) },
		"negated sig 1x":  func() error { return VerifySeed(pk, ns, r, neg[:]) },
	} {
		if err := fn(); !errors.Is(err, ErrSeedSignatureInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got := v.PublicKey(); !bytes.Equal(got[:], pk) {
		t.Error("Verifier.PublicKey")
	}
}

func TestSignatureDecodingErrors(t *testing.T) {
	_, pk, v := testKey(t)
	p := mustHex(t, fieldP)
	p[0] |= flagCompressed
	for _, tc := range []struct {
		name string
		sig  string
		want error
	}{
		{"infinity", g1Infinity, ErrSignatureInfinity},
		{"infinity with payload", "c0" + strings.Repeat("00", 46) + "01", ErrSignatureEncoding},
		{"infinity with sign bit", "e0" + strings.Repeat("00", 47), ErrSignatureEncoding},
		{"uncompressed flag", "00" + strings.Repeat("00", 46) + "01", ErrSignatureEncoding},
		{"x equals p", hexs(p), ErrSignatureEncoding},
		{"not on curve", g1NotOnCurve, ErrSignatureNotOnCurve},
		{"not in subgroup", g1NotInSubgroup, ErrSignatureNotInSubgroup},
		{"47 bytes", strings.Repeat("aa", 47), ErrSeedSignatureLength},
		{"49 bytes", strings.Repeat("aa", 49), ErrSeedSignatureLength},
		{"96 bytes", strings.Repeat("aa", 96), ErrSeedSignatureLength},
		{"empty", "", ErrSeedSignatureLength},
	} {
		sig := mustHex(t, tc.sig)
		if err := v.Verify(Round{}, sig); !errors.Is(err, tc.want) {
			t.Errorf("%s: Verifier: %v, want %v", tc.name, err, tc.want)
		}
		if err := VerifySeed(pk, nil, Round{}, sig); !errors.Is(err, tc.want) {
			t.Errorf("%s: VerifySeed: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestPublicKeyDecodingErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		pk   string
		want error
	}{
		{"infinity", "c0" + strings.Repeat("00", 95), ErrPublicKeyInfinity},
		{"infinity with payload", "c0" + strings.Repeat("00", 94) + "01", ErrPublicKeyEncoding},
		{"uncompressed flag", strings.Repeat("00", 95) + "01", ErrPublicKeyEncoding},
		{"c0 equals p", "80" + strings.Repeat("00", 47) + fieldP, ErrPublicKeyEncoding},
		{"not on curve", g2NotOnCurve, ErrPublicKeyNotOnCurve},
		{"not in subgroup", g2NotInSubgroup, ErrPublicKeyNotInSubgroup},
		{"95 bytes", strings.Repeat("aa", 95), ErrPublicKeyLength},
		{"48 bytes", strings.Repeat("aa", 48), ErrPublicKeyLength},
		{"192 bytes", strings.Repeat("aa", 192), ErrPublicKeyLength},
	} {
		pk := mustHex(t, tc.pk)
		if _, err := NewVerifier(pk, nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: NewVerifier: %v, want %v", tc.name, err, tc.want)
		}
		if err := VerifySeed(pk, nil, Round{}, mustHex(t, g1Infinity)); !errors.Is(err, tc.want) {
			t.Errorf("%s: VerifySeed: %v, want %v (key defects first)", tc.name, err, tc.want)
		}
	}
}

func TestSecretKey(t *testing.T) {
	sk := DeriveSecretKey([]byte("x"))
	b := sk.Bytes()
	sk2, err := SecretKeyFromBytes(b[:])
	if err != nil || sk2 != sk {
		t.Fatalf("round trip: %v", err)
	}
	if DeriveSecretKey([]byte("y")) == sk {
		t.Error("different seeds gave one key")
	}
	order := mustHex(t, "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001")
	for _, bad := range [][]byte{make([]byte, 32), order, make([]byte, 31)} {
		if _, err := SecretKeyFromBytes(bad); !errors.Is(err, ErrSecretKey) {
			t.Errorf("%x: %v", bad, err)
		}
	}
}

func hexs(b []byte) string { return strings.ToLower(strings.TrimSpace(string(appendHex(nil, b)))) }

func appendHex(dst, b []byte) []byte {
	const digits = "0123456789abcdef"
	for _, c := range b {
		dst = append(dst, digits[c>>4], digits[c&15])
	}
	return dst
}

// The fixed-Q Miller loop scales the line tables in place: each check
// works on its own pooled copy, so checks in any order and concurrently —
// valid, invalid, valid again on reused copies — keep their answers and
// leave the Verifier's tables as they were (§9.2).
func TestVerifierPooledLinesReused(t *testing.T) {
	sk, _, v := testKey(t)
	r := Round{Epoch: 3, View: 77}
	good, err := SignSeed(sk, []byte("cowboy-test"), r)
	if err != nil {
		t.Fatal(err)
	}
	other, err := SignSeed(sk, []byte("cowboy-test"), Round{Epoch: 3, View: 78})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				if err := v.Verify(r, good[:]); err != nil {
					errs <- fmt.Errorf("goroutine %d check %d: the valid signature refused: %w", g, i, err)
				}
				if err := v.Verify(r, other[:]); !errors.Is(err, ErrSeedSignatureInvalid) {
					errs <- fmt.Errorf("goroutine %d check %d: another round's signature: %v, want ErrSeedSignatureInvalid", g, i, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
