package pebble

import "github.com/cockroachdb/pebble/v2/vfs"

// SetCommitHook installs f to run inside Commit just before (stage 0) and
// just after (stage 1) the pebble batch commit; the crash test kills its
// child process there.
func SetCommitHook(s *Store, f func(stage int)) { s.commitHook = f }

// OpenFS is Open on an injected file system (errorfs in the fault tests).
func OpenFS(dir string, o Options, fs vfs.FS) (*Store, error) {
	o.fs = fs
	return Open(dir, o)
}

// AsyncFlush starts a flush of the memtable (the fault tests make it fail).
func AsyncFlush(s *Store) error {
	_, err := s.db.AsyncFlush()
	return err
}
