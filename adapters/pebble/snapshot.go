package pebble

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"

	pdb "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cip11/cip11/store"
)

// Snapshots of the whole store at a committed height: Export streams
// every key and value of the database, Import rebuilds an identical store
// from such a stream (docs/storage.md "Snapshots (export/import)").

// SnapshotMagic opens every snapshot stream.
const SnapshotMagic = "CIP11SNP"

// SnapshotVersion is the snapshot stream format this code writes and reads.
const SnapshotVersion = 1

// Bounds of a snapshot stream's records, checked before anything is read
// into memory.
const (
	// MaxSnapshotKey is the longest key a stream may carry.
	MaxSnapshotKey = 4 << 10
	// MaxSnapshotValue is the longest value a stream may carry.
	MaxSnapshotValue = 16 << 20
)

const (
	snapTagRecord  = 0x01
	snapTagEnd     = 0x00
	snapHeaderLen  = len(SnapshotMagic) + 4 + 8
	snapRecHdrLen  = 1 + 2 + 4
	importBatchLen = 4 << 20 // bytes per pebble batch of Import
)

// Errors of Export and Import.
var (
	// ErrBatchOpen: Export was called while a block batch is open; a
	// snapshot is taken at a commit boundary only. The error also wraps
	// store.ErrBatchOpen.
	ErrBatchOpen = errors.New("pebble store: export while a block batch is open")
	// ErrSnapshotCorrupt: Import could not rebuild a store from the
	// stream (bad magic or version, broken framing, a length out of
	// bounds, keys not strictly ascending, a checksum or record count
	// that does not match, bytes after the checksum, a truncated or
	// failing reader, or a rebuilt database that Open refuses). It wraps
	// the cause.
	ErrSnapshotCorrupt = errors.New("pebble store: corrupt snapshot")
	// ErrImportTarget: Import's directory exists and is not empty (or is
	// in use); nothing in it was touched.
	ErrImportTarget = errors.New("pebble store: import directory is not empty")
)

// Export is a consistent view of the whole store at a committed height,
// taken by [Store.Export]. WriteTo may run on any goroutine while the
// store goes on committing blocks, and several WriteTo calls may run at
// once. Close releases it; closing the Store closes it too.
type Export struct {
	s      *Store
	height uint64
	stop   atomic.Bool // set by Close: a WriteTo in progress returns

	mu       sync.Mutex
	snap     *pdb.Snapshot // nil once released
	closed   bool
	running  int           // WriteTo calls in progress
	released chan struct{} // closed when snap is released
}

// Export takes a snapshot of the committed state: every key of the
// database as of the last Commit, and that height (0 if nothing was
// committed). It does no I/O (a pebble snapshot), so it can be called on
// the consensus loop right after Commit. With a block batch open it
// returns an error wrapping ErrBatchOpen; a failed store (Err) returns
// its failure. The snapshot pins the files and memtables it sees until
// Close.
func (s *Store) Export() (*Export, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if s.open {
		return nil, fmt.Errorf("%w (%w): block %d", ErrBatchOpen, store.ErrBatchOpen, s.batchH)
	}
	if err := s.health.Err(); err != nil {
		return nil, err
	}
	e := &Export{s: s, height: s.committed, snap: s.db.NewSnapshot(), released: make(chan struct{})}
	s.snapMu.Lock()
	if s.exports == nil {
		s.exports = make(map[*Export]struct{})
	}
	s.exports[e] = struct{}{}
	s.snapMu.Unlock()
	return e, nil
}

// Height is the committed height the export shows (0 for a store with
// nothing committed).
func (e *Export) Height() uint64 { return e.height }

// Close releases the export's pebble snapshot. A WriteTo in progress
// returns an error wrapping store.ErrClosed at its next record, and the
// snapshot is released when it has. Closing twice is a no-op.
func (e *Export) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closeLocked()
}

// shut is Close for Store.Close: it also waits for the snapshot to be
// released (by the last WriteTo in progress, if any).
func (e *Export) shut() error {
	e.mu.Lock()
	err := e.closeLocked()
	e.mu.Unlock()
	<-e.released
	return err
}

