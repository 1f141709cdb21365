// Package pebble is the on-disk [store.Store] of cip11, on
// github.com/cockroachdb/pebble/v2. The §9.2 pending-selection keys and the
// §9.4 mru_key family are stored under exactly the spec's bytes; the rest of
// the key layout (registry history, job records, markers) is documented in
// docs/storage.md.
//
// Each block is one pebble batch, built and committed by Commit together
// with the height marker. Until then the block's writes are held in memory:
// every key family read during a block has an in-memory overlay of the
// block's writes (registry, job records and their live and deadline
// indexes, pending records, mru_key records, the reputation configuration),
// so every read sees the block's own earlier writes without an indexed
// batch, and Discard drops them all.
//
// Registry history is kept as versioned keys (address ‖ ^height), so a view
// of block h seeks the newest version at or below h; views read through a
// pebble snapshot shared by every view taken between two commits, so a view
// never changes under later writes and never copies the registry. History
// older than the retention window is pruned on Commit.
//
// A Store is not safe for concurrent use, except that registry views may be
// read, and exports (Export, docs/storage.md "Snapshots (export/import)")
// written, from several goroutines while the store is open.
package pebble

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"weak"

	pdb "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/presence/modea"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
)

// FormatVersion is the on-disk format this code writes and reads. A store
// with a higher version is refused with ErrNewerFormat.
const FormatVersion = 1

// DefaultRetention is the default history window in heights. At 1 s blocks
// it is about 68 minutes: far beyond the §9.2 pending delay (r_seed is
// SELECTION_SEED_DELAY_VIEWS = 3 views after r_submit, plus finality of S
// and proposer-rotation withholding, seconds to minutes) and any timeout
// re-selection read point, with margin for a node that stalls. Pruning also
// never passes the submitted_at of a live pending record, so the block-S
// view of every pending job survives however long its seed takes.
const DefaultRetention = 4096

// SyncMode selects whether Commit fsyncs.
type SyncMode uint8

const (
	// SyncDefault is SyncAlways.
	SyncDefault SyncMode = iota
	// SyncAlways commits every block with pebble.Sync.
	SyncAlways
	// SyncNever commits with pebble.NoSync (tests, benchmarks, replays).
	SyncNever
)

// Options configures Open. The zero value is the production setting.
type Options struct {
	// Sync is the Commit durability (default: fsync every block).
	Sync SyncMode
	// Retention is the history window in heights (0: DefaultRetention).
	// At(h) below LastCommitted − Retention fails with state.ErrUnknownHeight
	// (unless a live pending record still needs it).
	Retention uint64
	// ReputationConfig is ReputationConfig_at(h) from height 0 on, written
	// when the store is created (nil: state.DefaultReputationConfig). It is
	// ignored when an existing store is opened; later changes go through
	// SetReputationConfig.
	ReputationConfig *state.ReputationConfig
	// CacheSize is pebble's block cache in bytes (0: DefaultCacheSize).
	// Every block builds a registry snapshot from a full pass over the
	// runner keys (§9.1), so the cache should hold the live registry.
	CacheSize int64
	// Logger receives the store's storage trouble, each kind once: the
	// first pebble background error (ErrStorageFailed), the first write
	// stall, the first slow disk operation (nil: slog.Default()).
	Logger *slog.Logger

	fs vfs.FS // tests: an injected file system (nil: vfs.Default)
}

// DefaultCacheSize is the block cache of Options.CacheSize 0: enough for
// the registry history of a few thousand runners over the retention
// window.
const DefaultCacheSize = 128 << 20

// Errors of Open and of reading stored values.
var (
	// ErrNotAStore: the directory holds files that are not a cip11 store.
	ErrNotAStore = errors.New("pebble store: directory is not a cip11 store")
	// ErrNewerFormat: the store was written by a newer format version.
	ErrNewerFormat = errors.New("pebble store: store format is newer than this code")
	// ErrCorrupt: a stored value does not decode, a checksum does not
	// match, or pebble reports corruption. It wraps the decode sentinel or
	// pebble's error.
	ErrCorrupt = errors.New("pebble store: corrupt store")
)

