package seed

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/big"
	"sync"

	bls "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cip11/cip11"
)

// SeedDST is the hash-to-G1 domain separation tag commonware uses for MinSig
// seed signatures (DECISIONS D12).
const SeedDST = "BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_POP_"

// seedSuffix is appended to the consensus namespace for seed signatures (D12).
const seedSuffix = "_SEED"

// ZCash compressed-encoding flag bits in the first byte (D12).
const (
	flagMask       = 0xe0
	flagCompressed = 0x80
	flagInfinity   = 0x40
	flagLargestY   = 0x20
)

// AppendSeedMessage appends the commonware seed message for round r under the
// consensus namespace ns to dst (§9.2, DECISIONS D12):
//
//	uvarint(len(ns ‖ "_SEED")) ‖ ns ‖ "_SEED" ‖ uvarint(epoch) ‖ uvarint(view)
//
// with protobuf-style unsigned varints. commonware signs this one message for
// notarization, finalization and nullification seeds alike.
func AppendSeedMessage(dst, ns []byte, r Round) []byte {
	return appendRound(appendSeedPrefix(dst, ns), r)
}

// appendSeedPrefix appends the commonware union_unique namespace prefix
// uvarint(len(ns ‖ "_SEED")) ‖ ns ‖ "_SEED" (D12).
func appendSeedPrefix(dst, ns []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ns))+uint64(len(seedSuffix)))
	dst = append(dst, ns...)
	return append(dst, seedSuffix...)
}

// appendRound appends commonware's Round encoding uvarint(epoch) ‖ uvarint(view) (D12).
func appendRound(dst []byte, r Round) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(dst, r.Epoch), r.View)
}

// SeedMessage returns the commonware seed message for round r under the
// consensus namespace ns (§9.2, DECISIONS D12); see [AppendSeedMessage].
func SeedMessage(ns []byte, r Round) []byte {
	return AppendSeedMessage(make([]byte, 0, len(ns)+len(seedSuffix)+2*binary.MaxVarintLen64+2), ns, r)
}

// pointErrs names the sentinels for one group's decoding defects.
type pointErrs struct{ length, encoding, notOnCurve, infinity, notInSubgroup error }

func sigErrs() *pointErrs {
	return &pointErrs{ErrSeedSignatureLength, ErrSignatureEncoding, ErrSignatureNotOnCurve, ErrSignatureInfinity, ErrSignatureNotInSubgroup}
}

func pkErrs() *pointErrs {
	return &pointErrs{ErrPublicKeyLength, ErrPublicKeyEncoding, ErrPublicKeyNotOnCurve, ErrPublicKeyInfinity, ErrPublicKeyNotInSubgroup}
}

