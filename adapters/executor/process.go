package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Defaults of ProcessConfig.
const (
	DefaultMaxOutput     = 4096
	DefaultMaxConcurrent = 1
	DefaultGrace         = 2 * time.Second
	DefaultLogLines      = 100
	DefaultLogBytes      = 16 << 10
)

// maxLogLine bounds one logged stderr line; the rest of a longer line is
// counted, not logged. stderrTail is how much of the end of stderr a
// failure's message quotes.
const (
	maxLogLine = 1024
	stderrTail = 512
)

// The environment variables a command gets.
const (
	EnvJobID            = "CIP11_JOB_ID"            // 64 lowercase hex digits
	EnvJobKind          = "CIP11_JOB_KIND"          // decimal
	EnvJobRunners       = "CIP11_JOB_RUNNERS"       // decimal M
	EnvDeadlineBlock    = "CIP11_DEADLINE_BLOCK"    // decimal
	EnvAssignmentHeight = "CIP11_ASSIGNMENT_HEIGHT" // decimal
)

// ProcessConfig configures the process executor.
type ProcessConfig struct {
	// Command runs through Shell -c for each job (required).
	Command string
	// Shell is the shell (default "sh", looked up in PATH by NewProcess).
	Shell string
	// Env is the command's environment before the CIP11_* variables are
	// added; nil: the runner's environment (os.Environ) at each job.
	Env []string
	// Dir is the command's working directory ("": the runner's).
	Dir string
	// MaxOutput bounds stdout in bytes (default DefaultMaxOutput): one
	// byte more is ErrOutputTooLarge and kills the process group at once.
	MaxOutput int
	// MaxConcurrent bounds the commands running at once (default
	// DefaultMaxConcurrent); a job beyond it waits for a slot.
	MaxConcurrent int
	// Timeout bounds one command's run, from its start (0: only the
	// context's deadline).
	Timeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL to the process group,
	// and how long stdout and stderr may stay open after the command
	// exits (default DefaultGrace).
	Grace time.Duration
	// LogLines and LogBytes bound the stderr lines logged per job
	// (defaults DefaultLogLines, DefaultLogBytes); the rest are counted.
	LogLines int
	LogBytes int
	// Logger receives the command's stderr lines (required; use
	// slog.DiscardHandler to drop them).
	Logger *slog.Logger
}

// Process runs a shell command for each job (docs/executor.md): the
// payload on stdin, the job's fields in CIP11_* environment variables,
// stdout the output. Each command runs in its own process group, which is
// killed (SIGTERM, then SIGKILL after Grace) on cancellation or timeout
// and killed outright when stdout exceeds MaxOutput or when the command
// exits leaving processes behind. Only Unix systems run it (elsewhere
// Execute is ErrUnsupported).
type Process struct {
	shell, command, dir string
	env                 []string
	envSet              bool
	maxOutput           int
	timeout, grace      time.Duration
	logLines, logBytes  int
	log                 *slog.Logger
	sem                 chan struct{} // one token per running command
}

// NewProcess validates cfg, applies its defaults and looks the shell up.
func NewProcess(cfg ProcessConfig) (*Process, error) {
	switch {
	case cfg.Logger == nil:
		return nil, fmt.Errorf("%w: a logger is required", ErrBadConfig)
	case strings.TrimSpace(cfg.Command) == "":
		return nil, fmt.Errorf("%w: empty command", ErrBadConfig)
	case strings.ContainsRune(cfg.Command, 0):
		return nil, fmt.Errorf("%w: command contains a NUL byte", ErrBadConfig)
	case cfg.MaxOutput < 0 || cfg.MaxConcurrent < 0 || cfg.LogLines < 0 || cfg.LogBytes < 0:
		return nil, fmt.Errorf("%w: negative max output %d, max concurrent %d, log lines %d or log bytes %d",
			ErrBadConfig, cfg.MaxOutput, cfg.MaxConcurrent, cfg.LogLines, cfg.LogBytes)
	case cfg.Timeout < 0 || cfg.Grace < 0:
		return nil, fmt.Errorf("%w: negative timeout %v or grace %v", ErrBadConfig, cfg.Timeout, cfg.Grace)
	}
	for _, kv := range cfg.Env {
		if !strings.Contains(kv, "=") || strings.ContainsRune(kv, 0) {
			return nil, fmt.Errorf("%w: environment entry %q is not KEY=VALUE", ErrBadConfig, kv)
		}
	}
	shell := cfg.Shell
	if shell == "" {
		shell = "sh"
	}
	path, err := exec.LookPath(shell)
	if err != nil {
		return nil, fmt.Errorf("%w: shell %q: %w", ErrBadConfig, shell, err)
	}
	p := &Process{
		shell: path, command: cfg.Command, dir: cfg.Dir,
		env: append([]string(nil), cfg.Env...), envSet: cfg.Env != nil,
		maxOutput: cfg.MaxOutput, timeout: cfg.Timeout, grace: cfg.Grace,
		logLines: cfg.LogLines, logBytes: cfg.LogBytes, log: cfg.Logger,
	}
	if p.maxOutput == 0 {
		p.maxOutput = DefaultMaxOutput
	}
	n := cfg.MaxConcurrent
	if n == 0 {
		n = DefaultMaxConcurrent
	}
	p.sem = make(chan struct{}, n)
	if p.grace == 0 {
		p.grace = DefaultGrace
	}
	if p.logLines == 0 {
		p.logLines = DefaultLogLines
	}
	if p.logBytes == 0 {
		p.logBytes = DefaultLogBytes
	}
	return p, nil
}

// Running is the number of commands running now.
func (p *Process) Running() int {
	if p == nil {
		return 0
	}
	return len(p.sem)
}

// Execute waits for a slot (ErrBusy if ctx ends first), runs the command
// for in and returns its stdout, or the first failure: ErrOutputTooLarge,
// ErrTimeout, ErrCanceled, ErrExitStatus, ErrPipesHeld, ErrStart, ErrIO.
// It returns only after the command has been waited for and its process
// group killed.
func (p *Process) Execute(ctx context.Context, in Input) ([]byte, error) {
	if p == nil || p.sem == nil || ctx == nil {
		return nil, ErrNilExecutor
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxFailure(in, err, "before it started")
	}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: job %s waited for one of %d slots: %w", ErrBusy, in.JobID, cap(p.sem), ctx.Err())
	}
	defer func() { <-p.sem }()
	if err := ctx.Err(); err != nil {
		return nil, ctxFailure(in, err, "before it started")
	}
	return p.run(ctx, in)
}

// ctxFailure is the error of a job whose context ended: ErrTimeout for a
// deadline, ErrCanceled otherwise, wrapping the context's error.
func ctxFailure(in Input, err error, what string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: job %s: the job's deadline passed %s: %w", ErrTimeout, in.JobID, what, err)
	}
	return fmt.Errorf("%w: job %s %s: %w", ErrCanceled, in.JobID, what, err)
}

// environ is the command's environment for in.
func (p *Process) environ(in Input) []string {
	base := p.env
	if !p.envSet {
		base = os.Environ()
	}
	env := make([]string, 0, len(base)+5)
	env = append(env, base...)
	return append(env,
		EnvJobID+"="+in.JobID.String(),
		EnvJobKind+"="+strconv.FormatUint(uint64(in.Kind), 10),
		EnvJobRunners+"="+strconv.FormatUint(uint64(in.Runners), 10),
		EnvDeadlineBlock+"="+strconv.FormatUint(in.DeadlineBlock, 10),
		EnvAssignmentHeight+"="+strconv.FormatUint(in.AssignmentHeight, 10),
	)
}
