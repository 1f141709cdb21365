package conformance

import (
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

type checkCase struct {
	name, check string
	ctx         checkContext
	frame       wire.Frame
	err         string
}

func u16p(v uint16) *uint16 { return &v }
func boolp(v bool) *bool    { return &v }

func rawKey(k wire.PubKey) cip11.Hash { return cip11.Hash(k.Raw()) }

func genCheckVectors() ([]any, error) {
	var cases []checkCase
	for _, g := range []func() []checkCase{versionCases, helloCases, heartbeatCases, assignmentCases, ackCancelCases, resultCases, goodbyeCases, receiptCases} {
		cases = append(cases, g()...)
	}
	out := make([]any, 0, len(cases))
	for _, x := range cases {
		v := checkVector{Name: x.name, Check: x.check, Context: rawJSON(x.ctx)}
		if x.frame != nil {
			v.Frame = hx(mustEncode(x.frame))
		}
		if x.err != "" {
			v.Error = x.err
			out = append(out, v)
			continue
		}
		res, err := runCheck(x.check, &x.ctx, v.Frame)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", x.name, err)
		}
		if st, ok := res["status"].(wire.AckStatus); ok {
			v.Status = &st
		}
		if a, ok := res["advisory"].(bool); ok {
			v.Advisory = &a
		}
		if _, ok := res["ok"]; ok {
			v.OK = boolp(true)
		}
		out = append(out, v)
	}
	return out, nil
}

func versionCases() []checkCase {
	v := func(name string, ours, peer uint16, accept bool, err string) checkCase {
		return checkCase{name: name, check: "version", ctx: checkContext{Ours: u16p(ours), Peer: u16p(peer), AcceptHigherMinor: accept}, err: err}
	}
	return []checkCase{
		v("version_equal", 0x0100, 0x0100, false, ""),
		v("version_peer_lower_minor", 0x0101, 0x0100, false, ""),
		v("version_peer_higher_minor_policy_accepts", 0x0100, 0x0101, true, ""),
		v("version_peer_higher_minor_policy_rejects", 0x0100, 0x0101, false, "ErrUnsupportedVersion"),
		v("version_major_2", 0x0100, 0x0200, true, "ErrUnsupportedVersion"),
		v("version_major_0", 0x0100, 0x0001, true, "ErrUnsupportedVersion"),
	}
}

func epoch(n uint64) wire.EpochPair {
	return wire.EpochPair{SubsetEpoch: n, ValidatorSetHash: label(fmt.Sprintf("cip11/vectors/validator-set-%d", n))}
}

func hello(k wire.Signer, chain uint64, p wire.EpochPair, nonce string) *wire.Hello {
	return &wire.Hello{Version: wire.Version, ChainID: chain, ValidatorSetHash: p.ValidatorSetHash, SubsetEpoch: p.SubsetEpoch,
		PartyPubKey: k.PubKey(), PartyRole: k.Role(), BlockHeight: 1000, ChallengeNonce: label(nonce)}
}

func helloAck(k wire.Signer, to *wire.Hello, chain uint64, p wire.EpochPair, cb cip11.Hash, signer wire.Signer) *wire.HelloAck {
	a := &wire.HelloAck{Version: wire.Version, ChainID: chain, ValidatorSetHash: p.ValidatorSetHash, SubsetEpoch: p.SubsetEpoch,
		PartyPubKey: signer.PubKey(), PartyRole: k.Role(), BlockHeight: 1001}
	must(a.Sign(to, cb, signer))
	a.PartyPubKey = k.PubKey() // a different signer makes a forged ack
	return a
}

