//go:build !unix

package executor

import (
	"context"
	"fmt"
)

// run: process groups and their signals are Unix only.
func (p *Process) run(_ context.Context, in Input) ([]byte, error) {
	return nil, fmt.Errorf("%w: job %s", ErrUnsupported, in.JobID)
}
