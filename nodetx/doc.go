// Package nodetx is the devnet node's transaction and job-spec codec: the
// runner-signed C11T transactions (heartbeat, register and the CIP-2
// commit and reveal, §10.3) and the C11J job specs whose keccak is the
// job_id. It is pure (no I/O, no clock, no goroutines): the node's chain
// core (adapters/node/chain, which re-exports it), the CometBFT block
// layout (blocklayout) and the conformance vectors share it.
package nodetx
