package node

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/chainlog"
)

// ErrJournal marks a jobs.jsonl that cannot be read (a complete line that
// does not decode: corruption, not a torn write).
var ErrJournal = errors.New("node: job journal")

// jobLine is one accepted submission in jobs.jsonl.
type jobLine struct {
	Spec chainlog.Bytes `json:"spec"`
}

// journal is jobs.jsonl: one JSON line per accepted job submission,
// appended (and, with sync, fsynced) before the submission is answered.
// A failed append is cut back off (appendRecord), so a full disk never
// leaves a torn line for the next append to run on from; a torn last line
// (a crash mid-append) is dropped at open. At open the journal is
// compacted to the jobs not yet terminal (chain.Core.FinishRecovery): the
// rest is in the block log and the archive.
type journal struct {
	path string
	f    *os.File
	w    recordFile // f, or a fault-injecting wrapper in tests
	sync bool
	size int64
}

// readJournal returns the specs of path's complete lines, in order, and
// the byte length of that prefix. An error names the line.
func readJournal(path string) (specs []*chain.JobSpec, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return specs, nil // a line without '\n' is torn: dropped
		}
		if err != nil {
			return nil, err
		}
		var jl jobLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&jl); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %w", ErrJournal, path, n, err)
		}
		spec, err := chain.DecodeJobSpec(jl.Spec)
		if err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %w", ErrJournal, path, n, err)
		}
		specs = append(specs, spec)
	}
}

// writeJournal atomically replaces path with the given specs (compaction):
// a temporary file, fsynced, renamed over path, the directory fsynced.
func writeJournal(path string, specs [][]byte, sync bool) (*journal, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriter(f)
	var size int64
	for _, p := range specs {
		line, err := json.Marshal(jobLine{Spec: p})
		if err != nil {
			f.Close()
			return nil, err
		}
		n, _ := w.Write(append(line, '\n'))
		size += int64(n)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			os.Remove(tmp)
			return nil, err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	// Append through a handle opened under the journal's own name: the
	// .tmp handle would name a file that no longer exists in every later
	// write error ("write …/jobs.jsonl.tmp: no space left on device").
	f2, err := os.OpenFile(path, os.O_RDWR, 0)
	f.Close()
	if err != nil {
		return nil, err
	}
	f = f2
	if sync {
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &journal{path: path, f: f, w: f, sync: sync, size: size}, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Append implements chain.Journal.
func (j *journal) Append(spec []byte) error {
	line, err := json.Marshal(jobLine{Spec: spec})
	if err != nil {
		return err
	}
	if err := appendRecord(j.w, &j.size, append(line, '\n'), j.sync); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == j.path {
			return err // "write …/jobs.jsonl: no space left on device"
		}
		return fmt.Errorf("%s: %w", j.path, err)
	}
	return nil
}

func (j *journal) close() error { return j.f.Close() }

// compactJournal rewrites jobs.jsonl with the open jobs' specs, as a start
// does (loop only; every eventsCompactEvery blocks): the journal otherwise
// holds every job accepted since the last start. A failure keeps the old
// journal, which stays correct, only longer.
func (v *Validator) compactJournal(c *chain.Core) {
	if v.jrnl == nil {
		return
	}
	j, err := writeJournal(v.jrnl.path, c.OpenSpecs(), v.jrnl.sync)
	if err != nil {
		v.log.Warn("job journal compaction failed; it is compacted at the next start", "file", v.jrnl.path, "err", err)
		return
	}
	v.jrnl.close()
	v.jrnl = j
}
