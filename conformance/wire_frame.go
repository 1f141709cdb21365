package conformance

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

type frameVector struct {
	Name   string          `json:"name"`
	Type   *int            `json:"type,omitempty"`
	Fields json.RawMessage `json:"fields,omitempty"`
	Frame  string          `json:"frame,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// positiveFrames returns the named reference frames, signed where the frame
// carries a signature, over the reference connection.
func positiveFrames() []struct {
	name string
	f    wire.Frame
} {
	s := wireSession(wireConn())
	rk, vk := wireRunner(1), wireValidator(1)
	runnerHello := &wire.Hello{Version: wire.Version, ChainID: s.ChainID, ValidatorSetHash: s.ValidatorSetHash,
		SubsetEpoch: 0, PartyPubKey: rk.PubKey(), PartyRole: wire.RoleRunner, BlockHeight: 1000, ChallengeNonce: label("cip11/vectors/nonce-runner")}
	validatorHello := &wire.Hello{Version: wire.Version, ChainID: s.ChainID, ValidatorSetHash: s.ValidatorSetHash,
		SubsetEpoch: 0, PartyPubKey: vk.PubKey(), PartyRole: wire.RoleValidator, BlockHeight: 1001, ChallengeNonce: label("cip11/vectors/nonce-validator")}
	runnerAck := &wire.HelloAck{Version: wire.Version, ChainID: s.ChainID, ValidatorSetHash: s.ValidatorSetHash,
		PartyPubKey: rk.PubKey(), PartyRole: wire.RoleRunner, BlockHeight: 1000}
	must(runnerAck.Sign(validatorHello, s.ChannelBinding, rk))
	validatorAck := &wire.HelloAck{Version: wire.Version, ChainID: s.ChainID, ValidatorSetHash: s.ValidatorSetHash,
		PartyPubKey: vk.PubKey(), PartyRole: wire.RoleValidator, BlockHeight: 1001}
	must(validatorAck.Sign(runnerHello, s.ChannelBinding, vk))

	ping := &wire.HeartbeatPing{BlockHeight: 1002, Nonce: 0}
	must(ping.Sign(s, rk))
	pingMax := &wire.HeartbeatPing{BlockHeight: ^uint64(0), Nonce: 1 << 32}
	must(pingMax.Sign(s, rk))
	pong := &wire.HeartbeatPong{BlockHeight: 1002, NonceEcho: 0, AcceptingNew: true}
	pong.Sign(s, vk)
	pongFull := &wire.HeartbeatPong{BlockHeight: 1003, NonceEcho: 1, AcceptingNew: false}
	pongFull.Sign(s, vk)

	bpNull := &wire.BackpressureSignal{BlockHeight: 1004, ActiveJobs: 3, MaxConcurrent: 4, AcceptingNew: true}
	must(bpNull.Sign(s, rk))
	bpText := &wire.BackpressureSignal{BlockHeight: 1005, ActiveJobs: 4, MaxConcurrent: 4, AcceptingNew: false, Reason: strp("at capacity")}
	must(bpText.Sign(s, rk))
	bpEmpty := &wire.BackpressureSignal{BlockHeight: 1006, ActiveJobs: 0xffffffff, MaxConcurrent: 0xffffffff, Reason: strp("")}
	must(bpEmpty.Sign(s, rk))

	capEmpty := &wire.CapabilityDelta{BlockHeight: 1007, AddedCapabilities: []string{}, RemovedCapabilities: []string{},
		AddedEntitlements: []cip11.Hash{}, RemovedEntitlements: []cip11.Hash{}}
	must(capEmpty.Sign(s, rk))
	capFull := &wire.CapabilityDelta{BlockHeight: 1008, AddedCapabilities: []string{"llm", "http", "gpu:a100 ✓"},
		RemovedCapabilities: []string{"mcp"}, AddedEntitlements: []cip11.Hash{label("cip11/vectors/entitlement-1")},
		RemovedEntitlements: []cip11.Hash{label("cip11/vectors/entitlement-2"), label("cip11/vectors/entitlement-3")}}
	must(capFull.Sign(s, rk))

	assign := referenceAssignment(s, vk, []byte("cip11/vectors/job-spec-1"))
	jobID, ah := assign.JobID, assign.AssignmentHash
	ackAccepted := &wire.JobAck{JobID: jobID, AssignmentHash: ah, Status: wire.Accepted()}
	must(ackAccepted.Sign(s, rk))
	ackDup := &wire.JobAck{JobID: jobID, AssignmentHash: ah, Status: wire.Duplicate()}
	must(ackDup.Sign(s, rk))
	ackReject := &wire.JobAck{JobID: jobID, AssignmentHash: ah, Status: wire.Reject(wire.RejectUnverifiableAssignment), Reason: strp("job_spec_hash mismatch")}
	must(ackReject.Sign(s, rk))
	ackCap := &wire.JobAck{JobID: jobID, AssignmentHash: ah, Status: wire.Reject(wire.RejectAtCapacity)}
	must(ackCap.Sign(s, rk))

	tx := (&wire.MemTx{From: wireRunner(1).Address(), Kind: wire.InstructionJobResultSubmit, JobID: jobID, Valid: true}).Bytes()
	commitTx := (&wire.MemTx{From: wireRunner(1).Address(), Kind: wire.InstructionJobResultCommit, JobID: jobID, Valid: true}).Bytes()
	long := strings.Repeat("progress detail ", 20) // 320 bytes: two-byte length head

	cancel := &wire.JobCancel{JobID: jobID, AssignmentHash: ah, Reason: wire.CancelReassigned}
	cancel.Sign(s, vk)
	cancelExpired := &wire.JobCancel{JobID: jobID, AssignmentHash: ah, Reason: wire.CancelExpired}
	cancelExpired.Sign(s, vk)

	// The 0x0101 receipt frames (SPEC-NOTES N18); a receipt's chain_id is
	// the executing network's, here the reference connection's.
	receipt := &wire.PresenceReceipt{ValidatorPubKey: vk.PubKey(), RunnerPubKey: rk.PubKey(), SubsetEpoch: s.SubsetEpoch,
		ValidatorSetHash: s.ValidatorSetHash, BlockHeight: 1009, NonceEcho: 1 << 40, AcceptingNew: true}
	must(receipt.Sign(s.ChainID, vk))
	receiptFull := &wire.PresenceReceipt{ValidatorPubKey: vk.PubKey(), RunnerPubKey: rk.PubKey(), SubsetEpoch: s.SubsetEpoch,
		ValidatorSetHash: s.ValidatorSetHash, BlockHeight: 1010, NonceEcho: 0, AcceptingNew: false}
	must(receiptFull.Sign(s.ChainID, vk))

	byeNull := &wire.Goodbye{Reason: wire.GoodbyeWrongChain}
	byeText := &wire.Goodbye{Reason: wire.GoodbyeDraining, Detail: strp("validator restarting"), RetryAfterBlocks: u64p(30)}
	must(byeText.Sign(s, rk))
	byeValidator := &wire.Goodbye{Reason: wire.GoodbyeOverlapExpired, Detail: strp(""), RetryAfterBlocks: u64p(0)}
	must(byeValidator.Sign(s, vk))

	return []struct {
		name string
		f    wire.Frame
	}{
		{"hello_runner", runnerHello},
		{"hello_validator", validatorHello},
		{"hello_ack_runner", runnerAck},
		{"hello_ack_validator", validatorAck},
		{"heartbeat_ping", ping},
		{"heartbeat_ping_wide_integers", pingMax},
		{"heartbeat_pong_accepting", pong},
		{"heartbeat_pong_not_accepting", pongFull},
		{"backpressure_reason_null", bpNull},
		{"backpressure_reason_text", bpText},
		{"backpressure_reason_empty_u32_max", bpEmpty},
		{"capability_delta_empty_lists", capEmpty},
		{"capability_delta_entries", capFull},
		{"job_assignment", assign},
		{"job_ack_accepted", ackAccepted},
		{"job_ack_duplicate", ackDup},
		{"job_ack_reject_unverifiable_assignment", ackReject},
		{"job_ack_reject_at_capacity", ackCap},
		{"job_progress_zero", &wire.JobProgress{JobID: jobID, Fraction: 0}},
		{"job_progress_hundred_long_detail", &wire.JobProgress{JobID: jobID, Fraction: 100, Detail: strp(long)}},
		{"job_progress_24_empty_detail", &wire.JobProgress{JobID: jobID, Fraction: 24, Detail: strp("")}},
		{"job_result", &wire.JobResult{JobID: jobID, TxBytes: tx}},
		{"job_result_commit", &wire.JobResultCommit{JobID: jobID, TxBytes: commitTx}},
		{"job_result_empty_tx", &wire.JobResult{JobID: jobID, TxBytes: wire.Bytes{}}},
		{"job_cancel_reassigned", cancel},
		{"job_cancel_expired", cancelExpired},
		{"presence_receipt_request", &wire.PresenceReceiptRequest{Nonce: 1 << 40}},
		{"presence_receipt_request_nonce_zero", &wire.PresenceReceiptRequest{Nonce: 0}},
		{"presence_receipt_accepting", receipt},
		{"presence_receipt_not_accepting", receiptFull},
		{"goodbye_detail_null_unsigned", byeNull},
		{"goodbye_detail_text_runner_signed", byeText},
		{"goodbye_empty_detail_retry_zero_validator_signed", byeValidator},
	}
}

// referenceAssignment is a JobAssignment from validator vk to the session's
// runner for job spec p.
func referenceAssignment(s *wire.Session, vk *wire.ValidatorKey, p []byte) *wire.JobAssignment {
	a := &wire.JobAssignment{JobID: label("cip11/vectors/job-1"), JobSpec: p, JobSpecHash: wire.JobSpecHash(p),
		AssignmentHeight: 2000, DeadlineBlock: 2100, RunnerPubKey: s.RunnerPubKey}
	must(a.Sign(s.ChainID, vk))
	return a
}

func must(err error) {
	if err != nil {
		panic(err) // generator fixtures are valid by construction
	}
}

// envelope wraps a hex payload in a §12.1 frame of type t.
func envelope(t wire.FrameType, payloadHex ...string) string {
	p, _ := hex.DecodeString(strings.Join(payloadHex, ""))
	h := binary.BigEndian.AppendUint32(nil, uint32(1+len(p)))
	return hex.EncodeToString(append(append(h, byte(t)), p...))
}

func hx(b []byte) string { return hex.EncodeToString(b) }

// negativeFrames returns frames each carrying exactly one defect.
func negativeFrames() []frameVector {
	s := wireSession(wireConn())
	rk, vk := wireRunner(1), wireValidator(1)
	sig65 := "5841" + strings.Repeat("11", 65)
	sig64 := "5840" + strings.Repeat("22", 64)
	h32 := "5820" + strings.Repeat("33", 32)
	rpk := hx(append([]byte{0x58, 34}, rk.PubKey().Bytes()...))
	vpk := hx(append([]byte{0x58, 33}, vk.PubKey().Bytes()...))
	ping := func(parts ...string) string { return envelope(wire.TypeHeartbeatPing, parts...) }
	hello := func(version, pk, role string) string {
		return envelope(wire.TypeHello, "a8", "00", version, "01", "19c0b0", "02", h32, "03", "00", "04", pk, "05", role, "06", "00", "07", h32)
	}
	ack := func(status, reason string) string {
		return envelope(wire.TypeJobAck, "a5", "00", h32, "01", h32, "02", status, "03", reason, "04", sig65)
	}
	bye := func(reason, detail, retry, signed string) string {
		return envelope(wire.TypeGoodbye, "a4", "00", reason, "01", detail, "02", retry, "03", signed)
	}
	assignment := func(runner, validator string) string {
		return envelope(wire.TypeJobAssignment, "a9", "00", h32, "01", "40", "02", h32, "03", "00", "04", h32, "05", "00",
			"06", runner, "07", validator, "08", sig64)
	}
	receipt := func(fields, validator, runner string, rest ...string) string {
		return envelope(wire.TypePresenceReceipt, append([]string{fields, "00", validator, "01", runner, "02", "00", "03", h32,
			"04", "1903e8", "05", "07", "06", "f5"}, rest...)...)
	}
	badPoint := "5822" + "01" + "02" + strings.Repeat("00", 31) + "05" // x = 5 is not on secp256k1
	_ = s
	neg := []struct{ name, frame, err string }{
		// §12.1 envelope
		{"envelope_length_zero", "00000000", "ErrFrameEmpty"},
		{"envelope_length_max_frame_bytes_plus_one", "00200001" + "10", "ErrFrameTooLarge"},
		{"envelope_length_u32_max", "ffffffff" + "10", "ErrFrameTooLarge"},
		{"envelope_header_truncated", "000000", "ErrFrameTruncated"},
		{"envelope_empty_input", "", "ErrFrameTruncated"},
		{"envelope_payload_truncated", ping("a3", "00", "00", "01", "00", "02", sig65)[:40], "ErrFrameTruncated"},
		{"envelope_bytes_after_frame", ping("a3", "00", "00", "01", "00", "02", sig65) + "00", "ErrFrameTrailingBytes"},
		{"envelope_unknown_type_0x00", envelope(0x00, "a0"), "ErrFrameUnknownType"},
		{"envelope_unknown_type_0x03", envelope(0x03, "a0"), "ErrFrameUnknownType"},
		{"envelope_unknown_type_0x26", envelope(0x26, "a0"), "ErrFrameUnknownType"},
		{"envelope_unknown_type_0xff", envelope(0xff, "a0"), "ErrFrameUnknownType"},
		{"envelope_type_only_empty_payload", envelope(wire.TypeHeartbeatPing), "ErrTruncated"},
		// D9 structure
		{"payload_trailing_byte", ping("a3", "00", "00", "01", "00", "02", sig65, "00"), "ErrTrailingBytes"},
		{"payload_missing_key", ping("a2", "00", "00", "01", "00"), "ErrMissingKey"},
		{"payload_extra_key", ping("a4", "00", "00", "01", "00", "02", sig65, "03", "00"), "ErrUnknownKey"},
		{"payload_keys_unsorted", ping("a3", "01", "00", "00", "00", "02", sig65), "ErrKeyOrder"},
		{"payload_duplicate_key", ping("a3", "00", "00", "00", "00", "02", sig65), "ErrDuplicateKey"},
		{"payload_text_key", ping("a3", "6130", "00", "01", "00", "02", sig65), "ErrUnknownKey"},
		{"payload_not_a_map", ping("83", "00", "00", sig65), "ErrUnexpectedType"},
		{"payload_indefinite_map", ping("bf", "00", "00", "01", "00", "02", sig65, "ff"), "ErrIndefiniteLength"},
		{"payload_indefinite_byte_string", ping("a3", "00", "00", "01", "00", "02", "5f", sig65, "ff"), "ErrIndefiniteLength"},
		{"payload_non_shortest_uint", ping("a3", "00", "1817", "01", "00", "02", sig65), "ErrNonShortestInt"},
		{"payload_non_shortest_uint64", ping("a3", "00", "1b00000000ffffffff", "01", "00", "02", sig65), "ErrNonShortestInt"},
		{"payload_non_shortest_map_head", ping("b803", "00", "00", "01", "00", "02", sig65), "ErrNonShortestInt"},
		{"payload_non_shortest_key", ping("a3", "1800", "00", "01", "00", "02", sig65), "ErrNonShortestInt"},
		{"payload_non_shortest_bytes_length", ping("a3", "00", "00", "01", "00", "02", "590041"+strings.Repeat("11", 65)), "ErrNonShortestInt"},
		{"payload_reserved_additional_info", ping("a3", "00", "1c", "01", "00", "02", sig65), "ErrMalformed"},
		{"payload_tagged_uint", ping("a3", "00", "c100", "01", "00", "02", sig65), "ErrTag"},
		{"payload_float_for_u64", ping("a3", "00", "fb0000000000000000", "01", "00", "02", sig65), "ErrUnexpectedType"},
		{"payload_negative_int", ping("a3", "00", "20", "01", "00", "02", sig65), "ErrUnexpectedType"},
		{"payload_null_for_required", ping("a3", "00", "f6", "01", "00", "02", sig65), "ErrUnexpectedType"},
		{"payload_truncated_inside_item", ping("a3", "00", "00", "01", "00", "02", "5841"+strings.Repeat("11", 10)), "ErrTruncated"},
		// D8 field types and lengths
		{"field_sig_64_for_runner_65", ping("a3", "00", "00", "01", "00", "02", "5840"+strings.Repeat("11", 64)), "ErrByteLength"},
		{"field_job_id_31_bytes", envelope(wire.TypeJobResult, "a2", "00", "581f"+strings.Repeat("33", 31), "01", "40"), "ErrByteLength"},
		{"field_text_for_bytes", envelope(wire.TypeJobResult, "a2", "00", "7820"+strings.Repeat("33", 32), "01", "40"), "ErrUnexpectedType"},
		{"field_version_over_u16", hello("1a00010000", rpk, "01"), "ErrIntRange"},
		{"field_active_jobs_over_u32", envelope(wire.TypeBackpressureSignal, "a6", "00", "00", "01", "1b0000000100000000", "02", "00", "03", "f5", "04", "f6", "05", sig65), "ErrIntRange"},
		{"field_progress_fraction_101", envelope(wire.TypeJobProgress, "a3", "00", h32, "01", "1865", "02", "f6"), "ErrFieldRange"},
		{"field_bool_as_int", envelope(wire.TypeHeartbeatPong, "a4", "00", "00", "01", "00", "02", "01", "03", sig64), "ErrUnexpectedType"},
		{"field_bool_as_undefined", envelope(wire.TypeHeartbeatPong, "a4", "00", "00", "01", "00", "02", "f7", "03", sig64), "ErrUnexpectedType"},
		{"field_text_invalid_utf8", envelope(wire.TypeJobProgress, "a3", "00", h32, "01", "00", "02", "62c328"), "ErrInvalidUTF8"},
		{"field_capability_not_text", envelope(wire.TypeCapabilityDelta, "a6", "00", "00", "01", "8140", "02", "80", "03", "80", "04", "80", "05", sig65), "ErrUnexpectedType"},
		{"field_entitlement_31_bytes", envelope(wire.TypeCapabilityDelta, "a6", "00", "00", "01", "80", "02", "80", "03", "81581f"+strings.Repeat("44", 31), "04", "80", "05", sig65), "ErrByteLength"},
		{"field_array_count_beyond_input", envelope(wire.TypeCapabilityDelta, "a6", "00", "00", "01", "9a7fffffff"), "ErrTruncated"},
		{"field_retry_after_blocks_text", bye("06", "f6", "6130", "f6"), "ErrUnexpectedType"},
		// §12.6 enum tables
		{"enum_role_zero", hello("190100", rpk, "00"), "ErrEnumUnknown"},
		{"enum_role_three", hello("190100", rpk, "03"), "ErrEnumUnknown"},
		{"enum_ack_status_three", ack("03", "f6"), "ErrEnumUnknown"},
		{"enum_ack_status_reject_without_payload", ack("02", "f6"), "ErrEnumUnknown"},
		{"enum_ack_status_accepted_with_payload", ack("820003", "f6"), "ErrEnumUnknown"},
		{"enum_ack_status_one_element_array", ack("8102", "f6"), "ErrEnumUnknown"},
		{"enum_ack_status_three_element_array", ack("83020300", "f6"), "ErrEnumUnknown"},
		{"enum_reject_reason_five", ack("820205", "f6"), "ErrEnumUnknown"},
		{"enum_reject_reason_not_applicable_on_wire", ack("820218ff", "f6"), "ErrEnumUnknown"},
		{"enum_reject_reason_non_shortest", ack("82021803", "f6"), "ErrNonShortestInt"},
		{"enum_cancel_reason_three", envelope(wire.TypeJobCancel, "a4", "00", h32, "01", h32, "02", "03", "03", sig64), "ErrEnumUnknown"},
		{"enum_goodbye_reason_nine", bye("09", "f6", "f6", "f6"), "ErrEnumUnknown"},
		// §12.6 scheme-tagged keys and role-scheme signatures
		{"pubkey_unknown_scheme", hello("190100", "5822"+"03"+hx(rk.PubKey().Raw()), "01"), "ErrPubKeyScheme"},
		{"pubkey_scheme_zero", hello("190100", "5822"+"00"+hx(rk.PubKey().Raw()), "01"), "ErrPubKeyScheme"},
		{"pubkey_empty", hello("190100", "40", "01"), "ErrPubKeyLength"},
		{"pubkey_secp256k1_33_bytes", hello("190100", "5821"+"01"+strings.Repeat("02", 32), "01"), "ErrPubKeyLength"},
		{"pubkey_ed25519_34_bytes", hello("190100", "5822"+"02"+strings.Repeat("02", 33), "02"), "ErrPubKeyLength"},
		{"pubkey_secp256k1_not_on_curve", hello("190100", badPoint, "01"), "ErrPubKeyPoint"},
		{"pubkey_secp256k1_uncompressed_prefix", hello("190100", "5822"+"0104"+hx(rk.PubKey().Raw()[1:]), "01"), "ErrPubKeyPoint"},
		{"hello_runner_role_with_ed25519_key", hello("190100", vpk, "01"), "ErrPubKeyRole"},
		{"hello_validator_role_with_secp256k1_key", hello("190100", rpk, "02"), "ErrPubKeyRole"},
		{"hello_ack_validator_with_65_byte_sig", envelope(wire.TypeHelloAck, "a8", "00", "190100", "01", "00", "02", h32, "03", "00", "04", vpk, "05", "02", "06", "00", "07", sig65), "ErrSigLength"},
		{"hello_ack_runner_with_64_byte_sig", envelope(wire.TypeHelloAck, "a8", "00", "190100", "01", "00", "02", h32, "03", "00", "04", rpk, "05", "01", "06", "00", "07", sig64), "ErrSigLength"},
		{"job_assignment_runner_key_ed25519", assignment(vpk, vpk), "ErrPubKeyRole"},
		{"job_assignment_validator_key_secp256k1", assignment(rpk, rpk), "ErrPubKeyRole"},
		{"goodbye_signed_63_bytes", bye("06", "f6", "f6", "583f"+strings.Repeat("11", 63)), "ErrSigLength"},
		{"goodbye_signed_empty", bye("06", "f6", "f6", "40"), "ErrSigLength"},
		// The 0x0101 receipt frames (SPEC-NOTES N18)
		{"presence_receipt_seven_fields", receipt("a7", vpk, rpk), "ErrMissingKey"},
		{"presence_receipt_nine_fields", receipt("a9", vpk, rpk, "07", sig64, "08", "00"), "ErrUnknownKey"},
		{"presence_receipt_validator_key_31_bytes", receipt("a8", "5820"+"02"+strings.Repeat("22", 31), rpk, "07", sig64), "ErrPubKeyLength"},
		{"presence_receipt_runner_key_ed25519", receipt("a8", vpk, vpk, "07", sig64), "ErrPubKeyRole"},
		{"presence_receipt_signature_65_bytes", receipt("a8", vpk, rpk, "07", sig65), "ErrByteLength"},
		{"presence_receipt_request_extra_key", envelope(wire.TypePresenceReceiptRequest, "a2", "00", "00", "01", "00"), "ErrUnknownKey"},
		{"presence_receipt_request_empty_map", envelope(wire.TypePresenceReceiptRequest, "a0"), "ErrMissingKey"},
	}
	out := make([]frameVector, 0, len(neg)+2)
	for _, n := range neg {
		out = append(out, frameVector{Name: n.name, Frame: n.frame, Error: n.err})
	}
	// Encoder-side: values no decoder accepts cannot be encoded either.
	out = append(out,
		frameVector{Name: "encode_progress_fraction_101", Type: intp(int(wire.TypeJobProgress)),
			Fields: json.RawMessage(`{"job_id":"` + strings.Repeat("33", 32) + `","fraction":101,"detail":null}`), Error: "ErrFieldRange"},
		frameVector{Name: "encode_hello_role_scheme_mismatch", Type: intp(int(wire.TypeHello)),
			Fields: json.RawMessage(`{"version":256,"chain_id":"1","validator_set_hash":"` + strings.Repeat("33", 32) +
				`","subset_epoch":"0","party_pubkey":"` + vk.PubKey().String() + `","party_role":"Runner","block_height":"0","challenge_nonce":"` + strings.Repeat("33", 32) + `"}`),
			Error: "ErrPubKeyRole"},
	)
	return out
}

