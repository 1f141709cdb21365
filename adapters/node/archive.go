package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	pdb "github.com/cockroachdb/pebble/v2"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
)

// jobArchive is the compact on-disk index of jobs pruned from memory
// (chain.Archive): a Pebble database under the data directory, job id →
// the job's final view as JSON. It is not consensus state: it is rebuilt
// from the block log whenever the tracker replays it, so it is written
// without fsync.
//
// Beside each view it keeps a listing index entry (GET /jobs), written in
// the same batch: key indexPrefix ‖ job.Key (8-byte big-endian height ‖
// 32-byte id), value submitter (20 bytes) ‖ state. One entry per archived
// job, so the index is bounded by the archive. An archive written before
// the index existed is indexed once at open (indexMarker).
type jobArchive struct {
	db *pdb.DB
}

type archiveLogger struct{ log *slog.Logger }

func (l archiveLogger) Infof(string, ...any) {}
func (l archiveLogger) Errorf(f string, a ...any) {
	l.log.Error("job archive: " + fmt.Sprintf(f, a...))
}
func (l archiveLogger) Fatalf(f string, a ...any) {
	l.log.Error("job archive: fatal: " + fmt.Sprintf(f, a...))
}

func openArchive(dir string, log *slog.Logger) (*jobArchive, error) {
	db, err := pdb.Open(dir, &pdb.Options{Logger: archiveLogger{log}, MemTableSize: 4 << 20, CacheSize: 4 << 20})
	if err != nil {
		return nil, fmt.Errorf("job archive %s: %w", dir, err)
	}
	a := &jobArchive{db: db}
	if err := a.ensureIndex(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("job archive %s: listing index: %w", dir, err)
	}
	return a, nil
}

// Archive keys: a view's key is its 32-byte job id; index keys are longer
// and start with indexPrefix; indexMarker says the index is complete.
const (
	indexPrefix = "\x00jobs/by-key/"
	indexMarker = "\x00jobs/index-v1"
	idLen       = len(cip11.Hash{})
)

func indexKey(k job.Key) []byte {
	b := make([]byte, 0, len(indexPrefix)+8+idLen)
	b = append(b, indexPrefix...)
	b = binary.BigEndian.AppendUint64(b, k.Height)
	return append(b, k.ID[:]...)
}

func indexValue(v job.View) []byte {
	return append(v.Submitter[:len(v.Submitter):len(v.Submitter)], v.State...)
}

// ensureIndex indexes an archive written before the listing index existed.
func (a *jobArchive) ensureIndex() error {
	if _, closer, err := a.db.Get([]byte(indexMarker)); err == nil {
		return closer.Close()
	} else if !errors.Is(err, pdb.ErrNotFound) {
		return err
	}
	it, err := a.db.NewIter(nil)
	if err != nil {
		return err
	}
	b := a.db.NewBatch()
	defer b.Close()
	for it.First(); it.Valid(); it.Next() {
		if len(it.Key()) != idLen {
			continue
		}
		var v job.View
		if err := json.Unmarshal(it.Value(), &v); err != nil {
			_ = it.Close()
			return fmt.Errorf("view %x: %w", it.Key(), err)
		}
		if err := b.Set(indexKey(job.KeyOf(v)), indexValue(v), nil); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	if err := b.Set([]byte(indexMarker), nil, nil); err != nil {
		return err
	}
	return b.Commit(pdb.NoSync)
}

// List implements chain.ArchiveLister: it walks the index newest first
// from q.After, reading the view of each entry that matches q.
func (a *jobArchive) List(q job.Query) ([]job.View, error) {
	upper := []byte(indexPrefix + "\xff")
	if q.After != nil {
		upper = indexKey(*q.After)
	}
	it, err := a.db.NewIter(&pdb.IterOptions{LowerBound: []byte(indexPrefix), UpperBound: upper})
	if err != nil {
		return nil, err
	}
	var out []job.View
	for ok := it.Last(); ok && len(out) < q.Limit; ok = it.Prev() {
		k, val := it.Key()[len(indexPrefix):], it.Value()
		if len(k) != 8+idLen || len(val) < len(cip11.Address{}) {
			continue
		}
		var key job.Key
		key.Height = binary.BigEndian.Uint64(k)
		copy(key.ID[:], k[8:])
		var sub cip11.Address
		copy(sub[:], val)
		if !q.MatchKey(key, job.State(val[len(sub):]), sub) {
			continue
		}
		v, found, err := a.Get(key.ID)
		if err != nil {
			_ = it.Close()
			return nil, err
		}
		if found {
			out = append(out, v)
		}
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	return out, nil
}

// Put implements chain.Archive.
func (a *jobArchive) Put(views []job.View) error {
	b := a.db.NewBatch()
	defer b.Close()
	for _, v := range views {
		val, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if old, ok, err := a.Get(v.ID); err == nil && ok && job.KeyOf(old) != job.KeyOf(v) {
			if err := b.Delete(indexKey(job.KeyOf(old)), nil); err != nil {
				return err
			}
		}
		if err := b.Set(v.ID[:], val, nil); err != nil {
			return err
		}
		if err := b.Set(indexKey(job.KeyOf(v)), indexValue(v), nil); err != nil {
			return err
		}
	}
	return b.Commit(pdb.NoSync)
}

// prune drops the jobs submitted at or below base (retention,
// ValidatorConfig.KeepBlocks), their views and index entries.
func (a *jobArchive) prune(base uint64) error {
	lo := []byte(indexPrefix)
	hi := indexKey(job.Key{Height: base + 1})
	it, err := a.db.NewIter(&pdb.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	b := a.db.NewBatch()
	defer b.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != len(indexPrefix)+8+idLen {
			continue
		}
		_ = b.Delete(k[len(k)-idLen:], nil)
		_ = b.Delete(k, nil)
	}
	if err := it.Close(); err != nil {
		return err
	}
	if err := b.DeleteRange(lo, hi, nil); err != nil {
		return err
	}
	return b.Commit(pdb.NoSync)
}

// compact compacts the whole archive, so that the space of the jobs prune
// dropped is given back (its tombstones alone would wait for pebble's own
// compactions). The archive holds KeepBlocks blocks' jobs: this is cheap,
// and the snapshot writer runs it off the loop.
func (a *jobArchive) compact() error {
	return a.db.Compact(context.Background(), []byte{0}, bytes.Repeat([]byte{0xff}, idLen+len(indexPrefix)+8), false)
}

// Get implements chain.Archive.
func (a *jobArchive) Get(id cip11.Hash) (job.View, bool, error) {
	val, closer, err := a.db.Get(id[:])
	if errors.Is(err, pdb.ErrNotFound) {
		return job.View{}, false, nil
	}
	if err != nil {
		return job.View{}, false, err
	}
	defer closer.Close()
	var v job.View
	if err := json.Unmarshal(val, &v); err != nil {
		return job.View{}, false, err
	}
	return v, true, nil
}

func (a *jobArchive) close() error { return a.db.Close() }
