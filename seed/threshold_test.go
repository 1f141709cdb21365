package seed

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// testRand is a deterministic dealing source for tests (the dealer takes an
// injected reader; DECISIONS D31 devnet dealer).
func testRand(seed byte) *rand.ChaCha8 {
	var s [32]byte
	s[0] = seed
	return rand.NewChaCha8(s)
}

func testDeal(t testing.TB, n, th int) (SecretKey, *Dealing, [][]byte) {
	t.Helper()
	secret := DeriveSecretKey([]byte("threshold test group secret"))
	d, err := DealShares(secret, n, th, testRand(byte(n)))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := d.Public.PublicShares(n)
	if err != nil {
		t.Fatal(err)
	}
	pub := make([][]byte, n)
	for i := range ps {
		pub[i] = ps[i][:]
	}
	return secret, d, pub
}

func testPartials(t testing.TB, d *Dealing, ns []byte, r Round) []Partial {
	t.Helper()
	out := make([]Partial, len(d.Shares))
	for i, s := range d.Shares {
		p, err := SignPartial(s, ns, r)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = p
	}
	return out
}

// TestThreshold pins the D31 formula t = n − ⌊(n−1)/3⌋ against values
// worked by hand: n = 3f+1 needs 2f+1.
func TestThreshold(t *testing.T) {
	for _, c := range []struct{ n, t int }{
		{1, 1}, {2, 2}, {3, 3}, {4, 3}, {5, 4}, {6, 5}, {7, 5}, {10, 7}, {19, 13}, {20, 14}, {100, 67},
	} {
		got, err := Threshold(c.n)
		if err != nil || got != c.t {
			t.Errorf("Threshold(%d) = %d, %v; want %d", c.n, got, err, c.t)
		}
	}
	for _, n := range []int{0, -1} {
		if _, err := Threshold(n); !errors.Is(err, ErrThresholdParams) {
			t.Errorf("Threshold(%d): %v, want ErrThresholdParams", n, err)
		}
	}
}

// TestThresholdRecoverProperty: for random n in 1..10 and t in 1..n (half
// the time the D31 t), any t of the n partials, in any order, recover the
// same signature, equal to SignSeed with the group secret, and VerifySeed
// accepts it under the group key (§9.2, DECISIONS D31). t−1 partials are
// ErrTooFewPartials.
func TestThresholdRecoverProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 10).Draw(rt, "n")
		th, _ := Threshold(n)
		if rapid.Bool().Draw(rt, "any_t") {
			th = rapid.IntRange(1, n).Draw(rt, "t")
		}
		secret := DeriveSecretKey(rapid.SliceOfN(rapid.Byte(), 1, 16).Draw(rt, "secret"))
		var rs [32]byte
		copy(rs[:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(rt, "rand"))
		d, err := DealShares(secret, n, th, rand.NewChaCha8(rs))
		if err != nil {
			rt.Fatal(err)
		}
		ns := rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(rt, "ns")
		r := Round{Epoch: rapid.Uint64().Draw(rt, "epoch"), View: rapid.Uint64().Draw(rt, "view")}
		perm := rapid.Permutation(d.Shares).Draw(rt, "order")
		partials := make([]Partial, th)
		for i := range partials {
			if partials[i], err = SignPartial(perm[i], ns, r); err != nil {
				rt.Fatal(err)
			}
		}
		got, err := Recover(n, th, partials)
		if err != nil {
			rt.Fatal(err)
		}
		want, err := SignSeed(secret, ns, r)
		if err != nil {
			rt.Fatal(err)
		}
		if got != want {
			rt.Fatalf("recovered %x, SignSeed with the group secret %x", got, want)
		}
		gk := d.Public.GroupKey()
		if want := secret.PublicKey(); gk != want {
			rt.Fatalf("group key %x, secret·g2 %x", gk, want)
		}
		if err := VerifySeed(gk[:], ns, r, got[:]); err != nil {
			rt.Fatal(err)
		}
		if _, err := Recover(n, th, partials[:th-1]); !errors.Is(err, ErrTooFewPartials) {
			rt.Fatalf("t−1 partials: %v", err)
		}
	})
}

// TestPublicSharesMatchShares: the public share of index i is share_i·g2,
// computed two independent ways (polynomial in G2 vs the scalar share).
func TestPublicSharesMatchShares(t *testing.T) {
	_, d, pub := testDeal(t, 7, 5)
	for i, s := range d.Shares {
		if s.Index != uint32(i+1) {
			t.Fatalf("share %d has index %d", i, s.Index)
		}
		want := s.Key.PublicKey()
		if !bytes.Equal(pub[i], want[:]) {
			t.Errorf("public share %d: polynomial %x, share·g2 %x", s.Index, pub[i], want)
		}
	}
}

