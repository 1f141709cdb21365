package merkle

import (
	"encoding/binary"
	"hash"

	"github.com/cip11/cip11"
	"golang.org/x/crypto/sha3"
)

// Domain strings of the §9.2 candidates tree (raw ASCII, no length prefix, D2).
const (
	leafDomain  = "cowboy-candidates-leaf-v1"
	innerDomain = "cowboy-candidates-inner-v1"
	emptyDomain = "cowboy-candidates-empty-v1"
)

// Preimage sizes: a leaf is 25+4+20+16+8+16 = 89 bytes and an inner node
// 26+32+32 = 90 bytes, so each hash is a single Keccak-f permutation.
const (
	leafLen  = len(leafDomain) + 4 + 20 + 16 + 8 + 16
	innerLen = len(innerDomain) + 32 + 32
)

// Leaf is one candidate of the ordered block-T snapshot, carrying the weight
// inputs the §9.2 leaf commits: effective_stake(r, T),
// selection_reputation_x1e9(r, T) and the CIP-2 v3 base_weight(r, T) (§9.3).
// Its position in the slice passed to [Root] is its index_be4.
type Leaf struct {
	Address        cip11.Address
	EffectiveStake cip11.U128
	ReputationX1e9 uint64
	BaseWeight     cip11.U128
}

// Root returns candidates_snapshot_root over leaves in the given order (§9.2):
// the leaves must already be in the deterministic snapshot order (filter
// chain, reputation filter, ascending address, D14); Root never reorders.
//
// Root performs exactly n leaf hashes plus Σ ceil(m/2) inner hashes over the
// levels m = n, ceil(n/2), …, 2 (10,005 Keccak calls for n = 5,000) and
// allocates one n-node buffer plus one hasher. index_be4 is the low 32 bits of
// the position; a snapshot of 2^32 or more candidates cannot be held in memory.
func Root(leaves []Leaf) cip11.Hash {
	if len(leaves) == 0 {
		return cip11.Keccak256([]byte(emptyDomain))
	}
	h := newHasher()
	nodes := make([]cip11.Hash, len(leaves))
	for i := range leaves {
		nodes[i] = h.leaf(uint32(i), &leaves[i])
	}
	return h.fold(nodes)
}

// Level returns level k of the §9.2 tree restricted to leaves, which sit at
// positions first, first+1, … of the whole snapshot (first is their
// index_be4 base): the leaf hashes reduced k times, duplicating the final
// node of each odd level. For any split of a snapshot into runs whose
// starts are multiples of 2^k, concatenating the runs' levels gives the
// whole tree's level k, so independent runs can be hashed apart and
// joined with [Fold]. The whole snapshot must have more than 2^k leaves
// (level k is below the root), since a run's final node is duplicated at
// every odd level even when it is alone. Level(leaves, 0, 0) are the leaf
// hashes.
func Level(leaves []Leaf, first uint32, k int) []cip11.Hash {
	return NewRun(leaves, first, k, nil).Top()
}

// Run is [Level] kept whole: a run of leaves hashed up to level k with every
// intermediate level retained, so the run of a later snapshot at the same
// position reuses each node whose inputs did not change (a leaf equal at
// the same index, an inner node whose two children are equal). Candidate
// lists change in a few places per block, so most of a tree carries over.
// A Run is immutable once built.
type Run struct {
	first  uint32
	leaves []Leaf
	levels [][]cip11.Hash // levels[0] are the leaf hashes, levels[k] the top
}

