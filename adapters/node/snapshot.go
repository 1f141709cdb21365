package node

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/pebble"
	"github.com/cip11/cip11/chainlog"
)

// Snapshots (docs/storage.md "Snapshots (node)"): every SnapshotInterval blocks
// the validator writes its state at the committed height into
// snapshots/HEIGHT/ as fixed-size chunks beside a meta.json; peers restore
// from them by state sync (adapters/cometbft), and retention (KeepBlocks)
// prunes the block log behind them.
//
// The snapshot stream (format 2) is
//
//	"CIP11SS" 0x02 ‖ deflate(uvarint(len(core)) ‖ core ‖ the state store's export)
//
// deflate being RFC 1951 (compress/flate, level snapDeflateLevel; the
// inflated length is the metadata's raw_size); format 1, which this node
// still reads, is the same without the deflate and with 0x01. core is the JSON [snapCore]: the blocks from the window's start to
// the snapshot height (a restored core rebuilds its job tracking from
// them), the reconfigurations of the blocks before the window and the
// encoded specs of the jobs still live. The store's export is
// adapters/pebble's (pebble.Export), checksummed on its own.

// SnapshotFormat is the snapshot format version this node writes (the
// stream's magic ends with it; CometBFT's Snapshot.format): 2, deflated.
// It reads format 1 too (SnapshotFormatKnown), the uncompressed stream of
// the nodes before it; issue 31's soak measured the deflated stream at
// 0.29 of the plain one, the difference kept twice (SnapshotKeep) on
// every validator and sent to every joiner.
const SnapshotFormat uint32 = 2

// snapshotFormatPlain is format 1: the stream undeflated.
const snapshotFormatPlain uint32 = 1

// snapDeflateLevel is format 2's compress/flate level.
const snapDeflateLevel = 6

var (
	snapMagic      = []byte("CIP11SS\x02")
	snapMagicPlain = []byte("CIP11SS\x01")
)

// SnapshotFormatKnown reports whether this node reads snapshots of format
// f (1 and 2).
func SnapshotFormatKnown(f uint32) bool { return f == SnapshotFormat || f == snapshotFormatPlain }

// Snapshot defaults and bounds.
const (
	DefaultSnapshotKeep      = 2
	DefaultSnapshotChunkSize = 1 << 20
	// MaxSnapshotChunks bounds a snapshot's chunk count (an offered
	// snapshot with more is refused before any chunk is fetched).
	MaxSnapshotChunks = 1 << 16
	// MaxSnapshotChunkSize bounds one chunk (CometBFT's own limit is 16 MiB).
	MaxSnapshotChunkSize = 16 << 20
	// MinKeepBlocks is the least retention ValidatorConfig.KeepBlocks
	// takes: the §6.6 heartbeat floor (100 blocks) a lagging runner's
	// liveness is judged over and the in-memory life of an ended job
	// (chain.DefaultRetainBlocks), with room for a restart's catch-up.
	MinKeepBlocks = 256
	// snapWindow is how many blocks a snapshot carries at least (the
	// dashboard's history and the seeds of the last views).
	snapWindow = 64
)

// Snapshot errors.
var (
	// ErrSnapshot: a snapshot is malformed, of another chain or format, or
	// does not restore to the trusted state digest (the whole snapshot is
	// refused; a state-sync driver tries another).
	ErrSnapshot = errors.New("node: snapshot refused")
	// ErrSnapshotChunk: a chunk does not hash to the snapshot's metadata
	// (refetch it, from another peer).
	ErrSnapshotChunk = errors.New("node: snapshot chunk refused")
	// ErrSnapshotState: a snapshot can be installed only on an empty
	// validator (no block committed).
	ErrSnapshotState = errors.New("node: a snapshot is installed only on an empty validator")
)

// SnapshotInfo describes a snapshot, as ABCI's Snapshot does: Hash is the
// SHA-256 of Metadata, the JSON [SnapshotMeta].
type SnapshotInfo struct {
	Height   uint64
	Format   uint32
	Chunks   uint32
	Hash     []byte
	Metadata []byte
}

