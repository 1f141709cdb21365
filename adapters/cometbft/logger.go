package cometbft

import (
	"fmt"
	"io"

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
