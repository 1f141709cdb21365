package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
)

// fullDisk writes the first half of a record, then fails with ENOSPC, as
// a disk that fills mid-write does.
type fullDisk struct {
	*os.File
	full bool
}

func (d *fullDisk) WriteAt(b []byte, off int64) (int, error) {
	if !d.full {
		return d.File.WriteAt(b, off)
	}
	n, _ := d.File.WriteAt(b[:len(b)/2], off)
	return n, &os.PathError{Op: "write", Path: d.File.Name(), Err: syscall.ENOSPC} // as os.File says it
}

// TestJournalFullDiskLeavesNoTornLine (issue 18 item 18): an append that
// fails mid-record is cut back off, so once space returns the next
// accepted job does not run on from a torn line and the journal reopens.
func TestJournalFullDiskLeavesNoTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	j, err := writeJournal(path, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	disk := &fullDisk{File: j.f}
	j.w = disk
	spec := func(n uint64) *JobSpec {
		return &JobSpec{Submitter: cip11.Address{1}, Kind: 1, Runners: 1, TimeoutBlocks: 5, Nonce: n}
	}
	if err := j.Append(spec(1).Encode()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	disk.full = true
	err = j.Append(spec(2).Encode())
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v", err)
	}
	// The error names the journal once, not the .tmp file it was written
	// as at open (renamed since; the handle kept the old name).
	if want := "write " + path + ": no space left on device"; err.Error() != want {
		t.Errorf("append on a full disk: %q, want %q", err, want)
	}
	if after, _ := os.Stat(path); after.Size() != before.Size() {
		t.Fatalf("a failed append left %d bytes behind", after.Size()-before.Size())
	}
	disk.full = false
	if err := j.Append(spec(3).Encode()); err != nil {
		t.Fatal(err)
	}
	specs, err := readJournal(path)
	if err != nil {
		t.Fatalf("the journal does not reopen after a full disk: %v", err)
	}
	if len(specs) != 2 || specs[0].Nonce != 1 || specs[1].Nonce != 3 {
		t.Fatalf("journal holds %d specs after a failed append", len(specs))
	}
}

// TestJournalCorruptLineNamed: a complete line that does not decode is
// corruption (not a torn write) and the error names the file and line.
func TestJournalCorruptLineNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	j, err := writeJournal(path, [][]byte{(&JobSpec{Runners: 1, TimeoutBlocks: 1, Kind: 1}).Encode()}, false)
	if err != nil {
		t.Fatal(err)
	}
	j.close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"spec":"zz"}` + "\n" + `{"spec":"0`) // a corrupt line, then a torn one
	f.Close()
	_, err = readJournal(path)
	if !errors.Is(err, ErrJournal) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("corrupt journal: %v, want ErrJournal naming line 2", err)
	}
}

// TestFailedStartLeavesNoFiles (issue 18 item 15): a validator that cannot
// start on a new data directory removes what it created.
func TestFailedStartLeavesNoFiles(t *testing.T) {
	d, err := GenerateGenesis(GenesisOptions{Seed: 4, Runners: 1, QUIC: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	// the QUIC address is taken: the start fails after the storage opened
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	dir := filepath.Join(t.TempDir(), "data")
	_, err = NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: dir, Listen: v.Addr().String(), NoSync: true})
	if err == nil {
		t.Fatal("a second validator on a taken address started")
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("a failed start left %s behind (%d entries); start error: %v", dir, len(entries), err)
	}
}

// TestJournalCompactedWhileRunning: compactJournal (every 1024 blocks)
// rewrites jobs.jsonl with the open jobs only, as a start does, and the
// journal goes on appending; a restart recovers the same open jobs.
func TestJournalCompactedWhileRunning(t *testing.T) {
	d := testDevnet(t, 4, nil)
	dir := t.TempDir()
	v := newTestValidator(t, d, dir)
	for i := range 20 {
		if _, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{7, byte(i)}, Runners: 1, TimeoutBlocks: 2}); err != nil {
			t.Fatal(err)
		}
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "jobs.jsonl")
	before, _ := readJournal(path)
	if len(before) != 20 {
		t.Fatalf("journal holds %d jobs before compaction", len(before))
	}
	if err := v.do(func(c *chain.Core) { v.compactJournal(c) }); err != nil {
		t.Fatal(err)
	}
	after, _ := readJournal(path)
	open := 0
	for i := range 20 {
		if jv, ok := v.Job((&JobSpec{Submitter: cip11.Address{7, byte(i)}, Runners: 1, TimeoutBlocks: 2}).ID()); ok && !jv.State.Terminal() {
			open++
		}
	}
	if open == 0 || open == 20 || len(after) != open {
		t.Fatalf("journal holds %d jobs after compaction, %d of the 20 are open", len(after), open)
	}
	if _, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{7, 99}, Runners: 1, TimeoutBlocks: 2}); err != nil {
		t.Fatal(err)
	}
	if got, _ := readJournal(path); len(got) != len(after)+1 {
		t.Fatalf("append after compaction: %d lines, want %d", len(got), len(after)+1)
	}
	v.Close()
	v = newTestValidator(t, d, dir)
	defer v.Close()
	if _, ok := v.Job((&JobSpec{Submitter: cip11.Address{7, 99}, Runners: 1, TimeoutBlocks: 2}).ID()); !ok {
		t.Fatal("the job journaled after the compaction is lost at the restart")
	}
}
