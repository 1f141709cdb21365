package seed

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/dcbor"
)

// wrapsSentinel reports whether err wraps at least one of the package's sentinels.
func wrapsSentinel(err error) bool {
	for _, s := range []error{
		ErrUnknownSeedScheme, ErrSeedSignatureLength, ErrUnknownSelectionMode,
		ErrPublicKeyLength, ErrPublicKeyEncoding, ErrPublicKeyNotOnCurve, ErrPublicKeyInfinity, ErrPublicKeyNotInSubgroup,
		ErrSignatureEncoding, ErrSignatureNotOnCurve, ErrSignatureInfinity, ErrSignatureNotInSubgroup, ErrSeedSignatureInvalid,
		ErrConsumedSeedsUnsorted, ErrConsumedSeedsDuplicateRound,
		ErrThresholdParams, ErrTooFewPartials, ErrDuplicateIndex, ErrIndexOutOfRange, ErrPartialInvalid,
		dcbor.ErrTruncated, dcbor.ErrTrailingBytes, dcbor.ErrMalformed, dcbor.ErrNonShortestInt, dcbor.ErrIndefiniteLength,
		dcbor.ErrTag, dcbor.ErrUnexpectedType, dcbor.ErrIntRange, dcbor.ErrInvalidUTF8, dcbor.ErrKeyOrder, dcbor.ErrDuplicateKey,
		dcbor.ErrUnknownKey, dcbor.ErrMissingKey, dcbor.ErrByteLength, dcbor.ErrNotCanonical,
	} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// FuzzDecodeConsumedSeeds: decoding never panics, fails only with a sentinel,
// and decode→encode reproduces the input exactly (§12.6, DECISIONS D9).
func FuzzDecodeConsumedSeeds(f *testing.F) {
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeConsumedSeedsV1(b)
		if err != nil {
			if c != nil || !wrapsSentinel(err) {
				t.Fatalf("%x: %v, %v", b, c, err)
			}
			return
		}
		enc, err := c.Encode()
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("decode→encode: %x → %x (%v)", b, enc, err)
		}
	})
}

// FuzzBeaconHash: beacon_hash_v1 rejects exactly the wrong scheme/length
// pairs, and the MinSig fast path agrees with the general one (§9.2).
func FuzzBeaconHash(f *testing.F) {
	f.Add(uint64(7), uint64(42), byte(1), make([]byte, 48))
	f.Fuzz(func(t *testing.T, epoch, view uint64, scheme byte, sig []byte) {
		r := Round{epoch, view}
		got, err := BeaconHashV1(r, SchemeID(scheme), sig)
		n, serr := SchemeID(scheme).SignatureLen()
		if (err == nil) != (serr == nil && n == len(sig)) || (err != nil && !wrapsSentinel(err)) {
			t.Fatalf("scheme %d len %d: %v", scheme, len(sig), err)
		}
		if err == nil && scheme == byte(SchemeMinSig) {
			s, _ := SignatureFromBytes(sig)
			var h Hasher
			if h.BeaconHash(r, &s) != got {
				t.Fatal("Hasher.BeaconHash disagrees with BeaconHashV1")
			}
		}
	})
}

// FuzzSelectionSeed: only modes 0x00 and 0x01 are accepted (§9.2).
func FuzzSelectionSeed(f *testing.F) {
	f.Add(byte(0), make([]byte, 32), make([]byte, 32), uint64(1))
	f.Fuzz(func(t *testing.T, mode byte, csb, job []byte, at uint64) {
		var c, j cip11.Hash
		copy(c[:], csb)
		copy(j[:], job)
		var h Hasher
		_, err := h.SelectionSeed(Mode(mode), &c, &j, at)
		if (err == nil) != (mode <= 1) || (err != nil && !errors.Is(err, ErrUnknownSelectionMode)) {
			t.Fatalf("mode %d: %v", mode, err)
		}
	})
}