func helloCases() []checkCase {
	c := wireConn()
	r1, v1, v2, r2 := wireRunner(1), wireValidator(1), wireValidator(2), wireRunner(2)
	e0, e1 := epoch(0), epoch(1)
	vLocal := func(epochs []wire.EpochPair, admitted []wire.PubKey) *localFields {
		return &localFields{Role: wire.RoleValidator, ChainID: c.ChainID, Version: wire.Version, Epochs: epochs, Admitted: admitted}
	}
	rLocal := &localFields{Role: wire.RoleRunner, ChainID: c.ChainID, Version: wire.Version, Epochs: []wire.EpochPair{e0}, Admitted: []wire.PubKey{v1.PubKey()}}
	rh := hello(r1, c.ChainID, e0, "cip11/vectors/nonce-runner")
	vh := hello(v1, c.ChainID, e0, "cip11/vectors/nonce-validator")
	badVersion := *rh
	badVersion.Version = 0x0200
	mixed := *rh
	mixed.ValidatorSetHash = e1.ValidatorSetHash
	cb := c.ChannelBinding
	ack := helloAck(v1, rh, c.ChainID, e0, cb, v1)
	hc := func(name string, l *localFields, f wire.Frame, err string) checkCase {
		return checkCase{name: name, check: "hello", ctx: checkContext{Local: l}, frame: f, err: err}
	}
	ac := func(name string, ours, peers *wire.Hello, cbv cip11.Hash, a *wire.HelloAck, err string) checkCase {
		return checkCase{name: name, check: "hello_ack", ctx: checkContext{Local: rLocal, OurHello: hx(mustEncode(ours)),
			PeerHello: hx(mustEncode(peers)), ChannelBinding: &cbv}, frame: a, err: err}
	}
	otherNonce := hello(r1, c.ChainID, e0, "cip11/vectors/nonce-runner-other")
	return []checkCase{
		hc("hello_runner_admitted", vLocal([]wire.EpochPair{e0}, nil), rh, ""),
		hc("hello_validator_admitted_by_runner", rLocal, vh, ""),
		hc("hello_overlap_offers_epoch_e_plus_1", vLocal([]wire.EpochPair{e0, e1}, nil), hello(r1, c.ChainID, e1, "n"), ""),
		hc("hello_wrong_chain", vLocal([]wire.EpochPair{e0}, nil), hello(r1, c.ChainID+1, e0, "n"), "ErrWrongChain"),
		hc("hello_version_major_mismatch", vLocal([]wire.EpochPair{e0}, nil), &badVersion, "ErrUnsupportedVersion"),
		hc("hello_validator_set_hash_mismatch", vLocal([]wire.EpochPair{e0}, nil), hello(r1, c.ChainID, e1, "n"), "ErrValidatorSetMismatch"),
		hc("hello_overlap_mixed_epoch_and_hash", vLocal([]wire.EpochPair{e0, e1}, nil), &mixed, "ErrValidatorSetMismatch"),
		hc("hello_same_role", vLocal([]wire.EpochPair{e0}, nil), hello(v2, c.ChainID, e0, "n"), "ErrHelloRole"),
		hc("hello_runner_not_in_subset", vLocal([]wire.EpochPair{e0}, []wire.PubKey{r2.PubKey()}), rh, "ErrNotInSubset"),
		hc("hello_validator_not_in_snapshot", rLocal, hello(v2, c.ChainID, e0, "n"), "ErrValidatorNotInSnapshot"),
		ac("hello_ack_valid", rh, vh, cb, ack, ""),
		ac("hello_ack_other_channel_binding", rh, vh, label("cip11/vectors/channel-binding-proxy"), ack, "ErrSigInvalid"),
		ac("hello_ack_answers_other_challenge", otherNonce, vh, cb, ack, "ErrSigInvalid"),
		ac("hello_ack_forged_by_other_key", rh, vh, cb, helloAck(v1, rh, c.ChainID, e0, cb, v2), "ErrSigInvalid"),
		ac("hello_ack_valid_whatever_the_peer_nonce", rh, hello(v1, c.ChainID, e0, "n"), cb, helloAck(v1, rh, c.ChainID, e0, cb, v1), ""),
		ac("hello_ack_party_outside_snapshot", rh, vh, cb, helloAck(v2, rh, c.ChainID, e0, cb, v2), "ErrValidatorNotInSnapshot"),
		{name: "hello_ack_party_differs_from_peer_hello", check: "hello_ack", ctx: checkContext{
			Local:    &localFields{Role: wire.RoleRunner, ChainID: c.ChainID, Version: wire.Version, Epochs: []wire.EpochPair{e0}},
			OurHello: hx(mustEncode(rh)), PeerHello: hx(mustEncode(vh)), ChannelBinding: &cb},
			frame: helloAck(v2, rh, c.ChainID, e0, cb, v2), err: "ErrHelloAckParty"},
		ac("hello_ack_wrong_chain", rh, vh, cb, helloAck(v1, rh, c.ChainID+1, e0, cb, v1), "ErrWrongChain"),
		{name: "hello_ack_epoch_differs_from_peer_hello", check: "hello_ack", ctx: checkContext{
			Local:    &localFields{Role: wire.RoleRunner, ChainID: c.ChainID, Version: wire.Version, Epochs: []wire.EpochPair{e0, e1}},
			OurHello: hx(mustEncode(rh)), PeerHello: hx(mustEncode(vh)), ChannelBinding: &cb},
			frame: helloAck(v1, rh, c.ChainID, e1, cb, v1), err: "ErrValidatorSetMismatch"},
	}
}

