//go:build unix

package executor_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/cip11/cip11/adapters/executor"
)

// A process executor that upper-cases each job's payload: two commands
// at a time, ten seconds each, stderr to the runner's log.
func ExampleProcess() {
	p, err := executor.NewProcess(executor.ProcessConfig{
		Command:       "tr a-z A-Z",
		MaxConcurrent: 2,
		Timeout:       10 * time.Second,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := p.Execute(context.Background(), executor.Input{Runners: 1, Payload: []byte("hello cip11")})
	fmt.Printf("%s %v\n", out, err)
	// Output: HELLO CIP11 <nil>
}
