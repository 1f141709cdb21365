package chainlog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes bounds one line of a chain log; a longer line is malformed.
const MaxLineBytes = 64 << 20

// Reader reads a chain log: the header at construction, then blocks in
// order. Gzip-compressed input is detected by its magic bytes.
type Reader struct {
	br     *bufio.Reader
	header Header
	line   int    // number of the last line read (1 = header)
	next   uint64 // height the next block must have
	// peeked is the line ReadBase read that was not a base line; based
	// records that ReadBase ran.
	peeked []byte
	based  bool
}

// NewReader reads and decodes the header line of r. Input starting with the
// gzip magic (1f 8b) is decompressed transparently.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrMalformed, err)
		}
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	cr := &Reader{br: br, next: 1}
	line, err := cr.readLine()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: empty log (no header line)", ErrMalformed)
	}
	if err != nil {
		return nil, err
	}
	h, err := DecodeHeader(line)
	if err != nil {
		return nil, fmt.Errorf("line 1: %w", err)
	}
	cr.header = h
	return cr, nil
}

// Header returns the decoded header.
func (r *Reader) Header() Header { return r.header }

// Next returns the next block, or io.EOF after the last one. Heights must
// start at 1 (after a base line that [Reader.ReadBase] accepted, at its
// height + 1) and increase by exactly 1 per line. A base line that
// ReadBase did not accept is an error wrapping ErrPruned.
func (r *Reader) Next() (Block, error) {
	line := r.peeked
	r.peeked = nil
	if line == nil {
		var err error
		if line, err = r.readLine(); err != nil {
			return Block{}, err
		}
	}
	if r.next == 1 && !r.based && bytes.HasPrefix(line, basePrefix) {
		return Block{}, r.prunedError(line)
	}
	b, err := DecodeBlock(line)
	if err != nil {
		return Block{}, fmt.Errorf("line %d: %w", r.line, err)
	}
	if uint64(b.Height) != r.next {
		return Block{}, fmt.Errorf("%w: line %d: height %d, want %d", ErrMalformed, r.line, b.Height, r.next)
	}
	r.next++
	return b, nil
}

// readLine returns the next non-empty line without its newline. A final
// line without a newline is accepted.
func (r *Reader) readLine() ([]byte, error) {
	for {
		var buf []byte
		for {
			chunk, err := r.br.ReadSlice('\n')
			buf = append(buf, chunk...)
			if len(buf) > MaxLineBytes {
				return nil, fmt.Errorf("%w: line %d longer than %d bytes", ErrMalformed, r.line+1, MaxLineBytes)
			}
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err == io.EOF {
				if len(buf) == 0 {
					return nil, io.EOF
				}
				break
			}
			return nil, fmt.Errorf("%w: line %d: %v", ErrMalformed, r.line+1, err)
		}
		r.line++
		buf = bytes.TrimRight(buf, "\r\n")
		if len(bytes.TrimSpace(buf)) > 0 {
			return buf, nil
		}
	}
}

// Writer writes a chain log as JSON Lines. It does not compress; wrap the
// destination in a gzip.Writer for .jsonl.gz.
type Writer struct {
	bw   *bufio.Writer
	next uint64
}

// NewWriter writes the header line to w and returns a Writer for the blocks.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Format, h.Version = FormatName, Version
	line, err := EncodeHeader(h)
	if err != nil {
		return nil, err
	}
	cw := &Writer{bw: bufio.NewWriterSize(w, 1<<16), next: 1}
	if err := cw.writeLine(line); err != nil {
		return nil, err
	}
	return cw, nil
}

// WriteBlock appends one block line; heights must start at 1 and increase
// by exactly 1.
func (w *Writer) WriteBlock(b *Block) error {
	if uint64(b.Height) != w.next {
		return fmt.Errorf("%w: writing height %d, want %d", ErrMalformed, b.Height, w.next)
	}
	line, err := EncodeBlock(b)
	if err != nil {
		return err
	}
	w.next++
	return w.writeLine(line)
}

func (w *Writer) writeLine(line []byte) error {
	if _, err := w.bw.Write(line); err != nil {
		return err
	}
	return w.bw.WriteByte('\n')
}

// Flush writes any buffered data to the underlying writer.
func (w *Writer) Flush() error { return w.bw.Flush() }
