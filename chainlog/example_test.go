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
		Reputation: chainlog.ReputationConfig{Normalizer: 1_000_000_000, WMinFloorX1e6: 100_000},
	}
	w, err := chainlog.NewWriter(&buf, h)
	if err != nil {
		panic(err)
	}
	stake, rep := chainlog.U128(cip11.U128From64(5_000)), chainlog.U64(1_000_000_000)
	b := chainlog.Block{
		Height: 1, Round: chainlog.Round{Epoch: 0, View: 1},
		ConsumedSeeds: chainlog.Bytes{0x80},
		Registry:      []chainlog.RegistryOp{{Op: chainlog.OpRegister, Address: chainlog.Address{0xaa}, Stake: &stake, ReputationX1e9: &rep}},
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
	fmt.Println(r.Header().ChainID)
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(b.Height, b.Registry[0].Op, *b.Registry[0].Stake, b.Presence == nil)
	}
	// Output:
	// example
	// 1 register 5000 true
}