func heartbeatCases() []checkCase {
	c := wireConn()
	s := wireSession(c)
	other := c
	other.ChannelBinding = label("cip11/vectors/channel-binding-2")
	so := wireSession(other)
	r1, r2, v1 := wireRunner(1), wireRunner(2), wireValidator(1)
	cf := connFieldsOf(c)
	ping := func(sess *wire.Session, k *wire.RunnerKey, nonce uint64) *wire.HeartbeatPing {
		p := &wire.HeartbeatPing{BlockHeight: 1002, Nonce: nonce}
		must(p.Sign(sess, k))
		return p
	}
	malleated := ping(s, r1, 5)
	malleated.Signed = highS(malleated.Signed)
	badV := ping(s, r1, 5)
	badV.Signed[64] = 27
	pc := func(name string, first bool, last uint64, p *wire.HeartbeatPing, err string) checkCase {
		return checkCase{name: name, check: "ping", ctx: checkContext{Conn: &cf, First: &first, Last: &last}, frame: p, err: err}
	}
	pong := func(sess *wire.Session, echo uint64) *wire.HeartbeatPong {
		p := &wire.HeartbeatPong{BlockHeight: 1002, NonceEcho: echo, AcceptingNew: true}
		p.Sign(sess, v1)
		return p
	}
	oc := func(name string, outstanding uint64, p *wire.HeartbeatPong, err string) checkCase {
		return checkCase{name: name, check: "pong", ctx: checkContext{Conn: &cf, Outstanding: &outstanding}, frame: p, err: err}
	}
	bp := &wire.BackpressureSignal{BlockHeight: 1004, ActiveJobs: 4, MaxConcurrent: 4, Reason: strp("full")}
	must(bp.Sign(s, r1))
	bpChanged := *bp
	bpChanged.AcceptingNew = true
	cd := &wire.CapabilityDelta{BlockHeight: 1004, AddedCapabilities: []string{"llm"}, RemovedCapabilities: []string{}, AddedEntitlements: []cip11.Hash{}, RemovedEntitlements: []cip11.Hash{}}
	must(cd.Sign(s, r1))
	cdChanged := *cd
	cdChanged.RemovedCapabilities = []string{"http"}
	vc := func(name string, f wire.Frame, err string) checkCase {
		return checkCase{name: name, check: "verify", ctx: checkContext{Conn: &cf}, frame: f, err: err}
	}
	return []checkCase{
		pc("ping_first_nonce_zero", true, 0, ping(s, r1, 0), ""),
		pc("ping_nonce_increasing", false, 4, ping(s, r1, 5), ""),
		pc("ping_nonce_repeated", false, 5, ping(s, r1, 5), "ErrPingNonceNotIncreasing"),
		pc("ping_nonce_decreasing", false, 6, ping(s, r1, 5), "ErrPingNonceNotIncreasing"),
		pc("ping_replayed_from_other_connection", false, 4, ping(so, r1, 5), "ErrSigInvalid"),
		pc("ping_signed_by_other_runner", false, 4, ping(s, r2, 5), "ErrSigInvalid"),
		pc("ping_high_s", false, 4, malleated, "ErrSigHighS"),
		pc("ping_recovery_id_27", false, 4, badV, "ErrSigRecoveryID"),
		oc("pong_echoes_outstanding", 7, pong(s, 7), ""),
		oc("pong_nonce_echo_mismatch", 8, pong(s, 7), "ErrPongNonceMismatch"),
		oc("pong_replayed_from_other_connection", 7, pong(so, 7), "ErrSigInvalid"),
		vc("backpressure_signed", bp, ""),
		vc("backpressure_changed_after_signing", &bpChanged, "ErrSigInvalid"),
		vc("capability_delta_signed", cd, ""),
		vc("capability_delta_changed_after_signing", &cdChanged, "ErrSigInvalid"),
	}
}

