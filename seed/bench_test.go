package seed

import (
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
