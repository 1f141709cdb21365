// Package store is the one shape every chain-state backend of cip11 has:
// the state interfaces the block engine and the registry writers use,
// plus the block lifecycle that makes a block's writes atomic. It holds
// the CIP-11 dispatcher state the spec adds or reads: the Runner Registry
// with its append-only ACTIVE_RUNNERS_KEY order (§7.2, the basis of
// PresenceInput indices, §8.5), job records and the PendingSelectionV1
// records of the pending pass (§9.2), their timeout deadlines (§11.2), and
// the mru_key records (§9.3, §9.4), each with the enumerations the
// chain-log state digest reads (docs/chainlog.md).
//
// [Store] is the interface and [Mem] the in-memory backend; adapters/pebble
// is the on-disk one (docs/storage.md); the contract suite in
// store/storetest checks any implementation. A Store is driven one block
// at a time: Begin(h), the block's reads and writes through the accessor
// views, then Commit or Discard. The block executor (package blockexec)
// is its driver in the live validator and in replay.
//
// The package is pure: no I/O besides what a backend does behind the
// interface, no clock, no goroutines.
package store
