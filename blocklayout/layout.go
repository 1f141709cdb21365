package blocklayout

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/nodetx"
	"github.com/cip11/cip11/seed"
)

// A CIP-11 block on CometBFT is a list of transactions (D32, SPEC-NOTES
// N14):
//
//	[0]  the header: magic "C11H", the §12.6 CBOR map (blockheader);
//	[1]  the body: magic "C11B" ‖ the chainlog JSON of the block's
//	     registry operations, heartbeats and transactions (docs/chainlog.md),
//	     every other field absent;
//	[2…] the raw submissions the block carries: encoded job specs ("C11J")
//	     and node transactions ("C11T"), the spec of every job the body
//	     submits among them, in the body's order first.
//
// The block hash covers all of them (§17). Every validator rebuilds the
// same chainlog.Block from the header and the body; the raw submissions
// make the block self-contained (a validator that missed a job's gossip
// learns its spec from the block) and drain CometBFT's mempools.

// BodyMagic opens the body transaction.
const BodyMagic = "C11B"

// Sentinels of the block layout; ProcessProposal rejects with them.
var (
	// ErrHeaderMissing: the block has no transaction, or its first is not
	// a header (magic).
	ErrHeaderMissing = errors.New("cometbft layout: block header missing (D32: the first transaction)")
	// ErrHeaderMisplaced: a header appears after the first transaction.
	ErrHeaderMisplaced = errors.New("cometbft layout: block header not first")
	// ErrBodyMissing: the second transaction is not the body.
	ErrBodyMissing = errors.New("cometbft layout: block body missing (the second transaction)")
	// ErrBodyMalformed: the body does not decode, or carries fields that
	// belong to the header or to execution.
	ErrBodyMalformed = errors.New("cometbft layout: malformed block body")
	// ErrBadTx: a raw transaction is neither a well-formed job spec nor a
	// well-formed node transaction of this chain.
	ErrBadTx = errors.New("cometbft layout: malformed transaction in block")
	// ErrSpecMissing: the body submits a job whose spec the block does not
	// carry, or carries with different fields.
	ErrSpecMissing = errors.New("cometbft layout: job submit without its spec")
	// ErrBeaconInvalid: the parent beacon does not verify under the group
	// key (D31).
	ErrBeaconInvalid = errors.New("cometbft layout: parent beacon does not verify")
	// ErrCertificateUnsigned: a body certificate (SubmitPresenceCertificate,
	// §8.3) without the runner-signed transaction that carries exactly it
	// among the block's submissions (runner_signed MUST recover runner).
	ErrCertificateUnsigned = errors.New("cometbft layout: presence certificate without its runner-signed transaction")
)

// Proposal is a decoded CometBFT block: its header, the chainlog block
// rebuilt from header and body (Out unset), and the raw submissions.
type Proposal struct {
	Header *blockheader.Header
	Block  *chainlog.Block
	Raw    [][]byte
	// Txs are the node transactions among Raw, decoded and verified
	// (chain id, signature), in block order.
	Txs []*nodetx.Tx
}

