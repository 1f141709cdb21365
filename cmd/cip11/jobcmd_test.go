package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
)

// cip11Run runs the cip11 binary (this test binary as main) with args and
// returns its exit code, stdout and stderr.
func cip11Run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), "CIP11_AS_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("cip11 %v: %v", args, err)
	return 0, "", ""
}

var jobIDLine = regexp.MustCompile(`^[0-9a-f]{64}\n$`)

// Usage errors exit 2 naming the flag; an unreachable node exits 3 on
// stderr; every subcommand's -h ends its description with an example and
// documents the exit codes.
func TestJobCommandUsage(t *testing.T) {
	id := strings.Repeat("ab", 32)
	for _, args := range [][]string{
		{"job"},
		{"job", "nope"},
		{"job", "submit", "-runners", "0"},
		{"job", "submit", "-runners", "x"},
		{"job", "submit", "-kind", "256"},
		{"job", "submit", "-timeout", "0"},
		{"job", "submit", "-node", "ftp://x"},
		{"job", "submit", "-submitter", "0xabc"},
		{"job", "submit", "-payload", "a", "-payload-file", "f"},
		{"job", "submit", "-payload-file", filepath.Join(t.TempDir(), "missing")},
		{"job", "submit", "-poll", "1s"},
		{"job", "submit", "extra"},
		{"job", "get"},
		{"job", "get", "xyz"},
		{"job", "get", strings.ToUpper(id)},
		{"job", "get", id, id},
		{"job", "list", "-limit", "0"},
		{"job", "list", "-limit", "501"},
		{"job", "list", "-state", "running"},
		{"job", "list", "-submitter", "12"},
	} {
		code, out, errOut := cip11Run(t, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "usage") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, usage on stderr", args, code, out, errOut)
		}
	}
	for _, sub := range []string{"submit", "get", "list"} {
		code, out, _ := cip11Run(t, "job", sub, "-h")
		if code != 0 || !strings.Contains(out, "Exit codes: 0 success; 1 the job expired") || !strings.Contains(out, "Example:\n  cip11 job "+sub) {
			t.Errorf("job %s -h: exit %d\n%s", sub, code, out)
		}
	}
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t, "tcp"))
	for _, args := range [][]string{
		{"job", "submit", "-node", dead, "-payload", "x"},
		{"job", "get", "-node", dead, id},
		{"job", "list", "-node", dead},
	} {
		code, out, errOut := cip11Run(t, args...)
		if code != 3 || out != "" || !strings.Contains(errOut, "node unreachable") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 3, node unreachable", args, code, out, errOut)
		}
	}
}

