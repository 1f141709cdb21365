package cometbft

import (
	"errors"
	"sync/atomic"

	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/blocklayout"
	"github.com/cip11/cip11/seed"
)

// Reasons a validator refuses another's proposal (ProcessProposal) or vote
// extension (VerifyVoteExtension), as [App.Rejections] counts them and the
// rejection logs name them (issue 27 §4: what a Byzantine validator's
// misbehaviour costs is visible per reason). A reason is the first of the
// list below whose sentinel the error wraps.
const (
	// Proposals.
	RejectBeacon      = "beacon"      // blocklayout.ErrBeaconInvalid; blockheader's parent-beacon placement (ErrBeaconMissing, ErrBeaconUnexpected, ErrBeaconRound, ErrBeaconEpoch)
	RejectUnsigned    = "unsigned"    // chain.ErrUnsigned: content without its signed transaction (SPEC-NOTES C7)
	RejectCertificate = "certificate" // blocklayout.ErrCertificateUnsigned (§8.3 runner_signed)
	RejectSpec        = "spec"        // blocklayout.ErrSpecMissing
	RejectTx          = "tx"          // blocklayout.ErrBadTx
	RejectHeader      = "header"      // another blockheader sentinel (decoding, placement)
	RejectLayout      = "layout"      // blocklayout's header/body placement and body encoding
	RejectExecution   = "execution"   // chain.ErrInvalidBlock: the core's execution refuses the block
	// Vote extensions (D31).
	RejectSigner    = "signer"    // seed.ErrIndexOutOfRange: the sender is not in the epoch's set
	RejectLength    = "length"    // seed.ErrSeedSignatureLength: not 48 bytes
	RejectSignature = "signature" // seed.ErrSeedSignatureInvalid / ErrPartialInvalid: a point that does not verify (another round, another share)
	RejectEncoding  = "encoding"  // any other ErrExtension: not a G1 point
	// Either.
	RejectOther = "other"
)

// proposalReasons and extensionReasons map sentinels to reasons, in order.
var proposalReasons = []struct {
	reason string
	errs   []error
}{
	{RejectBeacon, []error{blocklayout.ErrBeaconInvalid, blockheader.ErrBeaconMissing, blockheader.ErrBeaconUnexpected, blockheader.ErrBeaconRound, blockheader.ErrBeaconEpoch}},
	{RejectUnsigned, []error{chain.ErrUnsigned}},
	{RejectCertificate, []error{blocklayout.ErrCertificateUnsigned}},
	{RejectSpec, []error{blocklayout.ErrSpecMissing}},
	{RejectTx, []error{blocklayout.ErrBadTx}},
	{RejectHeader, []error{blockheader.ErrNotHeader, blockheader.ErrHeaderTooLarge, blockheader.ErrHeaderVersion, blockheader.ErrPresenceTooLong,
		blockheader.ErrZeroHeight, blockheader.ErrRoundView, blockheader.ErrFinalized, blockheader.ErrSeedRound,
		blockheader.ErrRoundEpoch, blockheader.ErrHeightUnscheduled}},
	{RejectLayout, []error{blocklayout.ErrHeaderMissing, blocklayout.ErrHeaderMisplaced, blocklayout.ErrBodyMissing, blocklayout.ErrBodyMalformed}},
	{RejectExecution, []error{chain.ErrInvalidBlock}},
}

var extensionReasons = []struct {
	reason string
	errs   []error
}{
	{RejectSigner, []error{seed.ErrIndexOutOfRange}},
	{RejectLength, []error{seed.ErrSeedSignatureLength}},
	{RejectSignature, []error{seed.ErrSeedSignatureInvalid, seed.ErrPartialInvalid}},
	{RejectEncoding, []error{blocklayout.ErrExtension}},
}

// ProposalReasons and ExtensionReasons list every reason of each kind.
var (
	ProposalReasons  = []string{RejectBeacon, RejectUnsigned, RejectCertificate, RejectSpec, RejectTx, RejectHeader, RejectLayout, RejectExecution, RejectOther}
	ExtensionReasons = []string{RejectSigner, RejectLength, RejectSignature, RejectEncoding, RejectOther}
)

// ProposalRejectReason is the reason of a ProcessProposal error (App.Verify's).
func ProposalRejectReason(err error) string { return reasonOf(err, proposalReasons) }

// ExtensionRejectReason is the reason of a VerifyExtension error.
func ExtensionRejectReason(err error) string { return reasonOf(err, extensionReasons) }

func reasonOf(err error, table []struct {
	reason string
	errs   []error
}) string {
	for _, r := range table {
		for _, s := range r.errs {
			if errors.Is(err, s) {
				return r.reason
			}
		}
	}
	return RejectOther
}

// Rejections is what a validator refused since it started, by reason:
// proposals (ProcessProposal) and vote extensions (VerifyVoteExtension).
// Every reason of ProposalReasons and ExtensionReasons is a key.
type Rejections struct {
	Proposals  map[string]uint64
	Extensions map[string]uint64
	// SnapshotChunks and Snapshots: state sync refused that many chunks
	// (they did not hash to their snapshot's metadata) and installed
	// snapshots (they did not restore to the trusted AppHash).
	SnapshotChunks, Snapshots uint64
}

// rejectCounters are the App's counters behind [App.Rejections].
type rejectCounters struct {
	proposals  [9]atomic.Uint64 // by ProposalReasons index
	extensions [5]atomic.Uint64 // by ExtensionReasons index
	chunks     atomic.Uint64    // state-sync chunks refused
	snapshots  atomic.Uint64    // state-sync snapshots refused after install
}

func (c *rejectCounters) proposal(err error) string {
	r := ProposalRejectReason(err)
	c.proposals[indexOf(ProposalReasons, r)].Add(1)
	return r
}

func (c *rejectCounters) extension(err error) string {
	r := ExtensionRejectReason(err)
	c.extensions[indexOf(ExtensionReasons, r)].Add(1)
	return r
}

func indexOf(list []string, r string) int {
	for i, x := range list {
		if x == r {
			return i
		}
	}
	return len(list) - 1 // RejectOther, last
}

// Rejections is a snapshot of what this validator refused, by reason.
func (a *App) Rejections() Rejections {
	out := Rejections{Proposals: map[string]uint64{}, Extensions: map[string]uint64{},
		SnapshotChunks: a.rej.chunks.Load(), Snapshots: a.rej.snapshots.Load()}
	for i, r := range ProposalReasons {
		out.Proposals[r] = a.rej.proposals[i].Load()
	}
	for i, r := range ExtensionReasons {
		out.Extensions[r] = a.rej.extensions[i].Load()
	}
	return out
}
