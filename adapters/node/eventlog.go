package node

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
)

// eventLog is events.jsonl: the job events a block log cannot rebuild
// (pushes, acks, §10.6 outcomes, cancels) and completed jobs' outputs
// (they ride in the reveals, §10.3), one JSON line each, so that a
// job's history survives a restart (issue 18 item 22). It is history, not
// state: it is written without fsync, a torn or corrupt line is dropped
// at open, and a write error is logged once and stops the log (the node
// goes on). At open it is compacted to the jobs still in memory.
type eventLog struct {
	path string
	f    *os.File
	w    *bufio.Writer
	log  *slog.Logger
	dead bool
}

// eventLine is one line: a job's event, or (Output set, no event) the
// output of a completed job (the reveals that carried it are not in the
// block log either).
type eventLine struct {
	Job    cip11.Hash `json:"job"`
	Event  *job.Event `json:"event,omitempty"`
	Output *job.Bytes `json:"output,omitempty"`
}

// openEventLog hands every readable line of path to keep (an event) or
// keepOutput (an output), which report whether to keep it, and rewrites
// path with the kept lines.
func openEventLog(path string, log *slog.Logger, keep func(cip11.Hash, job.Event) bool, keepOutput func(cip11.Hash, []byte) bool) (*eventLog, error) {
	var kept [][]byte
	if b, err := os.ReadFile(path); err == nil {
		for _, line := range bytes.Split(b, []byte("\n")) {
			var el eventLine
			if len(line) == 0 || json.Unmarshal(line, &el) != nil {
				continue // torn or corrupt: history only
			}
			switch {
			case el.Output != nil && el.Event == nil:
				if keepOutput(el.Job, *el.Output) {
					kept = append(kept, line)
				}
			case el.Event != nil && el.Output == nil:
				if keep(el.Job, *el.Event) {
					kept = append(kept, line)
				}
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var content []byte
	for _, line := range kept {
		content = append(append(content, line...), '\n')
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, content, 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &eventLog{path: path, f: f, w: bufio.NewWriterSize(f, 64<<10), log: log}, nil
}

// Record implements chain.History (called on the validator's loop).
func (l *eventLog) Record(job cip11.Hash, e job.Event) {
	if l == nil || l.dead {
		return
	}
	l.write(eventLine{Job: job, Event: &e})
}

// RecordOutput implements chain.OutputHistory (called on the validator's
// loop).
func (l *eventLog) RecordOutput(id cip11.Hash, output []byte) {
	if l == nil || l.dead {
		return
	}
	o := job.Bytes(output)
	l.write(eventLine{Job: id, Output: &o})
}

func (l *eventLog) write(el eventLine) {
	b, err := json.Marshal(el)
	if err == nil {
		_, err = l.w.Write(append(b, '\n'))
	}
	l.fail(err)
}

// flush writes what is buffered (after each batch of events).
func (l *eventLog) flush() {
	if l == nil || l.dead {
		return
	}
	l.fail(l.w.Flush())
}

func (l *eventLog) fail(err error) {
	if err != nil && !l.dead {
		l.dead = true
		l.log.Warn("job event history can no longer be written; job views after a restart will lack push and ack events",
			"file", l.path, "err", err)
	}
}

// eventsCompactEvery is how often (in blocks) the validator compacts
// events.jsonl while it runs.
const eventsCompactEvery = 1024

// compact rewrites the file with the lines of the jobs keep still wants
// (those in memory), as openEventLog does at a start, so that the history
// of jobs gone to the archive does not pile up while the validator runs
// (a failure stops the log, as a failed write does).
func (l *eventLog) compact(keep func(cip11.Hash) bool) {
	if l == nil || l.dead {
		return
	}
	l.flush()
	if l.dead {
		return
	}
	nl, err := openEventLog(l.path, l.log, func(id cip11.Hash, _ job.Event) bool { return keep(id) },
		func(id cip11.Hash, _ []byte) bool { return keep(id) })
	if err != nil {
		l.fail(err)
		return
	}
	l.f.Close()
	l.f, l.w = nl.f, nl.w
}

func (l *eventLog) close() error {
	if l == nil {
		return nil
	}
	l.flush()
	return l.f.Close()
}