// SnapshotMeta is a snapshot's metadata: the state digest (AppHash) at
// Height, the window's base (the block log of a node restored from it
// starts after Base), the stream's size and each chunk's SHA-256.
type SnapshotMeta struct {
	Format  uint32     `json:"format"`
	Height  uint64     `json:"height"`
	AppHash cip11.Hash `json:"app_hash"`
	Base    uint64     `json:"base"`
	Size    uint64     `json:"size"`
	// RawSize is format 2's inflated length (the stream after the magic);
	// absent (0) in format 1.
	RawSize     uint64       `json:"raw_size,omitempty"`
	ChunkSize   uint32       `json:"chunk_size"`
	ChunkHashes []cip11.Hash `json:"chunk_hashes"`
}

// snapCore is the snapshot's node section.
type snapCore struct {
	Height           uint64                 `json:"height"`
	Chain            cip11.Hash             `json:"chain"` // keccak256 of the chain log header
	Base             uint64                 `json:"base"`
	Reconfigurations []chainlog.Reconfigure `json:"reconfigurations"`
	Specs            [][]byte               `json:"specs"`
	Blocks           []json.RawMessage      `json:"blocks"`
}

// decodeMeta decodes and checks an offered snapshot's metadata.
func decodeMeta(info SnapshotInfo) (SnapshotMeta, error) {
	var m SnapshotMeta
	if !SnapshotFormatKnown(info.Format) {
		return m, fmt.Errorf("%w: format %d (this node reads %d and %d)", ErrSnapshot, info.Format, snapshotFormatPlain, SnapshotFormat)
	}
	if h := sha256.Sum256(info.Metadata); !bytes.Equal(h[:], info.Hash) {
		return m, fmt.Errorf("%w: the hash is not the metadata's", ErrSnapshot)
	}
	d := json.NewDecoder(bytes.NewReader(info.Metadata))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil || d.More() {
		return m, fmt.Errorf("%w: metadata: %v", ErrSnapshot, err)
	}
	switch {
	case m.Format != info.Format || m.Height != info.Height || m.Height == 0:
		return m, fmt.Errorf("%w: metadata of format %d height %d offered as %d at %d", ErrSnapshot, m.Format, m.Height, info.Format, info.Height)
	case len(m.ChunkHashes) != int(info.Chunks) || info.Chunks == 0 || info.Chunks > MaxSnapshotChunks:
		return m, fmt.Errorf("%w: %d chunks, %d hashes (at most %d)", ErrSnapshot, info.Chunks, len(m.ChunkHashes), MaxSnapshotChunks)
	case m.ChunkSize == 0 || m.ChunkSize > MaxSnapshotChunkSize:
		return m, fmt.Errorf("%w: chunk size %d", ErrSnapshot, m.ChunkSize)
	case m.Size > uint64(m.ChunkSize)*uint64(info.Chunks) || m.Size <= uint64(m.ChunkSize)*uint64(info.Chunks-1):
		return m, fmt.Errorf("%w: size %d in %d chunks of %d", ErrSnapshot, m.Size, info.Chunks, m.ChunkSize)
	case m.Base >= m.Height:
		return m, fmt.Errorf("%w: base %d at height %d", ErrSnapshot, m.Base, m.Height)
	case m.Format == snapshotFormatPlain && m.RawSize != 0,
		m.Format == SnapshotFormat && (m.RawSize == 0 || m.RawSize/maxDeflateRatio > m.Size):
		return m, fmt.Errorf("%w: format %d with raw size %d for %d bytes", ErrSnapshot, m.Format, m.RawSize, m.Size)
	}
	return m, nil
}

func snapDirName(h uint64) string { return fmt.Sprintf("%020d", h) }

func chunkName(i int) string { return fmt.Sprintf("chunk-%06d", i) }

