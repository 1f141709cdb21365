package blockheader_test

import (
	"fmt"

	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/seed"
)

// A proposer builds block 2's header as the block's first transaction; a
// verifier decodes it and checks its placement (DECISIONS D32).
func Example() {
	h := &blockheader.Header{
		Version:       blockheader.Version,
		Round:         seed.Round{Epoch: 0, View: 2},
		ParentBeacon:  &seed.Beacon{Round: seed.Round{Epoch: 0, View: 1}}, // the recovered seed of (0, 1)
		Finalized:     1,
		Presence:      []byte{0x01, 0x00}, // PresenceInputV1: empty bitmap over an empty registry
		ConsumedSeeds: seed.ConsumedSeedsV1{},
	}
	tx, err := blockheader.Encode(h)
	if err != nil {
		fmt.Println(err)
		return
	}
	got, err := blockheader.Decode(tx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q… %d bytes, finalized %d\n", tx[:4], len(tx), *got.FinalizedHeight())
	fmt.Println("at height 2:", blockheader.Check(got, 2))
	fmt.Println("at height 3:", blockheader.Check(got, 3))
	_, err = blockheader.Decode([]byte("C11T\x02…"))
	fmt.Println(err)
	// Output:
	// "C11H"… 78 bytes, finalized 1
	// at height 2: <nil>
	// at height 3: blockheader: proposal round view is not the block height: round (0, 2) at height 3
	// blockheader: not a CIP-11 block header (magic)
}
