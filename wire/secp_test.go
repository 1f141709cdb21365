package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"pgregory.net/rapid"
)

// secpOrder is n, the secp256k1 group order, big-endian.
var secpOrder = [32]byte{
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
	0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
}

// agree runs one (digest, signature) through the build's backend and the
// pure-Go reference: both must refuse it, or both recover the same X‖Y.
func agree(t interface {
	Helper()
	Fatalf(string, ...any)
}, d cip11.Hash, sig RunnerSig) (ok bool) {
	t.Helper()
	var a, b [64]byte
	errA, errB := recoverXY(&d, &sig, &a), recoverDecred(&d, &sig, &b)
	if (errA == nil) != (errB == nil) || a != b {
		t.Fatalf("%s and decred disagree on d=%x sig=%x: %v / %v, %x / %x", SecpBackend, d, sig, errA, errB, a, b)
	}
	return errA == nil
}

// TestSecpBackendsAgree checks the secp256k1 recovery the build uses
// (libsecp256k1 under cgo) against decred's pure Go, on the inputs
// recoverRunner passes on (v ∈ {0,1}, low s): real signatures, both v,
// and random or edge r and s — r = 0, r = n, r ≥ n, an r that is no
// point's x, s = 0. Under the pure-Go build it compares decred with itself.
func TestSecpBackendsAgree(t *testing.T) {
	t.Logf("backend %s", SecpBackend)
	var n1 [32]byte // n + 1 (n ends in 0x41: no carry)
	copy(n1[:], secpOrder[:])
	n1[31]++
	edgeR := [][32]byte{{}, secpOrder, n1, {31: 5}, {0: 0xff, 31: 0xff}}
	rapid.Check(t, func(rt *rapid.T) {
		d := genHash(rt, "digest")
		secret := [32]byte(rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(rt, "secret"))
		k, err := NewRunnerKey(secret)
		if err != nil {
			rt.Skip("zero secret")
		}
		var viaBackend, viaDecred RunnerSig
		if err := signRunner(k, &d, &viaBackend); err != nil {
			rt.Fatalf("%s sign: %v", SecpBackend, err)
		}
		_ = signDecred(k, &d, &viaDecred)
		if viaBackend != viaDecred {
			rt.Fatalf("%s and decred sign d=%x differently: %x / %x", SecpBackend, d, viaBackend, viaDecred)
		}
		sig, err := k.Sign(d)
		if err != nil {
			rt.Skip("r overflowed n")
		}
		if !agree(rt, d, sig) {
			rt.Fatalf("a real signature did not recover")
		}
		var xy [64]byte
		_ = recoverXY(&d, &sig, &xy)
		if got := compressedXY(&xy); !bytes.Equal(got[:], k.PubKey().Raw()) {
			rt.Fatalf("recovered %x, signer %x", got, k.PubKey().Raw())
		}
		sig[64] ^= 1 // the other y: another key, or none
		agree(rt, d, sig)
		switch rapid.IntRange(0, 3).Draw(rt, "mutation") {
		case 0:
			copy(sig[:32], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(rt, "r"))
		case 1:
			r := rapid.SampledFrom(edgeR).Draw(rt, "edge r")
			copy(sig[:32], r[:])
		case 2:
			clear(sig[32:64]) // s = 0
		case 3:
			var s secp256k1.ModNScalar
			s.SetByteSlice(rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(rt, "s"))
			if s.IsOverHalfOrder() {
				s.Negate()
			}
			b := s.Bytes()
			copy(sig[32:64], b[:])
		}
		sig[64] = byte(rapid.IntRange(0, 1).Draw(rt, "v"))
		agree(rt, d, sig)
	})
}