func assignmentCases() []checkCase {
	c := wireConn()
	s := wireSession(c)
	c2 := c
	c2.ValidatorPubKey = wireValidator(2).PubKey()
	s2 := wireSession(c2)
	v1, v2, v3 := wireValidator(1), wireValidator(2), wireValidator(3)
	spec := []byte("cip11/vectors/job-spec-1")
	base := referenceAssignment(s, v1, spec)
	fromV2 := referenceAssignment(s2, v2, spec)
	mod := func(f func(a *wire.JobAssignment), signer *wire.ValidatorKey, chain uint64) *wire.JobAssignment {
		a := *base
		f(&a)
		must(a.Sign(chain, signer))
		return &a
	}
	badSpecHash := mod(func(a *wire.JobAssignment) { a.JobSpecHash = label("other") }, v1, c.ChainID)
	badHash := *base
	badHash.AssignmentHash = label("not the assignment hash")
	forged := *base
	forged.ValidatorSigned = v3.Sign(base.AssignmentHash)
	otherRunner := mod(func(a *wire.JobAssignment) { a.RunnerPubKey = wireRunner(2).PubKey() }, v1, c.ChainID)
	otherChain := mod(func(*wire.JobAssignment) {}, v1, c.ChainID+1)
	laterDeadline := mod(func(a *wire.JobAssignment) { a.DeadlineBlock++ }, v1, c.ChainID)
	otherSpec := mod(func(a *wire.JobAssignment) {
		a.JobSpec = []byte("cip11/vectors/job-spec-2")
		a.JobSpecHash = wire.JobSpecHash(a.JobSpec)
	}, v1, c.ChainID)
	fromV2OtherHeight := referenceAssignment(s2, v2, spec)
	fromV2OtherHeight.AssignmentHeight--
	must(fromV2OtherHeight.Sign(c.ChainID, v2))
	snapshot := []cip11.Hash{rawKey(v1.PubKey()), rawKey(v2.PubKey())}
	ac := func(name string, conn wire.Conn, finalized uint64, decodes bool, accepted, a *wire.JobAssignment, snap []cip11.Hash, err string) checkCase {
		cf := connFieldsOf(conn)
		ctx := checkContext{Conn: &cf, Finalized: &finalized, JobSpecDecodes: &decodes, Snapshot: snap}
		if accepted != nil {
			ctx.Accepted = hx(mustEncode(accepted))
		}
		return checkCase{name: name, check: "assignment", ctx: ctx, frame: a, err: err}
	}
	return []checkCase{
		ac("assignment_accepted", c, 2000, true, nil, base, snapshot, ""),
		ac("assignment_duplicate_same_validator", c, 2000, true, base, base, snapshot, ""),
		ac("assignment_duplicate_from_second_validator", c2, 2000, true, base, fromV2, snapshot, ""),
		ac("assignment_job_spec_hash_mismatch", c, 2000, true, nil, badSpecHash, snapshot, "ErrJobSpecHashMismatch"),
		ac("assignment_job_spec_undecodable", c, 2000, false, nil, base, snapshot, "ErrJobSpecDecode"),
		ac("assignment_hash_mismatch", c, 2000, true, nil, &badHash, snapshot, "ErrAssignmentHashMismatch"),
		ac("assignment_signed_under_other_chain_id", c, 2000, true, nil, otherChain, snapshot, "ErrAssignmentHashMismatch"),
		ac("assignment_signature_by_other_validator", c, 2000, true, nil, &forged, snapshot, "ErrSigInvalid"),
		ac("assignment_runner_key_not_own", c, 2000, true, nil, otherRunner, snapshot, "ErrRunnerKeyNotOwn"),
		ac("assignment_validator_not_connection_peer", c, 2000, true, nil, fromV2, snapshot, "ErrValidatorNotPeer"),
		ac("assignment_validator_not_in_snapshot", c, 2000, true, nil, base, snapshot[1:], "ErrValidatorNotInSnapshot"),
		ac("assignment_height_not_finalized", c, 1999, true, nil, base, snapshot, "ErrAssignmentNotFinal"),
		ac("assignment_conflicting_deadline_block", c, 2000, true, base, laterDeadline, snapshot, "ErrAssignmentConflict"),
		ac("assignment_conflicting_job_spec", c, 2000, true, base, otherSpec, snapshot, "ErrAssignmentConflict"),
		ac("assignment_conflicting_height_from_second_validator", c2, 2000, true, base, fromV2OtherHeight, snapshot, "ErrAssignmentConflict"),
	}
}

