package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cip11/cip11/internal/dcbor"
)

// HeaderLen is the size of the §12.1 big-endian u32 length prefix.
const HeaderLen = 4

// AppendFrame appends f's §12.1 envelope — u32 big-endian length
// (= 1 + payload length), type byte, deterministic-CBOR payload — to dst.
// It fails if f holds a value no decoder would accept. The payload is
// encoded with the profile codec (HeartbeatPing has its own encoder, see
// ping.go).
func AppendFrame(dst []byte, f Frame) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, byte(f.Type()))
	var out []byte
	if p, ok := f.(*HeartbeatPing); ok {
		out = p.appendPayload(dst)
	} else {
		c := dcbor.New()
		v, err := f.wireValue(c)
		if err == nil {
			out, err = c.Append(dst, v)
		}
		if err != nil {
			return dst[:start], fmt.Errorf("encode %s: %w", f.Type(), err)
		}
	}
	n := uint64(len(out) - start - HeaderLen)
	if n > 1<<32-1 {
		return dst[:start], fmt.Errorf("encode %s: %w: %d bytes", f.Type(), ErrFrameTooLarge, n)
	}
	binary.BigEndian.PutUint32(out[start:], uint32(n))
	return out, nil
}

// Encode returns f's complete §12.1 frame.
func Encode(f Frame) ([]byte, error) { return AppendFrame(nil, f) }

// DecodePayload strictly decodes the §12.2 body of type t (§12.1: payload
// bytes that are not exactly that body are a protocol error).
func DecodePayload(t FrameType, payload []byte) (Frame, error) {
	f, err := NewFrame(t)
	if err != nil {
		return nil, err
	}
	if err := decodeInto(dcbor.New(), f, payload); err != nil {
		return nil, err
	}
	return f, nil
}

func decodeInto(c dcbor.Codec, f Frame, payload []byte) error {
	if err := f.decodePayload(c, payload); err != nil {
		return fmt.Errorf("decode %s: %w", f.Type(), err)
	}
	return nil
}

// checkLength applies the §12.1/§13 length rules before anything is allocated.
func checkLength(n, maxFrameBytes uint32) error {
	switch {
	case n == 0:
		return ErrFrameEmpty
	case n > maxFrameBytes:
		return fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, n, maxFrameBytes)
	}
	return nil
}

// Decode decodes exactly one complete frame held in b (no bytes may follow).
// maxFrameBytes is MAX_FRAME_BYTES (§13, cip11.Params.MaxFrameBytes).
func Decode(b []byte, maxFrameBytes uint32) (Frame, error) {
	if len(b) < HeaderLen {
		return nil, fmt.Errorf("%w: %d-byte header", ErrFrameTruncated, len(b))
	}
	n := binary.BigEndian.Uint32(b)
	if err := checkLength(n, maxFrameBytes); err != nil {
		return nil, err
	}
	body := b[HeaderLen:]
	switch {
	case uint64(len(body)) < uint64(n):
		return nil, fmt.Errorf("%w: %d of %d bytes", ErrFrameTruncated, len(body), n)
	case uint64(len(body)) > uint64(n):
		return nil, fmt.Errorf("%w: %d bytes after the frame", ErrFrameTrailingBytes, uint64(len(body))-uint64(n))
	}
	return DecodePayload(FrameType(body[0]), body[1:])
}

// Reader reads §12.1 frames from a stream. It reuses one buffer, grown only
// after a length passed the MAX_FRAME_BYTES check; decoded frames never
// alias it. A Reader is not safe for concurrent use.
type Reader struct {
	r       io.Reader
	max     uint32
	version uint16 // the connection's negotiated version: which types are known
	hdr     [HeaderLen]byte
	buf     []byte
}

// NewReader returns a Reader enforcing maxFrameBytes (MAX_FRAME_BYTES, §13).
// It knows the frame types of [Version]; see [Reader.SetVersion].
func NewReader(r io.Reader, maxFrameBytes uint32) *Reader {
	return &Reader{r: r, max: maxFrameBytes, version: Version}
}

// SetVersion sets the connection's negotiated version (§12.3): a type
// added by a later minor ([FrameType.MinVersion]) is ErrFrameUnknownType,
// rejected before its payload is read, as on a connection that predates
// it (SPEC-NOTES N18).
func (r *Reader) SetVersion(v uint16) { r.version = v }

// ReadFrame reads and strictly decodes the next frame. It returns io.EOF
// only when the stream ends cleanly between frames; an end inside a frame
// is ErrFrameTruncated. Any error leaves the stream unusable (§12.1: close).
func (r *Reader) ReadFrame() (Frame, error) {
	t, payload, err := r.ReadRaw()
	if err != nil {
		return nil, err
	}
	return DecodePayload(t, payload)
}

// ReadRaw reads the next frame's type and payload without decoding the
// payload; the payload aliases the Reader's buffer until the next call.
// An unknown type is rejected before the payload is read. See §12.1.
func (r *Reader) ReadRaw() (FrameType, []byte, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, nil, io.EOF
		}
		return 0, nil, truncated(err)
	}
	n := binary.BigEndian.Uint32(r.hdr[:])
	if err := checkLength(n, r.max); err != nil {
		return 0, nil, err
	}
	var t [1]byte
	if _, err := io.ReadFull(r.r, t[:]); err != nil {
		return 0, nil, truncated(err)
	}
	if _, err := NewFrameAt(FrameType(t[0]), r.version); err != nil {
		return 0, nil, err
	}
	if cap(r.buf) < int(n-1) {
		r.buf = make([]byte, n-1)
	}
	r.buf = r.buf[:n-1]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		return 0, nil, truncated(err)
	}
	return FrameType(t[0]), r.buf, nil
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %v", ErrFrameTruncated, err)
	}
	return err
}

// Writer writes §12.1 frames to a stream, one Write call per frame.
// A Writer is not safe for concurrent use.
type Writer struct {
	w       io.Writer
	max     uint32
	version uint16 // the connection's negotiated version: which types may be sent
	buf     []byte
}

// NewWriter returns a Writer that refuses frames over maxFrameBytes. See §12.1.
// It sends the frame types of [Version]; see [Writer.SetVersion].
func NewWriter(w io.Writer, maxFrameBytes uint32) *Writer {
	return &Writer{w: w, max: maxFrameBytes, version: Version}
}

// SetVersion sets the connection's negotiated version (§12.3): a frame of
// a type the peer does not know at that version is refused with
// ErrFrameUnknownType, never written (SPEC-NOTES N18).
func (w *Writer) SetVersion(v uint16) { w.version = v }

// WriteFrame encodes f and writes the whole frame. See §12.1.
func (w *Writer) WriteFrame(f Frame) error {
	if _, err := NewFrameAt(f.Type(), w.version); err != nil {
		return err
	}
	b, err := AppendFrame(w.buf[:0], f)
	if err != nil {
		return err
	}
	w.buf = b
	if err := checkLength(uint32(len(b)-HeaderLen), w.max); err != nil {
		return err
	}
	_, err = w.w.Write(b)
	return err
}
