package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/job"
)

// Errors of `cip11 job`; exit codes by errors.Is (jobExitCode).
var (
	// ErrNodeUnreachable: no HTTP answer from -node (exit 3).
	ErrNodeUnreachable = errors.New("node unreachable")
	// ErrNodeStatus: the node answered with an HTTP error status (exit 3).
	ErrNodeStatus = errors.New("node refused the request")
	// ErrJobExpired: the followed job expired (exit 1).
	ErrJobExpired = errors.New("job expired")
)

// Exit codes of `cip11 job` (documented in its -h).
const (
	jobExitOK          = 0
	jobExitExpired     = 1
	jobExitUsage       = 2
	jobExitUnreachable = 3
)

// defaultJobSubmitter is the -submitter default: a fixed address, the same
// for every user of the command (jobs are told apart by -nonce).
const defaultJobSubmitter = "00000000000000000000000000000000000c1c11"

// maxJobPayloadFile bounds -payload-file (the node's request body limit,
// 1 MiB, holds the payload in hex: twice its size).
const maxJobPayloadFile = 256 << 10

const jobExitCodes = `
Exit codes: 0 success; 1 the job expired (submit -wait; the reason is on
stderr); 2 usage error (a bad flag or argument); 3 the node is unreachable
or answered an HTTP error (the node's message is on stderr).`

const jobUsage = `usage:
  cip11 job submit [-node URL] [-runners M] [-kind K] [-timeout N] [-payload TEXT | -payload-file F] [-wait] [-json]
                                        submit a job; print its id (with -wait: follow it, print its output)
  cip11 job get [-node URL] [-json] ID  print a job
  cip11 job list [-node URL] [-state S] [-submitter A] [-limit N] [-cursor C] [-all] [-json]
                                        list jobs, newest first

cip11 job SUBCOMMAND -h describes it and every flag.
` + jobExitCodes + `

Example:
  cip11 job submit -runners 2 -payload 'hello cip11' -wait
`

func runJob(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, jobUsage)
		return jobExitUsage
	}
	switch args[0] {
	case "submit":
		return runJobSubmit(args[1:], stdout, stderr)
	case "get":
		return runJobGet(args[1:], stdout, stderr)
	case "list":
		return runJobList(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, jobUsage)
		return jobExitOK
	}
	fmt.Fprintf(stderr, "cip11 job: unknown subcommand %q\n%s", args[0], jobUsage)
	return jobExitUsage
}

// jobFail prints err on stderr and returns its exit code.
func jobFail(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "cip11 %s: %v\n", name, err)
	if errors.Is(err, ErrJobExpired) {
		return jobExitExpired
	}
	return jobExitUnreachable
}

func nodeFlag(c *command) *string {
	return c.strVar("node", "http://127.0.0.1:8011", httpURL, "the validator's HTTP API base `URL`")
}

// addressText accepts a 40-hex-digit address (lowercase, as the API).
func addressText(s string) error {
	var a cip11.Address
	if a.UnmarshalText([]byte(s)) != nil {
		return errors.New("must be 40 lowercase hex digits")
	}
	return nil
}

func stateText(s string) error {
	if !slices.Contains(job.States(), job.State(s)) {
		return fmt.Errorf("must be one of %v", job.States())
	}
	return nil
}

// jobClient talks to one node's HTTP API.
type jobClient struct {
	base string
	http *http.Client
}

func newJobClient(base string) *jobClient {
	return &jobClient{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: 10 * time.Second}}
}

// do sends a request and returns the body of a 2xx answer. A transport
// failure wraps ErrNodeUnreachable, another status ErrNodeStatus with the
// node's {"error"} message.
func (c *jobClient) do(method, path string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNodeUnreachable, c.base, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNodeUnreachable, c.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: reading the answer: %w", ErrNodeUnreachable, c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return nil, &statusError{code: resp.StatusCode, msg: fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, msg)}
	}
	return b, nil
}