// Store is the pebble [store.Store].
type Store struct {
	mu     sync.Mutex
	db     *pdb.DB
	closed atomic.Bool
	sync   bool
	keep   uint64

	// dbMu: Close holds it to close db, Stats to read db's metrics (a
	// scrape never waits for a block commit, which holds mu).
	dbMu sync.RWMutex

	hasCommitted bool
	committed    uint64
	floor        uint64 // oldest height At serves

	// The open block: its height and its writes in order (every key and
	// value is kept as given), written to one pebble batch by Commit.
	open   bool
	batchH uint64
	w      []kvOp
	dupIt  *pdb.Iterator // the duplicate-job check's iterator of the open block

	// ACTIVE_RUNNERS in memory (append-only, mirrors the active family):
	// views share prefixes of it with a capped capacity.
	order      []cip11.Address
	orderAt    []uint64
	committedN int

	// Registry writes of the open batch, for views at the batch height.
	overlay map[cip11.Address]state.Runner
	// The registry as of the committed height, in address order, rebuilt
	// (never mutated) by a Commit that changed it, so a current view keeps
	// the slice it was given. It mirrors the current family on disk.
	reg []curRec
	// The live and deadline job families in memory (mirrors, loaded by
	// Open), including the open batch's writes; idxUndo undoes those on
	// Discard.
	live      map[[32]byte]struct{}
	due       map[uint64]map[[32]byte]struct{} // deadline → job ids
	idxUndo   []idxUndo
	idxSorted []idxUndo // Commit's scratch copy of idxUndo
	// The open batch's writes of the other families read during a block,
	// so that no read needs the pebble batch (a plain, unindexed one):
	// job records (encoded), pending records (by job id; live false:
	// deleted) and mru_key records.
	jobOv    map[[32]byte]int // job id → index in jobW
	jobW     []jobW           // in first-write order
	pendOv   map[[32]byte]pendOv
	mruOv    map[[mru.KeyLen]byte]mru.Record
	anchorOv map[cip11.Address]modea.Record // §8.3 Mode-A records
	// Mirrors of the two families every block scans (loaded by Open,
	// changed by Commit): the due-round index's keys, ascending, and the
	// mru_key records. A pebble scan walks every version and tombstone its
	// memtable holds, so scanning these families on disk cost more with
	// every block until a flush (per-block time 3.8 → 8 ms over 6,000
	// soak blocks); the mirrors cost what they hold. dueOps are the open
	// batch's index changes, in order.
	dueIdx     []string
	dueOps     []dueOp
	mruS       []store.MRUEntry // in mru_key order
	overlayCfg *state.ReputationConfig
	cfgs       []cfgVersion // committed configuration versions, ascending
	frozen     *frozenOverlay

	// commitHook, if set (tests only, export_test.go), runs inside Commit
	// just before (stage 0) and just after (stage 1) the pebble commit.
	commitHook func(stage int)

	health *health // pebble's background errors (health.go)

	snapMu  sync.Mutex
	snaps   map[*pdb.Snapshot]struct{}
	exports map[*Export]struct{} // open exports (snapshot.go), under snapMu
	cur     weak.Pointer[snapRef]
}

var _ store.Store = (*Store)(nil)

func wrapCorrupt(err error) error {
	if err != nil && pdb.IsCorruptionError(err) && !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}