// snapshotter is the validator's snapshot and retention state.
type snapshotter struct {
	jobs chan snapJob // to the writer goroutine (capacity 1)

	mu   sync.Mutex
	list []snapEntry // completed snapshots, ascending height
	// marks are the (height, base) of every snapshot written since the
	// start (and of those found at it), ascending, trimmed as retention
	// passes them: retention prunes to a snapshot's base once it is
	// KeepBlocks old, even if SnapshotKeep has dropped its files (a replay
	// of the log then starts from a later snapshot).
	marks []snapMark
}

type snapMark struct{ h, base uint64 }

type snapEntry struct {
	info SnapshotInfo
	meta SnapshotMeta
}

// snapJob is one snapshot for the writer: the store's export at h and
// what the core section needs.
type snapJob struct {
	h       uint64
	app     cip11.Hash
	base    uint64
	specs   [][]byte
	exp     *pebble.Export
	logPath string
	// ps and arch are flushed and compacted after the snapshot (upkeep).
	ps   *pebble.Store
	arch *jobArchive
}

func (s *snapshotter) snapshots() []snapEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

// Snapshots lists the snapshots this validator holds, newest first
// (ABCI ListSnapshots).
func (v *Validator) Snapshots() []SnapshotInfo {
	l := v.snap.snapshots()
	out := make([]SnapshotInfo, 0, len(l))
	for i := len(l) - 1; i >= 0; i-- {
		out = append(out, l[i].info)
	}
	return out
}

// SnapshotChunk reads chunk i of the snapshot at height h in format f
// (ABCI LoadSnapshotChunk); nil when it holds no such chunk.
func (v *Validator) SnapshotChunk(h uint64, f uint32, i uint32) []byte {
	for _, e := range v.snap.snapshots() {
		if e.info.Height == h && e.info.Format == f && i < e.info.Chunks {
			b, err := os.ReadFile(filepath.Join(v.dir, "snapshots", snapDirName(h), chunkName(int(i))))
			if err != nil {
				v.log.Warn("snapshot chunk unreadable", "height", h, "chunk", i, "err", err)
				return nil
			}
			return b
		}
	}
	return nil
}

// loadSnapshots reads the snapshots directory at open: complete snapshots
// (a meta.json that readSnapshotMeta accepts) are listed, a numbered one
// without it and the tmp- directory of a write a crash cut short are
// removed; anything else ("restore", a state sync in progress) is left.
func (v *Validator) loadSnapshots() {
	root := filepath.Join(v.dir, "snapshots")
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "tmp-") {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
	hs, _ := SnapshotHeights(root)
	var list []snapEntry
	for _, h := range hs {
		p := SnapshotDir(root, h)
		info, m, err := readSnapshotMeta(p)
		if err != nil {
			v.log.Warn("removing an incomplete snapshot", "dir", p, "err", err)
			os.RemoveAll(p)
			continue
		}
		list = append(list, snapEntry{info, m})
	}
	v.snap.mu.Lock()
	v.snap.list = list
	v.snap.marks = nil
	for _, e := range list {
		v.snap.marks = append(v.snap.marks, snapMark{e.info.Height, e.meta.Base})
	}
	v.snap.mu.Unlock()
}

// maybeSnapshot starts a snapshot of the committed height h when the
// interval says so (loop only, right after the commit): the store's
// export is taken here (cheap), the writing is the writer goroutine's. A
// snapshot still being written makes this one skipped.
func (v *Validator) maybeSnapshot(h uint64, app cip11.Hash) {
	k := v.cfg.SnapshotInterval
	if k == 0 || h%k != 0 || v.ps.Load() == nil {
		return
	}
	start, specs := v.core.SnapshotWindow(snapWindow, v.blog.base.Height+1)
	exp, err := v.ps.Load().Export()
	if err != nil {
		v.log.Warn("snapshot skipped: the store cannot export", "height", h, "err", err)
		return
	}
	j := snapJob{h: h, app: app, base: start - 1, specs: specs, exp: exp, logPath: v.blog.path, ps: v.ps.Load(), arch: v.archive}
	select {
	case v.snap.jobs <- j:
	default:
		exp.Close()
		v.log.Warn("snapshot skipped: the previous one is still being written", "height", h)
	}
}

