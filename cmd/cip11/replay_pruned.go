package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/chainlog"
)

// prunedStart is how the replay of a pruned log (a validator's
// blocks.jsonl behind a base line, docs/chainlog.md "Pruned block logs")
// starts.
type prunedStart struct {
	height uint64 // the imported snapshot's (0: an existing -store resumed)
	tmp    string // a temporary directory to remove after the replay
	say    string // the line for stderr
}

// pruned reads FILE's header and second line. For a log from block 1 (or
// one whose header does not decode: replay.Run reports it) it returns nil.
// For a pruned log with base B it imports the validator snapshot with the
// lowest height above B under snaps (default: the snapshots directory
// beside FILE) into the -store directory, a temporary one when -store is
// not given or empty (dir is set to it), after node.ImportSnapshot's
// checks; a -store directory that is not empty is resumed instead. A
// snapshot at B itself is not used: the log no longer holds block B, so
// its state digest could not be checked.
func pruned(path, snaps string, dir *optString) (*prunedStart, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	cr, err := chainlog.NewReader(f)
	if err != nil {
		return nil, nil
	}
	base, err := cr.ReadBase()
	if err != nil {
		return nil, err
	}
	if base == nil {
		return nil, nil
	}
	gone := fmt.Sprintf("pruned log: blocks 1 … %d are gone", base.Height)
	if dir.set && dir.v != "" {
		if ents, err := os.ReadDir(dir.v); err == nil && len(ents) > 0 {
			return &prunedStart{say: gone + "; resuming the store in " + dir.v}, nil
		}
	}
	if snaps == "" {
		snaps = filepath.Join(filepath.Dir(path), "snapshots")
	}
	hs, err := node.SnapshotHeights(snaps)
	if err != nil {
		return nil, fmt.Errorf("%s, and there is no snapshot to start from: %w (name the validator's snapshots directory with -snapshots)", gone, err)
	}
	var s uint64
	for _, h := range hs {
		if h > base.Height {
			s = h
			break
		}
	}
	if s == 0 {
		return nil, fmt.Errorf("%s, and %s holds no snapshot above height %d to start from (it holds %d: %v)", gone, snaps, base.Height, len(hs), hs)
	}
	sdir := node.SnapshotDir(snaps, s)
	st := &prunedStart{height: s}
	if !dir.set || dir.v == "" {
		if st.tmp, err = os.MkdirTemp("", "cip11-replay-"); err != nil {
			return nil, err
		}
		dir.set, dir.v = true, filepath.Join(st.tmp, "store")
	}
	if _, err := node.ImportSnapshot(sdir, dir.v, cr.Header()); err != nil {
		if st.tmp != "" {
			os.RemoveAll(st.tmp)
		}
		return nil, fmt.Errorf("%s; the snapshot at height %d (%s): %w", gone, s, sdir, err)
	}
	st.say = fmt.Sprintf("%s; starting from the snapshot at height %d (%s)", gone, s, sdir)
	return st, nil
}
