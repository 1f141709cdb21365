package conformance

import (
	"encoding/json"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

type digestVector struct {
	Name               string          `json:"name"`
	Preimage           string          `json:"preimage"`
	Fields             json.RawMessage `json:"fields"`
	ConnectionID       *cip11.Hash     `json:"connection_id,omitempty"`
	CanonicalFrameBody string          `json:"canonical_frame_body,omitempty"`
	Digest             *cip11.Hash     `json:"digest,omitempty"`
	Error              string          `json:"error,omitempty"`
}

// Per-preimage field sets: the frame values the §12.6 line names plus, for
// connection-scoped lines, the connection context (embedded wire.Conn).
type (
	helloAckFields struct {
		ChainID            uint64     `json:"chain_id,string"`
		Version            uint16     `json:"version"`
		SenderRole         wire.Role  `json:"sender_role"`
		SenderPubKey       string     `json:"sender_pubkey"`
		RecipientRole      wire.Role  `json:"recipient_role"`
		RecipientPubKey    string     `json:"recipient_pubkey"`
		ValidatorSetHash   cip11.Hash `json:"validator_set_hash"`
		SubsetEpoch        uint64     `json:"subset_epoch,string"`
		PeerChallengeNonce cip11.Hash `json:"peer_challenge_nonce"`
		ChannelBinding     cip11.Hash `json:"channel_binding"`
	}
	pingFields struct {
		connFields
		BlockHeight uint64 `json:"block_height,string"`
		Nonce       uint64 `json:"nonce,string"`
	}
	pongFields struct {
		connFields
		BlockHeight  uint64 `json:"block_height,string"`
		NonceEcho    uint64 `json:"nonce_echo,string"`
		AcceptingNew bool   `json:"accepting_new"`
	}
	receiptFields struct {
		ChainID          uint64     `json:"chain_id,string"`
		ValidatorPubKey  string     `json:"validator_pubkey"`
		RunnerPubKey     string     `json:"runner_pubkey"`
		SubsetEpoch      uint64     `json:"subset_epoch,string"`
		ValidatorSetHash cip11.Hash `json:"validator_set_hash"`
		BlockHeight      uint64     `json:"block_height,string"`
		NonceEcho        uint64     `json:"nonce_echo,string"`
		AcceptingNew     bool       `json:"accepting_new"`
	}
	backpressureFields struct {
		connFields
		BlockHeight   uint64  `json:"block_height,string"`
		ActiveJobs    uint32  `json:"active_jobs"`
		MaxConcurrent uint32  `json:"max_concurrent"`
		AcceptingNew  bool    `json:"accepting_new"`
		Reason        *string `json:"reason"`
	}
	capabilityFields struct {
		connFields
		BlockHeight         uint64       `json:"block_height,string"`
		AddedCapabilities   []string     `json:"added_capabilities"`
		RemovedCapabilities []string     `json:"removed_capabilities"`
		AddedEntitlements   []cip11.Hash `json:"added_entitlements"`
		RemovedEntitlements []cip11.Hash `json:"removed_entitlements"`
	}
	assignmentFields struct {
		ChainID          uint64     `json:"chain_id,string"`
		JobID            cip11.Hash `json:"job_id"`
		JobSpecHash      cip11.Hash `json:"job_spec_hash"`
		AssignmentHeight uint64     `json:"assignment_height,string"`
		DeadlineBlock    uint64     `json:"deadline_block,string"`
		RunnerPubKey     string     `json:"runner_pubkey"`
		ValidatorPubKey  string     `json:"validator_pubkey"`
	}
	ackFields struct {
		connFields
		JobID          cip11.Hash     `json:"job_id"`
		AssignmentHash cip11.Hash     `json:"assignment_hash"`
		Status         wire.AckStatus `json:"status"`
		Reason         *string        `json:"reason"`
	}
	cancelFields struct {
		connFields
		JobID          cip11.Hash        `json:"job_id"`
		AssignmentHash cip11.Hash        `json:"assignment_hash"`
		Reason         wire.CancelReason `json:"reason"`
	}
	goodbyeFields struct {
		connFields
		SenderRole       wire.Role          `json:"sender_role"`
		Reason           wire.GoodbyeReason `json:"reason"`
		Detail           *string            `json:"detail"`
		RetryAfterBlocks *uint64            `json:"retry_after_blocks,string"`
	}
	jobSpecFields struct {
		JobSpec wire.Bytes `json:"job_spec"`
	}
)

// connFields is wire.Conn with keys as plain hex strings, so that a vector
// can carry a malformed key and fail with the key's own sentinel.
type connFields struct {
	ChainID          uint64     `json:"chain_id,string"`
	Version          uint16     `json:"version"`
	RunnerPubKey     string     `json:"runner_pubkey"`
	ValidatorPubKey  string     `json:"validator_pubkey"`
	ValidatorSetHash cip11.Hash `json:"validator_set_hash"`
	SubsetEpoch      uint64     `json:"subset_epoch,string"`
	ChannelBinding   cip11.Hash `json:"channel_binding"`
}

func connFieldsOf(c wire.Conn) connFields {
	return connFields{c.ChainID, c.Version, c.RunnerPubKey.String(), c.ValidatorPubKey.String(), c.ValidatorSetHash, c.SubsetEpoch, c.ChannelBinding}
}

func parseKey(s string) (wire.PubKey, error) {
	b, err := Unhex(s)
	if err != nil {
		return wire.PubKey{}, err
	}
	return wire.ParsePubKey(b)
}

// session builds the wire session; key errors keep their sentinels.
func (c connFields) session() (*wire.Session, error) {
	r, err := parseKey(c.RunnerPubKey)
	if err != nil {
		return nil, fmt.Errorf("runner_pubkey: %w", err)
	}
	v, err := parseKey(c.ValidatorPubKey)
	if err != nil {
		return nil, fmt.Errorf("validator_pubkey: %w", err)
	}
	return wire.NewSession(wire.Conn{ChainID: c.ChainID, Version: c.Version, RunnerPubKey: r, ValidatorPubKey: v,
		ValidatorSetHash: c.ValidatorSetHash, SubsetEpoch: c.SubsetEpoch, ChannelBinding: c.ChannelBinding})
}

type digestOut struct {
	connID *cip11.Hash
	body   []byte
	digest cip11.Hash
}

// computeDigest evaluates one §12.6 line from its decoded fields.
func computeDigest(preimage string, raw json.RawMessage) (digestOut, error) {
	var out digestOut
	strict := func(dst any) error { return DecodeVector(raw, dst) }
	withSession := func(c connFields) (*wire.Session, error) {
		s, err := c.session()
		if err == nil {
			out.connID = &s.ID
		}
		return s, err
	}
	var err error
	switch preimage {
	case "connection_id":
		var f connFields
		if err = strict(&f); err != nil {
			return out, err
		}
		s, err := withSession(f)
		if err == nil {
			out.digest, out.connID = s.ID, nil
		}
		return out, err
	case "HelloAck":
		var f helloAckFields
		if err = strict(&f); err != nil {
			return out, err
		}
		sk, err := parseKey(f.SenderPubKey)
		if err != nil {
			return out, err
		}
		rk, err := parseKey(f.RecipientPubKey)
		if err != nil {
			return out, err
		}
		ack := &wire.HelloAck{Version: f.Version, ChainID: f.ChainID, ValidatorSetHash: f.ValidatorSetHash, SubsetEpoch: f.SubsetEpoch, PartyPubKey: sk, PartyRole: f.SenderRole}
		out.digest, err = ack.Digest(&wire.Hello{Version: f.Version, PartyPubKey: rk, PartyRole: f.RecipientRole, ChallengeNonce: f.PeerChallengeNonce}, f.ChannelBinding)
		return out, err
	case "HeartbeatPing":
		var f pingFields
		if err = strict(&f); err != nil {
			return out, err
		}
		s, err := withSession(f.connFields)
		if err == nil {
			out.digest = (&wire.HeartbeatPing{BlockHeight: f.BlockHeight, Nonce: f.Nonce}).Digest(s)
		}
		return out, err
	case "HeartbeatPong":
		var f pongFields
		if err = strict(&f); err != nil {
			return out, err
		}
		s, err := withSession(f.connFields)
		if err == nil {
			out.digest = (&wire.HeartbeatPong{BlockHeight: f.BlockHeight, NonceEcho: f.NonceEcho, AcceptingNew: f.AcceptingNew}).Digest(s)
		}
		return out, err
	case "PresenceReceipt":
		var f receiptFields
		if err = strict(&f); err != nil {
			return out, err
		}
		v, err := parseKey(f.ValidatorPubKey)
		if err != nil {
			return out, err
		}
		r, err := parseKey(f.RunnerPubKey)
		if err != nil {
			return out, err
		}
		rc := &wire.PresenceReceipt{ValidatorPubKey: v, RunnerPubKey: r, SubsetEpoch: f.SubsetEpoch, ValidatorSetHash: f.ValidatorSetHash,
			BlockHeight: f.BlockHeight, NonceEcho: f.NonceEcho, AcceptingNew: f.AcceptingNew}
		out.digest, err = rc.Digest(f.ChainID)
		return out, err
	case "BackpressureSignal":
		var f backpressureFields
		if err = strict(&f); err != nil {
			return out, err
		}
		s, err := withSession(f.connFields)
		if err != nil {
			return out, err
		}
		bp := &wire.BackpressureSignal{BlockHeight: f.BlockHeight, ActiveJobs: f.ActiveJobs, MaxConcurrent: f.MaxConcurrent, AcceptingNew: f.AcceptingNew, Reason: f.Reason}
		if out.body, err = bp.CanonicalBody(); err != nil {
			return out, err
		}
		out.digest, err = bp.Digest(s)
		return out, err
	case "CapabilityDelta":
		var f capabilityFields
		if err = strict(&f); err != nil {
			return out, err
		}
		s, err := withSession(f.connFields)
		if err != nil {
			return out, err
		}
		cd := &wire.CapabilityDelta{BlockHeight: f.BlockHeight, AddedCapabilities: f.AddedCapabilities, RemovedCapabilities: f.RemovedCapabilities,
			AddedEntitlements: f.AddedEntitlements, RemovedEntitlements: f.RemovedEntitlements}
		if out.body, err = cd.CanonicalBody(); err != nil {
			return out, err
		}
		out.digest, err = cd.Digest(s)
		return out, err
	case "JobAssignment":
		var f assignmentFields
		if err = strict(&f); err != nil {
			return out, err
		}
		r, err := parseKey(f.RunnerPubKey)
		if err != nil {
			return out, err
		}
		v, err := parseKey(f.ValidatorPubKey)
		if err != nil {
			return out, err
		}
		a := &wire.JobAssignment{JobID: f.JobID, JobSpecHash: f.JobSpecHash, AssignmentHeight: f.AssignmentHeight, DeadlineBlock: f.DeadlineBlock, RunnerPubKey: r, ValidatorPubKey: v}
		out.digest, err = a.Digest(f.ChainID)
		return out, err
	case "JobAck":
		var f ackFields
		if err = strict(&f); err != nil {
			return out, err
		}
		s, err := withSession(f.connFields)
		if err == nil {
			out.digest = (&wire.JobAck{JobID: f.JobID, AssignmentHash: f.AssignmentHash, Status: f.Status, Reason: f.Reason}).Digest(s)
		}
		return out, err
	case "JobCancel":
		var f cancelFields
		if err = strict(&f); err != nil {
			return out, err
		}
		s, err := withSession(f.connFields)
		if err == nil {
			out.digest = (&wire.JobCancel{JobID: f.JobID, AssignmentHash: f.AssignmentHash, Reason: f.Reason}).Digest(s)
		}
		return out, err
	case "Goodbye":
		var f goodbyeFields
		if err = strict(&f); err != nil {
			return out, err
		}
		s, err := withSession(f.connFields)
		if err != nil {
			return out, err
		}
		out.digest, err = (&wire.Goodbye{Reason: f.Reason, Detail: f.Detail, RetryAfterBlocks: f.RetryAfterBlocks}).Digest(s, f.SenderRole)
		return out, err
	case "job_spec_hash":
		var f jobSpecFields
		if err = strict(&f); err != nil {
			return out, err
		}
		out.digest = wire.JobSpecHash(f.JobSpec)
		return out, nil
	}
	return out, fmt.Errorf("%w: unknown preimage %q", ErrMalformedVector, preimage)
}

func evalDigestVector(raw json.RawMessage) (map[string]any, error) {
	var v digestVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	d, err := computeDigest(v.Preimage, v.Fields)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"digest": d.digest}
	if d.connID != nil {
		out["connection_id"] = *d.connID
	}
	if d.body != nil {
		out["canonical_frame_body"] = hx(d.body)
	}
	return out, nil
}

