package node

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/adapters/pebble"
	"github.com/cip11/cip11/chainlog"
)

// State-sync restore (docs/storage.md "State sync"): an offered snapshot
// is checked against the trusted AppHash, its chunks against its
// metadata, and once installed the recovered state's digest against the
// AppHash again (else everything is rolled back).

// SnapshotRestore receives an offered snapshot's chunks (state sync) into
// snapshots/restore; InstallSnapshot installs it once all are in.
type SnapshotRestore struct {
	dir  string
	info SnapshotInfo
	meta SnapshotMeta
	have []bool
	n    int
}

// OfferSnapshot checks an offered snapshot against the trusted state
// digest appHash at its height (ABCI OfferSnapshot: CometBFT's light client
// verified it) and prepares to receive its chunks. It refuses, wrapping
// ErrSnapshot, a malformed or foreign snapshot, and wrapping
// ErrSnapshotState a validator that already holds blocks.
func (v *Validator) OfferSnapshot(info SnapshotInfo, appHash []byte) (*SnapshotRestore, error) {
	if h := v.Height(); h > 0 {
		return nil, fmt.Errorf("%w: this validator is at height %d", ErrSnapshotState, h)
	}
	m, err := decodeMeta(info)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(m.AppHash[:], appHash) {
		return nil, fmt.Errorf("%w: its state digest %s is not the trusted AppHash %X at %d", ErrSnapshot, m.AppHash, appHash, info.Height)
	}
	dir := filepath.Join(v.dir, "snapshots", "restore")
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &SnapshotRestore{dir: dir, info: info, meta: m, have: make([]bool, info.Chunks)}, nil
}

// Apply takes chunk i; it reports whether every chunk is in. A chunk that
// does not hash to the metadata's is refused (ErrSnapshotChunk: refetch
// it, from another sender).
func (r *SnapshotRestore) Apply(i uint32, chunk []byte) (bool, error) {
	if int(i) >= len(r.have) {
		return false, fmt.Errorf("%w: chunk %d of %d", ErrSnapshotChunk, i, len(r.have))
	}
	if sha256.Sum256(chunk) != r.meta.ChunkHashes[i] {
		return false, fmt.Errorf("%w: chunk %d does not hash to the snapshot's metadata", ErrSnapshotChunk, i)
	}
	if !r.have[i] {
		if err := writeFileSync(filepath.Join(r.dir, chunkName(int(i))), chunk); err != nil {
			return false, err
		}
		r.have[i] = true
		r.n++
	}
	return r.n == len(r.have), nil
}

// Height is the offered snapshot's height.
func (r *SnapshotRestore) Height() uint64 { return r.info.Height }

// Discard removes what the restore received.
func (r *SnapshotRestore) Discard() { os.RemoveAll(r.dir) }

// InstallSnapshot installs a complete restore on an empty validator (on
// its loop): the state store imported from it, the block log written from
// its window behind a base line, the journal from its specs; the core
// recovers from them as at any start, and the recovered state's digest
// must equal the trusted AppHash (else everything is wiped again and the
// snapshot refused, wrapping ErrSnapshot). The snapshot is kept among this
// validator's own.
func (v *Validator) InstallSnapshot(r *SnapshotRestore) error {
	var err error
	if derr := v.do(func(*chain.Core) { err = v.install(r) }); derr != nil {
		return derr
	}
	return err
}

