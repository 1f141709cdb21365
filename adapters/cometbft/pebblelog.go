package cometbft

import (
	"fmt"
	"log/slog"

	pebblev1 "github.com/cockroachdb/pebble"
	dbm "github.com/cometbft/cometbft-db"
	cmtcfg "github.com/cometbft/cometbft/config"
)

// pebbleLogger is the Logger of CometBFT's Pebble stores: pebble's own
// lines (WAL recovery, compactions) go through the node's slog logger
// instead of pebble's default, which writes to stderr. Informational lines
// are Debug; an error line is Error; Fatalf logs, then exits as pebble's
// default logger does (pebble requires that it not return).
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.log.Error("pebble: fatal: " + fmt.Sprintf(format, args...))
	pebblev1.DefaultLogger.Fatalf(format, args...)
}

// openDB is CometBFT's default store provider, except that a pebbledb
// store (CometBFT's default backend) logs through log (nil: slog's
// default logger).
func openDB(ctx *cmtcfg.DBContext, log *slog.Logger) (dbm.DB, error) {
	if dbm.BackendType(ctx.Config.DBBackend) != dbm.PebbleDBBackend {
		return cmtcfg.DefaultDBProvider(ctx)
	}
	if log == nil {
		log = slog.Default()
	}
	return dbm.NewPebbleDBWithOpts(ctx.ID, ctx.Config.DBDir(), &pebblev1.Options{Logger: pebbleLogger{log.With("store", ctx.ID)}})
}