func ackCancelCases() []checkCase {
	c := wireConn()
	s := wireSession(c)
	other := c
	other.ChannelBinding = label("cip11/vectors/channel-binding-2")
	so := wireSession(other)
	r1, v1 := wireRunner(1), wireValidator(1)
	cf := connFieldsOf(c)
	a := referenceAssignment(s, v1, []byte("cip11/vectors/job-spec-1"))
	sent := map[string]cip11.Hash{a.JobID.String(): a.AssignmentHash}
	ack := func(sess *wire.Session, st wire.AckStatus, reason *string, ah cip11.Hash) *wire.JobAck {
		x := &wire.JobAck{JobID: a.JobID, AssignmentHash: ah, Status: st, Reason: reason}
		must(x.Sign(sess, r1))
		return x
	}
	changed := ack(s, wire.Reject(wire.RejectAtCapacity), strp("busy"), a.AssignmentHash)
	changed.Reason = strp("idle")
	otherJob := ack(s, wire.Accepted(), nil, a.AssignmentHash)
	otherJob.JobID = label("cip11/vectors/job-2")
	must(otherJob.Sign(s, r1))
	cancel := func(ah cip11.Hash, reason wire.CancelReason) *wire.JobCancel {
		x := &wire.JobCancel{JobID: a.JobID, AssignmentHash: ah, Reason: reason}
		x.Sign(s, v1)
		return x
	}
	cancelChanged := cancel(a.AssignmentHash, wire.CancelExpired)
	cancelChanged.Reason = wire.CancelFailed
	k := func(name, check string, f wire.Frame, err string) checkCase {
		return checkCase{name: name, check: check, ctx: checkContext{Conn: &cf, Assignments: sent}, frame: f, err: err}
	}
	return []checkCase{
		k("ack_accepted", "ack", ack(s, wire.Accepted(), nil, a.AssignmentHash), ""),
		k("ack_reject_unverifiable_with_reason", "ack", ack(s, wire.Reject(wire.RejectUnverifiableAssignment), strp("bad hash"), a.AssignmentHash), ""),
		k("ack_unknown_assignment_hash", "ack", ack(s, wire.Accepted(), nil, label("other")), "ErrAckUnknownAssignment"),
		k("ack_unknown_job_id", "ack", otherJob, "ErrAckUnknownAssignment"),
		k("ack_reason_changed_after_signing", "ack", changed, "ErrSigInvalid"),
		k("ack_replayed_from_other_connection", "ack", ack(so, wire.Accepted(), nil, a.AssignmentHash), "ErrSigInvalid"),
		k("cancel_in_flight", "cancel", cancel(a.AssignmentHash, wire.CancelReassigned), ""),
		k("cancel_unknown_assignment_hash", "cancel", cancel(label("other"), wire.CancelReassigned), "ErrCancelUnknownAssignment"),
		k("cancel_reason_changed_after_signing", "cancel", cancelChanged, "ErrSigInvalid"),
	}
}

func resultCases() []checkCase {
	r1 := wireRunner(1)
	job := label("cip11/vectors/job-1")
	addr := r1.Address()
	tx := func(from cip11.Address, kind wire.InstructionKind, id cip11.Hash, valid bool) wire.Bytes {
		return (&wire.MemTx{From: from, Kind: kind, JobID: id, Valid: valid}).Bytes()
	}
	k := func(name string, f wire.Frame, err string) checkCase {
		return checkCase{name: name, check: "result", ctx: checkContext{Runner: &addr}, frame: f, err: err}
	}
	return []checkCase{
		k("result_commit_valid", &wire.JobResultCommit{JobID: job, TxBytes: tx(addr, wire.InstructionJobResultCommit, job, true)}, ""),
		k("result_submit_valid", &wire.JobResult{JobID: job, TxBytes: tx(addr, wire.InstructionJobResultSubmit, job, true)}, ""),
		k("result_tx_undecodable", &wire.JobResult{JobID: job, TxBytes: wire.Bytes{1, 2, 3}}, "ErrResultTxDecode"),
		k("result_signed_by_other_runner", &wire.JobResult{JobID: job, TxBytes: tx(wireRunner(2).Address(), wire.InstructionJobResultSubmit, job, true)}, "ErrResultSigner"),
		k("result_commit_frame_carrying_submit", &wire.JobResultCommit{JobID: job, TxBytes: tx(addr, wire.InstructionJobResultSubmit, job, true)}, "ErrResultInstruction"),
		k("result_frame_carrying_commit", &wire.JobResult{JobID: job, TxBytes: tx(addr, wire.InstructionJobResultCommit, job, true)}, "ErrResultInstruction"),
		k("result_frame_carrying_other_instruction", &wire.JobResult{JobID: job, TxBytes: tx(addr, wire.InstructionOther, job, true)}, "ErrResultInstruction"),
		k("result_job_id_differs", &wire.JobResult{JobID: job, TxBytes: tx(addr, wire.InstructionJobResultSubmit, label("cip11/vectors/job-2"), true)}, "ErrResultJobID"),
		k("result_tx_fails_node_validation", &wire.JobResult{JobID: job, TxBytes: tx(addr, wire.InstructionJobResultSubmit, job, false)}, "ErrResultTxInvalid"),
	}
}