// Open opens the cip11 store in dir, creating it if dir is missing or
// empty. A directory with other content wraps ErrNotAStore, a newer format
// ErrNewerFormat, an undecodable marker ErrCorrupt.
func Open(dir string, o Options) (*Store, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: empty directory name", ErrNotAStore)
	}
	fsys := o.fs
	if fsys == nil {
		fsys = vfs.Default
	}
	fresh := false
	entries, err := fsys.List(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fresh = true
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrNotAStore, err)
	case len(entries) == 0:
		fresh = true
	}
	if !fresh {
		desc, err := pdb.Peek(dir, fsys)
		switch {
		case err != nil && pdb.IsCorruptionError(err):
			return nil, wrapCorrupt(err)
		case err != nil:
			return nil, fmt.Errorf("%w: %w", ErrNotAStore, err)
		case !desc.Exists:
			return nil, fmt.Errorf("%w: %s holds no pebble database", ErrNotAStore, dir)
		}
	}
	cache := o.CacheSize
	if cache <= 0 {
		cache = DefaultCacheSize
	}
	// A 64 MiB memtable (CockroachDB's setting) holds a few hundred
	// 1,000-job blocks, so most reads of recent state stay in memory and
	// L0 gets few files.
	h := newHealth(dir, o.Logger)
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pebble store: open %s: %w", dir, err)
	}
	// The directory lock first, so that a store in use says so.
	lock, err := pdb.LockDirectory(dir, fsys)
	if err != nil {
		if lockInUse(err) {
			return nil, &dirInUseError{dir: dir, cause: err}
		}
		return nil, fmt.Errorf("pebble store: open %s: lock: %w", dir, err)
	}
	defer lock.Close() // the database holds its own reference while open
	po := dbOptions(fsys, cache, h)
	po.Lock, po.ErrorIfNotExists = lock, !fresh
	db, err := openDB(dir, po, h)
	if err != nil {
		if errors.Is(err, ErrStorageFailed) {
			return nil, err
		}
		if pdb.IsCorruptionError(err) {
			return nil, wrapCorrupt(err)
		}
		return nil, fmt.Errorf("pebble store: open %s: %w", dir, err)
	}
	s := &Store{
		db:       db,
		sync:     o.Sync != SyncNever,
		keep:     o.Retention,
		overlay:  make(map[cip11.Address]state.Runner),
		live:     make(map[[32]byte]struct{}),
		due:      make(map[uint64]map[[32]byte]struct{}),
		jobOv:    make(map[[32]byte]int),
		pendOv:   make(map[[32]byte]pendOv),
		mruOv:    make(map[[mru.KeyLen]byte]mru.Record),
		anchorOv: make(map[cip11.Address]modea.Record),
		snaps:    make(map[*pdb.Snapshot]struct{}),
		health:   h,
	}
	if s.keep == 0 {
		s.keep = DefaultRetention
	}
	cfg := state.DefaultReputationConfig()
	if o.ReputationConfig != nil {
		cfg = *o.ReputationConfig
	}
	if err := s.load(cfg); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return s, nil
}

// dbOptions are the pebble options of a store (Open, and Import, which
// writes the database Open then reads).
func dbOptions(fsys vfs.FS, cache int64, h *health) *pdb.Options {
	po := &pdb.Options{Logger: h, EventListener: h.listener(), FS: fsys, CacheSize: cache, MemTableSize: 64 << 20}
	for i := range po.Levels {
		// Bloom filters on every level: most point reads of a block are
		// misses (the duplicate check of each new job, absent MRU keys).
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return po
}

// openDB is pdb.Open that gives up at the store's first background
// failure (issue 18 #19). pebble's Open flushes the memtables it replayed
// from the WAL and waits for that flush; on a full disk the flush fails
// and pebble retries it for ever, so Open never returns and a restarted
// node wedged before saying anything. Here the first background error
// (the health listener) ends the wait with ErrStorageFailed. The pebble
// goroutine still inside Open is left to finish: if space returns and
// its flush succeeds it closes the database it opened (releasing the
// directory lock); the caller is expected to stop.
func openDB(dir string, po *pdb.Options, h *health) (*pdb.DB, error) {
	type opened struct {
		db  *pdb.DB
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		db, err := pdb.Open(dir, po)
		ch <- opened{db, err}
	}()
	select {
	case r := <-ch:
		return r.db, r.err
	case <-h.failed:
		go func() {
			if r := <-ch; r.db != nil {
				_ = r.db.Close()
			}
		}()
		return nil, h.Err()
	}
}

// load checks the format key, reads the height marker and ACTIVE_RUNNERS,
// or initialises an empty database.
func (s *Store) load(cfg state.ReputationConfig) error {
	v, ok, err := get(s.db, []byte(keyFormat))
	if err != nil {
		return err
	}
	if !ok {
		empty, err := isEmpty(s.db)
		if err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%w: no format key", ErrNotAStore)
		}
		b := s.db.NewBatch()
		defer b.Close()
		if err := errors.Join(
			b.Set([]byte(keyFormat), be4(FormatVersion), nil),
			b.Set(repCfgKey(0), encodeRepCfg(cfg), nil),
		); err != nil {
			return err
		}
		if err := wrapCorrupt(b.Commit(pdb.Sync)); err != nil {
			return err
		}
		s.cfgs = []cfgVersion{{0, cfg}}
		return nil
	}
	switch {
	case len(v) != 4:
		return fmt.Errorf("%w: format key is %d bytes", ErrCorrupt, len(v))
	case be4u(v) > FormatVersion:
		return fmt.Errorf("%w: format %d > %d", ErrNewerFormat, be4u(v), FormatVersion)
	case be4u(v) == 0:
		return fmt.Errorf("%w: format version 0", ErrCorrupt)
	}
	if v, ok, err := get(s.db, []byte(keyHeight)); err != nil {
		return err
	} else if ok {
		if s.committed, s.floor, err = decodeHeight(v); err != nil {
			return err
		}
		s.hasCommitted = true
	}
	err = scan(s.db, []byte(pfxActive), prefixEnd([]byte(pfxActive)), func(k, v []byte) (bool, error) {
		if len(k) != activeKeyLen || len(v) != activeValueLen || be8u(k[len(pfxActive):]) != uint64(len(s.order)) {
			return false, fmt.Errorf("%w: ACTIVE_RUNNERS entry %d", ErrCorrupt, len(s.order))
		}
		at := be8u(v[20:])
		if n := len(s.orderAt); n > 0 && at < s.orderAt[n-1] {
			return false, fmt.Errorf("%w: ACTIVE_RUNNERS entry %d appended before its predecessor", ErrCorrupt, n)
		}
		s.order = append(s.order, cip11.Address(v[:20]))
		s.orderAt = append(s.orderAt, at)
		return true, nil
	})
	s.committedN = len(s.order)
	if err != nil {
		return err
	}
	err = scan(s.db, []byte(pfxCur), prefixEnd([]byte(pfxCur)), func(k, v []byte) (bool, error) {
		if len(k) != curKeyLen {
			return false, fmt.Errorf("%w: current runner key length %d", ErrCorrupt, len(k))
		}
		r, at, err := decodeCur(cip11.Address(k[len(pfxCur):]), v)
		s.reg = append(s.reg, curRec{r, at})
		return true, err
	})
	if err == nil {
		err = s.loadJobIndex()
	}
	if err == nil {
		err = s.loadMirrors()
	}
	if err == nil && len(s.reg) != len(s.order) {
		err = fmt.Errorf("%w: %d current runner records, %d registered runners", ErrCorrupt, len(s.reg), len(s.order))
	}
	if err != nil {
		return err
	}
	// Every configuration version, ascending (the keys are ^height).
	err = scan(s.db, []byte(pfxRepCfg), prefixEnd([]byte(pfxRepCfg)), func(k, v []byte) (bool, error) {
		if len(k) != repCfgKeyLen {
			return false, fmt.Errorf("%w: reputation config key length %d", ErrCorrupt, len(k))
		}
		cfg, err := decodeRepCfg(v)
		s.cfgs = append(s.cfgs, cfgVersion{^be8u(k[len(pfxRepCfg):]), cfg})
		return true, err
	})
	slices.Reverse(s.cfgs)
	if err == nil && len(s.cfgs) == 0 {
		err = fmt.Errorf("%w: no reputation configuration", ErrCorrupt)
	}
	return err
}