// statusError is a node's HTTP error answer; it is ErrNodeStatus.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string        { return ErrNodeStatus.Error() + ": " + e.msg }
func (e *statusError) Is(target error) bool { return target == ErrNodeStatus }

// transient reports whether err may pass by itself: the node unreachable
// (restarting) or busy (503).
func transient(err error) bool {
	var se *statusError
	return errors.Is(err, ErrNodeUnreachable) || (errors.As(err, &se) && se.code == http.StatusServiceUnavailable)
}

// jobReply is a job view as the node sends it. Output is the job's output
// (lowercase hex) when the node reports one.
type jobReply struct {
	job.View
	Output *string `json:"output"`
}

func (c *jobClient) get(id string) (jobReply, []byte, error) {
	b, err := c.do(http.MethodGet, "/jobs/"+id, nil)
	if err != nil {
		return jobReply{}, nil, err
	}
	var r jobReply
	if err := json.Unmarshal(b, &r); err != nil {
		return jobReply{}, nil, fmt.Errorf("%w: GET /jobs/%s: undecodable answer: %w", ErrNodeStatus, id, err)
	}
	return r, b, nil
}

// disagreement says which revealing members' results are not the output's
// (the CIP-2 verifier's majority, ties to the earliest member), or "".
func (r jobReply) disagreement() string {
	var odd []string
	for _, m := range r.Members {
		if m.Revealed && !m.Matched {
			odd = append(odd, m.Runner.String())
		}
	}
	if len(odd) == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d committee members revealed a different result (%s): the output is the majority's (ties go to the earliest member)",
		len(odd), len(r.Members), strings.Join(odd, " "))
}

// output is the job's output bytes (nil when the node reports none).
func (r jobReply) output() ([]byte, error) {
	if r.Output == nil {
		return nil, nil
	}
	b, err := hex.DecodeString(strings.TrimPrefix(*r.Output, "0x"))
	if err != nil {
		return nil, fmt.Errorf("%w: the job's output is not hex: %w", ErrNodeStatus, err)
	}
	return b, nil
}

// expiredWhy is the expired job's reason: the expired event's detail, or
// its expired_reason.
func (r jobReply) expiredWhy() string {
	for _, e := range slices.Backward(r.Events) {
		if e.Kind == job.EventExpired && e.Detail != "" {
			return e.Detail
		}
	}
	if r.ExpiredReason != "" {
		return string(r.ExpiredReason)
	}
	return "no reason reported by the node"
}

