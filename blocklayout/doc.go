// Package layout is the CIP-11 block's layout as CometBFT transactions
// (D32, SPEC-NOTES C1): encoding, strict decoding and the layout's
// sentinels; with it the other pure parts of the network on CometBFT: the
// vote extension (D31, C2) and the presence gossip message (D33, C8). It
// does not import CometBFT (adapters/cometbft does), so its fuzz targets run
// on a small binary and package conformance pins it with vectors
// (cometbft_layout, cometbft_vote_extension, presence_gossip).
package blocklayout