// curRec is a runner's newest record and the height it was written at.
type curRec struct {
	r  state.Runner
	at uint64
}

// mergeCur is cur with the batch's writes (sorted by address) applied at h,
// as a new slice.
func mergeCur(cur []curRec, writes []state.Runner, h uint64) []curRec {
	out := make([]curRec, 0, len(cur)+len(writes))
	for len(cur) > 0 || len(writes) > 0 {
		switch {
		case len(writes) == 0:
			out, cur = append(out, cur...), nil
		case len(cur) == 0:
			out, writes = append(out, curRec{writes[0], h}), writes[1:]
		default:
			switch c := bytes.Compare(cur[0].r.Address[:], writes[0].Address[:]); {
			case c < 0:
				out, cur = append(out, cur[0]), cur[1:]
			case c > 0:
				out, writes = append(out, curRec{writes[0], h}), writes[1:]
			default:
				out, cur, writes = append(out, curRec{writes[0], h}), cur[1:], writes[1:]
			}
		}
	}
	return out
}

// findCur is the index of addr in cur, if present.
func findCur(cur []curRec, addr cip11.Address) (int, bool) {
	return slices.BinarySearchFunc(cur, addr, func(c curRec, a cip11.Address) int { return bytes.Compare(c.r.Address[:], a[:]) })
}

// cfgVersion is ReputationConfig_at(h) from height at on.
type cfgVersion struct {
	at  uint64
	cfg state.ReputationConfig
}

// cfgAt is the configuration version in force at h.
func (s *Store) cfgAt(h uint64) (state.ReputationConfig, error) {
	i := sort.Search(len(s.cfgs), func(i int) bool { return s.cfgs[i].at > h })
	if i == 0 {
		return state.ReputationConfig{}, fmt.Errorf("%w: no reputation config at or below %d", ErrCorrupt, h)
	}
	return s.cfgs[i-1].cfg, nil
}