func runJobSubmit(args []string, stdout, stderr io.Writer) int {
	c := newCommand("job submit", "[-node URL] [-runners M] [-kind K] [-timeout N] [-payload TEXT | -payload-file F] [-wait] [-json]", `
Submit a job to a validator (POST /jobs) and print its id on stdout.

With -wait, follow the job (GET /jobs/{id} every -poll) until it ends: on a
terminal a progress line on stderr shows its state; when it completes, its
output (the job view's "output", hex-decoded) is printed on stdout as is and
the exit code is 0 (the job id then goes to stderr). An expired job exits 1,
naming why on stderr (no_runner_connected, no_result_by_deadline or
reselections_used_up; docs/http-api.md). With -json, the job view is printed
as JSON instead (at submission, or at the end with -wait).

The submitter is -submitter, by default `+defaultJobSubmitter+`, one fixed
address for every user of the command; -nonce tells otherwise identical jobs
apart and defaults to the current time in nanoseconds, so that each submit is
a new job.
`+jobExitCodes+``)
	node := nodeFlag(c)
	submitter := c.strVar("submitter", defaultJobSubmitter, addressText, "the submitting account, 40 lowercase hex `digits`")
	runners := c.intVar("runners", 1, 1, 1<<16, "M, the committee `size` (verification.runners)")
	kind := c.intVar("kind", 0, 0, 255, "the job kind `byte`")
	timeout := c.uint64Var("timeout", 20, 1, "timeout_blocks: `blocks` each committee has to deliver (§10.1)")
	workMs := c.intVar("work-ms", 0, 0, 1<<31-1, "work_ms, how long the demo executor works, in `milliseconds`")
	nonce := c.uint64Var("nonce", 0, 0, "the job nonce (default: the current time in nanoseconds)")
	payload := c.fs.String("payload", "", "the job payload `TEXT`")
	payloadFile := c.strVar("payload-file", "", nil, "read the payload from `FILE` (- for stdin; at most 256 KiB)")
	wait := c.fs.Bool("wait", false, "follow the job until it ends and print its output")
	poll := c.durVar("poll", 250*time.Millisecond, 10*time.Millisecond, time.Minute, "with -wait, how often to ask the node (`duration`)")
	asJSON := c.fs.Bool("json", false, "print the job view as JSON")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 0, 0); !ok {
		return code
	}
	if c.given("payload") && c.given("payload-file") {
		return c.usageError(stderr, "-payload and -payload-file exclude each other")
	}
	if c.given("poll") && !*wait {
		return c.usageError(stderr, "-poll applies only with -wait")
	}
	data := []byte(*payload)
	if c.given("payload-file") {
		var err error
		if data, err = readPayload(*payloadFile); err != nil {
			return c.usageError(stderr, "-payload-file: %v", err)
		}
	}
	n := *nonce
	if !c.given("nonce") {
		n = uint64(time.Now().UnixNano())
	}
	body, err := json.Marshal(map[string]any{
		"submitter": *submitter, "job_kind": *kind, "runners": *runners, "timeout_blocks": fmt.Sprint(*timeout),
		"work_ms": *workMs, "payload": hex.EncodeToString(data), "nonce": fmt.Sprint(n),
	})
	if err != nil {
		return jobFail(stderr, c.name, err)
	}
	cl := newJobClient(*node)
	b, err := cl.do(http.MethodPost, "/jobs", body)
	if err != nil {
		return jobFail(stderr, c.name, err)
	}
	var v jobReply
	if err := json.Unmarshal(b, &v); err != nil {
		return jobFail(stderr, c.name, fmt.Errorf("%w: POST /jobs: undecodable answer: %w", ErrNodeStatus, err))
	}
	id := v.ID.String()
	if !*wait {
		if *asJSON {
			return writeIndented(stdout, stderr, c.name, b)
		}
		fmt.Fprintln(stdout, id)
		return jobExitOK
	}
	if !*asJSON {
		fmt.Fprintf(stderr, "job %s\n", id)
	}
	return followJob(cl, id, *poll, *asJSON, stdout, stderr, c.name)
}

func readPayload(name string) ([]byte, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxJobPayloadFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxJobPayloadFile {
		return nil, fmt.Errorf("more than %d bytes", maxJobPayloadFile)
	}
	return b, nil
}

// followJob polls the job until it is terminal. The node may be briefly
// unreachable (a restart) or busy (503): the wait gives up after 30 s
// without an answer.
func followJob(cl *jobClient, id string, poll time.Duration, asJSON bool, stdout, stderr io.Writer, name string) int {
	progress := isTerminal(stderr)
	lastOK := time.Now()
	var last string
	for {
		v, raw, err := cl.get(id)
		switch {
		case err == nil:
			lastOK = time.Now()
		case transient(err) && time.Since(lastOK) < 30*time.Second:
			time.Sleep(poll)
			continue
		default:
			if progress {
				fmt.Fprintln(stderr)
			}
			return jobFail(stderr, name, err)
		}
		if progress {
			line := fmt.Sprintf("\r%s: %s, committee %d/%d, deadline block %d", id[:12], v.State, len(v.Committee), v.Runners, v.DeadlineBlock)
			if line != last {
				fmt.Fprintf(stderr, "%-80s", line)
				last = line
			}
		}
		if !v.State.Terminal() {
			time.Sleep(poll)
			continue
		}
		if progress {
			fmt.Fprintln(stderr)
		}
		if asJSON {
			if code := writeIndented(stdout, stderr, name, raw); code != jobExitOK {
				return code
			}
		}
		if v.State == job.StateExpired {
			return jobFail(stderr, name, fmt.Errorf("%w: %s: %s", ErrJobExpired, id, v.expiredWhy()))
		}
		if v.CommitteeShort != "" {
			fmt.Fprintf(stderr, "note: %s\n", v.CommitteeShort)
		}
		if d := v.disagreement(); d != "" {
			fmt.Fprintf(stderr, "note: %s\n", d)
		}
		if asJSON {
			return jobExitOK
		}
		out, err := v.output()
		if err != nil {
			return jobFail(stderr, name, err)
		}
		_, _ = stdout.Write(out)
		if len(out) > 0 && out[len(out)-1] != '\n' && isTerminal(stdout) {
			fmt.Fprintln(stdout)
		}
		return jobExitOK
	}
}