// snapshotWriter writes the snapshots maybeSnapshot starts, until stop.
func (v *Validator) snapshotWriter() {
	defer v.wg.Done()
	for {
		select {
		case <-v.stop:
			return
		case j := <-v.snap.jobs:
			err := v.writeSnapshot(j)
			j.exp.Close()
			if err != nil {
				v.log.Warn("snapshot failed", "height", j.h, "err", err)
			}
			v.upkeep(j)
		}
	}
}

// upkeep gives disk space back after a snapshot (the writer's, off the
// loop): the state store's memtable is flushed, which releases its
// write-ahead log, and with retention the job archive, which pruning
// thinned, is compacted. Without it a validator's pebble logs hold every
// write since the last natural flush, and the archive keeps the pruned
// jobs' bytes under their tombstones.
func (v *Validator) upkeep(j snapJob) {
	select {
	case <-v.stop:
		return
	default:
	}
	if err := j.ps.Flush(); err != nil {
		v.log.Warn("state store flush after the snapshot failed", "height", j.h, "err", err)
	}
	if v.cfg.KeepBlocks > 0 && j.arch != nil {
		if err := j.arch.compact(); err != nil {
			v.log.Warn("job archive compaction failed", "height", j.h, "err", err)
		}
	}
}

// stopWriter is an io.Writer that fails once the validator stops.
type stopWriter struct {
	w    io.Writer
	stop <-chan struct{}
}

var errStopped = errors.New("node: stopped")

func (s stopWriter) Write(p []byte) (int, error) {
	select {
	case <-s.stop:
		return 0, errStopped
	default:
	}
	return s.w.Write(p)
}

// writeSnapshot writes j into snapshots/tmp-H, then renames it into place
// and drops the snapshots beyond SnapshotKeep.
func (v *Validator) writeSnapshot(j snapJob) error {
	core, err := snapCoreOf(j, v.hdr)
	if err != nil {
		return err
	}
	root := filepath.Join(v.dir, "snapshots")
	tmp := filepath.Join(root, "tmp-"+snapDirName(j.h))
	final := filepath.Join(root, snapDirName(j.h))
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cw := &chunkWriter{dir: tmp, size: v.cfg.SnapshotChunkSize}
	w := stopWriter{cw, v.stop}
	if _, err := w.Write(snapMagic); err != nil {
		return err
	}
	zw, err := flate.NewWriter(w, snapDeflateLevel)
	if err != nil {
		return err
	}
	sect := append(binary.AppendUvarint(nil, uint64(len(core))), core...)
	if _, err := zw.Write(sect); err != nil {
		return err
	}
	n, err := j.exp.WriteTo(zw)
	if err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := cw.close(); err != nil {
		return err
	}
	m := SnapshotMeta{Format: SnapshotFormat, Height: j.h, AppHash: j.app, Base: j.base, Size: cw.total, RawSize: uint64(len(sect)) + uint64(n),
		ChunkSize: uint32(cw.size), ChunkHashes: cw.hashes}
	mb, err := json.Marshal(m)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(mb)
	info := SnapshotInfo{Height: j.h, Format: SnapshotFormat, Chunks: uint32(len(cw.hashes)), Hash: sum[:], Metadata: mb}
	ib, err := json.Marshal(info)
	if err != nil {
		return err
	}
	if err := writeFileSync(filepath.Join(tmp, "meta.json"), ib); err != nil {
		return err
	}
	os.RemoveAll(final)
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	syncDir(root)
	v.addSnapshot(snapEntry{info, m})
	v.log.Info("snapshot written", "height", j.h, "base", j.base, "chunks", info.Chunks, "bytes", m.Size)
	return nil
}