func isEmpty(r pdb.Reader) (bool, error) {
	empty := true
	err := scan(r, nil, nil, func(_, _ []byte) (bool, error) { empty = false; return false, nil })
	return empty, err
}

// LastCommitted implements [store.Store].
func (s *Store) LastCommitted() (uint64, bool, error) {
	if err := s.lock(); err != nil {
		return 0, false, err
	}
	defer s.mu.Unlock()
	return s.committed, s.hasCommitted, nil
}

// Close implements [store.Store]: an open batch is discarded, every view
// snapshot released, and the database closed. Views of a closed store
// report store.ErrClosed from Err and show nothing. Open exports are
// closed too: Close waits for a WriteTo in progress to stop (it returns
// store.ErrClosed at its next record).
func (s *Store) Close() error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.discard()
	s.snapMu.Lock()
	s.closed.Store(true)
	var err error
	for snap := range s.snaps {
		err = errors.Join(err, snap.Close())
	}
	clear(s.snaps)
	exports := s.exports
	s.exports = nil
	s.snapMu.Unlock()
	// Every open export is stopped and its snapshot released before the
	// database closes (a WriteTo in progress returns at its next record).
	for e := range exports {
		err = errors.Join(err, e.shut())
	}
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	return errors.Join(err, s.db.Close())
}

// Registry implements [store.Store].
func (s *Store) Registry() state.Registry { return registry{s} }

// Registrar implements [store.Store].
func (s *Store) Registrar() store.Registrar { return registrar{s} }

// Jobs implements [store.Store].
func (s *Store) Jobs() engine.JobStore { return jobs{s} }

// Pending implements [store.Store].
func (s *Store) Pending() engine.PendingStore { return pending{s} }

// MRU implements [store.Store].
func (s *Store) MRU() mru.Store { return mruStore{s} }

// snapRef is a pebble snapshot of the committed state, shared by every view
// taken between two commits and closed when the last of them is collected.
// It records the committed height it shows (ok false: nothing committed).
type snapRef struct {
	snap *pdb.Snapshot
	h    uint64
	ok   bool
}

func (s *Store) snapshot() *snapRef {
	if r := s.cur.Value(); r != nil {
		return r
	}
	snap := s.db.NewSnapshot()
	s.snapMu.Lock()
	s.snaps[snap] = struct{}{}
	s.snapMu.Unlock()
	r := &snapRef{snap, s.committed, s.hasCommitted}
	runtime.AddCleanup(r, s.releaseSnapshot, snap)
	s.cur = weak.Make(r)
	return r
}

func (s *Store) releaseSnapshot(snap *pdb.Snapshot) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if _, ok := s.snaps[snap]; ok {
		delete(s.snaps, snap)
		_ = snap.Close() // nothing reads it any more
	}
}

// get reads key; a missing key is ok == false. The value is a copy.
func get(r pdb.Reader, key []byte) ([]byte, bool, error) {
	v, c, err := r.Get(key)
	if errors.Is(err, pdb.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, wrapCorrupt(err)
	}
	out := append([]byte(nil), v...)
	return out, true, c.Close()
}

// scan calls fn for every key in [lower, upper) in order until fn returns
// false or an error. k and v are valid only during the call.
func scan(r pdb.Reader, lower, upper []byte, fn func(k, v []byte) (bool, error)) error {
	it, err := r.NewIter(&pdb.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return wrapCorrupt(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return errors.Join(wrapCorrupt(err), it.Close())
		}
		more, err := fn(it.Key(), v)
		if err != nil {
			return errors.Join(err, it.Close())
		}
		if !more {
			break
		}
	}
	return errors.Join(wrapCorrupt(it.Error()), wrapCorrupt(it.Close()))
}

// set writes k → v in the open block; k and v are kept, not copied.
func (s *Store) set(k, v []byte) error {
	if !s.open {
		return store.ErrNoBatch
	}
	s.w = append(s.w, kvOp{k: k, v: v})
	return nil
}

// del deletes k in the open block; k is kept, not copied.
func (s *Store) del(k []byte) error {
	if !s.open {
		return store.ErrNoBatch
	}
	s.w = append(s.w, kvOp{k: k, del: true})
	return nil
}

func be4(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
func be4u(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
func be8u(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
