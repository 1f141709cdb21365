package chainlog_test

import (
	"bytes"
	"fmt"
	"io"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
)

// Example writes a one-block log and reads it back.
func Example() {
	var buf bytes.Buffer
	h := chainlog.Header{
		ChainID:    "example",
		Params:     cip11.DefaultParams(),
		Namespace:  chainlog.Bytes("ns"),
		Schedule:   chainlog.Schedule{ViewsPerEpoch: 100, FirstView: 1, LastKnownEpoch: 3},
		Validators: []chainlog.ValidatorSet{{ActivationHeight: 0, Participants: 1}, {ActivationHeight: 500, Participants: 4}},
		Reputation: chainlog.ReputationConfig{Normalizer: 1_000_000_000, WMinFloorX1e6: 100_000},
	}
	w, err := chainlog.NewWriter(&buf, h)
	if err != nil {
		panic(err)
	}
	stake, rep := cip11.U128From64(5_000), chainlog.U64(1_000_000_000)
	b := chainlog.Block{
		Height: 1, Round: chainlog.Round{Epoch: 0, View: 1},
		ConsumedSeeds: chainlog.Bytes{0x80},
		Registry:      []chainlog.RegistryOp{{Op: chainlog.OpRegister, Address: cip11.Address{0xaa}, Stake: &stake, ReputationX1e9: &rep}},
		Txs: []chainlog.Tx{
			{Submit: &chainlog.Submit{JobID: cip11.Hash{1}, Submitter: cip11.Address{0xbb}, JobKind: 0, CommitteeSize: 3, TimeoutBlocks: 40}},
			{ResultSubmit: &chainlog.ResultSubmit{JobID: cip11.Hash{2}, Runner: cip11.Address{0xaa}}},
		},
	}
	if err := w.WriteBlock(&b); err != nil {
		panic(err)
	}
	if err := w.Flush(); err != nil {
		panic(err)
	}

	r, err := chainlog.NewReader(&buf)
	if err != nil {
		panic(err)
	}
	hdr := r.Header()
	n0, _ := hdr.ParticipantsAt(0)
	n500, _ := hdr.ParticipantsAt(500)
	fmt.Println(hdr.ChainID, hdr.Version, n0, n500)
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(b.Height, b.Registry[0].Op, *b.Registry[0].Stake, b.Presence == nil)
		for _, tx := range b.Txs {
			switch {
			case tx.Submit != nil:
				fmt.Println("submit", tx.Submit.CommitteeSize, tx.Submit.TimeoutBlocks)
			case tx.ResultSubmit != nil:
				fmt.Println("result_submit", tx.ResultSubmit.Runner)
			}
		}
	}
	// Output:
	// example 2 1 4
	// 1 register 5000 true
	// submit 3 40
	// result_submit aa00000000000000000000000000000000000000
}
