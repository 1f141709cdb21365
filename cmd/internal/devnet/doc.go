// Package devnet runs the in-process devnets of cip11 devnet: generated
// keys and genesis (DEVNET ONLY, internal/devkeys), runners over real QUIC
// on loopback, one job generator, and a report.
//
//   - Run: one validator producing its own blocks (node.Validator with the
//     solo producer), with -chaos (runners killed mid-job, connections
//     dropped, the validator restarted on its directory), the HTTP API and
//     dashboard, and the §14 phase.
//   - RunNetwork: N validators agreeing through CometBFT (cometbft.Node),
//     with -chaos (one validator killed and restarted), -pause, in-band
//     reconfiguration (the devnet dealer and admin) and Mode A (the §8.3
//     report, ModeAReport).
//
// The runners' chain is node.LocalChain (with Pick) over the current validator (Run)
// or the one furthest ahead (RunNetwork). The package is not library API:
// it lives under cmd/ (outside the pure set and the library path), and its
// tests are the end-to-end runs of both devnets.
package devnet
