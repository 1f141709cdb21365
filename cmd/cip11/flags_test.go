package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestBadFlagValues (issue 18 #14): every out-of-range or malformed flag
// value of every subcommand is a usage error: exit 2, nothing on stdout,
// and stderr naming the flag. Before, most of these ran with a default
// (-duration -5s, -block-time 0, -jobs-per-block -3, -push-window -7) or
// said only "bad arguments".
func TestBadFlagValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string // the flag stderr must name
	}{
		{[]string{"devnet", "-runners", "0"}, "-runners"},
		{[]string{"devnet", "-runners", "-2"}, "-runners"},
		{[]string{"devnet", "-runners", "5001"}, "-runners"},
		{[]string{"devnet", "-duration", "-5s"}, "-duration"},
		{[]string{"devnet", "-duration", "0"}, "-duration"},
		{[]string{"devnet", "-duration", "5"}, "-duration"},
		{[]string{"devnet", "-block-time", "0"}, "-block-time"},
		{[]string{"devnet", "-block-time", "-1s"}, "-block-time"},
		{[]string{"devnet", "-jobs-per-block", "-3"}, "-jobs-per-block"},
		{[]string{"devnet", "-jobs-per-block", "0"}, "-jobs-per-block"},
		{[]string{"devnet", "-multi-per-mille", "-1"}, "-multi-per-mille"},
		{[]string{"devnet", "-multi-per-mille", "1001"}, "-multi-per-mille"},
		{[]string{"devnet", "-fail-per-mille", "-1"}, "-fail-per-mille"},
		{[]string{"devnet", "-fail-per-mille", "1001"}, "-fail-per-mille"},
		{[]string{"devnet", "-seed", "-1"}, "-seed"},
		{[]string{"devnet", "-http", "nonsense"}, "-http"},
		{[]string{"devnet", "-http", "127.0.0.1:70000"}, "-http"},
		{[]string{"devnet", "-log", "loud"}, "-log"},
		{[]string{"devnet", "-chaos=maybe"}, "-chaos"},
		{[]string{"devnet", "extra"}, "extra"},
		{[]string{"devnet", "-phase", "4"}, "-phase"},
		{[]string{"devnet", "-phase", "-1"}, "-phase"},
		{[]string{"devnet", "-phase", "two"}, "-phase"},
		{[]string{"genesis", "-phase", "4"}, "-phase"},
		{[]string{"genesis", "-phase", "-1"}, "-phase"},
		{[]string{"genesis", "-phase", "1", "-poll-disabled"}, "-poll-disabled"},
		{[]string{"genesis", "-runners", "-1"}, "-runners"},
		{[]string{"genesis", "-runners", "100001"}, "-runners"},
		{[]string{"genesis", "-seed", "x"}, "-seed"},
		{[]string{"genesis", "-chain-id", "0"}, "-chain-id"},
		{[]string{"genesis", "-chain-id", "-7"}, "-chain-id"},
		{[]string{"genesis", "-quic", "7011"}, "-quic"},
		{[]string{"genesis", "-http", ""}, "-http"},
		{[]string{"genesis", "-o", ""}, "-o"},
		{[]string{"genesis", "-runner", "xyz"}, "-runner"},
		{[]string{"genesis", "extra"}, "extra"},
		{[]string{"validator", "-keep-blocks", "1000"}, "-keep-blocks"},
		{[]string{"validator", "-keep-blocks", "100", "-snapshot-interval", "50"}, "-keep-blocks"},
		{[]string{"validator", "-keep-blocks", "500", "-snapshot-interval", "600"}, "-keep-blocks"},
		{[]string{"validator", "-snapshot-interval", "-1"}, "-snapshot-interval"},
		{[]string{"validator", "-snapshot-keep", "0"}, "-snapshot-keep"},
		{[]string{"validator", "-state-sync", "127.0.0.1:26603"}, "-state-sync"},
		{[]string{"validator", "-home", "h", "-state-sync", "nohost"}, "-state-sync"},
		{[]string{"validator", "-home", "h", "-state-sync", "127.0.0.1:1", "-trust-height", "5"}, "-trust-height"},
		{[]string{"validator", "-home", "h", "-state-sync", "127.0.0.1:1", "-trust-height", "5", "-trust-hash", "abc"}, "-trust-hash"},
		{[]string{"validator", "-trust-height", "5", "-trust-hash", strings.Repeat("ab", 32)}, "-trust-height"},
		{[]string{"validator", "-block-time", "0"}, "-block-time"},
		{[]string{"validator", "-block-time", "-1s"}, "-block-time"},
		{[]string{"validator", "-skip-per-mille", "1001"}, "-skip-per-mille"},
		{[]string{"validator", "-skip-per-mille", "-1"}, "-skip-per-mille"},
		{[]string{"validator", "-push-window", "-7"}, "-push-window"},
		{[]string{"validator", "-push-window", "-2"}, "-push-window"},
		{[]string{"validator", "-listen", "nowhere"}, "-listen"},
		{[]string{"validator", "-http", "on"}, "-http"},
		{[]string{"validator", "-genesis", ""}, "-genesis"},
		{[]string{"validator", "-key", ""}, "-key"},
		{[]string{"validator", "-log", "verbose"}, "-log"},
		{[]string{"validator", "-no-fsync=2"}, "-no-fsync"},
		{[]string{"validator", "extra"}, "extra"},
		{[]string{"runner", "-work", "0"}, "-work"},
		{[]string{"runner", "-work", "-50ms"}, "-work"},
		{[]string{"runner", "-fail-per-mille", "1001"}, "-fail-per-mille"},
		{[]string{"runner", "-fail-per-mille", "-1"}, "-fail-per-mille"},
		{[]string{"runner", "-listen", "bogus"}, "-listen"},
		{[]string{"runner", "-listen", ":70000"}, "-listen"},
		{[]string{"runner", "-api", "127.0.0.1:8011"}, "-api"},
		{[]string{"runner", "-api", "ftp://x"}, "-api"},
		{[]string{"runner", "-validator", "x"}, "-validator"},
		{[]string{"runner", "-genesis", ""}, "-genesis"},
		{[]string{"runner", "-key", ""}, "-key"},
		{[]string{"runner", "-log", "x"}, "-log"},
		{[]string{"runner", "extra"}, "extra"},
		{[]string{"runner", "-exec", ""}, "-exec"},
		{[]string{"runner", "-exec", "cat", "-exec-concurrency", "-1"}, "-exec-concurrency"},
		{[]string{"runner", "-exec", "cat", "-exec-concurrency", "1025"}, "-exec-concurrency"},
		{[]string{"runner", "-exec", "cat", "-exec-timeout", "-1s"}, "-exec-timeout"},
		{[]string{"runner", "-exec", "cat", "-exec-max-output", "0"}, "-exec-max-output"},
		{[]string{"runner", "-exec", "cat", "-exec-max-output", "4097"}, "-exec-max-output"},
		{[]string{"runner", "-exec-timeout", "1s"}, "-exec-timeout"},
		{[]string{"runner", "-exec-concurrency", "2"}, "-exec-concurrency"},
		{[]string{"runner", "-exec-max-output", "10"}, "-exec-max-output"},
		{[]string{"runner", "-exec", "cat", "-work", "1s"}, "-work"},
		{[]string{"runner", "-exec", "cat", "-fail-per-mille", "3"}, "-fail-per-mille"},
		{[]string{"runner", "-block-time", "0"}, "-block-time"},
		{[]string{"replay", "-blocks", "-1"}, "-blocks"},
		{[]string{"replay", "-blocks", "x"}, "-blocks"},
		{[]string{"replay", "-fsync=x"}, "-fsync"},
		{[]string{"replay", "a", "b"}, "at most 1"},
		{[]string{"gen", "-runners", "0"}, "-runners"},
		{[]string{"gen", "-runners", "-3"}, "-runners"},
		{[]string{"gen", "-runners", "10001"}, "-runners"},
		{[]string{"gen", "-blocks", "0"}, "-blocks"},
		{[]string{"gen", "-blocks", "-1"}, "-blocks"},
		{[]string{"gen", "-seed", "-1"}, "-seed"},
		{[]string{"gen", "-o", ""}, "-o"},
		{[]string{"gen", "extra"}, "extra"},
		{[]string{"genesis", "-validators", "65"}, "-validators"},
		{[]string{"genesis", "-validators", "-1"}, "-validators"},
		{[]string{"genesis", "-validators", "four"}, "-validators"},
		{[]string{"genesis", "-validators", "4", "-base-port", "1023"}, "-base-port"},
		{[]string{"genesis", "-validators", "4", "-base-port", "65536"}, "-base-port"},
		{[]string{"genesis", "-validators", "4", "-base-port", "65500"}, "-base-port"},
		{[]string{"genesis", "-validators", "4", "-quic", "127.0.0.1:1"}, "-quic"},
		{[]string{"genesis", "-validators", "4", "-http", "127.0.0.1:1"}, "-http"},
		{[]string{"genesis", "-validators", "4", "-force"}, "-force"},
		{[]string{"genesis", "-validators", "4", "-runners-file", "x"}, "-runners-file"},
		{[]string{"genesis", "-validators", "4", "-runner", strings.Repeat("ab", 20)}, "-runner"},
		{[]string{"genesis", "-base-port", "30000"}, "-base-port"},
		{[]string{"validator", "-home", ""}, "-home"},
		{[]string{"validator", "-home", "net/v0", "-block-time", "1s"}, "-block-time"},
		{[]string{"validator", "-home", "net/v0", "-genesis", "g.json"}, "-genesis"},
		{[]string{"validator", "-home", "net/v0", "-key", "v.key"}, "-key"},
		{[]string{"validator", "-home", "net/v0", "-data", "d"}, "-data"},
		{[]string{"validator", "-home", "net/v0", "-listen", "127.0.0.1:1"}, "-listen"},
		{[]string{"validator", "-home", "net/v0", "-push-window", "5"}, "-push-window"},
		{[]string{"validator", "-home", "net/v0", "-skip-per-mille", "5"}, "-skip-per-mille"},
		{[]string{"validator", "-home", "net/v0", "-comet-log", "loud"}, "-comet-log"},
		{[]string{"validator", "-comet-log", "info"}, "-comet-log"},
		{[]string{"devnet", "-validators", "25"}, "-validators"},
		{[]string{"devnet", "-mode-a"}, "-mode-a"},
		{[]string{"devnet", "-subset", "20"}, "-subset"},
		{[]string{"devnet", "-validators", "4", "-subset", "65"}, "-subset"},
		{[]string{"devnet", "-validators", "4", "-uncertified", "2"}, "-uncertified"},
		{[]string{"devnet", "-validators", "4", "-mode-a", "-runners", "3", "-uncertified", "4"}, "-uncertified"},
		{[]string{"devnet", "-validators", "4", "-proof-ttl", "30"}, "-proof-ttl"},
		{[]string{"devnet", "-validators", "4", "-timeout-commit", "2m"}, "-timeout-commit"},
		{[]string{"devnet", "-timeout-commit", "1s"}, "-timeout-commit"},
		{[]string{"devnet", "-validators", "3", "-chaos"}, "-chaos"},
		{[]string{"devnet", "-validators", "-1"}, "-validators"},
		{[]string{"devnet", "-validators", "4", "-phase", "1"}, "-phase"},
		{[]string{"devnet", "-validators", "4", "-http", "127.0.0.1:1"}, "-http"},
		{[]string{"devnet", "-validators", "4", "-block-time", "1s"}, "-block-time"},
		{[]string{"devnet", "-validators", "4", "-fail-per-mille", "1"}, "-fail-per-mille"},
		{[]string{"devnet", "-validators", "4", "-kills", "2"}, "-kills"},
		{[]string{"devnet", "-validators", "4", "-chaos", "-kills", "0"}, "-kills"},
		{[]string{"devnet", "-kills", "2", "-chaos"}, "-kills"},
		{[]string{"devnet", "-gossip=false"}, "-gossip"},
		{[]string{"devnet", "-reconfigure"}, "-reconfigure"},
		{[]string{"genesis", "-reconfigure"}, "-reconfigure"},
		{[]string{"genesis", "-validators", "4", "-add-at", "9"}, "-add-at"},
		{[]string{"genesis", "-validators", "4", "-reconfigure", "-add-at", "20", "-remove-at", "21"}, "-remove-at"},
		{[]string{"genesis", "-validators", "4", "-reconfigure", "-overlap", "0"}, "-overlap"},
		{[]string{"devnet", "-validators", "4", "-add-at", "9"}, "-add-at"},
		{[]string{"devnet", "-validators", "4", "-overlap", "9"}, "-overlap"},
		{[]string{"devnet", "-validators", "4", "-reconfigure", "-chaos"}, "-chaos"},
		{[]string{"devnet", "-validators", "4", "-reconfigure", "-add-at", "20", "-remove-at", "22"}, "-remove-at"},
		{[]string{"devnet", "-validators", "4", "-reconfigure", "-add-at", "2"}, "-add-at"},
		{[]string{"devnet", "-validators", "4", "-reconfigure", "-add-at", "14"}, "-add-at 14 must be at least 15"},
		{[]string{"genesis", "-validators", "4", "-in-band"}, "-in-band needs -reconfigure"},
		{[]string{"genesis", "-in-band"}, "-in-band"},
		{[]string{"genesis", "-validators", "4", "-reconfigure", "-in-band", "-add-at", "9"}, "-add-at 9 must be at least 10"},
		{[]string{"reconfigure"}, "-net and -epoch are required"},
		{[]string{"reset"}, "-home is required"},
		{[]string{"reset", "-home", "x", "extra"}, "extra"},
		{[]string{"reset", "-home", "x", "-signed-height", "-1"}, "-signed-height"},
		{[]string{"validator", "-stall-blocks", "0"}, "-stall-blocks"},
		{[]string{"reconfigure", "-net", "x", "-epoch", "0"}, "-epoch"},
		{[]string{"reconfigure", "-net", "x", "-epoch", "1", "-node", "ftp://x"}, "-node"},
		{[]string{"devnet", "-validators", "4", "-reconfigure", "-add-at", "20", "-remove-at", "34"}, "-remove-at 34 at least -add-at + max(-overlap 15, 12)"},
		{[]string{"devnet", "-validators", "4", "-reconfigure", "-overlap", "0"}, "-overlap"},
		{[]string{"devnet", "-validators", "1", "-gossip=false"}, "-gossip"},
		{[]string{"vectors", "gen", "-dir", ""}, "-dir"},
		{[]string{"vectors", "gen", "extra"}, "extra"},
		{[]string{"vectors", "check"}, "missing"},
		{[]string{"vectors", "check", "-x"}, "-x"},
	} {
		code, out, errOut := cli(tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.flag) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, empty stdout, stderr naming %s", tc.args, code, out, errOut, tc.flag)
		}
	}
}