func goodbyeCases() []checkCase {
	c := wireConn()
	s := wireSession(c)
	r1, v1 := wireRunner(1), wireValidator(1)
	cf := connFieldsOf(c)
	signedBy := func(k wire.Signer, g wire.Goodbye) *wire.Goodbye {
		must(g.Sign(s, k))
		return &g
	}
	noneNone := signedBy(r1, wire.Goodbye{Reason: wire.GoodbyeShutdown})
	collapsed := *noneNone
	collapsed.Detail, collapsed.RetryAfterBlocks = strp(""), u64p(0)
	changed := signedBy(r1, wire.Goodbye{Reason: wire.GoodbyeDraining, Detail: strp("a"), RetryAfterBlocks: u64p(5)})
	changed.Detail = strp("b")
	runner, validator := wire.RoleRunner, wire.RoleValidator
	k := func(name string, conn *connFields, sender *wire.Role, g *wire.Goodbye, err string) checkCase {
		return checkCase{name: name, check: "goodbye", ctx: checkContext{Conn: conn, Sender: sender}, frame: g, err: err}
	}
	return []checkCase{
		k("goodbye_before_auth_unsigned_is_advisory", nil, &validator, &wire.Goodbye{Reason: wire.GoodbyeWrongChain}, ""),
		k("goodbye_after_auth_runner_signed", &cf, &runner, signedBy(r1, wire.Goodbye{Reason: wire.GoodbyeDraining, Detail: strp("bye"), RetryAfterBlocks: u64p(30)}), ""),
		k("goodbye_after_auth_validator_signed", &cf, &validator, signedBy(v1, wire.Goodbye{Reason: wire.GoodbyeOverlapExpired}), ""),
		k("goodbye_none_signature_verifies_as_empty_and_zero", &cf, &runner, &collapsed, ""),
		k("goodbye_after_auth_unsigned", &cf, &runner, &wire.Goodbye{Reason: wire.GoodbyeShutdown}, "ErrGoodbyeUnsigned"),
		k("goodbye_runner_signature_claimed_by_validator", &cf, &validator, noneNone, "ErrSigLength"),
		k("goodbye_detail_changed_after_signing", &cf, &runner, changed, "ErrSigInvalid"),
	}
}

func receiptCases() []checkCase {
	c := wireConn()
	v1, v2 := wireValidator(1), wireValidator(2)
	r := wire.PresenceReceipt{ValidatorPubKey: v1.PubKey(), RunnerPubKey: wireRunner(1).PubKey(), SubsetEpoch: 0,
		ValidatorSetHash: c.ValidatorSetHash, BlockHeight: 1002, NonceEcho: 7, AcceptingNew: true}
	must(r.Sign(c.ChainID, v1))
	flipped := r
	flipped.AcceptingNew = false
	forged := r
	forged.ValidatorPubKey = v2.PubKey()
	k := func(name string, chain uint64, rc wire.PresenceReceipt, err string) checkCase {
		return checkCase{name: name, check: "presence_receipt", ctx: checkContext{ChainID: &chain, Receipt: &rc}, err: err}
	}
	return []checkCase{
		k("presence_receipt_valid", c.ChainID, r, ""),
		k("presence_receipt_other_executing_chain", c.ChainID+1, r, "ErrSigInvalid"),
		k("presence_receipt_accepting_new_flipped", c.ChainID, flipped, "ErrSigInvalid"),
		k("presence_receipt_claimed_by_other_validator", c.ChainID, forged, "ErrSigInvalid"),
	}
}
