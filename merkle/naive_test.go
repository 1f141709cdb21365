package merkle

import (
	"encoding/binary"

	"github.com/cip11/cip11"
)

// rootNaive is the reference candidates_snapshot_root (§9.2), written to be
// obviously correct rather than fast: each preimage is built by appending its
// parts, each hash uses a fresh Keccak state (cip11.Keccak256), and each level
// is a new list, padded by duplicating its final node when odd.
func rootNaive(leaves []Leaf) cip11.Hash {
	if len(leaves) == 0 {
		return cip11.Keccak256([]byte("cowboy-candidates-empty-v1"))
	}
	var level []cip11.Hash
	for i, l := range leaves {
		level = append(level, leafNaive(uint32(i), l))
	}
	for len(level) > 1 {
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		var next []cip11.Hash
		for i := 0; i < len(level); i += 2 {
			next = append(next, innerNaive(level[i], level[i+1]))
		}
		level = next
	}
	return level[0]
}

func leafNaive(i uint32, l Leaf) cip11.Hash {
	stake, weight := l.EffectiveStake.BE16(), l.BaseWeight.BE16()
	return cip11.Keccak256(
		[]byte("cowboy-candidates-leaf-v1"),
		binary.BigEndian.AppendUint32(nil, i),
		l.Address[:],
		stake[:],
		binary.BigEndian.AppendUint64(nil, l.ReputationX1e9),
		weight[:],
	)
}

func innerNaive(left, right cip11.Hash) cip11.Hash {
	return cip11.Keccak256([]byte("cowboy-candidates-inner-v1"), left[:], right[:])
}
