package blocklayout

import (
	"errors"
	"fmt"

	"github.com/cip11/cip11/seed"
)

// Vote extensions (D31, SPEC-NOTES C2): every validator's precommit for
// height h carries its partial seed signature of Round(E, h) (D30: E the
// threshold-key epoch active at h, view h), the 48-byte compressed G1 point share·H(m) with m the D12 seed
// message under the chain's namespace. The next proposer recovers R_h from
// any t of them (seed.Recover). The ABCI calls live in adapters/cometbft;
// the pure part is here so that the conformance vectors pin it.

// ErrExtension: a vote extension is not a verifying partial of the height's
// round from a member of the set. Every error of [CheckVoteExtension] and
// [VerifyVoteExtension] wraps it, together with the seed sentinel that
// says why: seed.ErrIndexOutOfRange (the signer is not in the set),
// seed.ErrSeedSignatureLength (not 48 bytes), a signature decoding sentinel
// or seed.ErrPartialInvalid (a well-formed point that does not verify).
var ErrExtension = errors.New("cometbft: invalid vote extension")

// ExtensionRound is the round the vote extension of height h signs when
// epoch is active at h: Round(epoch, h) (D30, D31).
func ExtensionRound(epoch, h uint64) seed.Round { return seed.Round{Epoch: epoch, View: h} }

// VoteExtension is the vote extension of round r = ExtensionRound(E, h):
// share's partial signature of r under namespace ns (seed.SignPartial).
func VoteExtension(share seed.Share, ns []byte, r seed.Round) ([]byte, error) {
	p, err := seed.SignPartial(share, ns, r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrExtension, err)
	}
	return p.Signature[:], nil
}

// CheckVoteExtension is the stateless part of the check, in order: the
// signer's 1-based index (its position in the validator set, 0 for an
// address outside it) is in 1..n, then the extension is exactly 48 bytes.
// It returns the extension as the signer's partial.
func CheckVoteExtension(n int, index uint32, ext []byte) (seed.Partial, error) {
	if index == 0 || uint64(index) > uint64(max(n, 0)) {
		return seed.Partial{}, fmt.Errorf("%w: %w: signer index %d of %d validators", ErrExtension, seed.ErrIndexOutOfRange, index, n)
	}
	s, err := seed.SignatureFromBytes(ext)
	if err != nil {
		return seed.Partial{}, fmt.Errorf("%w: %w", ErrExtension, err)
	}
	return seed.Partial{Index: index, Signature: s}, nil
}

// VerifyVoteExtension accepts exactly a partial of Round(0, h) by the
// signer of index (1-based) that verifies under its public share,
// pubShares[index-1] (96-byte compressed G2; n = len(pubShares)):
// [CheckVoteExtension], then seed.VerifyPartial.
func VerifyVoteExtension(pubShares [][]byte, ns []byte, r seed.Round, index uint32, ext []byte) error {
	p, err := CheckVoteExtension(len(pubShares), index, ext)
	if err != nil {
		return err
	}
	if err := seed.VerifyPartial(pubShares[index-1], ns, r, p); err != nil {
		return fmt.Errorf("%w: round %v: %w", ErrExtension, r, err)
	}
	return nil
}
