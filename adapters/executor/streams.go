package executor

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
)

// errOverflow stops the copy of stdout once it exceeds the bound.
var errOverflow = errors.New("executor: output bound exceeded")

// boundedBuffer is the command's stdout: at most max bytes kept; the write
// that would exceed it is refused and closes overflow. Only the copying
// goroutine of exec.Cmd writes; the result is read after Wait.
type boundedBuffer struct {
	max      int
	buf      []byte
	over     bool
	overflow chan struct{}
}

func newBoundedBuffer(max int) *boundedBuffer {
	return &boundedBuffer{max: max, overflow: make(chan struct{})}
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.over {
		return 0, errOverflow
	}
	if len(p) > b.max-len(b.buf) {
		b.over = true
		close(b.overflow)
		return 0, errOverflow
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// stderrLog logs a command's stderr line by line through the logger, at
// most lines lines and bytes bytes per job, each line cut at maxLogLine;
// the rest is counted, and the last stderrTail bytes are kept for the
// failure message. Only the copying goroutine writes; finish runs after
// Wait.
type stderrLog struct {
	log        *slog.Logger
	job        string
	maxLines   int
	maxBytes   int
	line       []byte
	cut        bool
	lines      int   // lines seen
	logged     int   // lines logged
	loggedSize int   // bytes logged
	total      int64 // bytes seen
	tail       []byte
}

func (s *stderrLog) Write(p []byte) (int, error) {
	s.total += int64(len(p))
	s.keepTail(p)
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		seg := rest
		if i >= 0 {
			seg = rest[:i]
		}
		if room := maxLogLine - len(s.line); len(seg) > room {
			s.line = append(s.line, seg[:room]...)
			s.cut = true
		} else {
			s.line = append(s.line, seg...)
		}
		if i < 0 {
			break
		}
		s.emit()
		rest = rest[i+1:]
	}
	return len(p), nil
}

func (s *stderrLog) keepTail(p []byte) {
	if len(p) >= stderrTail {
		s.tail = append(s.tail[:0], p[len(p)-stderrTail:]...)
		return
	}
	s.tail = append(s.tail, p...)
	if len(s.tail) > stderrTail {
		n := copy(s.tail, s.tail[len(s.tail)-stderrTail:])
		s.tail = s.tail[:n]
	}
}

func (s *stderrLog) emit() {
	s.lines++
	if s.logged < s.maxLines && s.loggedSize+len(s.line) <= s.maxBytes {
		line := string(s.line)
		if s.cut {
			line += " …(cut)"
		}
		s.log.Info("command stderr", "job", s.job, "line", line)
		s.logged++
		s.loggedSize += len(s.line)
	}
	s.line, s.cut = s.line[:0], false
}

// finish logs a last unterminated line and, when lines were not logged,
// how many.
func (s *stderrLog) finish() {
	if len(s.line) > 0 || s.cut {
		s.emit()
	}
	if s.lines > s.logged {
		s.log.Warn("command stderr not all logged", "job", s.job, "lines", s.lines, "logged", s.logged, "bytes", s.total)
	}
}

// tailText is the end of stderr for a message: valid UTF-8, trimmed.
func (s *stderrLog) tailText() string {
	return strings.TrimSpace(strings.ToValidUTF8(string(s.tail), "?"))
}
