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
}

// openBlockLog opens or creates path for hdr and returns the blocks it
// already holds.
func openBlockLog(path string, hdr chainlog.Header, sync bool) (*blockLog, []chainlog.Block, error) {
	want, err := chainlog.EncodeHeader(hdr)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	l := &blockLog{f: f, sync: sync}
	blocks, good, err := readBlockLog(f, want)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if good == 0 { // new (or only a torn header): write the header
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, nil, err
		}
		if _, err := f.WriteAt(append(want, '\n'), 0); err != nil {
			f.Close()
			return nil, nil, err
		}
		good = int64(len(want) + 1)
	} else if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, nil, err
	}
	if n := len(blocks); n > 0 {
		l.last = uint64(blocks[n-1].Height)
	}
	return l, blocks, nil
}

// readBlockLog decodes the complete lines of f; good is the byte length of
// the valid prefix (header and whole blocks). A complete line that does
// not decode is corruption, not a torn write.
func readBlockLog(f *os.File, header []byte) (blocks []chainlog.Block, good int64, err error) {
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	for i := 0; ; i++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return blocks, off, nil // a line without '\n' is torn: dropped
		}
		if err != nil {
			return nil, 0, err
		}
		body := bytes.TrimSuffix(line, []byte("\n"))
		if i == 0 {
			if !bytes.Equal(body, header) {
				return nil, 0, fmt.Errorf("%w: the block log's header is not this genesis's", ErrBlockLog)
			}
		} else {
			b, err := chainlog.DecodeBlock(body)
			if err != nil {
				return nil, 0, fmt.Errorf("%w: block line %d: %w", ErrBlockLog, i, err)
			}
			if uint64(b.Height) != uint64(i) {
				return nil, 0, fmt.Errorf("%w: line %d holds height %d", ErrBlockLog, i, b.Height)
			}
			blocks = append(blocks, b)
		}
		off += int64(len(line))
	}
}

// append writes b (which must be the next height) durably.
func (l *blockLog) append(b *chainlog.Block) error {
	if uint64(b.Height) != l.last+1 {
		return fmt.Errorf("%w: append height %d after %d", ErrBlockLog, b.Height, l.last)
	}
	line, err := chainlog.EncodeBlock(b)
	if err != nil {
		return err
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return err
	}
	if l.sync {
		if err := l.f.Sync(); err != nil {
			return err
		}
	}
	l.last = uint64(b.Height)
	return nil
}

func (l *blockLog) close() error { return l.f.Close() }
