package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A refused runner says why (issue 30): a runner whose genesis has another
// chain_id and a runner whose key the chain does not register each print
// the validator's §12.5 Goodbye reason on stderr within 10 s, and the
// banner names the validator it dials.
func TestRunnerPrintsRefusalReason(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	quic, http := fmt.Sprintf("127.0.0.1:%d", freePort(t, "udp")), fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))
	gen := func(sub string, args ...string) string {
		t.Helper()
		d := filepath.Join(dir, sub)
		var out, errb bytes.Buffer
		if code := run(append([]string{"genesis", "-o", d, "-quic", quic, "-http", http}, args...), &out, &errb); code != 0 {
			t.Fatalf("genesis %v: %d %s", args, code, errb.String())
		}
		return d
	}
	home := gen("chain", "-runners", "1")
	// The same seed derives the same validator key: only chain_id differs.
	other := gen("other", "-runners", "1", "-chain-id", "9999")
	// The same seed derives the same runner keys: runner-0002 is not in
	// the chain's genesis (it registers runner-0000 only).
	more := gen("more", "-runners", "3")
	start(t, "validator", "-genesis", filepath.Join(home, "genesis.json"), "-key", filepath.Join(home, "validator.key"),
		"-data", filepath.Join(dir, "data"), "-block-time", "200ms", "-log", "warn")
	for _, c := range []struct {
		name, genesis, key, reason, detail string
	}{
		{"another chain", filepath.Join(other, "genesis.json"), filepath.Join(other, "runner-0000.key"), "WrongChain", "chain"},
		{"unregistered key", filepath.Join(home, "genesis.json"), filepath.Join(more, "runner-0002.key"), "AuthFailed", "not registered"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := start(t, "runner", "-genesis", c.genesis, "-key", c.key, "-log", "info")
			t0 := time.Now()
			waitFor(t, "the banner", 10*time.Second, func() bool { return strings.Contains(r.out.String(), "dials validator ") })
			if !strings.Contains(r.out.String(), "at "+quic) {
				t.Errorf("the banner does not name the validator's address %s:\n%s", quic, r.out.String())
			}
			waitFor(t, "the refusal reason "+c.reason, 10*time.Second, func() bool {
				out := r.out.String()
				return strings.Contains(out, "refused by validator") && strings.Contains(out, "reason="+c.reason) && strings.Contains(out, c.detail)
			})
			t.Logf("%s: refusal logged after %v", c.name, time.Since(t0).Round(time.Millisecond))
		})
	}
}
