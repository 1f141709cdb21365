package node

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cip11/cip11/chainlog"
)

// A pruned block log (docs/storage.md "Retention"): after the header, a
// base line names the height below which the log holds no block, and the
// in-band reconfigurations (SPEC-NOTES C11) of the blocks it dropped, which
// the executor's and the schedule's history need:
//
//	{"base":{"height":B,"reconfigurations":[…]}}
//
// then the blocks B+1, B+2, …. The state store holds the state at B or
// later (recovery resumes the core at B, chain.Core.Resume).

// logBase is a pruned block log's base line (chainlog owns its format).
type logBase = chainlog.Base

const baseLinePrefix = `{"base":`

func encodeBase(b logBase) ([]byte, error) { return chainlog.EncodeBase(b) }

func decodeBase(line []byte) (logBase, error) { return chainlog.DecodeBase(line) }

// reconfsOf are the reconfigurations block b carries.
func reconfsOf(b *chainlog.Block) []chainlog.Reconfigure {
	var out []chainlog.Reconfigure
	for _, tx := range b.Txs {
		if tx.Reconfigure != nil {
			out = append(out, *tx.Reconfigure)
		}
	}
	return out
}

// prune rewrites the log to hold only the blocks above base, behind a base
// line that keeps the dropped blocks' reconfigurations; blocks.times is cut
// the same way. The new file is written beside the old, fsynced and renamed
// over it, so a crash leaves one or the other. A base at or below the
// current one, or above the last block, changes nothing.
func (l *blockLog) prune(base uint64) error {
	if base <= l.base.Height || base > l.last {
		return nil
	}
	nb := logBase{Height: base, Reconfigurations: append([]chainlog.Reconfigure(nil), l.base.Reconfigurations...)}
	var kept [][]byte
	err := eachBlockLine(l.path, func(h uint64, line []byte) error {
		if h > base {
			kept = append(kept, line)
			return nil
		}
		if bytes.Contains(line, []byte(`"reconfigure"`)) {
			b, err := chainlog.DecodeBlock(line)
			if err != nil {
				return fmt.Errorf("%w: block %d: %w", ErrBlockLog, h, err)
			}
			nb.Reconfigurations = append(nb.Reconfigurations, reconfsOf(&b)...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	bl, err := encodeBase(nb)
	if err != nil {
		return err
	}
	size, err := writeLines(l.path, l.hdr, bl, kept, l.sync)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	l.f.Close()
	l.f, l.size, l.base = f, size, nb
	l.times.prune(base)
	return nil
}

// eachBlockLine hands each block line of the log at path (after the header
// and any base line) to fn with its height, read from the line's "height"
// field without decoding the block. A torn last line is skipped.
func eachBlockLine(path string, fn func(h uint64, line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for i := 0; ; i++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		if i == 0 || (i == 1 && bytes.HasPrefix(line, []byte(baseLinePrefix))) {
			continue
		}
		h, err := lineHeight(line)
		if err != nil {
			return fmt.Errorf("%w: line %d: %w", ErrBlockLog, i+1, err)
		}
		if err := fn(h, line); err != nil {
			return err
		}
	}
}

// lineHeight reads a block line's height, which EncodeBlock writes first:
// {"height":"H",… (a U64 is a JSON string).
func lineHeight(line []byte) (uint64, error) {
	const p = `{"height":`
	if !bytes.HasPrefix(line, []byte(p)) {
		return 0, errors.New("not a block line")
	}
	rest := line[len(p):]
	n := bytes.IndexAny(rest, ",}")
	if n <= 0 {
		return 0, errors.New("not a block line")
	}
	return strconv.ParseUint(strings.Trim(string(rest[:n]), `"`), 10, 64)
}

// writeLines writes header, base (unless nil) and lines as a new file at path (a
// temporary file fsynced and renamed over it) and returns its size.
func writeLines(path string, header, base []byte, lines [][]byte, sync bool) (int64, error) {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var size int64
	head := [][]byte{header}
	if base != nil {
		head = append(head, base)
	}
	for _, l := range append(head, lines...) {
		n, _ := w.Write(l)
		w.WriteByte('\n')
		size += int64(n) + 1
	}
	err = w.Flush()
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil && sync {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return size, nil
}

// prune drops the times of the blocks at or below base (best effort: the
// file is not consensus data).
func (t *blockTimes) prune(base uint64) {
	if _, err := t.f.Seek(0, io.SeekStart); err != nil {
		return
	}
	b, err := io.ReadAll(io.LimitReader(t.f, t.size))
	if err != nil {
		return
	}
	var keep []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		h, _, _ := strings.Cut(string(line), " ")
		if n, err := strconv.ParseUint(h, 10, 64); err == nil && n > base {
			keep = append(keep, line...)
		}
	}
	if _, err := t.f.WriteAt(keep, 0); err != nil {
		return
	}
	if err := t.f.Truncate(int64(len(keep))); err == nil {
		t.size = int64(len(keep))
	}
}