// TestBadFlagValueSaysRange: the complaint names the allowed range.
func TestBadFlagValueSaysRange(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"devnet", "-duration", "-5s"}, "from 1ms to 24h"},
		{[]string{"devnet", "-runners", "0"}, "from 1 to 5000"},
		{[]string{"validator", "-push-window", "-7"}, "-1 (all at once), 0 (automatic) or a count from 1"},
		{[]string{"validator", "-skip-per-mille", "1001"}, "from 0 to 1000"},
		{[]string{"replay", "-blocks", "-1"}, "from 0 to"},
		{[]string{"devnet", "-phase", "4"}, "from 0 to 3"},
		{[]string{"genesis", "-phase", "9"}, "from 0 to 3"},
	} {
		if _, _, errOut := cli(tc.args...); !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: stderr %q lacks %q", tc.args, errOut, tc.want)
		}
	}
}

// TestGoodEdgeValuesAccepted: the ends of the ranges parse (the commands
// then fail later, on a missing genesis file, with exit 1 — not 2).
func TestGoodEdgeValuesAccepted(t *testing.T) {
	missing := t.TempDir() + "/none.json"
	for _, args := range [][]string{
		{"validator", "-genesis", missing, "-push-window", "-1"},
		{"validator", "-genesis", missing, "-push-window", "0", "-skip-per-mille", "1000", "-http", "off", "-block-time", "1ms"},
		{"runner", "-genesis", missing, "-api", "https://example.org:8011", "-fail-per-mille", "1000", "-work", "1ms"},
	} {
		if code, _, errOut := cli(args...); code != 1 || !strings.Contains(errOut, "none.json") {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 on the missing genesis", args, code, errOut)
		}
	}
}

