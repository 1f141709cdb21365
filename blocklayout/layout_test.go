package blocklayout

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/nodetx"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/wire"
)

// sampleProposal is a block at height 5 with a parent beacon, a presence
// field, one consumed seed, a registration, a heartbeat, a submit (its spec
// carried) and a node transaction, laid out for CometBFT.
func sampleProposal(t testing.TB) (*chainlog.Block, [][]byte) {
	t.Helper()
	spec := &nodetx.JobSpec{Submitter: cip11.Address{0xaa}, Kind: 1, Runners: 2, TimeoutBlocks: 12, Nonce: 7}
	stake, rep := cip11.U128From64(1000), chainlog.U64(1_000_000_000)
	cs, err := seed.ConsumedSeedsV1{{Round: seed.Round{Epoch: 0, View: 3}, Signature: seed.Signature{0x80}}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f := chainlog.U64(4)
	pres := chainlog.Bytes{1, 0, 0x05}
	b := &chainlog.Block{Height: 5, Round: chainlog.Round{Epoch: 0, View: 5}, Finalized: &f, Presence: &pres, ConsumedSeeds: cs,
		ParentBeacon: &chainlog.Beacon{Epoch: 0, View: 4, Signature: chainlog.Signature{0xa0, 1}},
		Registry:     []chainlog.RegistryOp{{Op: chainlog.OpRegister, Address: cip11.Address{9}, Stake: &stake, ReputationX1e9: &rep}},
		Heartbeats:   []uint32{2},
		Txs: []chainlog.Tx{{Submit: &chainlog.Submit{JobID: spec.ID(), Submitter: spec.Submitter, JobKind: spec.Kind, CommitteeSize: 2,
			TimeoutBlocks: 12}}}}
	k, err := wire.NewRunnerKey([32]byte{7})
	if err != nil {
		t.Fatal(err)
	}
	hb, err := nodetx.SignTx(k, 7011, nodetx.TxHeartbeat, 4, cip11.Hash{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	txs, err := EncodeProposal(b, [][]byte{spec.Encode()}, [][]byte{hb.Bytes(), spec.Encode()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b, txs
}

// TestProposalRoundTrip: the layout of SPEC-NOTES C1 decodes to the block
// it was made from (every field but the outputs), and the spec is carried
// once.
func TestProposalRoundTrip(t *testing.T) {
	b, txs := sampleProposal(t)
	if len(txs) != 4 || !blockheader.IsHeader(txs[0]) || !bytes.HasPrefix(txs[1], []byte(BodyMagic)) {
		t.Fatalf("layout: %d transactions", len(txs))
	}
	p, err := DecodeProposal(txs, 5, 7011)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := chainlog.EncodeBlock(b)
	got, _ := chainlog.EncodeBlock(p.Block)
	if !bytes.Equal(want, got) {
		t.Fatalf("decoded block differs:\n got %s\nwant %s", got, want)
	}
	again, err := EncodeProposal(p.Block, [][]byte{txs[2]}, p.Raw, 0)
	if err != nil || len(again) != len(txs) {
		t.Fatalf("re-encode: %v, %d transactions", err, len(again))
	}
	for i := range txs {
		if !bytes.Equal(again[i], txs[i]) {
			t.Fatalf("transaction %d re-encodes differently", i)
		}
	}
}

// TestProposalLayoutErrors: each layout rule has its sentinel.
func TestProposalLayoutErrors(t *testing.T) {
	_, txs := sampleProposal(t)
	cases := []struct {
		name string
		txs  [][]byte
		h    uint64
		want error
	}{
		{"empty block", nil, 5, ErrHeaderMissing},
		{"body first", [][]byte{txs[1], txs[0], txs[2]}, 5, ErrHeaderMissing},
		{"header twice", [][]byte{txs[0], txs[0], txs[1]}, 5, ErrHeaderMisplaced},
		{"header among submissions", append(append([][]byte{}, txs...), txs[0]), 5, ErrHeaderMisplaced},
		{"no body", [][]byte{txs[0], txs[2]}, 5, ErrBodyMissing},
		{"body not canonical", [][]byte{txs[0], append(append([]byte{}, txs[1]...), ' '), txs[2]}, 5, ErrBodyMalformed},
		{"spec missing", [][]byte{txs[0], txs[1], txs[3]}, 5, ErrSpecMissing},
		{"garbage transaction", [][]byte{txs[0], txs[1], txs[2], []byte("C11Tgarbage")}, 5, ErrBadTx},
		{"wrong height", txs, 6, blockheader.ErrRoundView},
	}
	for _, c := range cases {
		if _, err := DecodeProposal(c.txs, c.h, 7011); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := DecodeProposal(txs, 5, 7012); !errors.Is(err, ErrBadTx) || !errors.Is(err, nodetx.ErrWrongChain) {
		t.Errorf("another chain's transaction: %v", err)
	}
}

// joinTxs and splitTxs frame a transaction list as one fuzz input.
func joinTxs(txs [][]byte) []byte {
	var out []byte
	for _, x := range txs {
		out = binary.BigEndian.AppendUint32(out, uint32(len(x)))
		out = append(out, x...)
	}
	return out
}

func splitTxs(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 4 {
		n := int(binary.BigEndian.Uint32(b))
		b = b[4:]
		if n > len(b) {
			n = len(b)
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// FuzzDecodeProposal: no input panics the decoder, and a proposal that
// decodes re-encodes to the same transactions.
func FuzzDecodeProposal(f *testing.F) {
	_, txs := sampleProposal(f)
	f.Add(joinTxs(txs))
	f.Add(joinTxs(txs[:2]))
	f.Fuzz(func(t *testing.T, in []byte) {
		txs := splitTxs(in)
		p, err := DecodeProposal(txs, 5, 7011)
		if err != nil {
			return
		}
		again, err := EncodeProposal(p.Block, nil, p.Raw, 0)
		if err != nil {
			t.Fatalf("a decoded proposal does not re-encode: %v", err)
		}
		if !bytes.Equal(again[0], txs[0]) || !bytes.Equal(again[1], txs[1]) {
			t.Fatal("header or body re-encodes differently")
		}
	})
}