// TestRecoverVerifiedAnySubset: RecoverVerified over different t-subsets
// (including more than t partials) gives the same bytes (DECISIONS D31).
func TestRecoverVerifiedAnySubset(t *testing.T) {
	secret, d, pub := testDeal(t, 7, 5)
	ns, r := []byte("cowboy-test"), Round{Epoch: 2, View: 40}
	ps := testPartials(t, d, ns, r)
	want, _ := SignSeed(secret, ns, r)
	for _, set := range [][]Partial{ps[:5], ps[2:], {ps[6], ps[0], ps[3], ps[5], ps[1]}, ps} {
		got, err := RecoverVerified(pub, ns, r, 5, set)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("subset %v recovered %x, want %x", set, got, want)
		}
	}
}

// TestRecoverNegatives: one sentinel per defect (DECISIONS D31).
func TestRecoverNegatives(t *testing.T) {
	_, d, pub := testDeal(t, 4, 3)
	ns, r := []byte("cowboy-test"), Round{Epoch: 1, View: 9}
	ps := testPartials(t, d, ns, r)
	other, _ := SignPartial(d.Shares[3], ns, Round{Epoch: 1, View: 10}) // index 4, wrong round
	swapped := Partial{Index: 1, Signature: ps[1].Signature}            // index 2's signature under index 1
	offCurve := ps[0]
	offCurve.Signature = Signature{0x80, 47: 1} // x = 1: no point
	for _, c := range []struct {
		name     string
		t        int
		partials []Partial
		want     error
	}{
		{"too_few", 3, ps[:2], ErrTooFewPartials},
		{"none", 1, nil, ErrTooFewPartials},
		{"duplicate_index", 3, []Partial{ps[0], ps[1], ps[0]}, ErrDuplicateIndex},
		{"duplicate_index_beyond_t", 3, []Partial{ps[0], ps[1], ps[2], ps[1]}, ErrDuplicateIndex},
		{"index_zero", 3, []Partial{{Index: 0, Signature: ps[0].Signature}, ps[1], ps[2]}, ErrIndexOutOfRange},
		{"index_n_plus_1", 3, []Partial{ps[0], ps[1], {Index: 5, Signature: ps[2].Signature}}, ErrIndexOutOfRange},
		{"index_max", 3, []Partial{ps[0], ps[1], {Index: ^uint32(0), Signature: ps[2].Signature}}, ErrIndexOutOfRange},
		{"wrong_round_partial", 3, []Partial{ps[0], ps[1], other}, ErrPartialInvalid},
		{"signature_under_other_index", 3, []Partial{swapped, ps[2], ps[3]}, ErrPartialInvalid},
		{"partial_not_on_curve", 3, []Partial{offCurve, ps[1], ps[2]}, ErrSignatureNotOnCurve},
		{"partial_zero_bytes", 3, []Partial{{Index: 1}, ps[1], ps[2]}, ErrSignatureEncoding},
		{"t_zero", 0, ps, ErrThresholdParams},
		{"t_above_n", 5, ps, ErrThresholdParams},
	} {
		t.Run(c.name, func(t *testing.T) {
			sig, err := RecoverVerified(pub, ns, r, c.t, c.partials)
			if !errors.Is(err, c.want) {
				t.Fatalf("RecoverVerified: %v, want %v", err, c.want)
			}
			if sig != (Signature{}) {
				t.Fatalf("signature %x returned with an error", sig)
			}
		})
	}
	// Recover does not verify: a wrong-round partial recovers a signature
	// that VerifySeed rejects under the group key.
	sig, err := Recover(4, 3, []Partial{ps[0], ps[1], other})
	if err != nil {
		t.Fatal(err)
	}
	gk := d.Public.GroupKey()
	if err := VerifySeed(gk[:], ns, r, sig[:]); !errors.Is(err, ErrSeedSignatureInvalid) {
		t.Fatalf("unverified recovery: %v", err)
	}
	if _, err := RecoverVerified(nil, ns, r, 1, ps[:1]); !errors.Is(err, ErrThresholdParams) {
		t.Fatalf("no public shares: %v", err)
	}
	// A malformed public share is its decoding sentinel.
	bad := append([][]byte{pub[0][:95]}, pub[1:]...)
	if _, err := RecoverVerified(bad, ns, r, 3, ps[:3]); !errors.Is(err, ErrPublicKeyLength) {
		t.Fatalf("short public share: %v", err)
	}
}

// TestRecoverInfinity: partials summing to infinity are ErrPartialInvalid,
// not a zero signature (σ_2 = 2·σ_1 with x = 1, 2 gives λ = 2, −1).
func TestRecoverInfinity(t *testing.T) {
	sk := DeriveSecretKey([]byte("k"))
	var two SecretKey
	two.k.Double(&sk.k)
	ns, r := []byte("ns"), Round{1, 1}
	s1, _ := SignSeed(sk, ns, r)
	s2, _ := SignSeed(two, ns, r)
	if _, err := Recover(2, 2, []Partial{{1, s1}, {2, s2}}); !errors.Is(err, ErrPartialInvalid) {
		t.Fatalf("got %v, want ErrPartialInvalid", err)
	}
}