func (v *Validator) install(r *SnapshotRestore) error {
	if h := v.core.Height(); h > 0 {
		return fmt.Errorf("%w: this validator is at height %d", ErrSnapshotState, h)
	}
	for i, ok := range r.have {
		if !ok {
			return fmt.Errorf("%w: chunk %d missing", ErrSnapshotChunk, i)
		}
	}
	br := bufio.NewReaderSize(snapshotReader(r.dir, r.info.Chunks), 1<<20)
	c, br, err := readSnapCore(br, r.meta)
	if err != nil {
		return err
	}
	lines, err := v.checkSnapCore(c, r.meta)
	if err != nil {
		return err
	}
	v.closeStorage()
	wipe := func() {
		for _, p := range []string{"state", "blocks.jsonl", "blocks.times", "jobs.jsonl", "events.jsonl", "jobs"} {
			os.RemoveAll(filepath.Join(v.dir, p))
		}
	}
	reopen := func(cause error) error {
		wipe()
		if _, err := v.openStorage(); err != nil {
			return errors.Join(cause, fmt.Errorf("%w: reopening the empty storage: %w", ErrFailed, err))
		}
		v.signalSwap()
		return cause
	}
	wipe()
	ps, err := pebble.Import(filepath.Join(v.dir, "state"), br, pebble.Options{})
	if err != nil {
		return reopen(fmt.Errorf("%w: the state store: %w", ErrSnapshot, err))
	}
	sh, _, err := ps.LastCommitted()
	ps.Close()
	if err == nil && sh != c.Height {
		err = fmt.Errorf("%w: the state store is at %d, the snapshot at %d", ErrSnapshot, sh, c.Height)
	}
	if err != nil {
		return reopen(err)
	}
	if err := v.writeRestored(c, lines); err != nil {
		return reopen(err)
	}
	if _, err := v.openStorage(); err != nil {
		v.closeStorage()
		return reopen(fmt.Errorf("%w: recovering from it: %w", ErrSnapshot, err))
	}
	d, err := v.x.Digest()
	if err == nil && d != r.meta.AppHash {
		err = fmt.Errorf("%w: it restores to state digest %s, not the trusted AppHash %s at %d", ErrSnapshot, d, r.meta.AppHash, c.Height)
	}
	if err != nil {
		v.closeStorage()
		return reopen(err)
	}
	v.signalSwap()
	v.sendq.post(sendItem{h: c.Height}) // ticks the transport to the height
	final := filepath.Join(v.dir, "snapshots", snapDirName(c.Height))
	if err := writeFileSync(filepath.Join(r.dir, "meta.json"), mustJSON(r.info)); err == nil {
		os.RemoveAll(final)
		if os.Rename(r.dir, final) == nil {
			v.addSnapshot(snapEntry{r.info, r.meta})
		}
	}
	v.restoredFrom.Store(c.Height)
	v.log.Info("state restored from a snapshot", "height", c.Height, "base", c.Base, "blocks", len(c.Blocks),
		"open_jobs", len(c.Specs), "state_digest", d)
	return nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func (v *Validator) signalSwap() {
	select {
	case v.swapped <- struct{}{}:
	default:
	}
}

// checkSnapCore checks the node section against the metadata and this
// chain: its blocks are base+1 … height in order, and the last one's
// state digest is the trusted AppHash. It returns the blocks' lines.
func (v *Validator) checkSnapCore(c *snapCore, m SnapshotMeta) ([][]byte, error) {
	return checkSnapCore(v.hdr, c, m)
}

// checkSnapCore is Validator.checkSnapCore for the chain of header hdr.
func checkSnapCore(hdr chainlog.Header, c *snapCore, m SnapshotMeta) ([][]byte, error) {
	hl, err := chainlog.EncodeHeader(hdr)
	if err != nil {
		return nil, err
	}
	switch {
	case c.Chain != cip11.Keccak256(hl):
		return nil, fmt.Errorf("%w: a snapshot of another chain", ErrSnapshot)
	case c.Height != m.Height || c.Base != m.Base:
		return nil, fmt.Errorf("%w: node section at %d base %d, metadata at %d base %d", ErrSnapshot, c.Height, c.Base, m.Height, m.Base)
	case uint64(len(c.Blocks)) != c.Height-c.Base:
		return nil, fmt.Errorf("%w: %d blocks for %d … %d", ErrSnapshot, len(c.Blocks), c.Base+1, c.Height)
	}
	lines := make([][]byte, len(c.Blocks))
	for i, raw := range c.Blocks {
		b, err := chainlog.DecodeBlock(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: block %d: %w", ErrSnapshot, c.Base+1+uint64(i), err)
		}
		if uint64(b.Height) != c.Base+1+uint64(i) {
			return nil, fmt.Errorf("%w: block %d where %d belongs", ErrSnapshot, b.Height, c.Base+1+uint64(i))
		}
		if uint64(b.Height) == c.Height && b.Out.StateDigest != m.AppHash {
			return nil, fmt.Errorf("%w: block %d's state digest is not the trusted AppHash", ErrSnapshot, c.Height)
		}
		if lines[i], err = chainlog.EncodeBlock(&b); err != nil {
			return nil, fmt.Errorf("%w: block %d: %w", ErrSnapshot, b.Height, err)
		}
	}
	return lines, nil
}

// writeRestored writes the block log (header, base line, the window's
// blocks) and the journal (the live jobs' specs) a restored validator
// recovers from.
func (v *Validator) writeRestored(c *snapCore, lines [][]byte) error {
	hl, err := chainlog.EncodeHeader(v.hdr)
	if err != nil {
		return err
	}
	var bl []byte // a window from block 1: no base line
	if c.Base > 0 {
		if bl, err = encodeBase(logBase{Height: c.Base, Reconfigurations: c.Reconfigurations}); err != nil {
			return err
		}
	} else if len(c.Reconfigurations) > 0 {
		return fmt.Errorf("%w: reconfigurations before block 1", ErrSnapshot)
	}
	if _, err := writeLines(filepath.Join(v.dir, "blocks.jsonl"), hl, bl, lines, true); err != nil {
		return err
	}
	j, err := writeJournal(filepath.Join(v.dir, "jobs.jsonl"), c.Specs, true)
	if err != nil {
		return err
	}
	return j.close()
}
