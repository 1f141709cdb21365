package node

import (
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
	return &jobArchive{db: db}, nil
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
		if err := b.Set(v.ID[:], val, nil); err != nil {
			return err
		}
	}
	return b.Commit(pdb.NoSync)
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