// FuzzDecodePoints: BLS point decoding never panics, fails only with a
// sentinel, and accepts only canonical encodings (decode→encode = input).
func FuzzDecodePoints(f *testing.F) {
	f.Add(make([]byte, 48))
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := DecodeSignature(b); err == nil {
			if enc := p.Bytes(); !bytes.Equal(enc[:], b) {
				t.Fatalf("signature %x re-encodes to %x", b, enc)
			}
		} else if !wrapsSentinel(err) {
			t.Fatalf("signature %x: %v", b, err)
		}
		if p, err := DecodePublicKey(b); err == nil {
			if enc := p.Bytes(); !bytes.Equal(enc[:], b) {
				t.Fatalf("public key %x re-encodes to %x", b, enc)
			}
		} else if !wrapsSentinel(err) {
			t.Fatalf("public key %x: %v", b, err)
		}
	})
}

// FuzzVerifySeed: verification of arbitrary bytes never panics, fails only
// with a sentinel, and the one-shot and prebuilt-Verifier paths agree
// (§9.2, DECISIONS D12).
func FuzzVerifySeed(f *testing.F) {
	_, pk, _ := testKey(f)
	f.Add(pk, []byte("cowboy-test"), uint64(1), uint64(2), make([]byte, 48))
	f.Fuzz(func(t *testing.T, pk, ns []byte, epoch, view uint64, sig []byte) {
		r := Round{epoch, view}
		err := VerifySeed(pk, ns, r, sig)
		if err != nil && !wrapsSentinel(err) {
			t.Fatalf("VerifySeed: %v", err)
		}
		v, verr := NewVerifier(pk, ns)
		if verr != nil {
			if !errors.Is(err, sentinelIn(verr)) {
				t.Fatalf("NewVerifier %v but VerifySeed %v", verr, err)
			}
			return
		}
		if err2 := v.Verify(r, sig); (err == nil) != (err2 == nil) || (err != nil && !errors.Is(err2, sentinelIn(err))) {
			t.Fatalf("paths disagree: %v vs %v", err, err2)
		}
	})
}

// sentinelIn returns the innermost wrapped error.
func sentinelIn(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// fuzzPartials splits b into partials of 52 bytes: index_be4 ‖ signature_48
// (a trailing remainder is ignored).
func fuzzPartials(b []byte) []Partial {
	var out []Partial
	for ; len(b) >= 4+SignatureSize; b = b[4+SignatureSize:] {
		var p Partial
		p.Index = uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		copy(p.Signature[:], b[4:])
		out = append(out, p)
	}
	return out
}

// FuzzRecover: threshold recovery of arbitrary partials (52-byte records
// index_be4 ‖ signature) for a fixed 4-share dealing never panics, fails
// only with a sentinel, and whatever RecoverVerified returns verifies under
// the group key and equals the unverified Recover (§9.2, DECISIONS D31).
func FuzzRecover(f *testing.F) {
	_, d, pub := testDeal(f, 4, 3)
	gk := d.Public.GroupKey()
	ns := []byte("cowboy-test")
	f.Add(ns, uint64(1), uint64(9), byte(3), []byte{})
	f.Fuzz(func(t *testing.T, ns []byte, epoch, view uint64, th byte, b []byte) {
		r := Round{epoch, view}
		ps := fuzzPartials(b)
		raw, rerr := Recover(len(pub), int(th), ps)
		if rerr != nil && !wrapsSentinel(rerr) {
			t.Fatalf("Recover: %v", rerr)
		}
		sig, err := RecoverVerified(pub, ns, r, int(th), ps)
		if err != nil {
			if !wrapsSentinel(err) {
				t.Fatalf("RecoverVerified: %v", err)
			}
			return
		}
		if rerr != nil || raw != sig {
			t.Fatalf("RecoverVerified %x but Recover %x, %v", sig, raw, rerr)
		}
		if err := VerifySeed(gk[:], ns, r, sig[:]); err != nil {
			t.Fatalf("recovered %x does not verify: %v", sig, err)
		}
	})
}
