package node

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cip11/cip11/chainlog"
)

// blockLog is the validator's durable block history: a chain log
// (docs/chainlog.md) of every block it produced, header first. A block is
// appended (and, with sync, fsynced) before its state is committed to the
// store, so after a crash the log is at most one block ahead of the store
// and that block is re-executed from the log (§8.1 crash recovery). A
// torn last line (a crash mid-append) is cut off at open.
type blockLog struct {
	f    *os.File
	sync bool
	last uint64
	size int64 // bytes of whole records
}

// openBlockLog opens or creates path for hdr. Every block it already holds
// is handed to fn in height order, one at a time (recovery streams the log:
// memory does not grow with its length).
func openBlockLog(path string, hdr chainlog.Header, sync bool, fn func(*chainlog.Block) error) (*blockLog, error) {
	want, err := chainlog.EncodeHeader(hdr)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	l := &blockLog{f: f, sync: sync}
	last, good, err := readBlockLog(f, want, fn)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if good == 0 { // new (or only a torn header): write the header
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
		if _, err := f.WriteAt(append(want, '\n'), 0); err != nil {
			f.Close()
			return nil, err
		}
		good = int64(len(want) + 1)
	} else if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	l.last, l.size = last, good
	return l, nil
}

// readBlockLog decodes the complete lines of f and hands each block to fn;
// good is the byte length of the valid prefix (header and whole blocks),
// last the last block's height. A complete line that does not decode is
// corruption, not a torn write.
func readBlockLog(f *os.File, header []byte, fn func(*chainlog.Block) error) (last uint64, good int64, err error) {
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	for i := 0; ; i++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return last, off, nil // a line without '\n' is torn: dropped
		}
		if err != nil {
			return 0, 0, err
		}
		body := bytes.TrimSuffix(line, []byte("\n"))
		if i == 0 {
			if !bytes.Equal(body, header) {
				return 0, 0, fmt.Errorf("%w: the block log's header is not this genesis's", ErrBlockLog)
			}
		} else {
			b, err := chainlog.DecodeBlock(body)
			if err != nil {
				return 0, 0, fmt.Errorf("%w: block line %d: %w", ErrBlockLog, i+1, err)
			}
			if uint64(b.Height) != uint64(i) {
				return 0, 0, fmt.Errorf("%w: line %d holds height %d", ErrBlockLog, i+1, b.Height)
			}
			if err := fn(&b); err != nil {
				return 0, 0, err
			}
			last = uint64(b.Height)
		}
		off += int64(len(line))
	}
}

// Append writes b (which must be the next height) durably (chain.BlockLog).
// A failed write is cut back off, so the log never keeps a torn line that a
// later append would run on from.
func (l *blockLog) Append(b *chainlog.Block) error {
	if uint64(b.Height) != l.last+1 {
		return fmt.Errorf("%w: append height %d after %d", ErrBlockLog, b.Height, l.last)
	}
	line, err := chainlog.EncodeBlock(b)
	if err != nil {
		return err
	}
	if err := appendRecord(l.f, &l.size, append(line, '\n'), l.sync); err != nil {
		return err
	}
	l.last = uint64(b.Height)
	return nil
}

// recordFile is what appendRecord needs of a file (tests inject faults).
type recordFile interface {
	WriteAt(b []byte, off int64) (int, error)
	Sync() error
	Truncate(size int64) error
}

// appendRecord writes rec at *size and, with sync, fsyncs it. On failure it
// truncates the file back to *size (so no torn record stays behind); if even
// that fails, the error says so.
func appendRecord(f recordFile, size *int64, rec []byte, sync bool) error {
	_, err := f.WriteAt(rec, *size)
	if err == nil && sync {
		err = f.Sync()
	}
	if err != nil {
		if terr := f.Truncate(*size); terr != nil {
			return fmt.Errorf("%w (and truncating back to %d bytes failed: %v)", err, *size, terr)
		}
		return err
	}
	*size += int64(len(rec))
	return nil
}

func (l *blockLog) close() error { return l.f.Close() }
