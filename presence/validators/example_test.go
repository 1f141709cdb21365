package validators_test

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

func exampleValidator(i byte) *wire.ValidatorKey { return wire.NewValidatorKey([32]byte{i, 0x5a}) }

// exampleSnapshot builds a snapshot of validators lo..hi-1 in the §5.4
// canonical order (ascending peer_pubkey), as consensus delivers it.
func exampleSnapshot(epoch, activation uint64, lo, hi byte) *validators.Snapshot {
	var rs []validators.Record
	for i := lo; i < hi; i++ {
		pk, _ := validators.PeerKeyOf(exampleValidator(i).PubKey())
		rs = append(rs, validators.Record{PeerPubKey: pk})
	}
	slices.SortFunc(rs, func(a, b validators.Record) int { return a.PeerPubKey.Compare(b.PeerPubKey) })
	s, _ := validators.NewSnapshot(epoch, rs, activation)
	return s
}

func ExampleSnapshot_Sub() {
	p := cip11.DefaultParams()
	snap := exampleSnapshot(0, 0, 0, 6)
	runner, _ := wire.NewRunnerKey([32]byte{31: 1})
	sub, _ := snap.Sub(runner.PubKey(), p)
	fmt.Println("|V| =", snap.Len(), "k =", snap.K(p), "len(Sub) =", len(sub))
	for _, n := range []int{1, 2, 5, 9, 100} {
		fmt.Print(p.SubsetSize(n), " ")
	}
	fmt.Println()
	// Output:
	// |V| = 6 k = 4 len(Sub) = 4
	// 1 2 4 5 8
}

func ExampleNewSnapshot() {
	a, _ := validators.PeerKeyOf(exampleValidator(1).PubKey())
	b, _ := validators.PeerKeyOf(exampleValidator(2).PubKey())
	if a.Compare(b) > 0 {
		a, b = b, a
	}
	_, err := validators.NewSnapshot(0, []validators.Record{{PeerPubKey: a}, {PeerPubKey: b}}, 0)
	fmt.Println(err)
	_, err = validators.NewSnapshot(0, []validators.Record{{PeerPubKey: b}, {PeerPubKey: a}}, 0)
	fmt.Println(errors.Is(err, validators.ErrParticipantsNotCanonical)) // rejected, never re-sorted
	// Output:
	// <nil>
	// true
}

func ExampleEpochs_Admit() {
	p := cip11.DefaultParams() // OVERLAP_BLOCKS = 160
	e0 := exampleSnapshot(0, 0, 0, 4)
	e1 := exampleSnapshot(1, 1000, 2, 7)
	epochs, _ := validators.NewEpochs(e0, e1)
	runner, _ := wire.NewRunnerKey([32]byte{31: 1})
	sub, _ := e0.Sub(runner.PubKey(), p)
	for _, h := range []uint64{1159, 1160} {
		_, err := epochs.Admit(h, e0.Pair(), sub[0], runner.PubKey(), p)
		fmt.Println(h, err)
	}
	// Output:
	// 1159 <nil>
	// 1160 validators: offered epoch-E snapshot is past the OVERLAP_BLOCKS cutoff: epoch 0 ended at 1160, height 1160
}

func ExampleHistory_ParticipantsAt() {
	h, _ := validators.NewHistory(exampleSnapshot(0, 10, 0, 1), exampleSnapshot(1, 1000, 0, 5))
	for _, height := range []uint64{9, 10, 999, 1000} {
		n, err := h.ParticipantsAt(height)
		fmt.Println(height, n, err)
	}
	// Output:
	// 9 0 validators: no validator-set snapshot is active at this height: height 9, first activation 10
	// 10 1 <nil>
	// 999 1 <nil>
	// 1000 5 <nil>
}
