package cometbft

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	dbm "github.com/cometbft/cometbft-db"
)

// CometBFT v1.0.1's block pruning (store.BlockStore.PruneBlocks) deletes
// every per-height key of a pruned height — the block meta, parts,
// commit, seen commit and block-hash index — but the extended commit (the
// precommits with their vote extensions, "EC:<height>"), which it writes
// for every height once vote extensions are enabled (D31: every height).
// Issue 31's soak measured it as the block store's remaining growth,
// about 0.84 KB a block for good with 1,000 blocks kept. With retention
// the App deletes the extended commits below the block store's base
// every extPruneEvery heights: nothing reads them there (block sync
// serves extended commits only of heights it holds blocks of).
const extPruneEvery = 32

// ErrKeyLayout: the block store's key layout is not the one
// pruneExtCommits knows (v1, CometBFT's default).
var ErrKeyLayout = errors.New("cometbft: block store key layout not v1")

// pruneExtCommits deletes the extended commits of db (CometBFT's block
// store, key layout v1) below height base; it returns how many.
func pruneExtCommits(db dbm.DB, base int64) (int, error) {
	v, err := db.Get([]byte("version"))
	if err != nil {
		return 0, err
	}
	if s := string(v); s != "" && s != "v1" {
		return 0, fmt.Errorf("%w: %q", ErrKeyLayout, s)
	}
	it, err := db.Iterator([]byte("EC:"), []byte("EC;"))
	if err != nil {
		return 0, err
	}
	var dead [][]byte
	for ; it.Valid(); it.Next() {
		k := it.Key()
		if h, err := strconv.ParseInt(string(k[len("EC:"):]), 10, 64); err == nil && h < base {
			dead = append(dead, slices.Clone(k))
		}
	}
	err = errors.Join(it.Error(), it.Close())
	if err != nil || len(dead) == 0 {
		return 0, err
	}
	b := db.NewBatch()
	defer b.Close()
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	if err := b.Write(); err != nil {
		return 0, err
	}
	return len(dead), nil
}