func writeIndented(stdout, stderr io.Writer, name string, raw []byte) int {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return jobFail(stderr, name, fmt.Errorf("%w: undecodable answer: %w", ErrNodeStatus, err))
	}
	buf.WriteByte('\n')
	_, _ = stdout.Write(buf.Bytes())
	return jobExitOK
}

func runJobGet(args []string, stdout, stderr io.Writer) int {
	c := newCommand("job get", "[-node URL] [-json] ID", `
Print the job ID (64 lowercase hex digits) as the node knows it (GET
/jobs/{id}): its state, committee, why it expired or that its committee is
short, its output (as text when printable, else hex) and its events. The
exit code is 0 whatever the job's state.
`+jobExitCodes+``)
	node := nodeFlag(c)
	asJSON := c.fs.Bool("json", false, "print the job view as the node's JSON")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 1, 1); !ok {
		return code
	}
	var id cip11.Hash
	if id.UnmarshalText([]byte(c.fs.Arg(0))) != nil {
		return c.usageError(stderr, "job ID %q must be 64 lowercase hex digits", c.fs.Arg(0))
	}
	v, raw, err := newJobClient(*node).get(id.String())
	if err != nil {
		return jobFail(stderr, c.name, err)
	}
	if *asJSON {
		return writeIndented(stdout, stderr, c.name, raw)
	}
	w := stdout
	fmt.Fprintf(w, "id              %s\nstate           %s\n", v.ID, v.State)
	if v.ExpiredReason != "" {
		fmt.Fprintf(w, "expired         %s\n", v.expiredWhy())
	}
	fmt.Fprintf(w, "submitter       %s\njob kind        %d\nrunners         %d\nsubmitted at    %d\ndeadline block  %d\n",
		v.Submitter, v.JobKind, v.Runners, v.SubmittedAt, v.DeadlineBlock)
	fmt.Fprintf(w, "committee       %s\n", joinAddrs(v.Committee))
	if v.CommitteeShort != "" {
		fmt.Fprintf(w, "committee short %s\n", v.CommitteeShort)
	}
	if out, err := v.output(); err != nil {
		return jobFail(stderr, c.name, err)
	} else if v.Output != nil {
		fmt.Fprintf(w, "output          %s\n", printable(out))
	}
	for _, m := range v.Members {
		fmt.Fprintf(w, "member          %s revealed %t matched %t\n", m.Runner, m.Revealed, m.Matched)
	}
	if d := v.disagreement(); d != "" {
		fmt.Fprintf(w, "disagreement    %s\n", d)
	}
	fmt.Fprintln(w, "events")
	for _, e := range v.Events {
		fmt.Fprintf(w, "  %8d  %-13s", e.Height, e.Kind)
		if e.Runner != nil {
			fmt.Fprintf(w, " runner %s", e.Runner)
		}
		if e.Detail != "" {
			fmt.Fprintf(w, " %s", e.Detail)
		}
		fmt.Fprintln(w)
	}
	return jobExitOK
}

