// Package scale holds the issue-10 scale measurements of the CIP-11 QUIC
// transport (package adapters/quic): thousands of runners on loopback
// against a validator in its own process, each compared with a bare
// quic-go server measured in the same run.
//
// Everything is in the package's tests. Under a plain `go test` only a
// small smoke run (50 runners, a few seconds) executes, skipped with
// -short. The full runs are gated by CIP11_SCALE=1 and are meant to be run
// one at a time on an otherwise quiet machine:
//
//	CIP11_SCALE=1 go test -run 'TestScaleHeartbeat' -v -timeout 10m ./adapters/quic/scale
//	CIP11_SCALE=1 go test -run 'TestScalePush'      -v -timeout 10m ./adapters/quic/scale
//	CIP11_SCALE=1 go test -run 'TestScaleReconnect' -v -timeout 10m ./adapters/quic/scale
//
// CIP11_SCALE_N overrides the runner count of the heartbeat and reconnect
// runs (5000), CIP11_SCALE_SECONDS the heartbeat window (60).
//
// The validator (and the bare baseline server) run in helper processes:
// the test binary re-executed with CIP11_SCALE_HELPER set, driven by one
// line per command on stdin, so that their RSS and CPU are theirs alone.
package scale