// NewRun hashes leaves (at positions first, first+1, …) up to level k,
// reusing prev where it applies (prev may be nil or any earlier run; one
// at another position or height reuses nothing). Top() equals
// Level(leaves, first, k) whatever prev is.
func NewRun(leaves []Leaf, first uint32, k int, prev *Run) *Run {
	h := newHasher()
	r := &Run{first: first, leaves: leaves, levels: make([][]cip11.Hash, 0, k+1)}
	if prev != nil && (prev.first != first || len(prev.levels) != k+1) {
		prev = nil
	}
	cur := make([]cip11.Hash, len(leaves))
	for i := range leaves {
		if prev != nil && i < len(prev.leaves) && prev.leaves[i] == leaves[i] {
			cur[i] = prev.levels[0][i]
			continue
		}
		cur[i] = h.leaf(first+uint32(i), &leaves[i])
	}
	r.levels = append(r.levels, cur)
	for lv := 1; lv <= k; lv++ {
		below := r.levels[lv-1]
		var old, oldBelow []cip11.Hash
		if prev != nil {
			old, oldBelow = prev.levels[lv], prev.levels[lv-1]
		}
		next := make([]cip11.Hash, (len(below)+1)/2)
		for i := range next {
			l, rt := 2*i, min(2*i+1, len(below)-1)
			if i < len(old) && below[l] == oldBelow[l] && below[rt] == oldBelow[min(2*i+1, len(oldBelow)-1)] {
				next[i] = old[i]
				continue
			}
			next[i] = h.inner(&below[l], &below[rt])
		}
		r.levels = append(r.levels, next)
	}
	return r
}

// Top returns the run's level-k nodes (do not modify them).
func (r *Run) Top() []cip11.Hash { return r.levels[len(r.levels)-1] }

// Fold reduces one level of the tree to its root (§9.2: an odd level
// duplicates its final node; a single node is the root). Fold of no nodes
// is the empty-snapshot root. It hashes in place: nodes is overwritten.
func Fold(nodes []cip11.Hash) cip11.Hash {
	if len(nodes) == 0 {
		return cip11.Keccak256([]byte(emptyDomain))
	}
	return newHasher().fold(nodes)
}

func (h *hasher) fold(nodes []cip11.Hash) cip11.Hash {
	for len(nodes) > 1 {
		nodes = h.reduce(nodes)
	}
	return nodes[0]
}

// reduce hashes one level into the next, in place: node i of the next
// level overwrites slot i, which is never read again because it reads
// slots 2i and 2i+1 ≥ i.
func (h *hasher) reduce(nodes []cip11.Hash) []cip11.Hash {
	m := len(nodes)
	for i := 0; i < m/2; i++ {
		nodes[i] = h.inner(&nodes[2*i], &nodes[2*i+1])
	}
	if m%2 == 1 { // odd level: duplicate the final node
		nodes[m/2] = h.inner(&nodes[m-1], &nodes[m-1])
	}
	return nodes[:(m+1)/2]
}

// hasher reuses one Keccak-256 state and preimage buffers whose domain
// prefixes are written once; only the variable bytes change per call.
type hasher struct {
	d     hash.Hash
	leafB [leafLen]byte
	innB  [innerLen]byte
	out   cip11.Hash
}

func newHasher() *hasher {
	h := &hasher{d: sha3.NewLegacyKeccak256()}
	copy(h.leafB[:], leafDomain)
	copy(h.innB[:], innerDomain)
	return h
}

func (h *hasher) leaf(index uint32, l *Leaf) cip11.Hash {
	b := h.leafB[len(leafDomain):]
	binary.BigEndian.PutUint32(b[0:4], index)
	copy(b[4:24], l.Address[:])
	l.EffectiveStake.PutBE16(b[24:40])
	binary.BigEndian.PutUint64(b[40:48], l.ReputationX1e9)
	l.BaseWeight.PutBE16(b[48:64])
	return h.sum(h.leafB[:])
}

func (h *hasher) inner(left, right *cip11.Hash) cip11.Hash {
	b := h.innB[len(innerDomain):]
	copy(b[0:32], left[:])
	copy(b[32:64], right[:])
	return h.sum(h.innB[:])
}

func (h *hasher) sum(preimage []byte) cip11.Hash {
	h.d.Reset()
	h.d.Write(preimage)
	h.d.Sum(h.out[:0])
	return h.out
}
