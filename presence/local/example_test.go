package local_test

import (
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

func ExamplePresence() {
	p := cip11.DefaultParams() // PRESENCE_TIMEOUT_BLOCKS = 15
	l := local.New(p)
	runner, conn := cip11.Address{0xaa}, local.ConnID{1}
	_ = l.Open(10, runner, conn)
	_ = l.Ping(10, runner, conn, 0)
	fmt.Println(l.IsPresent(runner, 24), l.IsPresent(runner, 25))
	_ = l.Dispatch(12, runner, local.HardFailure)
	fmt.Println(l.IsPresent(runner, 12))
	_ = l.Ping(13, runner, conn, 1)
	fmt.Println(l.IsPresent(runner, 13), l.AcceptingNew(runner))
	_ = l.Backpressure(14, runner, conn, false)
	fmt.Println(l.IsPresent(runner, 14), l.AcceptingNew(runner))
	// Output:
	// true false
	// false
	// true true
	// false false
}

func ExampleHeartbeatPhase() {
	runner, _ := wire.NewRunnerKey([32]byte{31: 1})
	s, _ := local.NewHeartbeatSchedule(7, runner.Address(), 90, 10, cip11.DefaultParams())
	due := s.NextDue(1000, 995)
	fmt.Println(due%90 == s.Phase || due == 995+s.Emergency, due >= 1000)
	// Output: true true
}

type constRand uint64

func (c constRand) Uint64() uint64 { return uint64(c) }

func ExampleReconnectDelayMillis() {
	for _, a := range []uint32{0, 3, 20} {
		fmt.Print(local.ReconnectDelayMillis(a, constRand(0)), " ", local.ReconnectDelayMillis(a, constRand(^uint64(0))), "; ")
	}
	fmt.Println()
	// Output: 75 125; 600 1000; 22500 30000;
}
