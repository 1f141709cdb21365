package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// ErrNoGenesis is a command's complaint that the genesis, key or home it
// was told to read does not exist: the operator has not run cip11 genesis
// yet (or ran it into another directory).
var ErrNoGenesis = errors.New("no genesis")

// genesisFirst wraps a missing file's error with ErrNoGenesis and the
// command line that writes it; other errors pass unchanged.
func genesisFirst(err error, cmdline string) error {
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return fmt.Errorf("%w: %w; run `%s` first", ErrNoGenesis, err, cmdline)
}

// singleGenesisCmd is the cip11 genesis command line that writes the
// single-validator genesis at path.
func singleGenesisCmd(path string) string {
	return "cip11 genesis -o " + filepath.Dir(path)
}

// networkGenesisCmd is the cip11 genesis command line that writes the
// network whose home is home (DIR/v<i>).
func networkGenesisCmd(home string) string {
	return "cip11 genesis -validators N -o " + filepath.Dir(filepath.Clean(home))
}
