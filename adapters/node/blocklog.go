package node

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cip11/cip11/chainlog"
)

// blockLog is the validator's durable block history: a chain log
// (docs/chainlog.md) of every block it produced, header first. A block is
// appended (and, with sync, fsynced) before its state is committed to the
// store, so after a crash the log is at most one block ahead of the store
// and that block is re-executed from the log (§8.1 crash recovery). A
// torn last line (a crash mid-append) is cut off at open.
//
// Beside it, blockTimes (blocks.times) records when each block was
// appended, so that job events rebuilt from the log at a restart keep
// their times (issue 18 #22); it is not consensus data and not fsynced.
type blockLog struct {
	path string
	f    *os.File
	sync bool
	hdr  []byte  // the encoded header line
	base logBase // a pruned log's base (Height 0: it starts at block 1)
	last uint64
	size int64 // bytes of whole records

	times *blockTimes
}

// openBlockLog opens or creates path for hdr. Every block it already holds
// is handed to fn in height order, one at a time (recovery streams the log:
// memory does not grow with its length), with the time recorded for it in
// the blocks.times file beside path (the zero time when none was). now
// stamps the blocks appended from then on.
//
// A pruned log (prune) holds a base line after the header: onBase is
// handed it before the first block.
func openBlockLog(path string, hdr chainlog.Header, sync bool, now func() time.Time, onBase func(logBase) error,
	fn func(*chainlog.Block, time.Time) error) (*blockLog, error) {
	want, err := chainlog.EncodeHeader(hdr)
	if err != nil {
		return nil, err
	}
	times, err := openBlockTimes(strings.TrimSuffix(path, ".jsonl")+".times", now)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		times.close()
		return nil, err
	}
	l := &blockLog{path: path, f: f, sync: sync, hdr: want, times: times}
	last, good, err := readBlockLog(f, want, func(b logBase) error {
		l.base = b
		if onBase == nil {
			return fmt.Errorf("%w: a pruned block log (base %d)", ErrBlockLog, b.Height)
		}
		return onBase(b)
	}, func(b *chainlog.Block) error {
		before := times.size
		err := fn(b, times.at(uint64(b.Height)))
		if errors.Is(err, errDropTail) {
			times.size = before // its time goes with it
		}
		return err
	})
	if err == nil {
		err = times.finish(last)
	}
	if err != nil {
		f.Close()
		times.close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fail := func(err error) (*blockLog, error) {
		f.Close()
		times.close()
		return nil, err
	}
	if good == 0 { // new (or only a torn header): write the header
		if err := f.Truncate(0); err != nil {
			return fail(err)
		}
		if _, err := f.WriteAt(append(want, '\n'), 0); err != nil {
			return fail(err)
		}
		good = int64(len(want) + 1)
	} else if err := f.Truncate(good); err != nil {
		return fail(err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	l.last, l.size = last, good
	return l, nil
}

// errDropTail, returned by openBlockLog's fn for a block, cuts that block
// and every later line off the log (recovery under an engine: the engine
// replays a block the state store did not commit).
var errDropTail = errors.New("node: drop the block log from this block on")

// readBlockLog decodes the complete lines of f and hands each block to fn;
// good is the byte length of the valid prefix (header and whole blocks),
// last the last block's height. A complete line that does not decode is
// corruption, not a torn write.
//
// A base line (a pruned log) may follow the header: onBase gets it, and the
// blocks from its height + 1 on follow.
func readBlockLog(f *os.File, header []byte, onBase func(logBase) error, fn func(*chainlog.Block) error) (last uint64, good int64, err error) {
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	next := uint64(1) // the height the next block line must hold
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
		} else if i == 1 && bytes.HasPrefix(body, []byte(baseLinePrefix)) {
			b, err := decodeBase(body)
			if err != nil {
				return 0, 0, fmt.Errorf("%w: line 2: %w", ErrBlockLog, err)
			}
			if err := onBase(b); err != nil {
				return 0, 0, err
			}
			next, last = b.Height+1, b.Height
		} else {
			b, err := chainlog.DecodeBlock(body)
			if err != nil {
				return 0, 0, fmt.Errorf("%w: block line %d: %w", ErrBlockLog, i+1, err)
			}
			if uint64(b.Height) != next {
				return 0, 0, fmt.Errorf("%w: line %d holds height %d, not %d", ErrBlockLog, i+1, b.Height, next)
			}
			next++
			if err := fn(&b); err != nil {
				if errors.Is(err, errDropTail) {
					return last, off, nil // this block and any after it are cut off
				}
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
	l.times.append(l.last)
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

func (l *blockLog) close() error { return errors.Join(l.f.Close(), l.times.close()) }

// blockTimes is blocks.times: one line "HEIGHT UNIX_NANOS" per block
// appended to the block log, written after the block (a crash in between
// loses that block's time, not the block). Heights ascend; a block
// without a line (a lost write, a log older than this file) gets the zero
// time, as every block did before (issue 18 #22). A line that does not
// parse ends what is read; open cuts the file back to the lines read.
type blockTimes struct {
	f    *os.File
	r    *bufio.Reader
	now  func() time.Time
	size int64 // bytes of the lines read (open) or written

	next    uint64 // the height of the line read ahead
	nextAt  time.Time
	nextLen int64
	ahead   bool // next holds a line not yet consumed
	eof     bool // no more lines to read
}

func openBlockTimes(path string, now func() time.Time) (*blockTimes, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &blockTimes{f: f, r: bufio.NewReaderSize(f, 1<<16), now: now}, nil
}

// read reads the next line ahead; a torn or unparsable line ends reading.
func (t *blockTimes) read() {
	line, err := t.r.ReadString('\n')
	if err != nil {
		t.eof = true
		return
	}
	h, ns, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	height, err1 := strconv.ParseUint(h, 10, 64)
	nanos, err2 := strconv.ParseInt(ns, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		t.eof = true
		return
	}
	t.next, t.nextAt, t.nextLen, t.ahead = height, time.Unix(0, nanos).UTC(), int64(len(line)), true
}

// at is the time recorded for block h (heights are asked in ascending
// order during open), or the zero time.
func (t *blockTimes) at(h uint64) time.Time {
	for !t.eof {
		if !t.ahead {
			t.read()
			continue
		}
		if t.next > h {
			return time.Time{}
		}
		t.size += t.nextLen
		t.ahead = false
		if t.next == h {
			return t.nextAt
		}
	}
	return time.Time{}
}

// finish ends the read at the block log's last height: the lines read up
// to it stay, anything after (a torn line, times of blocks the log lost)
// is cut off, and appends go after them.
func (t *blockTimes) finish(last uint64) error {
	t.at(last)
	t.r = nil
	return t.f.Truncate(t.size)
}

// append records the time block h was appended. A failed write is cut
// back off and otherwise ignored: the file is not consensus data, and a
// disk too full for it fails the block log or the store first.
func (t *blockTimes) append(h uint64) {
	rec := []byte(strconv.FormatUint(h, 10) + " " + strconv.FormatInt(t.now().UnixNano(), 10) + "\n")
	_ = appendRecord(t.f, &t.size, rec, false)
}

func (t *blockTimes) close() error { return t.f.Close() }