// checkCompressed validates the exact length, the flag bits, the infinity
// encoding and that every field coordinate is canonical (below p), so that a
// later gnark decoding failure can only mean "not on curve" or "not in subgroup".
func checkCompressed(b []byte, size int, e *pointErrs) error {
	if len(b) != size {
		return fmt.Errorf("%w: want %d bytes, got %d", e.length, size, len(b))
	}
	var x [fp.Bytes]byte
	copy(x[:], b)
	x[0] &^= flagMask
	switch b[0] & flagMask {
	case flagCompressed, flagCompressed | flagLargestY:
	case flagCompressed | flagInfinity:
		if allZero(x[:]) && allZero(b[fp.Bytes:]) {
			return e.infinity
		}
		return fmt.Errorf("%w: infinity flag with nonzero coordinate", e.encoding)
	default:
		return fmt.Errorf("%w: flag bits 0x%02x (compressed form required)", e.encoding, b[0]&flagMask)
	}
	for off := 0; off < size; off += fp.Bytes {
		if off > 0 {
			copy(x[:], b[off:])
		}
		var c fp.Element
		if c.SetBytesCanonical(x[:]) != nil {
			return fmt.Errorf("%w: coordinate at byte %d is not below the field modulus", e.encoding, off)
		}
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// classify explains why gnark rejected a point that passed checkCompressed:
// re-decoded without the subgroup check it either exists (so it lies outside
// the prime-order subgroup) or its x has no y on the curve.
func classify(b []byte, p any, e *pointErrs) error {
	if bls.NewDecoder(bytes.NewReader(b), bls.NoSubgroupChecks()).Decode(p) == nil {
		return e.notInSubgroup
	}
	return e.notOnCurve
}

// DecodeSignature decodes a MinSig seed signature: exactly 48 bytes, a
// canonical ZCash-compressed G1 point, not infinity, in the prime-order
// subgroup (§9.2, DECISIONS D12). Each defect has its own sentinel.
func DecodeSignature(b []byte) (bls.G1Affine, error) {
	var p bls.G1Affine
	if err := checkCompressed(b, SignatureSize, sigErrs()); err != nil {
		return p, err
	}
	if _, err := p.SetBytes(b); err != nil {
		return bls.G1Affine{}, classify(b, &p, sigErrs())
	}
	return p, nil
}

// DecodePublicKey decodes a MinSig threshold public key: exactly 96 bytes, a
// canonical ZCash-compressed G2 point, not infinity, in the prime-order
// subgroup (§9.2, DECISIONS D12). Each defect has its own sentinel.
func DecodePublicKey(b []byte) (bls.G2Affine, error) {
	var p bls.G2Affine
	if err := checkCompressed(b, PublicKeySize, pkErrs()); err != nil {
		return p, err
	}
	if _, err := p.SetBytes(b); err != nil {
		return bls.G2Affine{}, classify(b, &p, pkErrs())
	}
	return p, nil
}

// fixedLines is gnark's precomputed Miller-loop lines for one fixed G2 point.
type fixedLines = [2][len(bls.LoopCounter) - 1]bls.LineEvaluationAff

// Verifier checks seed signatures for one threshold public key and one
// consensus namespace (§9.2, DECISIONS D12). The key is decoded and
// subgroup-checked once, and the Miller-loop lines of pk and −g2 are
// precomputed, so each [Verifier.Verify] costs one hash-to-G1, one signature
// decoding and one two-pair fixed-Q pairing check. A Verifier is immutable
// and safe for concurrent use.
type Verifier struct {
	publicKey [PublicKeySize]byte
	prefix    []byte       // uvarint(len(ns‖"_SEED")) ‖ ns ‖ "_SEED"
	lines     []fixedLines // lines(pk), lines(−g2)
}

// NewVerifier decodes the 96-byte compressed G2 threshold public key and
// binds it to the consensus namespace ns (§9.2, DECISIONS D12).
func NewVerifier(publicKey, ns []byte) (*Verifier, error) {
	pk, err := DecodePublicKey(publicKey)
	if err != nil {
		return nil, fmt.Errorf("seed: new verifier: %w", err)
	}
	_, _, _, g2 := bls.Generators()
	var negG2 bls.G2Affine
	negG2.Neg(&g2)
	v := &Verifier{
		prefix: appendSeedPrefix(nil, ns),
		lines:  []fixedLines{bls.PrecomputeLines(pk), bls.PrecomputeLines(negG2)},
	}
	copy(v.publicKey[:], publicKey)
	return v, nil
}

// linesPool holds the per-check copies of a Verifier's two line tables.
var linesPool = sync.Pool{New: func() any { return new([2]fixedLines) }}

// PublicKey returns the 96-byte compressed threshold public key (§9.2).
func (v *Verifier) PublicKey() [PublicKeySize]byte { return v.publicKey }

// Verify checks that sig is the threshold seed signature for round r (§9.2
// "verify the seed signature against the active consensus threshold public
// key and that R.round equals the expected absolute seed round"): valid iff
// e(H(m), pk) = e(sig, g2) with m the D12 seed message. It returns nil, a
// signature decoding sentinel, or [ErrSeedSignatureInvalid].
func (v *Verifier) Verify(r Round, sig []byte) error {
	s, err := DecodeSignature(sig)
	if err != nil {
		return fmt.Errorf("seed: round %v: %w", r, err)
	}
	var buf [64]byte
	msg := appendRound(append(buf[:0], v.prefix...), r)
	h, err := bls.HashToG1(msg, []byte(SeedDST))
	if err != nil {
		return fmt.Errorf("%w: hash to G1: %v", ErrSeedSignatureInvalid, err)
	}
	// gnark's fixed-Q Miller loop scales the line evaluations in place, so
	// each check works on its own copy and the Verifier stays immutable.
	// The copy (48 KiB) comes from a pool: allocated per check it was an
	// eighth of a 4-validator devnet's allocation, and the collections it
	// caused lengthened the push latency's tail (docs/network.md).
	lines := linesPool.Get().(*[2]fixedLines)
	defer linesPool.Put(lines)
	n := copy(lines[:], v.lines)
	ok, err := bls.PairingCheckFixedQ([]bls.G1Affine{h, s}, lines[:n])
	if err != nil || !ok {
		return fmt.Errorf("%w: round %v", ErrSeedSignatureInvalid, r)
	}
	return nil
}

// VerifySeed is the one-shot form of [Verifier.Verify] (§9.2, DECISIONS D12):
// it decodes publicKey, then sig, and checks e(H(m), pk) · e(−sig, g2) = 1
// with a single PairingCheck. Public-key defects are reported before
// signature defects.
func VerifySeed(publicKey, ns []byte, r Round, sig []byte) error {
	pk, err := DecodePublicKey(publicKey)
	if err != nil {
		return err
	}
	return verifyMsg(&pk, SeedMessage(ns, r), sig, SeedDST)
}

// verifyMsg is the MinSig BLS verification for any message and DST.
func verifyMsg(pk *bls.G2Affine, msg, sig []byte, dst string) error {
	s, err := DecodeSignature(sig)
	if err != nil {
		return err
	}
	h, err := bls.HashToG1(msg, []byte(dst))
	if err != nil {
		return fmt.Errorf("%w: hash to G1: %v", ErrSeedSignatureInvalid, err)
	}
	_, _, _, g2 := bls.Generators()
	s.Neg(&s)
	ok, err := bls.PairingCheck([]bls.G1Affine{h, s}, []bls.G2Affine{*pk, g2})
	if err != nil || !ok {
		return ErrSeedSignatureInvalid
	}
	return nil
}

// SecretKey is a BLS12-381 scalar for signing seeds in tests and generated
// devnet chains (§9.2). Real seeds are threshold signatures recovered from
// DKG shares by consensus; this package never holds a consensus key.
type SecretKey struct{ k fr.Element }

// SecretKeyFromBytes parses a 32-byte big-endian scalar in [1, r) (a
// test/devnet seed key, §9.2).
func SecretKeyFromBytes(b []byte) (SecretKey, error) {
	var sk SecretKey
	if len(b) != SecretKeySize {
		return sk, fmt.Errorf("%w: want %d bytes, got %d", ErrSecretKey, SecretKeySize, len(b))
	}
	if err := sk.k.SetBytesCanonical(b); err != nil || sk.k.IsZero() {
		return SecretKey{}, fmt.Errorf("%w: zero or not below the group order", ErrSecretKey)
	}
	return sk, nil
}

// DeriveSecretKey deterministically derives a TEST / DEVNET key for signing
// §9.2 seeds from seed: the first nonzero of
// keccak256(dom ‖ i ‖ 0x00 ‖ seed) ‖ keccak256(dom ‖ i ‖ 0x01 ‖ seed) reduced
// mod r for i = 0, 1, …, with dom = "cip11-devnet-bls-key-v1". Not a
// consensus key derivation.
func DeriveSecretKey(seed []byte) SecretKey {
	const dom = "cip11-devnet-bls-key-v1"
	var sk SecretKey
	for i := byte(0); ; i++ {
		a := cip11.Keccak256([]byte(dom), []byte{i, 0}, seed)
		b := cip11.Keccak256([]byte(dom), []byte{i, 1}, seed)
		sk.k.SetBytes(append(a[:], b[:]...))
		if !sk.k.IsZero() || i == 255 {
			return sk
		}
	}
}

// Bytes returns the 32-byte big-endian scalar (§9.2 test/devnet key).
func (sk SecretKey) Bytes() [SecretKeySize]byte { return sk.k.Bytes() }

// PublicKey returns pk = sk·g2, 96 compressed G2 bytes (§9.2, DECISIONS D12).
func (sk SecretKey) PublicKey() [PublicKeySize]byte {
	var pk bls.G2Affine
	pk.ScalarMultiplicationBase(sk.k.BigInt(new(big.Int)))
	return pk.Bytes()
}

// sign returns sk·H(msg) under dst as 48 compressed G1 bytes.
func (sk SecretKey) sign(msg []byte, dst string) (Signature, error) {
	h, err := bls.HashToG1(msg, []byte(dst))
	if err != nil {
		return Signature{}, fmt.Errorf("%w: hash to G1: %v", ErrSecretKey, err)
	}
	h.ScalarMultiplication(&h, sk.k.BigInt(new(big.Int)))
	return h.Bytes(), nil
}

// SignSeed signs the D12 seed message for round r under namespace ns, giving
// the seed a single-key "threshold" public key sk·g2 verifies (§9.2). For
// tests and devnet chain generation.
func SignSeed(sk SecretKey, ns []byte, r Round) (Signature, error) {
	return sk.sign(SeedMessage(ns, r), SeedDST)
}
