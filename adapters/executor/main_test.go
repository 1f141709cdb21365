package executor

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind (every
// goroutine of Execute is joined before it returns).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
