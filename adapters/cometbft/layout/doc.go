// Package layout is the CIP-11 block's layout as CometBFT transactions
// (D32, SPEC-NOTES C1): encoding, strict decoding and the layout's
// sentinels. It does not import CometBFT (adapters/cometbft does), so its
// fuzz target runs on a small binary.
package layout