func intp(v int) *int { return &v }

func genFrameVectors() ([]any, error) {
	var out []any
	for _, p := range positiveFrames() {
		b, err := wire.Encode(p.f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		out = append(out, frameVector{Name: p.name, Type: intp(int(p.f.Type())), Fields: rawJSON(p.f), Frame: hx(b)})
	}
	for _, n := range negativeFrames() {
		out = append(out, n)
	}
	return out, nil
}

func evalFrameVector(raw json.RawMessage) (map[string]any, error) {
	var v frameVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	out := map[string]any{}
	if v.Type != nil {
		f, err := wire.NewFrame(wire.FrameType(*v.Type))
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(strings.NewReader(string(v.Fields)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(f); err != nil {
			return nil, fmt.Errorf("%w: fields: %v", ErrMalformedVector, err)
		}
		b, err := wire.Encode(f)
		if err != nil {
			return nil, err
		}
		out["frame"] = hx(b)
	}
	if v.Frame != "" || v.Type == nil {
		b, err := Unhex(v.Frame)
		if err != nil {
			return nil, err
		}
		f, err := wire.Decode(b, cip11.DefaultParams().MaxFrameBytes)
		if err != nil {
			return nil, err
		}
		out["fields"] = f
		if v.Type != nil && int(f.Type()) != *v.Type {
			return nil, fmt.Errorf("%w: frame type 0x%02x, vector type %d", ErrMalformedVector, byte(f.Type()), *v.Type)
		}
	}
	return out, nil
}