func (e *Export) closeLocked() error {
	if e.closed {
		return nil
	}
	e.closed = true
	e.stop.Store(true)
	if e.running == 0 {
		return e.release()
	}
	return nil
}

// release closes the snapshot (e.mu held, nothing reading it) and forgets
// the export in its store: until then Store.Close waits for it.
func (e *Export) release() error {
	err := e.snap.Close()
	e.snap = nil
	close(e.released)
	e.s.snapMu.Lock()
	delete(e.s.exports, e)
	e.s.snapMu.Unlock()
	return err
}

// WriteTo writes the snapshot stream of the export to w (the format of
// docs/storage.md "Snapshots (export/import)"): every key and value of
// the database in key order, framed, counted and checksummed. It returns
// the bytes written. After Close, or once the Store is closed, it returns
// an error wrapping store.ErrClosed.
func (e *Export) WriteTo(w io.Writer) (n int64, err error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return 0, fmt.Errorf("pebble store: export: %w", store.ErrClosed)
	}
	e.running++
	snap := e.snap
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.running--; e.running == 0 && e.closed {
			err = errors.Join(err, e.release())
		}
	}()
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	sum := sha256.New()
	out := io.MultiWriter(bw, sum)
	hdr := make([]byte, 0, snapHeaderLen)
	hdr = append(hdr, SnapshotMagic...)
	hdr = binary.BigEndian.AppendUint32(hdr, SnapshotVersion)
	hdr = binary.BigEndian.AppendUint64(hdr, e.height)
	if _, err := out.Write(hdr); err != nil {
		return cw.n, err
	}
	it, err := snap.NewIter(nil)
	if err != nil {
		return cw.n, wrapCorrupt(err)
	}
	var count uint64
	rec := make([]byte, snapRecHdrLen)
	for ok := it.First(); ok; ok = it.Next() {
		if e.stop.Load() {
			return cw.n, errors.Join(fmt.Errorf("pebble store: export: %w", store.ErrClosed), it.Close())
		}
		k := it.Key()
		v, err := it.ValueAndErr()
		if err == nil && (len(k) == 0 || len(k) > MaxSnapshotKey || len(v) > MaxSnapshotValue) {
			err = fmt.Errorf("pebble store: export: key %q: %d-byte key, %d-byte value out of the snapshot bounds", k, len(k), len(v))
		}
		if err != nil {
			return cw.n, errors.Join(wrapCorrupt(err), it.Close())
		}
		rec[0] = snapTagRecord
		binary.BigEndian.PutUint16(rec[1:], uint16(len(k)))
		binary.BigEndian.PutUint32(rec[3:], uint32(len(v)))
		if _, err := out.Write(rec); err == nil {
			if _, err = out.Write(k); err == nil {
				_, err = out.Write(v)
			}
			if err != nil {
				return cw.n, errors.Join(err, it.Close())
			}
		} else {
			return cw.n, errors.Join(err, it.Close())
		}
		count++
	}
	if err := errors.Join(wrapCorrupt(it.Error()), wrapCorrupt(it.Close())); err != nil {
		return cw.n, err
	}
	end := binary.BigEndian.AppendUint64([]byte{snapTagEnd}, count)
	if _, err := out.Write(end); err != nil {
		return cw.n, err
	}
	if _, err := bw.Write(sum.Sum(nil)); err != nil {
		return cw.n, err
	}
	err = bw.Flush() // before reading cw.n: Go leaves the order of a return's operands open
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Import builds a new store in dir from a snapshot stream written by
// [Export.WriteTo] and opens it with o (Options.Retention should be the
// exporting store's: a shorter window prunes more history on the next
// Commit). dir must not exist or be empty (else ErrImportTarget). The
// stream is checked as it is read — magic, version, framing, the bounds
// MaxSnapshotKey and MaxSnapshotValue, strictly ascending keys, the
// record count and the trailing sha256, and that nothing follows it —
// its pairs are written in bounded pebble batches, and the result is
// opened by [Open], which checks the format key, the height marker and
// the registry; the opened store's committed height must be the stream's.
// These checks establish the stream's integrity, not that its state is the
// chain's: a caller restoring from an untrusted source compares the state
// digest.
// Any failure removes what Import created (dir itself if it did not
// exist, else its contents) and returns an error wrapping
// ErrSnapshotCorrupt and the cause.
func Import(dir string, r io.Reader, o Options) (*Store, error) {
	fsys := o.fs
	if fsys == nil {
		fsys = vfs.Default
	}
	if dir == "" {
		return nil, fmt.Errorf("%w: empty directory name", ErrImportTarget)
	}
	created := false
	switch entries, err := fsys.List(dir); {
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %w", ErrImportTarget, dir, err)
	case len(entries) > 0:
		return nil, fmt.Errorf("%w: %s holds %d entries", ErrImportTarget, dir, len(entries))
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: mkdir %s: %w", ErrSnapshotCorrupt, dir, err)
	}
	lock, err := pdb.LockDirectory(dir, fsys)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%w: %s: lock: %w", ErrImportTarget, dir, err), cleanDir(fsys, dir, created))
	}
	// A concurrent Import or Open may have filled dir since the check.
	if entries, err := fsys.List(dir); err != nil || slices.ContainsFunc(entries, func(n string) bool { return n != "LOCK" }) {
		return nil, errors.Join(fmt.Errorf("%w: %s is being written by another", ErrImportTarget, dir), lock.Close())
	}
	height, err := importDB(dir, fsys, r, o, lock)
	err = errors.Join(err, lock.Close())
	var s *Store
	if err == nil {
		s, err = Open(dir, o)
	}
	if err == nil {
		h, ok, _ := s.LastCommitted()
		if (ok && h != height) || (!ok && height != 0) {
			err = errors.Join(fmt.Errorf("stream height %d, store's committed height %d (committed: %v)", height, h, ok), s.Close())
		}
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%w: %w", ErrSnapshotCorrupt, err), cleanDir(fsys, dir, created))
	}
	return s, nil
}

