package seed

import (
	"errors"
	"fmt"
	"io"
	"math/big"

	bls "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// Threshold seeds (§9.2 seed model, DECISIONS D31).
//
// Each validator of an epoch's set holds a share of the epoch's BLS12-381
// MinSig group key; in ExtendVote at height h it signs the D12 seed message
// of Round(E, h) with its share (a partial, [SignPartial]); the proposer of
// h+1 recovers the group signature from t verified partials by Lagrange
// interpolation at 0 in G1 ([RecoverVerified], [Recover]). The recovered
// signature is what [SignSeed] gives with the group secret, so [VerifySeed]
// accepts it under the group key, and it is unique: any t of the n
// partials recover the same 48 bytes.
//
// Share indices are 1..n: the validator at position p (0-based) of the
// epoch's ValidatorSetSnapshot in its D29 canonical order (ascending
// peer_pubkey) holds the share of index p + 1, the polynomial evaluated at
// x = p + 1. Index 0 is the group secret itself and is never a share.

// MaxShares bounds n for the allocating helpers ([DealShares],
// [PublicPolynomial.PublicShares]) so no input can exhaust memory; it is far
// above any validator set size.
const MaxShares = 1 << 16

// Errors for threshold seed shares (§9.2, DECISIONS D31).
var (
	// ErrThresholdParams: n < 1, or a threshold t outside 1..n.
	ErrThresholdParams = errors.New("seed: invalid threshold parameters")
	// ErrTooFewPartials: fewer than t partials to recover from.
	ErrTooFewPartials = errors.New("seed: fewer than t partial signatures")
	// ErrDuplicateIndex: two partials (or shares) carry the same index.
	ErrDuplicateIndex = errors.New("seed: duplicate share index")
	// ErrIndexOutOfRange: a share index is 0 or greater than n.
	ErrIndexOutOfRange = errors.New("seed: share index out of range 1..n")
	// ErrPartialInvalid: a well-formed partial signature that does not
	// verify under its index's public share, or partials that recover no
	// valid group signature.
	ErrPartialInvalid = errors.New("seed: partial signature does not verify")
)

// Threshold returns the D31 seed threshold t = n − ⌊(n−1)/3⌋ for a set of n
// validators: the smallest t with t > 2(n−1)/3, so any t shares include
// more than the f = ⌊(n−1)/3⌋ faulty ones tolerated (§9.2, DECISIONS D31).
// It is [ErrThresholdParams] for n < 1.
func Threshold(n int) (int, error) {
	if n < 1 {
		return 0, fmt.Errorf("%w: n = %d", ErrThresholdParams, n)
	}
	return n - (n-1)/3, nil
}

// Share is one validator's secret share of a group seed key: the dealt
// polynomial evaluated at Index (1..n, see the package's threshold notes).
// TEST / DEVNET material (§5.4: production shares come from consensus DKG).
type Share struct {
	Index uint32
	Key   SecretKey
}

// Partial is one validator's partial seed signature: the D12 seed message
// signed with the share of Index, 48 compressed G1 bytes (DECISIONS D31).
type Partial struct {
	Index     uint32
	Signature Signature
}

// PublicPolynomial is the commitment to a dealt polynomial: its t
// coefficients times g2, constant term first. The constant term is the group
// public key; the public share of index i is the polynomial evaluated at
// x = i in G2 (§9.2, DECISIONS D31). Immutable once built.
type PublicPolynomial struct {
	coeffs []bls.G2Affine
}

// Dealing is the output of [DealShares]: n shares of a degree t−1
// polynomial and its public commitment.
type Dealing struct {
	N, T   int
	Shares []Share // Shares[i].Index == i+1
	Public PublicPolynomial
}

// DealShares splits secret into n shares with threshold t: it draws a random
// polynomial f of degree t−1 with f(0) = secret (coefficients 1..t−1 read
// from rand, 64 bytes each reduced mod r, the top one nonzero) and gives the
// share f(i) to index i = 1..n.
//
// DEVNET / TEST ONLY. Production key generation and resharing are
// consensus-owned (§5.4, DECISIONS D31): this dealer knows the group secret.
// It is deterministic in rand, so a fixed reader reproduces a devnet.
// Errors: [ErrThresholdParams] for n outside 1..[MaxShares] or t outside 1..n, [ErrSecretKey]
// for a zero secret, and rand's error if it runs short.
func DealShares(secret SecretKey, n, t int, rand io.Reader) (*Dealing, error) {
	if n < 1 || t < 1 || t > n || n > MaxShares {
		return nil, fmt.Errorf("%w: n = %d, t = %d", ErrThresholdParams, n, t)
	}
	if secret.k.IsZero() {
		return nil, fmt.Errorf("%w: zero group secret", ErrSecretKey)
	}
	if rand == nil {
		return nil, fmt.Errorf("%w: nil rand", ErrThresholdParams)
	}
	coeffs := make([]fr.Element, t)
	coeffs[0] = secret.k
	var buf [64]byte
	for j := 1; j < t; j++ {
		for {
			if _, err := io.ReadFull(rand, buf[:]); err != nil {
				return nil, fmt.Errorf("seed: deal shares: reading coefficient %d: %w", j, err)
			}
			coeffs[j].SetBytes(buf[:])
			if j < t-1 || !coeffs[j].IsZero() {
				break
			}
		}
	}
	d := &Dealing{N: n, T: t, Shares: make([]Share, n)}
	for i := range d.Shares {
		x := fr.NewElement(uint64(i + 1))
		var y fr.Element
		for j := t - 1; j >= 0; j-- { // Horner
			y.Mul(&y, &x).Add(&y, &coeffs[j])
		}
		d.Shares[i] = Share{Index: uint32(i + 1), Key: SecretKey{k: y}}
	}
	d.Public.coeffs = make([]bls.G2Affine, t)
	for j := range coeffs {
		d.Public.coeffs[j].ScalarMultiplicationBase(coeffs[j].BigInt(new(big.Int)))
	}
	return d, nil
}

// PublicPolynomialFromBytes decodes a public polynomial from its compressed
// G2 coefficients, constant term first, each strictly decoded as a public
// key ([DecodePublicKey]). It is [ErrThresholdParams] for no coefficients.
func PublicPolynomialFromBytes(coeffs [][]byte) (PublicPolynomial, error) {
	if len(coeffs) == 0 {
		return PublicPolynomial{}, fmt.Errorf("%w: empty public polynomial", ErrThresholdParams)
	}
	p := PublicPolynomial{coeffs: make([]bls.G2Affine, len(coeffs))}
	for j, b := range coeffs {
		c, err := DecodePublicKey(b)
		if err != nil {
			return PublicPolynomial{}, fmt.Errorf("seed: public polynomial coefficient %d: %w", j, err)
		}
		p.coeffs[j] = c
	}
	return p, nil
}

// Threshold returns t, the number of coefficients (0 for the zero value).
func (p PublicPolynomial) Threshold() int { return len(p.coeffs) }

// Coefficients returns the compressed G2 coefficients, constant term first.
func (p PublicPolynomial) Coefficients() [][PublicKeySize]byte {
	out := make([][PublicKeySize]byte, len(p.coeffs))
	for j := range p.coeffs {
		out[j] = p.coeffs[j].Bytes()
	}
	return out
}

// GroupKey returns the group public key (the constant term), the threshold
// key [VerifySeed] checks recovered seeds against (§9.2). The zero value
// gives the encoding of infinity, which every verifier rejects.
func (p PublicPolynomial) GroupKey() [PublicKeySize]byte {
	if len(p.coeffs) == 0 {
		var inf bls.G2Affine
		return inf.Bytes()
	}
	return p.coeffs[0].Bytes()
}

// PublicShare returns the public share of index i, the polynomial evaluated
// at x = i in G2 (= share_i·g2), 96 compressed bytes. It is
// [ErrIndexOutOfRange] for index 0 and [ErrThresholdParams] for the zero
// value. Indices above n are not known to the polynomial and are not
// rejected here.
func (p PublicPolynomial) PublicShare(index uint32) ([PublicKeySize]byte, error) {
	if len(p.coeffs) == 0 {
		return [PublicKeySize]byte{}, fmt.Errorf("%w: empty public polynomial", ErrThresholdParams)
	}
	if index == 0 {
		return [PublicKeySize]byte{}, fmt.Errorf("%w: index 0", ErrIndexOutOfRange)
	}
	x := new(big.Int).SetUint64(uint64(index))
	var acc bls.G2Jac
	acc.FromAffine(&p.coeffs[len(p.coeffs)-1])
	for j := len(p.coeffs) - 2; j >= 0; j-- { // Horner
		acc.ScalarMultiplication(&acc, x)
		acc.AddMixed(&p.coeffs[j])
	}
	var out bls.G2Affine
	out.FromJacobian(&acc)
	return out.Bytes(), nil
}

// PublicShares returns the public shares of indices 1..n in index order:
// PublicShares(n)[i-1] is the public share of index i (§9.2, DECISIONS D31).
// It is [ErrThresholdParams] for n outside 1..[MaxShares].
func (p PublicPolynomial) PublicShares(n int) ([][PublicKeySize]byte, error) {
	if n < 1 || n > MaxShares {
		return nil, fmt.Errorf("%w: n = %d", ErrThresholdParams, n)
	}
	out := make([][PublicKeySize]byte, n)
	for i := range out {
		var err error
		if out[i], err = p.PublicShare(uint32(i + 1)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SignPartial signs the D12 seed message of round r under namespace ns with
// the share (DECISIONS D31): share.Key·H(m), exactly as [SignSeed] with the
// share's scalar. It is [ErrIndexOutOfRange] for index 0 and [ErrSecretKey]
// for a zero share scalar.
func SignPartial(share Share, ns []byte, r Round) (Partial, error) {
	if share.Index == 0 {
		return Partial{}, fmt.Errorf("%w: index 0", ErrIndexOutOfRange)
	}
	if share.Key.k.IsZero() {
		return Partial{}, fmt.Errorf("%w: zero share", ErrSecretKey)
	}
	s, err := SignSeed(share.Key, ns, r)
	if err != nil {
		return Partial{}, err
	}
	return Partial{Index: share.Index, Signature: s}, nil
}

// VerifyPartial checks a partial against the public share of its index:
// valid iff e(H(m), pubShare) = e(partial, g2) with m the D12 seed message
// of round r under ns (DECISIONS D31; the same check as [VerifySeed], which
// [NewVerifier] precomputes when one public share verifies many rounds). It
// returns nil, a public-key or signature decoding sentinel, or
// [ErrPartialInvalid] for a well-formed partial that does not verify. The
// index itself is not checked here: the caller picks pubShare by index.
func VerifyPartial(pubShare, ns []byte, r Round, p Partial) error {
	pk, err := DecodePublicKey(pubShare)
	if err != nil {
		return fmt.Errorf("seed: partial %d: public share: %w", p.Index, err)
	}
	if err := verifyMsg(&pk, SeedMessage(ns, r), p.Signature[:], SeedDST); err != nil {
		if errors.Is(err, ErrSeedSignatureInvalid) {
			return fmt.Errorf("%w: index %d, round %v", ErrPartialInvalid, p.Index, r)
		}
		return fmt.Errorf("seed: partial %d: %w", p.Index, err)
	}
	return nil
}

// RecoverVerified verifies partials and recovers the group seed signature
// (DECISIONS D31). pubShares[i-1] is the public share of index i, so
// n = len(pubShares). It checks, in this order: 1 ≤ t ≤ n
// ([ErrThresholdParams]); every partial's index in 1..n
// ([ErrIndexOutOfRange]) and no index twice ([ErrDuplicateIndex]); at least
// t partials ([ErrTooFewPartials]); then it verifies the first t partials in
// slice order against their public shares ([VerifyPartial]: a decoding
// sentinel or [ErrPartialInvalid]) and recovers from them. Partials beyond
// the first t are checked for index and duplicates but neither verified nor
// used. The result verifies under the group key with [VerifySeed].
func RecoverVerified(pubShares [][]byte, ns []byte, r Round, t int, partials []Partial) (Signature, error) {
	n := len(pubShares)
	if err := checkPartials(n, t, partials); err != nil {
		return Signature{}, err
	}
	for _, p := range partials[:t] {
		if err := VerifyPartial(pubShares[p.Index-1], ns, r, p); err != nil {
			return Signature{}, err
		}
	}
	return recoverFirst(t, partials)
}

// Recover recovers the group seed signature from partials that the caller
// has already verified (DECISIONS D31): σ = Σ λ_i·σ_i over the first t
// partials in slice order, with the Lagrange coefficients at 0
// λ_i = Π_{j≠i} x_j / (x_j − x_i) and x_i the partial's index. It applies
// the index and count checks of [RecoverVerified] against n, and the strict
// decoding of every used partial (the signature sentinels), but does not
// verify them: unverified partials can recover a wrong signature, which
// [VerifySeed] then rejects. A recovery that lands on infinity is
// [ErrPartialInvalid].
func Recover(n, t int, partials []Partial) (Signature, error) {
	if err := checkPartials(n, t, partials); err != nil {
		return Signature{}, err
	}
	return recoverFirst(t, partials)
}

// checkPartials checks the parameters, every index and the count.
func checkPartials(n, t int, partials []Partial) error {
	if n < 1 || t < 1 || t > n {
		return fmt.Errorf("%w: n = %d, t = %d", ErrThresholdParams, n, t)
	}
	seen := make(map[uint32]struct{}, len(partials))
	for k, p := range partials {
		if p.Index == 0 || uint64(p.Index) > uint64(n) {
			return fmt.Errorf("%w: partial %d has index %d, n = %d", ErrIndexOutOfRange, k, p.Index, n)
		}
		if _, dup := seen[p.Index]; dup {
			return fmt.Errorf("%w: index %d", ErrDuplicateIndex, p.Index)
		}
		seen[p.Index] = struct{}{}
	}
	if len(partials) < t {
		return fmt.Errorf("%w: %d of t = %d", ErrTooFewPartials, len(partials), t)
	}
	return nil
}

// recoverFirst interpolates the first t partials (checked by checkPartials)
// at 0 in G1.
func recoverFirst(t int, partials []Partial) (Signature, error) {
	used := partials[:t]
	xs := make([]fr.Element, t)
	for i, p := range used {
		xs[i].SetUint64(uint64(p.Index))
	}
	var sum bls.G1Jac // the point at infinity (1:1:0)
	sum.X.SetOne()
	sum.Y.SetOne()
	for i, p := range used {
		s, err := DecodeSignature(p.Signature[:])
		if err != nil {
			return Signature{}, fmt.Errorf("seed: partial %d: %w", p.Index, err)
		}
		lambda := lagrangeAtZero(xs, i)
		var term bls.G1Jac
		term.FromAffine(&s)
		term.ScalarMultiplication(&term, lambda.BigInt(new(big.Int)))
		sum.AddAssign(&term)
	}
	var out bls.G1Affine
	out.FromJacobian(&sum)
	if out.IsInfinity() {
		return Signature{}, fmt.Errorf("%w: the partials recover the point at infinity", ErrPartialInvalid)
	}
	return out.Bytes(), nil
}

// lagrangeAtZero returns λ_i = Π_{j≠i} x_j / (x_j − x_i) for distinct
// nonzero xs (checkPartials guarantees both), so no denominator is zero.
func lagrangeAtZero(xs []fr.Element, i int) fr.Element {
	var num, den fr.Element
	num.SetOne()
	den.SetOne()
	for j := range xs {
		if j == i {
			continue
		}
		var d fr.Element
		d.Sub(&xs[j], &xs[i])
		num.Mul(&num, &xs[j])
		den.Mul(&den, &d)
	}
	den.Inverse(&den)
	return *num.Mul(&num, &den)
}