func joinAddrs(as []cip11.Address) string {
	if len(as) == 0 {
		return "(none)"
	}
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, " ")
}

// printable is b quoted as text when it is printable UTF-8, else hex.
func printable(b []byte) string {
	s := string(b)
	for _, r := range s {
		if r == 0xFFFD || (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f {
			return "hex " + hex.EncodeToString(b)
		}
	}
	return fmt.Sprintf("%q", s)
}

func runJobList(args []string, stdout, stderr io.Writer) int {
	c := newCommand("job list", "[-node URL] [-state S] [-submitter A] [-limit N] [-cursor C] [-all] [-json]", `
List jobs, newest first (GET /jobs: by submission height, then job id), one
line each: id, state, submitted_at, runners, submitter. When more jobs
follow, the last line on stderr gives the -cursor of the next page; -all
follows the cursors to the end instead. With -json, the node's page is
printed as JSON ({"jobs": [...], "next_cursor": "..."}); with -all -json,
one {"jobs": [...]} holding every page.
`+jobExitCodes+``)
	node := nodeFlag(c)
	state := c.strVar("state", "", stateText, "only jobs in `STATE` (submitted, pending, assigned, completed, expired)")
	submitter := c.strVar("submitter", "", addressText, "only jobs of this submitter (40 lowercase hex `digits`)")
	limit := c.intVar("limit", 50, 1, 500, "jobs per `page`")
	cursor := c.strVar("cursor", "", nil, "start at this next_cursor of a previous page")
	all := c.fs.Bool("all", false, "follow next_cursor to the last page")
	asJSON := c.fs.Bool("json", false, "print JSON")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 0, 0); !ok {
		return code
	}
	cl := newJobClient(*node)
	q := url.Values{}
	q.Set("limit", fmt.Sprint(*limit))
	if *state != "" {
		q.Set("state", *state)
	}
	if *submitter != "" {
		q.Set("submitter", *submitter)
	}
	next := *cursor
	var jobs []json.RawMessage
	seen := map[string]bool{}
	for {
		if next != "" {
			q.Set("cursor", next)
		}
		b, err := cl.do(http.MethodGet, "/jobs?"+q.Encode(), nil)
		if err != nil {
			return jobFail(stderr, c.name, err)
		}
		if *asJSON && !*all {
			return writeIndented(stdout, stderr, c.name, b)
		}
		var page struct {
			Jobs       []json.RawMessage `json:"jobs"`
			NextCursor string            `json:"next_cursor"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return jobFail(stderr, c.name, fmt.Errorf("%w: GET /jobs: undecodable answer: %w", ErrNodeStatus, err))
		}
		if !*asJSON {
			for _, raw := range page.Jobs {
				var v job.View
				if err := json.Unmarshal(raw, &v); err != nil {
					return jobFail(stderr, c.name, fmt.Errorf("%w: GET /jobs: undecodable job: %w", ErrNodeStatus, err))
				}
				fmt.Fprintf(stdout, "%s  %-9s  %8d  %3d  %s\n", v.ID, v.State, v.SubmittedAt, v.Runners, v.Submitter)
			}
		}
		jobs = append(jobs, page.Jobs...)
		if page.NextCursor == "" {
			break
		}
		if !*all {
			fmt.Fprintf(stderr, "more jobs: -cursor %s\n", page.NextCursor)
			break
		}
		if seen[page.NextCursor] {
			return jobFail(stderr, c.name, fmt.Errorf("%w: GET /jobs: the node repeated cursor %s", ErrNodeStatus, page.NextCursor))
		}
		seen[page.NextCursor] = true
		next = page.NextCursor
	}
	if *asJSON {
		if jobs == nil {
			jobs = []json.RawMessage{}
		}
		b, err := json.Marshal(map[string]any{"jobs": jobs})
		if err != nil {
			return jobFail(stderr, c.name, err)
		}
		return writeIndented(stdout, stderr, c.name, b)
	}
	return jobExitOK
}
