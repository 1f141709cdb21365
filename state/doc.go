// Package state defines the small reader interfaces through which the pure
// CIP-11 packages see chain state — above all the Runner Registry as stored at
// the end of a block (§7.2 index basis, §9.1 floor inputs, §9.3 weight inputs)
// — and an in-memory implementation beside each, in the manner of etcd/raft's
// Storage and MemoryStorage. An embedded KV store implements the same
// interfaces, including reads of historical block-S state (§9.2 pending pass).
package state