// addSnapshot lists e and removes the snapshots beyond SnapshotKeep.
func (v *Validator) addSnapshot(e snapEntry) {
	v.snap.mu.Lock()
	l := append(slices.DeleteFunc(v.snap.list, func(x snapEntry) bool { return x.info.Height == e.info.Height }), e)
	slices.SortFunc(l, func(a, b snapEntry) int { return cmp.Compare(a.info.Height, b.info.Height) })
	var drop []snapEntry
	if n := len(l) - v.cfg.SnapshotKeep; n > 0 {
		drop, l = slices.Clone(l[:n]), l[n:]
	}
	v.snap.list = l
	if n := len(v.snap.marks); n == 0 || v.snap.marks[n-1].h < e.info.Height {
		v.snap.marks = append(v.snap.marks, snapMark{e.info.Height, e.meta.Base})
	}
	v.snap.mu.Unlock()
	for _, d := range drop {
		os.RemoveAll(filepath.Join(v.dir, "snapshots", snapDirName(d.info.Height)))
	}
}

func writeFileSync(path string, b []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// snapCoreOf builds the snapshot's node section: the reconfigurations of
// the blocks at or below j.base and the blocks above it up to j.h, read
// from the block log (its own base line included: a pruned log).
func snapCoreOf(j snapJob, hdr chainlog.Header) ([]byte, error) {
	hl, err := chainlog.EncodeHeader(hdr)
	if err != nil {
		return nil, err
	}
	c := snapCore{Height: j.h, Chain: cip11.Keccak256(hl), Base: j.base, Specs: j.specs, Reconfigurations: []chainlog.Reconfigure{}}
	f, err := os.Open(j.logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for i := 0; ; i++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		if i == 0 {
			continue
		}
		if i == 1 && bytes.HasPrefix(line, []byte(baseLinePrefix)) {
			b, err := decodeBase(line)
			if err != nil {
				return nil, err
			}
			if b.Height > j.base {
				return nil, fmt.Errorf("%w: the block log starts after %d, the snapshot's base is %d", ErrBlockLog, b.Height, j.base)
			}
			c.Reconfigurations = append(c.Reconfigurations, b.Reconfigurations...)
			continue
		}
		h, err := lineHeight(line)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrBlockLog, i+1, err)
		}
		switch {
		case h > j.h:
		case h > j.base:
			c.Blocks = append(c.Blocks, slices.Clone(line))
		case bytes.Contains(line, []byte(`"reconfigure"`)):
			b, err := chainlog.DecodeBlock(line)
			if err != nil {
				return nil, err
			}
			c.Reconfigurations = append(c.Reconfigurations, reconfsOf(&b)...)
		}
		if h >= j.h {
			break
		}
	}
	if uint64(len(c.Blocks)) != j.h-j.base {
		return nil, fmt.Errorf("%w: the block log holds %d of the blocks %d … %d", ErrBlockLog, len(c.Blocks), j.base+1, j.h)
	}
	return json.Marshal(c)
}

