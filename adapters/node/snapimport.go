package node

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/pebble"
	"github.com/cip11/cip11/chainlog"
)

// Reading a validator's snapshots outside the validator (cip11 replay of
// a pruned block log, docs/storage.md "Snapshots (node)"): the snapshot
// directories under DATADIR/snapshots, and the import of one into a
// fresh pebble store.

// maxMetaFile bounds a meta.json (65,536 chunk hashes in hex, base64'd).
const maxMetaFile = 16 << 20

// SnapshotHeights lists the heights of the snapshot directories under
// root (a validator's DATADIR/snapshots: one directory per snapshot,
// named by its height in 20 digits), ascending. A directory being written
// (tmp-…) or restored is not listed; an incomplete one is (ImportSnapshot
// refuses it). A root that cannot be read is an error (fs.ErrNotExist for
// a missing one).
func SnapshotHeights(root string) ([]uint64, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, e := range ents {
		if h, err := strconv.ParseUint(e.Name(), 10, 64); err == nil && e.IsDir() {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// SnapshotDir is the directory of the snapshot at height h under root.
func SnapshotDir(root string, h uint64) string { return filepath.Join(root, snapDirName(h)) }

// ImportedSnapshot is what ImportSnapshot restored: the state store's
// height, the snapshot's window base, the state digest its metadata
// claims at Height, and the reconfigurations of the blocks up to Base.
type ImportedSnapshot struct {
	Height           uint64
	Base             uint64
	AppHash          cip11.Hash
	Reconfigurations []chainlog.Reconfigure
}

// ImportSnapshot imports the validator snapshot in snapDir (a
// DATADIR/snapshots/HEIGHT directory: meta.json and chunk-000000, …)
// into a new pebble store in storeDir, which must not exist or be empty
// (else pebble.ErrImportTarget). It checks, before writing anything, that
// meta.json decodes to a format-SnapshotFormat snapshot whose hash is its
// metadata's and whose height is the directory's, and that every chunk
// hashes to the metadata's (a missing or altered chunk wraps
// ErrSnapshotChunk and names the file); then that the stream's node
// section is of the chain of header hdr (the keccak256 of its header
// line), agrees with the metadata and ends with a block whose state digest
// is the metadata's AppHash; then pebble.Import rebuilds the store, which
// must be at the snapshot's height. Any other refusal wraps ErrSnapshot;
// on failure nothing is left in storeDir.
//
// The imported store's own state digest is not computed here: the caller
// checks it against its log at Height (replay.Run does, resuming there).
func ImportSnapshot(snapDir, storeDir string, hdr chainlog.Header) (ImportedSnapshot, error) {
	var out ImportedSnapshot
	info, m, err := readSnapshotMeta(snapDir)
	if err != nil {
		return out, err
	}
	if err := verifyChunks(snapDir, m); err != nil {
		return out, err
	}
	br := bufio.NewReaderSize(snapshotReader(snapDir, info.Chunks), 1<<20)
	c, br, err := readSnapCore(br, m)
	if err != nil {
		return out, fmt.Errorf("%s: %w", snapDir, err)
	}
	if _, err := checkSnapCore(hdr, c, m); err != nil {
		return out, fmt.Errorf("%s: %w", snapDir, err)
	}
	_, statErr := os.Stat(storeDir)
	created := errors.Is(statErr, fs.ErrNotExist)
	ps, err := pebble.Import(storeDir, br, pebble.Options{})
	if err != nil {
		if errors.Is(err, pebble.ErrImportTarget) {
			return out, err
		}
		return out, fmt.Errorf("%w: %s: the state store: %w", ErrSnapshot, snapDir, err)
	}
	sh, ok, err := ps.LastCommitted()
	if err == nil && (!ok || sh != c.Height) {
		err = fmt.Errorf("%w: %s: the state store is at %d, the snapshot at %d", ErrSnapshot, snapDir, sh, c.Height)
	}
	if err = errors.Join(err, ps.Close()); err != nil {
		return out, errors.Join(err, removeImport(storeDir, created))
	}
	return ImportedSnapshot{Height: c.Height, Base: c.Base, AppHash: m.AppHash,
		Reconfigurations: slices.Clone(c.Reconfigurations)}, nil
}

// readSnapshotMeta reads and checks dir/meta.json.
func readSnapshotMeta(dir string) (SnapshotInfo, SnapshotMeta, error) {
	var info SnapshotInfo
	p := filepath.Join(dir, "meta.json")
	f, err := os.Open(p)
	if err != nil {
		return info, SnapshotMeta{}, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMetaFile+1))
	if err != nil || len(b) > maxMetaFile {
		return info, SnapshotMeta{}, fmt.Errorf("%w: %s: %d bytes read (at most %d): %v", ErrSnapshot, p, len(b), maxMetaFile, err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&info); err != nil || d.More() {
		return info, SnapshotMeta{}, fmt.Errorf("%w: %s: %v", ErrSnapshot, p, err)
	}
	m, err := decodeMeta(info)
	if err != nil {
		return info, m, fmt.Errorf("%s: %w", p, err)
	}
	if h, err := strconv.ParseUint(filepath.Base(dir), 10, 64); err == nil && h != info.Height {
		return info, m, fmt.Errorf("%w: %s holds the snapshot of height %d", ErrSnapshot, dir, info.Height)
	}
	return info, m, nil
}

// verifyChunks checks that every chunk file of dir hashes to m's chunk
// hashes and that together they are m.Size bytes.
func verifyChunks(dir string, m SnapshotMeta) error {
	var total uint64
	for i, want := range m.ChunkHashes {
		p := filepath.Join(dir, chunkName(i))
		b, err := readChunk(p, m.ChunkSize)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrSnapshotChunk, err)
		}
		if sha256.Sum256(b) != want {
			return fmt.Errorf("%w: %s does not hash to chunk_hashes[%d] of its meta.json", ErrSnapshotChunk, p, i)
		}
		total += uint64(len(b))
	}
	if total != m.Size {
		return fmt.Errorf("%w: %s: the chunks hold %d bytes, meta.json says %d", ErrSnapshot, dir, total, m.Size)
	}
	return nil
}

// readChunk reads the chunk file p, of at most size bytes.
func readChunk(p string, size uint32) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(size)+1))
	if err == nil && len(b) > int(size) {
		err = fmt.Errorf("%s is longer than the chunk size %d", p, size)
	}
	return b, err
}

// removeImport removes what a failed ImportSnapshot left in dir: dir
// itself if it created it, else its contents.
func removeImport(dir string, created bool) error {
	if created {
		return os.RemoveAll(dir)
	}
	ents, err := os.ReadDir(dir)
	for _, e := range ents {
		err = errors.Join(err, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return err
}