// cleanDir removes what Import wrote: dir if it created it, else dir's
// contents.
func cleanDir(fsys vfs.FS, dir string, created bool) error {
	if created {
		return fsys.RemoveAll(dir)
	}
	entries, err := fsys.List(dir)
	for _, n := range entries {
		err = errors.Join(err, fsys.RemoveAll(fsys.PathJoin(dir, n)))
	}
	return err
}

// importDB writes the stream's pairs into a new pebble database in dir
// and returns the stream's height.
func importDB(dir string, fsys vfs.FS, r io.Reader, o Options, lock *pdb.Lock) (uint64, error) {
	cache := o.CacheSize
	if cache <= 0 {
		cache = DefaultCacheSize
	}
	po := dbOptions(fsys, cache, newHealth(dir, o.Logger))
	po.Lock, po.ErrorIfExists = lock, true
	db, err := pdb.Open(dir, po)
	if err != nil {
		return 0, err
	}
	b := db.NewBatch()
	height, err := decodeSnapshot(r, func(k, v []byte) error {
		if err := b.Set(k, v, nil); err != nil {
			return err
		}
		if b.Len() < importBatchLen {
			return nil
		}
		err := b.Commit(pdb.NoSync)
		b.Reset()
		return err
	})
	if err == nil {
		err = b.Commit(pdb.Sync) // the WAL sync makes every batch durable
	}
	return height, errors.Join(err, b.Close(), db.Close())
}

