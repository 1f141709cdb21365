package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 18 item 12: the `cip11 runner` banner names the validator QUIC
// address the runner dials: the -validator override when given, else the
// genesis validator.quic (it printed the genesis address in both cases).
func TestRunnerBannerNamesDialedValidator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	gq, oq := freePort(t, "udp"), freePort(t, "udp")
	genesisQUIC, override := fmt.Sprintf("127.0.0.1:%d", gq), fmt.Sprintf("127.0.0.1:%d", oq)
	var out, errb bytes.Buffer
	if code := run([]string{"genesis", "-o", dir, "-runners", "1", "-quic", genesisQUIC,
		"-http", fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))}, &out, &errb); code != 0 {
		t.Fatalf("genesis: %d %s", code, errb.String())
	}
	base := []string{"runner", "-genesis", filepath.Join(dir, "genesis.json"), "-key", filepath.Join(dir, "runner-0000.key"), "-log", "error"}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{nil, genesisQUIC},
		{[]string{"-validator", override}, override},
	} {
		p := start(t, append(base, c.extra...)...)
		waitFor(t, "the runner banner", 20*time.Second, func() bool { return strings.Contains(p.out.String(), "cip11 runner ") })
		banner := p.out.String()
		if !strings.Contains(banner, "→ "+c.want+" ") {
			t.Fatalf("flags %v: banner %q does not name %s", c.extra, banner, c.want)
		}
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}
