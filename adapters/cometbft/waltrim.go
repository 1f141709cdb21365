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
// only past 1 GiB, with no option to lower that in v1.0.1. A restart
// replays the WAL only from the last committed height's end marker, which
// the head or the newest chunk holds (a height writes a few KiB). With
// retention (NodeConfig.KeepBlocks) the validator keeps the newest
// walKeepChunks rotated chunk (one: the soak of issue 31 measured two as
// 10 MiB of swing in a 110 MiB home) and removes the older ones, every
// walTrimEvery heights: the group re-reads its directory on each of its
// checks, so files removed under it are simply gone.
const (
	walKeepChunks = 1
	walTrimEvery  = 256
)

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