// TestSecpRecoverPin pins one recovery to a key derived outside the code
// under test: secret 1 signs, and the recovered key is G itself
// (02 79be667e…16f81798), whichever backend the build uses.
func TestSecpRecoverPin(t *testing.T) {
	k, err := NewRunnerKey([32]byte{31: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := cip11.Keccak256([]byte("cip11 secp pin"))
	sig, err := k.Sign(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RecoverRunner(d, sig)
	if err != nil {
		t.Fatal(err)
	}
	const g = "0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"
	if got.String() != "01"+g {
		t.Fatalf("%s recovered %s, want 01%s", SecpBackend, got, g)
	}
	addr, err := RecoverRunnerAddress(d, sig)
	if err != nil {
		t.Fatal(err)
	}
	// keccak256(G.x ‖ G.y)[12:], the well-known address of secret 1.
	if want := "7e5f4552091a69125d5dfcb7b8c2659029395bdf"; hex.EncodeToString(addr[:]) != want {
		t.Fatalf("address %x, want %s", addr, want)
	}
}

// secpP is p, the secp256k1 field prime, big-endian.
var secpP = [32]byte{
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xfc, 0x2f,
}

// TestSecpParseAgree checks the build's compressed-key parsing against
// decred's: the same verdict and the same X‖Y for random x (about half
// are no point's x), real keys, and the edges x = 0, p − 1, p, p + 1,
// 2^256 − 1. It decides ParsePubKey (ErrPubKeyPoint) and RunnerAddress.
func TestSecpParseAgree(t *testing.T) {
	pMinus, pPlus := secpP, secpP
	pMinus[31]--
	pPlus[31]++
	edges := [][32]byte{{}, pMinus, secpP, pPlus, {0: 0xff, 1: 0xff, 2: 0xff, 3: 0xff, 4: 0xff, 5: 0xff, 6: 0xff, 7: 0xff, 8: 0xff, 9: 0xff, 10: 0xff,
		11: 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff, 16: 0xff, 17: 0xff, 18: 0xff, 19: 0xff, 20: 0xff, 21: 0xff, 22: 0xff, 23: 0xff, 24: 0xff,
		25: 0xff, 26: 0xff, 27: 0xff, 28: 0xff, 29: 0xff, 30: 0xff, 31: 0xff}}
	valid := 0
	check := func(t interface{ Fatalf(string, ...any) }, c [33]byte) {
		var a, b [64]byte
		errA, errB := parseXY(&c, &a), parseDecred(&c, &b)
		if (errA == nil) != (errB == nil) || a != b {
			t.Fatalf("%s and decred disagree on %x: %v / %v, %x / %x", SecpBackend, c, errA, errB, a, b)
		}
		if errA == nil {
			valid++
		}
	}
	for _, x := range edges {
		for _, prefix := range []byte{2, 3} {
			var c [33]byte
			c[0] = prefix
			copy(c[1:], x[:])
			check(t, c)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		var c [33]byte
		if rapid.Bool().Draw(rt, "real key") {
			secret := [32]byte(rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(rt, "secret"))
			k, err := NewRunnerKey(secret)
			if err != nil {
				rt.Skip("zero secret")
			}
			copy(c[:], k.PubKey().Raw())
		} else {
			c[0] = byte(rapid.IntRange(2, 3).Draw(rt, "prefix"))
			copy(c[1:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(rt, "x"))
		}
		check(rt, c)
	})
	if valid == 0 {
		t.Fatal("no input parsed: the comparison saw only failures")
	}
}

// FuzzSecpBackends is the differential form of TestSecpBackendsAgree and
// TestSecpParseAgree: any digest, signature and compressed key, through
// the build's backend and decred's pure Go. Inputs recoverRunner refuses
// before any curve work (v > 1, high s) are refused by both paths alike.
func FuzzSecpBackends(f *testing.F) {
	k, _ := NewRunnerKey([32]byte{31: 1})
	d := cip11.Keccak256([]byte("cip11 fuzz secp"))
	sig, _ := k.Sign(d)
	key := [33]byte(k.PubKey().Raw())
	f.Add(d[:], sig[:], key[:])
	f.Add(make([]byte, 32), make([]byte, 65), append([]byte{2}, make([]byte, 32)...))
	f.Fuzz(func(t *testing.T, db, sb, kb []byte) {
		if len(db) != 32 || len(sb) != RunnerSigLen || len(kb) != 33 {
			return
		}
		d, sig, c := cip11.Hash(db), RunnerSig(sb), [33]byte(kb)
		if _, err := recoverRunner(d, &sig); err == nil || !errors.Is(err, ErrSigRecoveryID) && !errors.Is(err, ErrSigHighS) {
			agree(t, d, sig)
		}
		var a, b [64]byte
		c[0] = 2 | c[0]&1
		errA, errB := parseXY(&c, &a), parseDecred(&c, &b)
		if (errA == nil) != (errB == nil) || a != b {
			t.Fatalf("%s and decred disagree on key %x: %v / %v", SecpBackend, c, errA, errB)
		}
	})
}
