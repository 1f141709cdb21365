package conformance

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/merkle"
)

// merkleFunctions lists the vector functions owned by package merkle.
func merkleFunctions() []Function {
	return []Function{{
		Name: "candidates_root", Spec: "§9.2",
		Description: "candidates_snapshot_root over the ordered block-T snapshot. leaf_i = keccak256(\"cowboy-candidates-leaf-v1\" ‖ i_be4 ‖ runner_address_20 ‖ effective_stake_be16 ‖ selection_reputation_x1e9_be8 ‖ base_weight_be16); inner = keccak256(\"cowboy-candidates-inner-v1\" ‖ left ‖ right); empty root = keccak256(\"cowboy-candidates-empty-v1\"); one leaf is the root; an odd level duplicates its final node. leaves are in snapshot order (the index is the position); u64/u128 are decimal strings.",
		Generate:    merkleGenRoot, Eval: merkleEvalRoot,
	}}
}

// merkleSentinels lists package merkle's exported sentinels for negative vectors.
func merkleSentinels() []Sentinel { return nil }

type merkleLeafJSON struct {
	RunnerAddress           cip11.Address `json:"runner_address"`
	EffectiveStake          cip11.U128    `json:"effective_stake"`
	SelectionReputationX1e9 decimalU64    `json:"selection_reputation_x1e9"`
	BaseWeight              cip11.U128    `json:"base_weight"`
}

type merkleRootVector struct {
	Name   string           `json:"name"`
	Leaves []merkleLeafJSON `json:"leaves"`
	Root   cip11.Hash       `json:"root"`
}

// wei is 10^18 · n as a U128.
func merkleWei(n uint64) cip11.U128 {
	return cip11.U128From64(n).MulSat64(1_000_000_000).MulSat64(1_000_000_000)
}

// merkleFixtureLeaf is candidate i of a realistic snapshot: ascending
// addresses (D14), stakes in wei, distinct reputations and weights.
func merkleFixtureLeaf(i int) merkleLeafJSON {
	var a cip11.Address
	a[0], a[19] = byte(0x10+i), byte(i)
	rep := uint64(1_000_000_000 - 97_000_000*i)
	return merkleLeafJSON{
		RunnerAddress:           a,
		EffectiveStake:          merkleWei(uint64(1_000 + 250*i)),
		SelectionReputationX1e9: decimalU64(rep),
		BaseWeight:              merkleWei(uint64(900 - 40*i)),
	}
}

func merkleGenRoot() ([]any, error) {
	var a0, aMax cip11.Address
	for i := range aMax {
		aMax[i] = 0xff
	}
	max64 := decimalU64(math.MaxUint64)
	vectors := []merkleRootVector{}
	for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9} {
		v := merkleRootVector{Name: "snapshot_" + strconv.Itoa(n) + "_leaves", Leaves: []merkleLeafJSON{}}
		for i := 0; i < n; i++ {
			v.Leaves = append(v.Leaves, merkleFixtureLeaf(i))
		}
		vectors = append(vectors, v)
	}
	maxLeaf := merkleLeafJSON{aMax, cip11.MaxU128(), max64, cip11.MaxU128()}
	zeroLeaf := merkleLeafJSON{a0, cip11.U128{}, 0, cip11.U128{}}
	vectors = append(vectors,
		merkleRootVector{Name: "one_leaf_all_maxima", Leaves: []merkleLeafJSON{maxLeaf}},
		merkleRootVector{Name: "one_leaf_all_zero", Leaves: []merkleLeafJSON{zeroLeaf}},
		merkleRootVector{Name: "three_leaves_maxima_around_fixture", Leaves: []merkleLeafJSON{zeroLeaf, merkleFixtureLeaf(1), maxLeaf}},
		merkleRootVector{Name: "two_identical_leaves_differ_by_index", Leaves: []merkleLeafJSON{merkleFixtureLeaf(2), merkleFixtureLeaf(2)}},
		merkleRootVector{Name: "stake_high_word_only", Leaves: []merkleLeafJSON{{merkleFixtureLeaf(0).RunnerAddress, cip11.U128{Hi: 1}, 1_000_000_000, cip11.U128{Hi: 1}}}},
	)
	out := make([]any, len(vectors))
	for i, v := range vectors {
		v.Root = merkleRootOf(v.Leaves)
		out[i] = v
	}
	return out, nil
}

func merkleRootOf(leaves []merkleLeafJSON) cip11.Hash {
	ls := make([]merkle.Leaf, len(leaves))
	for i, l := range leaves {
		ls[i] = merkle.Leaf{Address: l.RunnerAddress, EffectiveStake: l.EffectiveStake, ReputationX1e9: uint64(l.SelectionReputationX1e9), BaseWeight: l.BaseWeight}
	}
	return merkle.Root(ls)
}

func merkleEvalRoot(raw json.RawMessage) (map[string]any, error) {
	var v merkleRootVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	return map[string]any{"root": merkleRootOf(v.Leaves)}, nil
}
