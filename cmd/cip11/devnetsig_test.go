package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ctrl-C in cip11 devnet (issue 30): a real process, the single-validator
// devnet and a 2-validator network, each interrupted with SIGINT once it
// has made blocks, prints the report so far (JSON on stdout, interrupted:
// true), says so on stderr and exits 130.
func TestDevnetSIGINTPrintsReportSoFar(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"single", []string{"devnet", "-runners", "4", "-duration", "1h", "-json"}},
		{"network", []string{"devnet", "-validators", "2", "-runners", "4", "-duration", "1h", "-json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], c.args...)
			cmd.Env = append(os.Environ(), "CIP11_AS_MAIN=1")
			var stdout, stderr syncWriter
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				if t.Failed() {
					t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
				}
			})
			// The progress line names the height once a second.
			waitFor(t, "blocks", 60*time.Second, func() bool {
				return blocksMade.MatchString(stderr.String())
			})
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("no exit 60 s after SIGINT")
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("exit %v, want status 130", err)
			}
			var rep struct {
				Interrupted bool   `json:"interrupted"`
				Blocks      uint64 `json:"blocks"`
				Lost        int    `json:"jobs_lost"`
			}
			if err := json.Unmarshal([]byte(strings.TrimSpace(stdout.String())), &rep); err != nil {
				t.Fatalf("the report so far is not JSON on stdout: %v", err)
			}
			if !rep.Interrupted || rep.Blocks == 0 || rep.Lost != 0 {
				t.Errorf("report %+v, want interrupted, blocks > 0, none lost", rep)
			}
			if !strings.Contains(stderr.String(), "interrupted: the report is the run so far") {
				t.Errorf("stderr does not say the report is the run so far")
			}
			if strings.Contains(stdout.String(), "replay_agrees") {
				t.Errorf("the report claims a replay result: %s", stdout.String())
			}
		})
	}
}

// blocksMade matches a devnet progress line at a height above 0.
var blocksMade = regexp.MustCompile(`height [1-9][0-9]*,`)
