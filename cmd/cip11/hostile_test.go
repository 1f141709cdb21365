package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostileCmd picks its behaviour from the payload: endless output, a
// process that ignores SIGTERM and sleeps past every deadline, a fork
// bomb bounded by ulimit that keeps its children writing, or upper-case.
const hostileCmd = `p=$(cat); case "$p" in
yes) yes ;;
term) trap '' TERM; sleep 600 ;;
fork) ulimit -u 200 2>/dev/null; for i in 1 2 3 4 5 6 7 8; do (while :; do echo x; sleep 0.01; done) & done; wait ;;
*) printf '%s' "$p" | tr a-z A-Z ;;
esac`

// Issue 30: a runner process whose -exec command is hostile stays up. Its
// jobs with endless output, a command that ignores SIGTERM and a bounded
// fork bomb each fail with the reason in the runner's log (the executor
// kills the process group: output bound, SIGTERM then SIGKILL at the job's
// deadline), the chain says why the job expired, and the same runner then
// completes a normal job.
func TestExecHostileRunnerStaysUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	qport, hport := freePort(t, "udp"), freePort(t, "tcp")
	api := fmt.Sprintf("http://127.0.0.1:%d", hport)
	if code, out, errOut := cli("genesis", "-o", dir, "-runners", "1", "-quic", fmt.Sprintf("127.0.0.1:%d", qport),
		"-http", fmt.Sprintf("127.0.0.1:%d", hport)); code != 0 {
		t.Fatalf("genesis: exit %d: %s%s", code, out, errOut)
	}
	gen := filepath.Join(dir, "genesis.json")
	start(t, "validator", "-genesis", gen, "-key", filepath.Join(dir, "validator.key"), "-data", filepath.Join(dir, "data"),
		"-block-time", "200ms", "-log", "warn")
	r := start(t, "runner", "-genesis", gen, "-key", filepath.Join(dir, "runner-0000.key"), "-exec", hostileCmd,
		"-exec-timeout", "3s", "-exec-concurrency", "3", "-block-time", "200ms", "-log", "info")
	var st struct {
		Present int `json:"present"`
	}
	waitFor(t, "the runner present", 60*time.Second, func() bool { return getJSON(api+"/status", &st) == nil && st.Present == 1 })
	ids := map[string]string{}
	for i, payload := range []string{"yes", "term", "fork"} { // at once: three slots
		ids[payload] = postPayloadJob(t, api, 1, 10+i, payload)
	}
	for payload, id := range ids {
		var jv struct {
			outputJob
			ExpiredReason string `json:"expired_reason"`
		}
		waitFor(t, payload+" job ended", 90*time.Second, func() bool {
			return getJSON(api+"/jobs/"+id, &jv) == nil && (jv.State == "completed" || jv.State == "expired")
		})
		if jv.State != "expired" || jv.ExpiredReason != "no_result_by_deadline" {
			t.Fatalf("%s job: state %s, expired_reason %q", payload, jv.State, jv.ExpiredReason)
		}
		if r.cmd.ProcessState != nil {
			t.Fatalf("the runner exited after the %s job: %s", payload, r.out.String())
		}
		if log := r.out.String(); !strings.Contains(log, "job failed") || !strings.Contains(log, id) {
			t.Fatalf("%s job: the runner's log does not say it failed:\n%s", payload, log)
		}
	}
	if log := r.out.String(); !strings.Contains(log, "output") {
		t.Fatalf("the endless-output failure does not name the output bound:\n%s", log)
	}
	id := postPayloadJob(t, api, 1, 20, "still up")
	jv := waitEnded(t, api, id, 60*time.Second)
	if jv.State != "completed" || jv.Output == nil || *jv.Output != hexOf("STILL UP") {
		t.Fatalf("the job after the hostile ones: %+v", jv)
	}
}
