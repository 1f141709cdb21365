// Package storetest is the contract suite of [store.Store]: any chain-state
// backend of cip11 runs [TestStore] from its own tests, the way a file
// system runs testing/fstest.TestFS.
//
// The suite is driven by the backend's test through an [Opener]: a
// deterministic test of every lifecycle and store sentinel, then random
// block sequences (registrations, updates and heartbeats, job and
// PendingSelectionV1 writes, mru_key writes, commits, discards and, for a
// persistent store, close and reopen) with every read compared with a
// plain in-memory model. It checks the block lifecycle (atomic Commit, exact
// Discard), immutable registry views with their ACTIVE_RUNNERS_KEY order
// (§7.2), the pending-record due-round index order (§9.2), the job and
// mru_key records (§9.4) and the digest enumerations, and the lifecycle
// sentinels (store.ErrNoBatch, store.ErrBatchOpen, store.ErrHeightOrder,
// store.ErrClosed, state.ErrUnknownHeight). store.Mem and adapters/pebble
// both pass it.
package storetest