// TestHelpEveryCommand: cip11 COMMAND -h exits 0 and prints, on stdout,
// what the command does and every flag it takes.
func TestHelpEveryCommand(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)
	for _, tc := range []struct {
		cmd   []string
		flags []string
		says  string
	}{
		{[]string{"devnet"}, []string{"add-at", "block-time", "chaos", "comet-log", "data", "duration", "fail-per-mille", "gossip", "http", "jobs-per-block", "json", "kills", "log", "mode-a", "multi-per-mille", "overlap", "phase", "proof-ttl", "quiet", "reconfigure", "remove-at", "runners", "seed", "subset", "timeout-commit", "uncertified", "validators"}, "one process"},
		{[]string{"genesis"}, []string{"add-at", "base-port", "chain-id", "force", "hosts", "hosts-file", "http", "in-band", "o", "overlap", "phase", "poll-disabled", "quic", "reconfigure", "remove-at", "rpc", "runner", "runners", "runners-file", "seed", "timeout-commit", "validators"}, "genesis"},
		{[]string{"validator"}, []string{"block-time", "comet-log", "data", "genesis", "home", "http", "keep-blocks", "key", "listen", "log", "no-fsync", "push-window", "skip-per-mille", "snapshot-interval", "snapshot-keep", "stall-blocks", "state-sync", "trust-hash", "trust-height"}, "chain node"},
		{[]string{"reset"}, []string{"home", "signed-height"}, "priv_validator_state.json"},
		{[]string{"runner"}, []string{"api", "block-time", "exec", "exec-concurrency", "exec-max-output", "exec-timeout", "fail-per-mille", "genesis", "key", "listen", "log", "validator", "work"}, "runner process"},
		{[]string{"replay"}, []string{"blocks", "fsync", "json", "no-cache", "quiet", "snapshots", "store"}, "FILE"},
		{[]string{"gen"}, []string{"blocks", "multi-validator", "o", "runners", "seed"}, "synthetic chain log"},
		{[]string{"vectors", "gen"}, []string{"dir"}, "generators"},
		{[]string{"reconfigure"}, []string{"activation", "epoch", "net", "node"}, "DEVNET ONLY"},
		{[]string{"vectors", "check"}, nil, "FILE"},
		{[]string{"vectors"}, nil, "check"},
	} {
		for _, h := range []string{"-h", "-help"} {
			code, out, errOut := cli(append(slices.Clone(tc.cmd), h)...)
			if code != 0 || errOut != "" || !strings.Contains(out, "usage: cip11 "+strings.Join(tc.cmd, " ")) || !strings.Contains(out, tc.says) {
				t.Errorf("%q %s: exit %d, stderr %q, stdout:\n%s", tc.cmd, h, code, errOut, out)
				continue
			}
			var got []string
			for _, m := range flagLine.FindAllStringSubmatch(out, -1) {
				got = append(got, m[1])
			}
			if !slices.Equal(got, tc.flags) {
				t.Errorf("%q %s lists flags %q, want %q", tc.cmd, h, got, tc.flags)
			}
		}
	}
}
