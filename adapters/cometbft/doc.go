// Package cometbft runs a CIP-11 validator as one member of a network on
// CometBFT v1.0 (ABCI++, DECISIONS D29–D33; docs/network.md). It is the
// only package that imports CometBFT.
//
//   - [App] is the ABCI++ application: the network driver of the
//     validator's step API (node.Validator: ProposeBlock, CheckBlock,
//     FinalizeBlock, CommitBlock), the way node.Validator.ProduceBlock is
//     the single-validator one. CometBFT's mempool is the network's only
//     mempool (CheckTx admits through the validator, PrepareProposal
//     builds from its transactions, FinalizeBlock executes the decided
//     block without admitting it again). The threshold seed rides in vote
//     extensions (app_seed.go, D31); the block header is D32's.
//   - [StartNode] starts a validator's CometBFT node in process around an
//     App, with the CIP-11 presence gossip on its own p2p channel
//     (gossip.go, §8.2, D33), CometBFT's metrics on the node's registry
//     (metrics.go), and the health facts /status reports (health.go);
//     a consensus failure ends the node (logger.go).
//   - [NewNetwork] writes the homes of an N-validator network (the
//     CometBFT configuration and genesis beside each validator's CIP-11
//     genesis and keys; `cip11 genesis -validators N`). Its keys come from
//     a devnet dealer (internal/devkeys, D31): production key generation is
//     consensus-owned (§5.4).
//   - [ResetHome] clears a validator's chain state and keeps its last-sign
//     state (`cip11 reset`); catch-up (catchup.go) keeps a validator that
//     replays or block-syncs from pushing the past.
//
// The devnets that run whole networks in one process are in
// cmd/internal/devnet.
package cometbft