// EncodeProposal lays block b out as CometBFT transactions: header, body,
// then specs (the body's, in order) and the other raw submissions, as many
// as fit maxBytes in total (0: no bound). It returns the transactions.
func EncodeProposal(b *chainlog.Block, specs [][]byte, extra [][]byte, maxBytes int64) ([][]byte, error) {
	h := &blockheader.Header{Version: blockheader.Version, Round: seed.Round{Epoch: uint64(b.Round.Epoch), View: uint64(b.Round.View)}}
	if pb := b.ParentBeacon; pb != nil {
		h.ParentBeacon = &seed.Beacon{Round: seed.Round{Epoch: uint64(pb.Epoch), View: uint64(pb.View)}, Signature: seed.Signature(pb.Signature)}
	}
	if b.Finalized != nil {
		h.Finalized = uint64(*b.Finalized)
	}
	if b.Presence != nil {
		h.Presence = slices.Clone([]byte(*b.Presence))
	}
	if len(b.ConsumedSeeds) > 0 {
		cs, err := seed.DecodeConsumedSeedsV1(b.ConsumedSeeds)
		if err != nil {
			return nil, fmt.Errorf("cometbft layout: consumed seeds: %w", err)
		}
		h.ConsumedSeeds = cs
	}
	hb, err := blockheader.Encode(h)
	if err != nil {
		return nil, err
	}
	body, err := encodeBody(b)
	if err != nil {
		return nil, err
	}
	txs := [][]byte{hb, body}
	size := int64(len(hb) + len(body))
	seen := map[string]bool{}
	for _, s := range specs {
		if s == nil || seen[string(s)] {
			continue
		}
		seen[string(s)] = true
		txs = append(txs, s)
		size += int64(len(s))
	}
	for _, x := range extra {
		if seen[string(x)] || blockheader.IsHeader(x) || bytes.HasPrefix(x, []byte(BodyMagic)) {
			continue
		}
		if maxBytes > 0 && size+int64(len(x))+64 > maxBytes {
			continue
		}
		seen[string(x)] = true
		txs = append(txs, x)
		size += int64(len(x))
	}
	return txs, nil
}

func encodeBody(b *chainlog.Block) ([]byte, error) {
	body := chainlog.Block{Registry: b.Registry, Heartbeats: b.Heartbeats, Txs: b.Txs}
	j, err := chainlog.EncodeBlock(&body)
	if err != nil {
		return nil, err
	}
	return append([]byte(BodyMagic), j...), nil
}