// decodeSnapshot reads and checks a whole snapshot stream, calling put for
// every record in order (k and v are valid only during the call), and
// returns its height. Nothing is allocated beyond the bounds and what was
// read.
func decodeSnapshot(r io.Reader, put func(k, v []byte) error) (uint64, error) {
	d := &snapDecoder{r: bufio.NewReaderSize(r, 64<<10), sum: sha256.New()}
	hdr, err := d.read(nil, snapHeaderLen)
	if err != nil {
		return 0, fmt.Errorf("header: %w", err)
	}
	if string(hdr[:len(SnapshotMagic)]) != SnapshotMagic {
		return 0, fmt.Errorf("bad magic %q", hdr[:len(SnapshotMagic)])
	}
	if v := binary.BigEndian.Uint32(hdr[len(SnapshotMagic):]); v != SnapshotVersion {
		return 0, fmt.Errorf("unknown snapshot version %d (this code reads %d)", v, SnapshotVersion)
	}
	height := binary.BigEndian.Uint64(hdr[len(SnapshotMagic)+4:])
	var (
		count      uint64
		prev, k, v []byte
		sawFormat  bool
	)
	for {
		tag, err := d.read(nil, 1)
		if err != nil {
			return 0, fmt.Errorf("record %d: %w", count, err)
		}
		if tag[0] == snapTagEnd {
			break
		}
		if tag[0] != snapTagRecord {
			return 0, fmt.Errorf("record %d: unknown tag %#x", count, tag[0])
		}
		lens, err := d.read(nil, 6)
		if err != nil {
			return 0, fmt.Errorf("record %d: %w", count, err)
		}
		kl, vl := int(binary.BigEndian.Uint16(lens)), int(binary.BigEndian.Uint32(lens[2:]))
		if kl == 0 || kl > MaxSnapshotKey || vl > MaxSnapshotValue {
			return 0, fmt.Errorf("record %d: %d-byte key, %d-byte value out of bounds (key 1..%d, value ≤ %d)", count, kl, vl, MaxSnapshotKey, MaxSnapshotValue)
		}
		if k, err = d.read(k, kl); err != nil {
			return 0, fmt.Errorf("record %d: key: %w", count, err)
		}
		if count > 0 && bytes.Compare(prev, k) >= 0 {
			return 0, fmt.Errorf("record %d: key %q not above its predecessor %q", count, k, prev)
		}
		if v, err = d.read(v, vl); err != nil {
			return 0, fmt.Errorf("record %d: value: %w", count, err)
		}
		if err := put(k, v); err != nil {
			return 0, fmt.Errorf("record %d: write: %w", count, err)
		}
		sawFormat = sawFormat || string(k) == keyFormat
		prev, k = k, prev
		count++
	}
	cnt, err := d.read(nil, 8)
	if err != nil {
		return 0, fmt.Errorf("record count: %w", err)
	}
	want := d.sum.Sum(nil)
	d.sum = nil // the checksum is not part of itself
	got, err := d.read(nil, sha256.Size)
	switch {
	case err != nil:
		return 0, fmt.Errorf("checksum: %w", err)
	case !bytes.Equal(got, want):
		return 0, errors.New("checksum mismatch")
	case binary.BigEndian.Uint64(cnt) != count:
		return 0, fmt.Errorf("record count %d, stream holds %d", binary.BigEndian.Uint64(cnt), count)
	case !sawFormat:
		return 0, errors.New("no format key: not a store's snapshot")
	}
	if _, err := d.r.ReadByte(); err != io.EOF {
		if err == nil {
			err = errors.New("bytes after the checksum")
		}
		return 0, err
	}
	return height, nil
}

// snapDecoder reads a stream and hashes what it reads.
type snapDecoder struct {
	r   *bufio.Reader
	sum hash.Hash
}

// read reads exactly n bytes into buf (reused) in steps of at most 64 KiB,
// so a length the stream does not back is never allocated in full.
func (d *snapDecoder) read(buf []byte, n int) ([]byte, error) {
	buf = buf[:0]
	for n > 0 {
		c := min(n, 64<<10)
		buf = slices.Grow(buf, c)
		part := buf[len(buf) : len(buf)+c]
		if _, err := io.ReadFull(d.r, part); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if d.sum != nil {
			d.sum.Write(part)
		}
		buf, n = buf[:len(buf)+c], n-c
	}
	return buf, nil
}

// Flush writes the memtable out to an sstable, so that its write-ahead log
// (every write since the last flush, overwritten and deleted keys
// included) is released and the space of superseded versions can be
// compacted away (a validator calls it after each snapshot: with a 64 MiB
// memtable a quiet store would otherwise keep weeks of writes in its
// log). Safe with concurrent commits; after Close it returns
// store.ErrClosed.
func (s *Store) Flush() error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.db.Flush()
}