// A real single validator and two runner processes, driven by the built
// command: a job with nobody connected expires and `submit -wait` exits 1
// naming why; with the runners up, `submit -wait` completes (exit 0, the
// output on stdout when the node reports one), `get` prints the job,
// `list` pages through every job, and a 404 exits 3.
func TestJobCommandProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	qport, hport := freePort(t, "udp"), freePort(t, "tcp")
	api := fmt.Sprintf("http://127.0.0.1:%d", hport)
	if code, _, errOut := cli("genesis", "-o", dir, "-runners", "2", "-quic", fmt.Sprintf("127.0.0.1:%d", qport),
		"-http", fmt.Sprintf("127.0.0.1:%d", hport)); code != 0 {
		t.Fatalf("genesis: %d %s", code, errOut)
	}
	gen := filepath.Join(dir, "genesis.json")
	start(t, "validator", "-genesis", gen, "-key", filepath.Join(dir, "validator.key"), "-data", filepath.Join(dir, "data"),
		"-block-time", "100ms", "-log", "warn")
	waitFor(t, "the validator's API", 30*time.Second, func() bool {
		var st map[string]any
		return getJSON(api+"/status", &st) == nil
	})

	// nobody connected: the job expires and -wait says why
	code, out, errOut := cip11Run(t, "job", "submit", "-node", api, "-timeout", "1", "-payload", "lost", "-wait")
	if code != 1 || out != "" || !strings.Contains(errOut, "job expired") || !strings.Contains(errOut, "no_runner_connected") {
		t.Fatalf("expiring job: exit %d, stdout %q, stderr %q; want 1 naming no_runner_connected", code, out, errOut)
	}
	expiredID := regexp.MustCompile(`job ([0-9a-f]{64})\n`).FindStringSubmatch(errOut)
	if expiredID == nil {
		t.Fatalf("-wait did not name the job id on stderr: %q", errOut)
	}

	for i := range 2 {
		start(t, "runner", "-genesis", gen, "-key", filepath.Join(dir, fmt.Sprintf("runner-%04d.key", i)), "-work", "10ms", "-log", "warn")
	}
	waitFor(t, "both runners present", 60*time.Second, func() bool {
		var st struct {
			Present int `json:"present"`
		}
		return getJSON(api+"/status", &st) == nil && st.Present == 2
	})

	code, out, errOut = cip11Run(t, "job", "submit", "-node", api, "-runners", "2", "-payload", "hello cip11", "-wait")
	if code != 0 {
		t.Fatalf("submit -wait: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	m := regexp.MustCompile(`job ([0-9a-f]{64})\n`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("submit -wait named no job on stderr: %q", errOut)
	}
	doneID := m[1]
	// the job view decides what stdout holds: its output, hex-decoded, or nothing
	var view struct {
		State  string  `json:"state"`
		Output *string `json:"output"`
	}
	if err := getJSON(api+"/jobs/"+doneID, &view); err != nil || view.State != "completed" {
		t.Fatalf("job %s after -wait: %+v %v", doneID, view, err)
	}
	if view.Output == nil && out != "" {
		t.Fatalf("no output in the view, yet stdout %q", out)
	}
	t.Logf("submit -wait: stdout %q (view output present: %v)", out, view.Output != nil)

	// without -wait: the id alone on stdout; -json: the view
	code, out, errOut = cip11Run(t, "job", "submit", "-node", api, "-payload", "x")
	if code != 0 || !jobIDLine.MatchString(out) || errOut != "" {
		t.Fatalf("submit: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = cip11Run(t, "job", "submit", "-node", api, "-json", "-kind", "3")
	var jv struct {
		ID      string `json:"id"`
		JobKind int    `json:"job_kind"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &jv) != nil || jv.JobKind != 3 || len(jv.ID) != 64 {
		t.Fatalf("submit -json: exit %d, %q", code, out)
	}

	// get
	code, out, errOut = cip11Run(t, "job", "get", "-node", api, expiredID[1])
	if code != 0 || !strings.Contains(out, "state           expired") || !strings.Contains(out, "expired         no_runner_connected: ") {
		t.Fatalf("get expired: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = cip11Run(t, "job", "get", "-node", api, "-json", doneID)
	if code != 0 || !strings.Contains(out, `"state": "completed"`) {
		t.Fatalf("get -json: exit %d\n%s", code, out)
	}
	code, out, errOut = cip11Run(t, "job", "get", "-node", api, strings.Repeat("00", 32))
	if code != 3 || out != "" || !strings.Contains(errOut, "404") || !strings.Contains(errOut, "job not found") {
		t.Fatalf("get unknown: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// list: 4 jobs; one per page with -all, the cursor hint without
	code, out, errOut = cip11Run(t, "job", "list", "-node", api, "-limit", "1", "-all")
	if lines := strings.Count(out, "\n"); code != 0 || lines != 4 || !strings.Contains(out, doneID) || !strings.Contains(out, expiredID[1]) {
		t.Fatalf("list -all: exit %d, %d lines\n%s%s", code, lines, out, errOut)
	}
	code, out, errOut = cip11Run(t, "job", "list", "-node", api, "-limit", "1")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(errOut, "more jobs: -cursor ") {
		t.Fatalf("list one page: exit %d\n%s%s", code, out, errOut)
	}
	cursor := strings.TrimSpace(strings.TrimPrefix(errOut, "more jobs: -cursor "))
	code, out2, _ := cip11Run(t, "job", "list", "-node", api, "-limit", "1", "-cursor", cursor)
	if code != 0 || out2 == out || strings.Count(out2, "\n") != 1 {
		t.Fatalf("list -cursor: exit %d\n%s", code, out2)
	}
	code, out, _ = cip11Run(t, "job", "list", "-node", api, "-state", "expired", "-json")
	var page struct {
		Jobs []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"jobs"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != expiredID[1] {
		t.Fatalf("list -state expired -json: exit %d\n%s", code, out)
	}
	code, out, _ = cip11Run(t, "job", "list", "-node", api, "-all", "-json", "-limit", "2")
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Jobs) != 4 {
		t.Fatalf("list -all -json: exit %d\n%s", code, out)
	}
	code, _, errOut = cip11Run(t, "job", "list", "-node", api, "-cursor", "nope")
	if code != 3 || !strings.Contains(errOut, "400") || !strings.Contains(errOut, "cursor") {
		t.Fatalf("list bad cursor: exit %d, stderr %q", code, errOut)
	}
}

func TestJobStatusErrors(t *testing.T) {
	busy := &statusError{code: http.StatusServiceUnavailable, msg: "busy"}
	gone := &statusError{code: http.StatusNotFound, msg: "job not found"}
	if !errors.Is(busy, ErrNodeStatus) || !transient(busy) || transient(gone) || !errors.Is(gone, ErrNodeStatus) {
		t.Fatal("statusError classification")
	}
	if !transient(fmt.Errorf("%w: x", ErrNodeUnreachable)) || transient(ErrJobExpired) {
		t.Fatal("transient")
	}
	if jobFail(io.Discard, "job", fmt.Errorf("%w: x", ErrJobExpired)) != 1 || jobFail(io.Discard, "job", gone) != 3 {
		t.Fatal("exit codes")
	}
}

// A disagreeing committee is said plainly (issue 30): the revealing
// members whose result is not the output's are named; agreement, or a
// member that never revealed, is no disagreement.
func TestJobDisagreement(t *testing.T) {
	a, b := cip11.Address{1}, cip11.Address{2}
	for _, c := range []struct {
		members []job.Member
		want    string
	}{
		{[]job.Member{{Runner: a, Revealed: true, Matched: true}, {Runner: b, Revealed: true, Matched: true}}, ""},
		{[]job.Member{{Runner: a, Revealed: true, Matched: true}, {Runner: b}}, ""},
		{[]job.Member{{Runner: a, Revealed: true, Matched: true}, {Runner: b, Revealed: true}},
			"1 of 2 committee members revealed a different result (" + b.String() + "): the output is the majority's (ties go to the earliest member)"},
	} {
		r := jobReply{View: job.View{Members: c.members}}
		if got := r.disagreement(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.members, got, c.want)
		}
	}
}