// DecodeProposal decodes the transactions of the CometBFT block at height
// into a Proposal: the layout rules above, the header's placement rules
// (blockheader.Check), every raw submission well formed for chainID, the
// spec of every submitted job present, then every body certificate's
// runner-signed transaction present, in the order docs/vectors.md
// (cometbft_layout) lists: the first failure is the error. It does not
// verify seeds or execute: that is the application's and the core's.
func DecodeProposal(txs [][]byte, height uint64, chainID uint64) (*Proposal, error) {
	if len(txs) == 0 || !blockheader.IsHeader(txs[0]) {
		return nil, ErrHeaderMissing
	}
	h, err := blockheader.Decode(txs[0])
	if err != nil {
		return nil, err
	}
	if err := blockheader.Check(h, height); err != nil {
		return nil, err
	}
	if len(txs) < 2 || !bytes.HasPrefix(txs[1], []byte(BodyMagic)) {
		if len(txs) >= 2 && blockheader.IsHeader(txs[1]) {
			return nil, fmt.Errorf("%w: transaction 1", ErrHeaderMisplaced)
		}
		return nil, ErrBodyMissing
	}
	body, err := chainlog.DecodeBlock(txs[1][len(BodyMagic):])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBodyMalformed, err)
	}
	if body.Height != 0 || body.Round != (chainlog.Round{}) || body.ParentBeacon != nil || body.Finalized != nil ||
		body.Presence != nil || len(body.ConsumedSeeds) > 0 || hasOut(&body.Out) {
		return nil, fmt.Errorf("%w: header or output fields in the body", ErrBodyMalformed)
	}
	if canon, err := encodeBody(&body); err != nil || !bytes.Equal(canon, txs[1]) {
		return nil, fmt.Errorf("%w: not in the canonical chainlog encoding", ErrBodyMalformed)
	}
	b := &chainlog.Block{Height: chainlog.U64(height), Round: chainlog.Round{Epoch: chainlog.U64(h.Round.Epoch), View: chainlog.U64(h.Round.View)},
		Registry: body.Registry, Heartbeats: body.Heartbeats, Txs: body.Txs}
	if pb := h.ParentBeacon; pb != nil {
		b.ParentBeacon = &chainlog.Beacon{Epoch: chainlog.U64(pb.Round.Epoch), View: chainlog.U64(pb.Round.View), Signature: chainlog.Signature(pb.Signature)}
	}
	if f := h.FinalizedHeight(); f != nil {
		fv := chainlog.U64(*f)
		b.Finalized = &fv
	}
	if h.Presence != nil {
		p := chainlog.Bytes(slices.Clone(h.Presence))
		b.Presence = &p
	}
	if b.ConsumedSeeds, err = h.ConsumedSeeds.Encode(); err != nil {
		return nil, fmt.Errorf("%w: consumed seeds: %w", ErrBodyMalformed, err)
	}
	specs := map[cip11.Hash]*nodetx.JobSpec{}
	certs := map[cip11.Address][]*chainlog.Certificate{}
	var nodeTxs []*nodetx.Tx
	raw := txs[2:]
	for i, x := range raw {
		switch {
		case blockheader.IsHeader(x):
			return nil, fmt.Errorf("%w: transaction %d", ErrHeaderMisplaced, i+2)
		case bytes.HasPrefix(x, []byte("C11J")):
			s, err := nodetx.DecodeJobSpec(x)
			if err != nil {
				return nil, fmt.Errorf("%w: transaction %d: %w", ErrBadTx, i+2, err)
			}
			specs[s.ID()] = s
		default:
			tx, err := nodetx.DecodeTx(x)
			if err != nil {
				return nil, fmt.Errorf("%w: transaction %d: %w", ErrBadTx, i+2, err)
			}
			if tx.ChainID != chainID {
				return nil, fmt.Errorf("%w: transaction %d: %w", ErrBadTx, i+2, nodetx.ErrWrongChain)
			}
			nodeTxs = append(nodeTxs, tx)
			if tx.Kind == nodetx.TxCertificate {
				c, err := tx.Certificate()
				if err != nil {
					return nil, fmt.Errorf("%w: transaction %d: %w", ErrBadTx, i+2, err)
				}
				certs[tx.From] = append(certs[tx.From], c)
			}
		}
	}
	// docs/vectors.md cometbft_layout, decoding steps 6 then 7: every
	// submit's spec, then every certificate's signed transaction.
	for _, tx := range b.Txs {
		s := tx.Submit
		if s == nil {
			continue
		}
		sp := specs[s.JobID]
		if sp == nil {
			return nil, fmt.Errorf("%w: job %s", ErrSpecMissing, s.JobID)
		}
		if sp.Submitter != s.Submitter || sp.Kind != s.JobKind || sp.Runners != s.CommitteeSize || sp.TimeoutBlocks != uint64(s.TimeoutBlocks) {
			return nil, fmt.Errorf("%w: job %s: the submit's fields differ from its spec", ErrSpecMissing, s.JobID)
		}
	}
	for i, tx := range b.Txs {
		c := tx.Certificate
		if c == nil {
			continue
		}
		if !slices.ContainsFunc(certs[c.Runner], func(s *chainlog.Certificate) bool { return sameCertificate(s, c) }) {
			return nil, fmt.Errorf("%w: body transaction %d, runner %s", ErrCertificateUnsigned, i, c.Runner)
		}
	}
	return &Proposal{Header: h, Block: b, Raw: raw, Txs: nodeTxs}, nil
}

func hasOut(o *chainlog.Output) bool {
	return len(o.Assignments) > 0 || len(o.Expired) > 0 || o.StateDigest != (cip11.Hash{})
}

// sameCertificate compares two certificates field by field.
func sameCertificate(a, b *chainlog.Certificate) bool {
	return a.Runner == b.Runner && a.Height == b.Height && slices.EqualFunc(a.Receipts, b.Receipts, func(x, y chainlog.Receipt) bool {
		return bytes.Equal(x.ValidatorPubKey, y.ValidatorPubKey) && bytes.Equal(x.RunnerPubKey, y.RunnerPubKey) &&
			x.SubsetEpoch == y.SubsetEpoch && x.ValidatorSetHash == y.ValidatorSetHash && x.BlockHeight == y.BlockHeight &&
			x.NonceEcho == y.NonceEcho && x.AcceptingNew == y.AcceptingNew && bytes.Equal(x.ValidatorSigned, y.ValidatorSigned)
	})
}