// TestVerifyPartial: a partial verifies under its own public share only.
func TestVerifyPartial(t *testing.T) {
	_, d, pub := testDeal(t, 4, 3)
	ns, r := []byte("cowboy-test"), Round{Epoch: 1, View: 9}
	ps := testPartials(t, d, ns, r)
	if err := VerifyPartial(pub[2], ns, r, ps[2]); err != nil {
		t.Fatal(err)
	}
	if err := VerifyPartial(pub[1], ns, r, ps[2]); !errors.Is(err, ErrPartialInvalid) {
		t.Fatalf("other index's share: %v", err)
	}
	if err := VerifyPartial(pub[2], ns, Round{Epoch: 1, View: 8}, ps[2]); !errors.Is(err, ErrPartialInvalid) {
		t.Fatalf("other round: %v", err)
	}
	inf := Partial{Index: 3, Signature: Signature{0xc0}}
	if err := VerifyPartial(pub[2], ns, r, inf); !errors.Is(err, ErrSignatureInfinity) {
		t.Fatalf("infinity partial: %v", err)
	}
	if err := VerifyPartial(nil, ns, r, ps[2]); !errors.Is(err, ErrPublicKeyLength) {
		t.Fatalf("nil public share: %v", err)
	}
}

// TestDealSharesRejects: parameters, zero secret, nil and short readers.
func TestDealSharesRejects(t *testing.T) {
	sk := DeriveSecretKey([]byte("k"))
	for _, c := range []struct{ n, t int }{{0, 1}, {-1, 1}, {3, 0}, {3, 4}, {1, -1}, {MaxShares + 1, 1}, {1 << 40, 1}} {
		if _, err := DealShares(sk, c.n, c.t, testRand(0)); !errors.Is(err, ErrThresholdParams) {
			t.Errorf("n = %d, t = %d: %v", c.n, c.t, err)
		}
	}
	if _, err := DealShares(SecretKey{}, 3, 2, testRand(0)); !errors.Is(err, ErrSecretKey) {
		t.Errorf("zero secret: %v", err)
	}
	if _, err := DealShares(sk, 3, 2, nil); !errors.Is(err, ErrThresholdParams) {
		t.Errorf("nil rand: %v", err)
	}
	if _, err := DealShares(sk, 3, 3, bytes.NewReader(make([]byte, 100))); err == nil {
		t.Error("short rand accepted")
	}
	// t = 1: every share is the secret; no randomness is read.
	d, err := DealShares(sk, 3, 1, bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range d.Shares {
		if s.Key != sk {
			t.Fatalf("t = 1 share %d differs from the secret", s.Index)
		}
	}
	// Deterministic in rand.
	a, _ := DealShares(sk, 5, 3, testRand(9))
	b, _ := DealShares(sk, 5, 3, testRand(9))
	for i := range a.Shares {
		if a.Shares[i] != b.Shares[i] {
			t.Fatalf("share %d differs for one reader", i+1)
		}
	}
}

// TestPublicPolynomialRoundTrip: Coefficients → PublicPolynomialFromBytes
// gives the same public shares; zero values and bad input do not panic.
func TestPublicPolynomialRoundTrip(t *testing.T) {
	_, d, pub := testDeal(t, 5, 4)
	cs := d.Public.Coefficients()
	raw := make([][]byte, len(cs))
	for i := range cs {
		raw[i] = cs[i][:]
	}
	p, err := PublicPolynomialFromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	if p.Threshold() != 4 {
		t.Fatalf("threshold %d", p.Threshold())
	}
	for i := range pub {
		got, err := p.PublicShare(uint32(i + 1))
		if err != nil || !bytes.Equal(got[:], pub[i]) {
			t.Fatalf("public share %d: %x, %v", i+1, got, err)
		}
	}
	if _, err := p.PublicShare(0); !errors.Is(err, ErrIndexOutOfRange) {
		t.Fatalf("index 0: %v", err)
	}
	if _, err := PublicPolynomialFromBytes(nil); !errors.Is(err, ErrThresholdParams) {
		t.Fatalf("empty: %v", err)
	}
	if _, err := PublicPolynomialFromBytes([][]byte{raw[0], raw[1][:10]}); !errors.Is(err, ErrPublicKeyLength) {
		t.Fatalf("short coefficient: %v", err)
	}
	for _, n := range []int{0, -1, MaxShares + 1} {
		if _, err := p.PublicShares(n); !errors.Is(err, ErrThresholdParams) {
			t.Fatalf("PublicShares(%d): %v", n, err)
		}
	}
	var zero PublicPolynomial
	if _, err := zero.PublicShare(1); !errors.Is(err, ErrThresholdParams) {
		t.Fatalf("zero polynomial: %v", err)
	}
	gk := zero.GroupKey()
	if _, err := DecodePublicKey(gk[:]); !errors.Is(err, ErrPublicKeyInfinity) {
		t.Fatalf("zero polynomial group key: %v", err)
	}
	if _, err := SignPartial(Share{Index: 0, Key: d.Shares[0].Key}, nil, Round{}); !errors.Is(err, ErrIndexOutOfRange) {
		t.Fatalf("sign with index 0: %v", err)
	}
	if _, err := SignPartial(Share{Index: 1}, nil, Round{}); !errors.Is(err, ErrSecretKey) {
		t.Fatalf("sign with zero share: %v", err)
	}
}
