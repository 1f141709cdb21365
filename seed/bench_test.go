package seed

import (
	"fmt"
	"testing"
	"time"

	bls "github.com/consensys/gnark-crypto/ecc/bls12-381"

	"github.com/cip11/cip11"
)

// BenchmarkBarePairingCheck is the baseline: gnark hash-to-G1 plus one
// two-pair PairingCheck on already-decoded points.
func BenchmarkBarePairingCheck(b *testing.B) {
	sk, pk, _ := testKey(b)
	r := Round{Epoch: 3, View: 77}
	sig, _ := SignSeed(sk, []byte("cowboy-test"), r)
	pkp, _ := DecodePublicKey(pk)
	s, _ := DecodeSignature(sig[:])
	s.Neg(&s)
	_, _, _, g2 := bls.Generators()
	msg := SeedMessage([]byte("cowboy-test"), r)
	dst := []byte(SeedDST)
	b.ReportAllocs()
	for b.Loop() {
		h, _ := bls.HashToG1(msg, dst)
		ok, err := bls.PairingCheck([]bls.G1Affine{h, s}, []bls.G2Affine{pkp, g2})
		if !ok || err != nil {
			b.Fatal("bare check failed")
		}
	}
}

// BenchmarkSeedVerify is a full seed verification through a prebuilt
// Verifier: message, signature decoding with subgroup check, hash-to-G1 and
// the fixed-Q pairing check.
func BenchmarkSeedVerify(b *testing.B) {
	sk, _, v := testKey(b)
	r := Round{Epoch: 3, View: 77}
	sig, _ := SignSeed(sk, []byte("cowboy-test"), r)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Verify(r, sig[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifySeedOneShot decodes the key on every call.
func BenchmarkVerifySeedOneShot(b *testing.B) {
	sk, pk, _ := testKey(b)
	r := Round{Epoch: 3, View: 77}
	sig, _ := SignSeed(sk, []byte("cowboy-test"), r)
	b.ReportAllocs()
	for b.Loop() {
		if err := VerifySeed(pk, []byte("cowboy-test"), r, sig[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSelectionSeed is the per-job hot path (§9.2): one Keccak-256.
func BenchmarkSelectionSeed(b *testing.B) {
	var h Hasher
	csb, job := cip11.Keccak256([]byte("beacon")), cip11.Keccak256([]byte("job"))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := h.SelectionSeed(ModeDelayed, &csb, &job, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBeaconHash is canonical_seed_bytes for a MinSig seed (§9.2).
func BenchmarkBeaconHash(b *testing.B) {
	var h Hasher
	var s Signature
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.BeaconHash(Round{Epoch: 1, View: uint64(i)}, &s)
	}
}

// BenchmarkDecodeConsumedSeeds decodes a block field with 8 entries.
func BenchmarkDecodeConsumedSeeds(b *testing.B) {
	c := make(ConsumedSeedsV1, 8)
	for i := range c {
		c[i].Round = Round{Epoch: 1, View: uint64(i * 1000)}
	}
	enc, _ := c.Encode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeConsumedSeedsV1(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyVsBare interleaves one bare gnark check and one
// Verifier.Verify per iteration, so machine load hits both equally, and
// reports their time ratio (target ≤ 1.2).
func BenchmarkVerifyVsBare(b *testing.B) {
	sk, pk, v := testKey(b)
	r := Round{Epoch: 3, View: 77}
	sig, _ := SignSeed(sk, []byte("cowboy-test"), r)
	pkp, _ := DecodePublicKey(pk)
	s, _ := DecodeSignature(sig[:])
	s.Neg(&s)
	_, _, _, g2 := bls.Generators()
	msg := SeedMessage([]byte("cowboy-test"), r)
	dst := []byte(SeedDST)
	var bare, ours time.Duration
	for b.Loop() {
		t0 := time.Now()
		h, _ := bls.HashToG1(msg, dst)
		ok, _ := bls.PairingCheck([]bls.G1Affine{h, s}, []bls.G2Affine{pkp, g2})
		t1 := time.Now()
		err := v.Verify(r, sig[:])
		t2 := time.Now()
		if !ok || err != nil {
			b.Fatal("verification failed")
		}
		bare, ours = bare+t1.Sub(t0), ours+t2.Sub(t1)
	}
	b.ReportMetric(float64(bare.Nanoseconds())/float64(b.N), "bare-ns/op")
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "verify-ns/op")
	b.ReportMetric(float64(ours)/float64(bare), "ratio")
}

// BenchmarkVerifyPartial is a one-shot partial verification (public share
// decoded per call), the D31 VerifyVoteExtension check; compare with
// BenchmarkVerifySeedOneShot (and BenchmarkVerifyPartialVsSeed for the ratio).
func BenchmarkVerifyPartial(b *testing.B) {
	_, d, pub := testDeal(b, 4, 3)
	ns, r := []byte("cowboy-test"), Round{Epoch: 3, View: 77}
	p, _ := SignPartial(d.Shares[2], ns, r)
	b.ReportAllocs()
	for b.Loop() {
		if err := VerifyPartial(pub[2], ns, r, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyPartialVsSeed interleaves one VerifySeed and one
// VerifyPartial per iteration, so machine load hits both equally, and
// reports their time ratio (target ≤ 1.1).
func BenchmarkVerifyPartialVsSeed(b *testing.B) {
	secret, d, pub := testDeal(b, 4, 3)
	ns, r := []byte("cowboy-test"), Round{Epoch: 3, View: 77}
	p, _ := SignPartial(d.Shares[2], ns, r)
	sig, _ := SignSeed(secret, ns, r)
	gk := d.Public.GroupKey()
	var seed, partial time.Duration
	for b.Loop() {
		t0 := time.Now()
		err1 := VerifySeed(gk[:], ns, r, sig[:])
		t1 := time.Now()
		err2 := VerifyPartial(pub[2], ns, r, p)
		t2 := time.Now()
		if err1 != nil || err2 != nil {
			b.Fatal(err1, err2)
		}
		seed, partial = seed+t1.Sub(t0), partial+t2.Sub(t1)
	}
	b.ReportMetric(float64(seed.Nanoseconds())/float64(b.N), "seed-ns/op")
	b.ReportMetric(float64(partial.Nanoseconds())/float64(b.N), "partial-ns/op")
	b.ReportMetric(float64(partial)/float64(seed), "ratio")
}

// BenchmarkRecover is Lagrange recovery at 0 in G1 from t already verified
// partials (DECISIONS D31), for n = 4 (t = 3) and n = 20 (t = 14).
func BenchmarkRecover(b *testing.B) {
	for _, n := range []int{4, 20} {
		th, _ := Threshold(n)
		_, d, _ := testDeal(b, n, th)
		ps := testPartials(b, d, []byte("cowboy-test"), Round{Epoch: 3, View: 77})
		b.Run(fmt.Sprintf("t=%d", th), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Recover(n, th, ps); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRecoverVerified is the proposer's full cost: t partial
// verifications plus recovery, for t = 14 of n = 20.
func BenchmarkRecoverVerified(b *testing.B) {
	_, d, pub := testDeal(b, 20, 14)
	ns, r := []byte("cowboy-test"), Round{Epoch: 3, View: 77}
	ps := testPartials(b, d, ns, r)
	for b.Loop() {
		if _, err := RecoverVerified(pub, ns, r, 14, ps); err != nil {
			b.Fatal(err)
		}
	}
}
