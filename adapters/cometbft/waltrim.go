package cometbft

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
)

// CometBFT's consensus WAL (data/cs.wal/wal) is an autofile group: the
// head and rotated 10 MiB chunks wal.000, wal.001, …, the oldest removed
// only past 1 GiB, with no option to lower that in v1.0.1 (the head's
// limit is internal too). A restart replays the WAL only from the end
// marker of the last committed height, which CometBFT writes, and syncs,
// before it applies the block: by the app's Commit of height h the
// marker of h is in the head or, if the head rotated since, in the newest
// chunk. With retention (NodeConfig.KeepBlocks) the validator trims the
// group every walTrimEvery heights: it keeps the newest rotated chunk
// while the head may be younger than the last markers, and none once the
// head has been the same file across walSettled consecutive commits (the
// markers of those heights are in it; issue 31's soak measured a kept
// 10 MiB chunk as the main swing of a pruning home). The group re-reads
// its directory on each of its checks, so files removed under it are
// simply gone.
const (
	walTrimEvery = 32
	walSettled   = 8
)

// walHead follows the identity of the WAL group's head file across
// commits (the App's Commit, one goroutine).
type walHead struct {
	fi   os.FileInfo
	same int // consecutive commits after the first that found fi the head
}

// observe notes the head file at a commit.
func (w *walHead) observe(dir string) {
	fi, err := os.Stat(filepath.Join(dir, "wal"))
	switch {
	case err != nil:
		w.fi, w.same = nil, 0
	case w.fi != nil && os.SameFile(w.fi, fi):
		w.same++
	default:
		w.fi, w.same = fi, 0
	}
}

// keep is how many rotated chunks trimWAL must keep: none once the head
// has held the last walSettled commits' end markers, else the newest.
func (w *walHead) keep() int {
	if w.fi != nil && w.same >= walSettled {
		return 0
	}
	return 1
}

var walChunk = regexp.MustCompile(`^wal\.([0-9]{3,})$`)

// trimWAL removes the rotated chunks of the WAL group in dir but the
// newest keep; it returns how many it removed.
func trimWAL(dir string, keep int) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	type chunk struct {
		n    int
		name string
	}
	var cs []chunk
	for _, e := range ents {
		if m := walChunk.FindStringSubmatch(e.Name()); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				cs = append(cs, chunk{n, e.Name()})
			}
		}
	}
	slices.SortFunc(cs, func(a, b chunk) int { return a.n - b.n })
	removed := 0
	for _, c := range cs[:max(0, len(cs)-keep)] {
		if err := os.Remove(filepath.Join(dir, c.name)); err != nil && !os.IsNotExist(err) {
			return removed, err
		}
		removed++
	}
	return removed, nil
}
