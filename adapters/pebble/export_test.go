package pebble

// SetCommitHook installs f to run inside Commit just before (stage 0) and
// just after (stage 1) the pebble batch commit; the crash test kills its
// child process there.
func SetCommitHook(s *Store, f func(stage int)) { s.commitHook = f }