func genDigestVectors() ([]any, error) {
	c := wireConn()
	cf := connFieldsOf(c)
	rk, vk := wireRunner(1), wireValidator(1)
	job, ah := label("cip11/vectors/job-1"), label("cip11/vectors/assignment-hash-1")
	other := c
	other.ChannelBinding = label("cip11/vectors/channel-binding-2")
	badConn := cf
	badConn.RunnerPubKey = vk.PubKey().String()
	badConn2 := cf
	badConn2.ValidatorPubKey = rk.PubKey().String()
	badConn3 := cf
	badConn3.RunnerPubKey = "03" + rk.PubKey().String()[2:]
	in := []struct {
		name, preimage string
		fields         any
		err            string
	}{
		{"connection_id", "connection_id", cf, ""},
		{"connection_id_other_channel_binding", "connection_id", connFieldsOf(other), ""},
		{"connection_id_minor_version", "connection_id", func() connFields { x := cf; x.Version = 0x0101; return x }(), ""},
		{"hello_ack_runner_signs", "HelloAck", helloAckFields{c.ChainID, wire.Version, wire.RoleRunner, rk.PubKey().String(), wire.RoleValidator, vk.PubKey().String(),
			c.ValidatorSetHash, 0, label("cip11/vectors/nonce-validator"), c.ChannelBinding}, ""},
		{"hello_ack_validator_signs", "HelloAck", helloAckFields{c.ChainID, wire.Version, wire.RoleValidator, vk.PubKey().String(), wire.RoleRunner, rk.PubKey().String(),
			c.ValidatorSetHash, 0, label("cip11/vectors/nonce-runner"), c.ChannelBinding}, ""},
		{"heartbeat_ping", "HeartbeatPing", pingFields{cf, 1002, 0}, ""},
		{"heartbeat_ping_other_connection", "HeartbeatPing", pingFields{connFieldsOf(other), 1002, 0}, ""},
		{"heartbeat_pong_accepting", "HeartbeatPong", pongFields{cf, 1002, 0, true}, ""},
		{"heartbeat_pong_not_accepting", "HeartbeatPong", pongFields{cf, 1002, 0, false}, ""},
		{"presence_receipt", "PresenceReceipt", receiptFields{c.ChainID, vk.PubKey().String(), rk.PubKey().String(), 0, c.ValidatorSetHash, 1002, 7, true}, ""},
		{"presence_receipt_other_chain", "PresenceReceipt", receiptFields{c.ChainID + 1, vk.PubKey().String(), rk.PubKey().String(), 0, c.ValidatorSetHash, 1002, 7, true}, ""},
		{"backpressure_reason_null", "BackpressureSignal", backpressureFields{cf, 1004, 3, 4, true, nil}, ""},
		{"backpressure_reason_empty", "BackpressureSignal", backpressureFields{cf, 1004, 3, 4, true, strp("")}, ""},
		{"backpressure_reason_text", "BackpressureSignal", backpressureFields{cf, 1005, 4, 4, false, strp("at capacity")}, ""},
		{"capability_delta_empty", "CapabilityDelta", capabilityFields{cf, 1004, []string{}, []string{}, []cip11.Hash{}, []cip11.Hash{}}, ""},
		{"capability_delta_same_height_as_backpressure", "CapabilityDelta", capabilityFields{cf, 1004, []string{"llm"}, []string{}, []cip11.Hash{label("cip11/vectors/entitlement-1")}, []cip11.Hash{}}, ""},
		{"job_assignment", "JobAssignment", assignmentFields{c.ChainID, job, wire.JobSpecHash([]byte("cip11/vectors/job-spec-1")), 2000, 2100, rk.PubKey().String(), vk.PubKey().String()}, ""},
		{"job_assignment_second_validator", "JobAssignment", assignmentFields{c.ChainID, job, wire.JobSpecHash([]byte("cip11/vectors/job-spec-1")), 2000, 2100, rk.PubKey().String(), wireValidator(2).PubKey().String()}, ""},
		{"job_ack_accepted_reason_null", "JobAck", ackFields{cf, job, ah, wire.Accepted(), nil}, ""},
		{"job_ack_accepted_reason_empty_equals_null", "JobAck", ackFields{cf, job, ah, wire.Accepted(), strp("")}, ""},
		{"job_ack_duplicate", "JobAck", ackFields{cf, job, ah, wire.Duplicate(), nil}, ""},
		{"job_ack_reject_unverifiable_assignment", "JobAck", ackFields{cf, job, ah, wire.Reject(wire.RejectUnverifiableAssignment), strp("job_spec_hash mismatch")}, ""},
		{"job_ack_reject_other", "JobAck", ackFields{cf, job, ah, wire.Reject(wire.RejectOther), nil}, ""},
		{"job_cancel_reassigned", "JobCancel", cancelFields{cf, job, ah, wire.CancelReassigned}, ""},
		{"job_cancel_failed", "JobCancel", cancelFields{cf, job, ah, wire.CancelFailed}, ""},
		{"goodbye_runner_none_none", "Goodbye", goodbyeFields{cf, wire.RoleRunner, wire.GoodbyeShutdown, nil, nil}, ""},
		{"goodbye_runner_empty_zero_equals_none_none", "Goodbye", goodbyeFields{cf, wire.RoleRunner, wire.GoodbyeShutdown, strp(""), u64p(0)}, ""},
		{"goodbye_runner_text_retry", "Goodbye", goodbyeFields{cf, wire.RoleRunner, wire.GoodbyeDraining, strp("validator restarting"), u64p(30)}, ""},
		{"goodbye_validator_none_none", "Goodbye", goodbyeFields{cf, wire.RoleValidator, wire.GoodbyeShutdown, nil, nil}, ""},
		{"job_spec_hash_fixture", "job_spec_hash", jobSpecFields{[]byte("cip11/vectors/job-spec-1")}, ""},
		{"job_spec_hash_empty", "job_spec_hash", jobSpecFields{wire.Bytes{}}, ""},
		// Negative: role/scheme agreement in the connection context (§12.6).
		{"connection_runner_key_ed25519", "HeartbeatPing", pingFields{badConn, 1, 0}, "ErrPubKeyRole"},
		{"connection_validator_key_secp256k1", "JobAck", ackFields{badConn2, job, ah, wire.Accepted(), nil}, "ErrPubKeyRole"},
		{"connection_runner_key_unknown_scheme", "connection_id", badConn3, "ErrPubKeyScheme"},
		{"hello_ack_sender_role_scheme_mismatch", "HelloAck", helloAckFields{c.ChainID, wire.Version, wire.RoleRunner, vk.PubKey().String(), wire.RoleValidator, vk.PubKey().String(),
			c.ValidatorSetHash, 0, label("x"), c.ChannelBinding}, "ErrPubKeyRole"},
		{"presence_receipt_keys_swapped", "PresenceReceipt", receiptFields{c.ChainID, rk.PubKey().String(), vk.PubKey().String(), 0, c.ValidatorSetHash, 1002, 7, true}, "ErrPubKeyRole"},
		{"job_assignment_runner_key_ed25519", "JobAssignment", assignmentFields{c.ChainID, job, label("h"), 2000, 2100, vk.PubKey().String(), vk.PubKey().String()}, "ErrPubKeyRole"},
	}
	var out []any
	for _, x := range in {
		v := digestVector{Name: x.name, Preimage: x.preimage, Fields: rawJSON(x.fields)}
		if x.err != "" {
			v.Error = x.err
			out = append(out, v)
			continue
		}
		d, err := computeDigest(x.preimage, v.Fields)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", x.name, err)
		}
		v.Digest, v.ConnectionID = &d.digest, d.connID
		if d.body != nil {
			v.CanonicalFrameBody = hx(d.body)
		}
		out = append(out, v)
	}
	return out, nil
}
