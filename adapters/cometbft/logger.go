package cometbft

import (
	"errors"
	"fmt"
	"io"
	"slices"

	cmtlog "github.com/cometbft/cometbft/libs/log"

	"github.com/cip11/cip11/adapters/node"
)

// NewLogger is CometBFT's own log for NodeConfig.CometLogger, written to
// w at level: "none" (nothing), "error", "info" or "debug" (CometBFT's
// log levels). Another level is an error wrapping node.ErrBadRequest. It
// lets a command set CometBFT's log without importing CometBFT (only this
// package does, D29).
func NewLogger(w io.Writer, level string) (cmtlog.Logger, error) {
	opt, err := cmtlog.AllowLevel(level)
	if err != nil {
		return nil, fmt.Errorf("%w: CometBFT log level %q (none, error, info or debug)", node.ErrBadRequest, level)
	}
	if level == "none" || w == nil {
		return cmtlog.NewNopLogger(), nil
	}
	return cmtlog.NewFilter(cmtlog.NewTMLogger(cmtlog.NewSyncWriter(w)), opt), nil
}

// ErrConsensusFailure: CometBFT's consensus stopped on a fatal error. Its
// consensus goroutine recovers a panic (a WAL or privval state write that
// failed, a block it cannot apply), logs "CONSENSUS FAILURE!!!" and
// returns, leaving the node up but deciding nothing; the validator's
// [Node.Run] returns this error instead.
var ErrConsensusFailure = errors.New("cometbft: consensus failure")

// fatalMessages are CometBFT v1.0.1's log messages after which its
// consensus no longer runs (internal/consensus/state.go receiveRoutine).
var fatalMessages = []string{"CONSENSUS FAILURE!!!"}

// fatalLogger is every CometBFT logger a node gets: it passes each record
// on to next and reports a fatal one to onFatal (first, so that a slow or
// discarding next cannot delay it).
type fatalLogger struct {
	next    cmtlog.Logger
	onFatal func(error)
}

func (l fatalLogger) Debug(msg string, kv ...any) { l.next.Debug(msg, kv...) }
func (l fatalLogger) Info(msg string, kv ...any)  { l.next.Info(msg, kv...) }

func (l fatalLogger) Error(msg string, kv ...any) {
	if slices.Contains(fatalMessages, msg) {
		l.onFatal(fatalError(msg, kv))
	}
	l.next.Error(msg, kv...)
}

func (l fatalLogger) With(kv ...any) cmtlog.Logger {
	return fatalLogger{next: l.next.With(kv...), onFatal: l.onFatal}
}

// fatalError is ErrConsensusFailure with the record's "err" value (the
// recovered panic) as the cause.
func fatalError(msg string, kv []any) error {
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok && k == "err" {
			return fmt.Errorf("%w: %v", ErrConsensusFailure, kv[i+1])
		}
	}
	return fmt.Errorf("%w: %s", ErrConsensusFailure, msg)
}
