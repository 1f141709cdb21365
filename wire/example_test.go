package wire_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/dcbor"
	"github.com/cip11/cip11/wire"
)

// A runner signs and writes a HeartbeatPing; the validator reads it with
// the MAX_FRAME_BYTES ceiling and verifies it against the connection.
func Example() {
	runner, _ := wire.NewRunnerKey(cip11.Keccak256([]byte("example runner")))
	validator := wire.NewValidatorKey(cip11.Keccak256([]byte("example validator")))
	sess, _ := wire.NewSession(wire.Conn{
		ChainID: 1, Version: wire.Version,
		RunnerPubKey: runner.PubKey(), ValidatorPubKey: validator.PubKey(),
		ChannelBinding: cip11.Keccak256([]byte("TLS exporter output")),
	})

	var stream bytes.Buffer
	ping := &wire.HeartbeatPing{BlockHeight: 42, Nonce: 0}
	_ = ping.Sign(sess, runner)
	_ = wire.NewWriter(&stream, cip11.DefaultParams().MaxFrameBytes).WriteFrame(ping)

	f, err := wire.NewReader(&stream, cip11.DefaultParams().MaxFrameBytes).ReadFrame()
	if err != nil {
		panic(err)
	}
	got := f.(*wire.HeartbeatPing)
	fmt.Println(got.Type(), got.BlockHeight, got.Verify(sess) == nil)
	// Output: HeartbeatPing 42 true
}

// Decode is strict: a non-shortest integer is rejected, not normalised.
func ExampleDecode() {
	// Goodbye{reason: 1 written as 0x1801, detail: null, retry_after_blocks: null, signed: null}
	frame := []byte{0, 0, 0, 11, 0xf0, 0xa4, 0x00, 0x18, 0x01, 0x01, 0xf6, 0x02, 0xf6, 0x03, 0xf6}
	_, err := wire.Decode(frame, cip11.DefaultParams().MaxFrameBytes)
	fmt.Println(errors.Is(err, dcbor.ErrNonShortestInt))
	// Output: true
}

// CheckAssignment applies the §10.1 runner-side checks and names the ack.
func ExampleCheckAssignment() {
	runner, _ := wire.NewRunnerKey(cip11.Keccak256([]byte("example runner")))
	validator := wire.NewValidatorKey(cip11.Keccak256([]byte("example validator")))
	sess, _ := wire.NewSession(wire.Conn{ChainID: 1, Version: wire.Version, RunnerPubKey: runner.PubKey(), ValidatorPubKey: validator.PubKey()})

	spec := []byte("cowboy-protocol-codec bytes")
	a := &wire.JobAssignment{JobID: cip11.Keccak256([]byte("job")), JobSpec: spec, JobSpecHash: wire.JobSpecHash(spec),
		AssignmentHeight: 10, DeadlineBlock: 110, RunnerPubKey: runner.PubKey()}
	_ = a.Sign(sess.ChainID, validator)

	ctx := &wire.AssignmentContext{Session: sess, Finalized: 10,
		InSnapshot: func(raw [32]byte) bool { return true }}
	st, err := wire.CheckAssignment(ctx, a)
	fmt.Println(st, err)

	accepted := *a
	ctx.Accepted = &accepted
	st, _ = wire.CheckAssignment(ctx, a)
	fmt.Println(st)

	a.DeadlineBlock++ // validators must not move the chain-derived deadline
	_ = a.Sign(sess.ChainID, validator)
	st, err = wire.CheckAssignment(ctx, a)
	fmt.Println(st, errors.Is(err, wire.ErrAssignmentConflict))
	// Output:
	// Accepted <nil>
	// Duplicate
	// Reject(UnverifiableAssignment) true
}
