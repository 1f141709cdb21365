//go:build unix

package ports

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// held keeps the slot lock files open: a lock lasts while this process
// does (flock(2) locks go with the open file, so a process killed by
// SIGKILL leaves none behind).
var held []*os.File

// lockSlot takes, for this process's lifetime, the machine-wide lock of
// the 10-port slot starting at slot: false if another process holds it
// (another test binary or devnet picking ports at the same time). Without
// a lock directory it takes nothing and claim's in-process record alone
// holds the slot.
func lockSlot(slot int) bool {
	dir := filepath.Join(os.TempDir(), "cip11-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true // no lock directory: the bind check alone
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(slot)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	held = append(held, f)
	return true
}
