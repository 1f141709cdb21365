package cometbft

import (
	"context"
	"errors"
	"fmt"

	abci "github.com/cometbft/cometbft/abci/types"
	cmttypes "github.com/cometbft/cometbft/api/cometbft/types/v1"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/blocklayout"
	"github.com/cip11/cip11/seed"
)

// The threshold seed on CometBFT (D30–D31): each epoch's keys from the
// schedule, the partials validators sign in their vote extensions, and
// the beacon a proposer recovers from them.

// shareOf is this validator's share of epoch e (nil: not a member, or
// the devnet dealer has not handed it yet). A member's missing share is
// looked for again in the keys and the key file, with no lock held (the
// schedule publishes it once found).
func (a *App) shareOf(e *node.ScheduledEpoch) *seed.Share {
	if e.Share != nil || e.Index < 0 {
		return e.Share
	}
	return a.sched.LoadShare(e.Epoch)
}

// epochAt is the epoch active at height h (D30).
func (a *App) epochAt(h uint64) *node.ScheduledEpoch { return a.sched.Load().At(h) }

// epoch is the epoch numbered n (nil: none).
func (a *App) epoch(n uint64) *node.ScheduledEpoch { return a.sched.Load().Epoch(n) }

// schedule is the D30 height schedule of the committed epochs (SPEC-NOTES
// C4): their activations, known through the genesis schedule's
// known_through (every height, on a genesis without a height schedule,
// whose one epoch is active from height 1).
func (a *App) schedule() seed.HeightSchedule {
	s := seed.HeightSchedule{KnownThrough: ^uint64(0)}
	if gs := a.g.Schedule; gs.Height() {
		s.KnownThrough = uint64(gs.KnownThrough)
	}
	for _, e := range a.sched.Load().All() {
		s.Activations = append(s.Activations, e.Activation)
	}
	return s
}

// round is Round(E, h) with E the epoch active at h (D30).
func (a *App) round(h uint64) seed.Round { return seed.Round{Epoch: a.epochAt(h).Epoch, View: h} }

// seedOf is the Consensus.Seed of a proposal: a seed observed in a
// committed header (the validator's schedule keeps them, from the block
// log at start and at each commit, so a restarted proposer can still
// consume them, §9.2) or the one recovered from the last commit's vote
// extensions (the view is the height, so its epoch is the one active
// there, D30).
func (a *App) seedOf(r seed.Round) (seed.Signature, bool, error) {
	if r.View == 0 || r.Epoch != a.epochAt(r.View).Epoch {
		return seed.Signature{}, false, nil
	}
	if s, ok := a.sched.Seed(r.View); ok {
		return s, true, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if b := a.beacon; b != nil && b.view == r.View {
		return b.sig, true, nil
	}
	return seed.Signature{}, false, nil
}

// recoverBeacon recovers R_{h−1} from the verified partials of the last
// commit (D31). Extensions CometBFT did not verify (late precommits,
// cometbft#2361) are verified here; a bad one is skipped.
func (a *App) recoverBeacon(h uint64, votes []abci.ExtendedVoteInfo) (seed.Signature, error) {
	e := a.epochAt(h - 1)
	r := a.round(h - 1)
	if s, ok, _ := a.seedOf(r); ok {
		return s, nil
	}
	var ps []seed.Partial
	for _, vote := range votes {
		if vote.BlockIdFlag != cmttypes.BlockIDFlagCommit || len(ps) == e.T {
			continue
		}
		idx := a.indexOf(e, vote.Validator.Address)
		if idx == 0 || len(vote.VoteExtension) != seed.SignatureSize {
			continue
		}
		p := seed.Partial{Index: idx, Signature: seed.Signature(vote.VoteExtension)}
		a.mu.Lock()
		known := a.verified[partialKey{h - 1, idx, p.Signature}]
		a.mu.Unlock()
		if !known && e.Shares[idx-1].Verify(r, p.Signature[:]) != nil {
			a.log.Warn("a partial seed signature in the last commit does not verify; skipped", "height", h-1, "index", idx)
			continue
		}
		ps = append(ps, p)
	}
	sig, err := seed.Recover(len(e.Shares), e.T, ps)
	if err != nil {
		return seed.Signature{}, fmt.Errorf("recovering the seed of %v from %d partials: %w", r, len(ps), err)
	}
	a.mu.Lock()
	a.beacon = &recovered{view: h - 1, sig: sig}
	a.mu.Unlock()
	return sig, nil
}

// ExtendVote signs the seed message of Round(E, h) with the share of the
// epoch E active at h (D30–D31).
func (a *App) ExtendVote(_ context.Context, req *abci.ExtendVoteRequest) (*abci.ExtendVoteResponse, error) {
	h := uint64(req.Height)
	e := a.epochAt(h)
	sh := a.shareOf(e)
	if sh == nil {
		return nil, fmt.Errorf("cometbft: asked to extend a vote at %d, but this validator has no share of epoch %d (member: %v)", h, e.Epoch, e.Index >= 0)
	}
	ext, err := blocklayout.VoteExtension(*sh, a.g.Namespace, a.round(h))
	if err != nil {
		return nil, err
	}
	return &abci.ExtendVoteResponse{VoteExtension: a.byzExtension(h, ext)}, nil
}

// VerifyVoteExtension accepts exactly a partial of Round(E, h), E the epoch active at h, that
// verifies under the sender's public share.
func (a *App) VerifyVoteExtension(_ context.Context, req *abci.VerifyVoteExtensionRequest) (*abci.VerifyVoteExtensionResponse, error) {
	if err := a.VerifyExtension(uint64(req.Height), req.ValidatorAddress, req.VoteExtension); err != nil {
		reason := a.rej.extension(err)
		a.log.Warn("vote extension rejected", "height", req.Height, "validator", fmt.Sprintf("%X", req.ValidatorAddress), "reason", reason, "err", err)
		return &abci.VerifyVoteExtensionResponse{Status: abci.VERIFY_VOTE_EXTENSION_STATUS_REJECT}, nil
	}
	return &abci.VerifyVoteExtensionResponse{Status: abci.VERIFY_VOTE_EXTENSION_STATUS_ACCEPT}, nil
}

// ErrValidatorSet: CometBFT's validator set is not the CIP-11 genesis set
// (D29: static, equal power).
var ErrValidatorSet = errors.New("cometbft: validator set differs from the CIP-11 genesis")

// ErrExtension: a vote extension is not a verifying partial of the
// height's round from a member of the set (blocklayout.ErrExtension).
var ErrExtension = blocklayout.ErrExtension

// VerifyExtension is VerifyVoteExtension's check: blocklayout.CheckVoteExtension,
// then the signer's precomputed public share (the same check as
// blocklayout.VerifyVoteExtension, pinned by the cometbft_vote_extension vectors).
func (a *App) VerifyExtension(h uint64, addr, ext []byte) error {
	e := a.epochAt(h)
	p, err := blocklayout.CheckVoteExtension(len(e.Shares), a.indexOf(e, addr), ext)
	if err != nil {
		return err
	}
	idx := p.Index
	if err := e.Shares[idx-1].Verify(a.round(h), ext); err != nil {
		return fmt.Errorf("%w: %w", ErrExtension, err)
	}
	a.mu.Lock()
	a.verified[partialKey{h, idx, seed.Signature(ext)}] = true
	a.mu.Unlock()
	return nil
}