// chunkWriter cuts a stream into files of size bytes, hashing each.
type chunkWriter struct {
	dir    string
	size   int
	buf    []byte
	hashes []cip11.Hash
	total  uint64
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(c.size-len(c.buf), len(p))
		c.buf = append(c.buf, p[:k]...)
		p = p[k:]
		if len(c.buf) == c.size {
			if err := c.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (c *chunkWriter) flush() error {
	if err := writeFileSync(filepath.Join(c.dir, chunkName(len(c.hashes))), c.buf); err != nil {
		return err
	}
	c.hashes = append(c.hashes, sha256.Sum256(c.buf))
	c.total += uint64(len(c.buf))
	c.buf = c.buf[:0]
	return nil
}

func (c *chunkWriter) close() error {
	if len(c.buf) > 0 || len(c.hashes) == 0 {
		return c.flush()
	}
	return nil
}

// snapshotReader streams a snapshot directory's chunks in order.
func snapshotReader(dir string, chunks uint32) io.Reader {
	rs := make([]io.Reader, 0, chunks)
	for i := range int(chunks) {
		rs = append(rs, &lazyFile{path: filepath.Join(dir, chunkName(i))})
	}
	return io.MultiReader(rs...)
}

// lazyFile opens its file at the first Read and closes it at EOF.
type lazyFile struct {
	path string
	f    *os.File
	done bool
}

func (l *lazyFile) Read(p []byte) (int, error) {
	if l.done {
		return 0, io.EOF
	}
	if l.f == nil {
		f, err := os.Open(l.path)
		if err != nil {
			return 0, err
		}
		l.f = f
	}
	n, err := l.f.Read(p)
	if errors.Is(err, io.EOF) {
		l.f.Close()
		l.done = true
	}
	return n, err
}

// readSnapCore reads the stream's magic and node section and returns the
// reader of the store's export that follows. The stream must be of m's
// format; m.Size (format 1) or m.RawSize (format 2, which also bounds the
// inflated stream) bounds the section.
func readSnapCore(r *bufio.Reader, m SnapshotMeta) (*snapCore, *bufio.Reader, error) {
	magic := make([]byte, len(snapMagic))
	_, err := io.ReadFull(r, magic)
	body, size := r, m.Size
	switch {
	case err == nil && m.Format == SnapshotFormat && bytes.Equal(magic, snapMagic):
		body, size = bufio.NewReaderSize(io.LimitReader(flate.NewReader(r), int64(min(m.RawSize, math.MaxInt64))), 1<<20), m.RawSize
	case err == nil && m.Format == snapshotFormatPlain && bytes.Equal(magic, snapMagicPlain):
	default:
		return nil, nil, fmt.Errorf("%w: not a format-%d snapshot stream", ErrSnapshot, m.Format)
	}
	n, err := binary.ReadUvarint(body)
	if err != nil || n > size {
		return nil, nil, fmt.Errorf("%w: node section of %d bytes in a %d-byte snapshot (%v)", ErrSnapshot, n, size, err)
	}
	b, err := io.ReadAll(io.LimitReader(body, int64(n))) // grows with the bytes that arrive, not with n
	if err == nil && uint64(len(b)) != n {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: node section: %w", ErrSnapshot, err)
	}
	var c snapCore
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil || d.More() {
		return nil, nil, fmt.Errorf("%w: node section: %v", ErrSnapshot, err)
	}
	return &c, body, nil
}

// maxDeflateRatio bounds format 2's raw_size against its size: deflate
// expands at most about 1032 to 1.
const maxDeflateRatio = 1032

// retain prunes behind the newest snapshot at least KeepBlocks below h
// (loop only, at commit): the block log (and its times) to that
// snapshot's base, the job archive likewise. It returns the height from
// which the engine must keep blocks (0: everything).
func (v *Validator) retain(h uint64) uint64 {
	n := v.cfg.KeepBlocks
	if n == 0 {
		return 0
	}
	var base uint64
	v.snap.mu.Lock()
	i := 0
	for i < len(v.snap.marks) && v.snap.marks[i].h+n <= h {
		base = max(base, v.snap.marks[i].base)
		i++
	}
	if i > 1 { // the last one passed stays: the next passes only go higher
		v.snap.marks = v.snap.marks[i-1:]
	}
	v.snap.mu.Unlock()
	if base > v.blog.base.Height {
		if err := v.blog.prune(base); err != nil {
			v.log.Warn("block log pruning failed", "base", base, "err", err)
		} else {
			v.log.Info("block log pruned", "base", base, "height", h)
		}
		if err := v.archive.prune(base); err != nil {
			v.log.Warn("job archive pruning failed", "base", base, "err", err)
		}
	}
	if v.blog.base.Height == 0 {
		return 0
	}
	return v.blog.base.Height + 1
}

// RestoredFrom is the height of the snapshot this validator was restored
// from since it started (state sync), 0 if none.
func (v *Validator) RestoredFrom() uint64 { return v.restoredFrom.Load() }

// EarliestHeight is the lowest height whose block this validator holds
// (1 on an unpruned log).
func (v *Validator) EarliestHeight() uint64 { return v.earliest.Load() }
