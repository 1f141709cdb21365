// Package scale holds the issue-10 scale measurements of the CIP-11 QUIC
// transport (package adapters/quic): thousands of runners on loopback
// against a validator in its own process, each compared with a bare
// quic-go baseline measured in the same run. RESULTS.md beside this file
// records the numbers.
//
// Everything is in the package's tests. Under a plain `go test` only a
// small smoke run (50 runners, a few seconds: heartbeats, a push, a
// restart) executes, skipped with -short. The full runs are gated by
// CIP11_SCALE=1; each takes one to four minutes and should hold the
// machine's heavy-run lock:
//
//	CIP11_SCALE=1 flock /tmp/cip11-heavy.lock go test -run TestScaleHeartbeat -v -timeout 10m ./adapters/quic/scale
//	CIP11_SCALE=1 flock /tmp/cip11-heavy.lock go test -run TestScalePush -v -timeout 10m ./adapters/quic/scale
//	CIP11_SCALE=1 flock /tmp/cip11-heavy.lock go test -run TestScaleReconnect -v -timeout 10m ./adapters/quic/scale
//
// Knobs: CIP11_SCALE_PROFILE (file prefix: CPU profiles of the push run's
// rounds, PREFIX.validator and PREFIX.runners), CIP11_SCALE_N (runners in the heartbeat and reconnect runs, 5000),
// CIP11_SCALE_SECONDS (heartbeat window, 60), CIP11_SCALE_PUSH_N (push
// run, 1000), CIP11_SCALE_PACE (comma-separated PushOptions.MaxInFlight
// values for the push runs: 0 = the default, Server.PushWindow; -1 = all at
// once), CIP11_SCALE_STORM
// (comma-separated "MaxHalfOpen/RetryAbove" validator settings, or
// "default"), CIP11_SCALE_RCVBUF (bytes: both servers' SO_RCVBUF, set after
// quic-go raised it, to see an unprivileged host), CIP11_SCALE_SKIP_BARE
// (heartbeat run without its baseline, for diagnosis).
//
// The validator and the bare baseline server run in helper processes: the
// test binary re-executed with CIP11_SCALE_HELPER set and driven by one
// line per command on stdin, so that their RSS (VmRSS from /proc) and CPU
// (getrusage) are theirs alone. Runners are full quic.Clients, one UDP
// socket each, in the test process; the bare runners are plain quic-go
// connections, also one socket each.
package scale
