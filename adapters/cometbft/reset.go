package cometbft

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	cmtjson "github.com/cometbft/cometbft/libs/json"
	"github.com/cometbft/cometbft/privval"

	"github.com/cip11/cip11/adapters/node"
)

// ErrHomeInUse: a validator process holds the home's stores open.
var ErrHomeInUse = fmt.Errorf("%w: a validator is running on this home", node.ErrBadRequest)

// ResetReport is what ResetHome did.
type ResetReport struct {
	// Removed are the paths removed (CometBFT's stores under data/ and
	// the validator's node/ directory).
	Removed []string
	// SignState is the last-sign state file kept (or written).
	SignState string
	// SignedHeight is the height the kept or written state holds: the
	// validator signs nothing below it (and nothing at it that conflicts
	// with the recorded step).
	SignedHeight int64
	// Wrote: the state file was (re)written from signedHeight.
	Wrote bool
}

// ResetHome clears a validator home's chain state, so that the validator
// rebuilds it from its peers when it starts again: CometBFT's stores
// (everything under data/ but priv_validator_state.json: the block and
// state stores, the consensus WAL, the evidence store) and the CIP-11
// validator's node/ directory (state, block log, job file, archive). The
// keys, the configuration, the genesis and the vote key's last-sign state
// are kept: the state is the double-sign protection (CometBFT's
// reset-state is the model; its unsafe-reset-all, which forgets it, has
// no equivalent here).
//
// A home whose state file is missing is refused (ErrSignStateMissing)
// unless signedHeight is positive: then a state is written under which
// the validator signs nothing at or below signedHeight (height
// signedHeight+1, round 0, step 0), or an existing state at a greater
// height is kept. A home that a running validator holds is refused
// (ErrHomeInUse).
func ResetHome(dir string, signedHeight int64) (*ResetReport, error) {
	h, err := ReadHome(dir)
	if err != nil {
		return nil, err
	}
	if signedHeight < 0 {
		return nil, fmt.Errorf("%w: signed height %d is negative", node.ErrBadRequest, signedHeight)
	}
	data, nodeDir := h.Config.DBDir(), filepath.Join(dir, "node")
	for _, d := range []string{data, nodeDir} {
		if err := notLocked(d); err != nil {
			return nil, err
		}
	}
	statePath := h.Config.PrivValidatorStateFile()
	rep := &ResetReport{SignState: statePath}
	cur, err := readSignState(statePath)
	switch {
	case errors.Is(err, os.ErrNotExist) && signedHeight == 0:
		return nil, checkSignState(h.Config) // the refusal and its remedy
	case errors.Is(err, os.ErrNotExist):
	case err != nil && signedHeight == 0:
		return nil, checkSignState(h.Config)
	case err == nil:
		rep.SignedHeight = cur.Height
	}
	if signedHeight > 0 && (cur == nil || cur.Height <= signedHeight) {
		if err := writeSignState(statePath, signedHeight+1); err != nil {
			return nil, err
		}
		rep.SignedHeight, rep.Wrote = signedHeight+1, true
	}
	ents, err := os.ReadDir(data)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		p := filepath.Join(data, e.Name())
		if p == filepath.Clean(statePath) {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return rep, err
		}
		rep.Removed = append(rep.Removed, p)
	}
	if _, err := os.Stat(nodeDir); err == nil {
		if err := os.RemoveAll(nodeDir); err != nil {
			return rep, err
		}
		rep.Removed = append(rep.Removed, nodeDir)
	}
	return rep, nil
}

// readSignState decodes a last-sign state file.
func readSignState(path string) (*privval.FilePVLastSignState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st privval.FilePVLastSignState
	if err := cmtjson.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", node.ErrKeyFile, path, err)
	}
	return &st, nil
}

// writeSignState writes a last-sign state at height h, round 0, step 0
// (nothing signed at h yet), atomically and 0600.
func writeSignState(path string, h int64) error {
	b, err := cmtjson.MarshalIndent(&privval.FilePVLastSignState{Height: h}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// notLocked refuses a directory holding a Pebble store (its LOCK file)
// that another process has locked: a validator running on the home.
func notLocked(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "LOCK" {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
		if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
			return fmt.Errorf("testing the lock of %s: %w", p, err)
		}
		if lk.Type != syscall.F_UNLCK {
			return fmt.Errorf("%w: process %d holds %s; stop it first", ErrHomeInUse, lk.Pid, p)
		}
		return nil
	})
}
