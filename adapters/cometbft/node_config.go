package cometbft

import (
	"log/slog"

	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/chain"
)

// NodeConfig configures [StartNode].
type NodeConfig struct {
	// Home is a validator home (Home.Write's layout).
	Home string
	// Logger is the validator's and the application's (default discard).
	Logger *slog.Logger
	// CometLogger, if set, receives CometBFT's own log.
	CometLogger cmtlog.Logger
	// NoSync turns fsync off for the validator's stores (tests, devnets).
	NoSync bool
	// RetainBlocks, Metrics, Registerer: as node.ValidatorConfig's. On
	// Registerer also go CometBFT's own series, under CometNamespace, and
	// the presence gossip's; Close unregisters them.
	RetainBlocks uint64
	Metrics      *node.Metrics
	Registerer   prometheus.Registerer
	// OnFinalized: as AppConfig's.
	OnFinalized func(h uint64, digest cip11.Hash)
	// OnPushes: as node.ValidatorConfig's (after the catch-up gate).
	OnPushes func(h uint64, pushes []chain.Assignment)
	// NoGossip turns presence gossip off (§8.2): each proposer proposes
	// its own local presence only (the devnet's -gossip=false baseline).
	NoGossip bool
	// StallBlocks: as node.ValidatorConfig's (the unit is one CometBFT
	// round, roundInterval).
	StallBlocks int
	// RetainHeight: as node.ValidatorConfig's, the RetainHeight App.Commit
	// returns to CometBFT (nil: keep every block).
	RetainHeight func(committed uint64) uint64
	// SnapshotInterval, SnapshotKeep, SnapshotChunkSize, KeepBlocks: as
	// node.ValidatorConfig's (snapshots peers state-sync from, and
	// retention: CometBFT prunes its blocks below the retain height
	// Commit returns).
	SnapshotInterval  uint64
	SnapshotKeep      int
	SnapshotChunkSize int
	KeepBlocks        uint64
	// StateSync, if set, restores an empty validator from a peer's
	// snapshot instead of replaying every block (CometBFT skips it when
	// the node holds blocks).
	StateSync *StateSyncOptions
}
