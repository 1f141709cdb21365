package quic

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	qgo "github.com/quic-go/quic-go"

	"github.com/cip11/cip11/wire"
)

// QUIC application error codes used when closing. They carry no CIP-11
// meaning; the Goodbye frame, when one could be sent, is what counts.
const (
	codeGoodbye   qgo.ApplicationErrorCode = 0x00 // closed after a Goodbye
	codeProtocol  qgo.ApplicationErrorCode = 0x01 // §12.1 protocol error, no Goodbye possible
	codeShutdown  qgo.ApplicationErrorCode = 0x02 // local shutdown
	codeReplaced  qgo.ApplicationErrorCode = 0x03 // the runner's newer connection replaced this one
	streamDone    qgo.StreamErrorCode      = 0x00 // job stream finished or abandoned
	streamTimeout qgo.StreamErrorCode      = 0x01 // §11.1 HardFailure: stream closed
)

// handshakeFrameBytes caps frames before admission. Hello and HelloAck are
// under 300 bytes; a pre-auth peer never gets MAX_FRAME_BYTES of buffer.
const handshakeFrameBytes = 1024

// frameStream is one QUIC stream carrying §12.1 frames back to back. Reads
// belong to one goroutine; writes are serialised by wmu (the control stream
// is written by the heartbeat path and by Goodbye).
type frameStream struct {
	st  *qgo.Stream
	r   *wire.Reader
	wmu sync.Mutex
	w   *wire.Writer
	max uint32
	// writeTimeout, if set, bounds each write: a peer that stops reading
	// cannot block the writer (the runner's Tick) for ever.
	writeTimeout time.Duration
	version      uint16 // the connection's version once negotiated (setVersion)
}

func newFrameStream(st *qgo.Stream, readMax, writeMax uint32) *frameStream {
	return &frameStream{st: st, r: wire.NewReader(st, readMax), w: wire.NewWriter(st, writeMax), max: writeMax, version: wire.Version}
}

// setReadMax swaps the reader for one with a new ceiling. wire.Reader reads
// exactly one frame's bytes at a time, so nothing buffered is lost.
func (f *frameStream) setReadMax(n uint32) {
	f.r = wire.NewReader(f.st, n)
	f.r.SetVersion(f.version)
}

// setVersion sets the connection's negotiated version (§12.3): frame
// types of a later minor are unknown types below it, on both the read and
// the write side (SPEC-NOTES N18). Call it before the stream is shared.
func (f *frameStream) setVersion(v uint16) {
	f.version = v
	f.r.SetVersion(v)
	f.wmu.Lock()
	f.w.SetVersion(v)
	f.wmu.Unlock()
}

func (f *frameStream) read() (wire.Frame, error) { return f.r.ReadFrame() }

func (f *frameStream) readBy(deadline time.Time) (wire.Frame, error) {
	_ = f.st.SetReadDeadline(deadline)
	fr, err := f.r.ReadFrame()
	_ = f.st.SetReadDeadline(time.Time{})
	return fr, err
}

func (f *frameStream) write(fr wire.Frame) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.writeTimeout > 0 {
		_ = f.st.SetWriteDeadline(time.Now().Add(f.writeTimeout))
	}
	return f.w.WriteFrame(fr)
}

// writeAll writes several frames with one stream write, so they leave in
// one packet (the validator's Hello and HelloAck, D28).
func (f *frameStream) writeAll(frs ...wire.Frame) error {
	var b []byte
	for _, fr := range frs {
		start := len(b)
		var err error
		if b, err = wire.AppendFrame(b, fr); err != nil {
			return err
		}
		if n := len(b) - start - wire.HeaderLen; n > int(f.max) {
			return fmt.Errorf("%w: %d > %d", wire.ErrFrameTooLarge, n, f.max)
		}
	}
	f.wmu.Lock()
	defer f.wmu.Unlock()
	_, err := f.st.Write(b)
	return err
}

// finish closes the write side (FIN) and abandons reading.
func (f *frameStream) finish() {
	f.wmu.Lock()
	_ = f.st.Close()
	f.wmu.Unlock()
	f.st.CancelRead(streamDone)
}

// abort resets both directions with code.
func (f *frameStream) abort(code qgo.StreamErrorCode) {
	f.st.CancelWrite(code)
	f.st.CancelRead(code)
}

// goodbye builds a §12.5 Goodbye, signed when the session is known (after
// mutual auth it MUST be signed) and advisory otherwise.
func goodbye(s *wire.Session, k wire.Signer, reason wire.GoodbyeReason, detail string, retry *uint64) *wire.Goodbye {
	g := &wire.Goodbye{Reason: reason, RetryAfterBlocks: retry}
	if detail != "" {
		d := shortText(detail)
		g.Detail = &d
	}
	if s != nil && k != nil {
		_ = g.Sign(s, k) // k is the session's own key by construction
	}
	return g
}

// shortText bounds free text put on the wire and keeps it valid UTF-8.
func shortText(s string) string {
	if len(s) > 200 {
		s = s[:200]
	}
	return strings.ToValidUTF8(s, "")
}

// sayGoodbye writes g on the control stream, closes it, waits up to linger
// for the peer to close the connection (so the Goodbye is delivered rather
// than overtaken by CONNECTION_CLOSE), then closes. A written Goodbye is
// counted in sent (if not nil) by reason as soon as it is written.
func sayGoodbye(c *qgo.Conn, f *frameStream, g *wire.Goodbye, linger time.Duration, sent *[NumGoodbyeReasons]atomic.Int64) {
	if f != nil {
		if f.write(g) == nil && sent != nil && int(g.Reason) < NumGoodbyeReasons {
			sent[g.Reason].Add(1)
		}
		f.wmu.Lock()
		_ = f.st.Close()
		f.wmu.Unlock()
	}
	t := time.NewTimer(linger)
	select {
	case <-c.Context().Done():
	case <-t.C:
	}
	t.Stop()
	_ = c.CloseWithError(codeGoodbye, g.Reason.String())
}

// readGoodbye turns a received Goodbye into a RefusedError, verifying it
// when the session is known (§12.5: advisory before mutual auth).
func readGoodbye(s *wire.Session, sender wire.Role, g *wire.Goodbye) *RefusedError {
	advisory, err := wire.CheckGoodbye(s, sender, g)
	e := &RefusedError{Reason: g.Reason, RetryAfterBlocks: g.RetryAfterBlocks, Verified: !advisory && err == nil}
	if g.Detail != nil {
		e.Detail = *g.Detail
	}
	return e
}

// isClosed reports errors that just mean the peer or we went away.
func isClosed(err error) bool {
	var ae *qgo.ApplicationError
	var se *qgo.StreamError
	var ie *qgo.IdleTimeoutError
	return errors.As(err, &ae) || errors.As(err, &se) || errors.As(err, &ie) || errors.Is(err, qgo.ErrTransportClosed)
}
