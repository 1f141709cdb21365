// Package modea implements the CIP-11 Mode A machinery (§8.3–§8.4), the
// opt-in hard-exclude posture: execution of SubmitPresenceCertificate and
// the state-derived PresenceInput(H) read point.
//
// # Certificates (§8.3 points 2 and 4, evaluation order)
//
// [ProcessCertificate] verifies a certificate in the normative evaluation
// order with an injected [Meter]: the base and per-receipt precheck charges
// first, then the certificate checks, the signature-free receipt prechecks
// (whose epoch-pair, snapshot and subset rules are the [validators]
// admission rules, selected at current_block_height), and per raw
// validator key a paid Ed25519 verification in descending block_height
// until one verifies. At least t_hard distinct validators and a strictly
// newer anchor update presence_anchor and presence_proven_until in the
// injected [Store].
//
// # Read point (§8.3 point 3, §7.2 rule 3)
//
// [ProvenPresentSet] derives PresenceInput(H) = { runner |
// presence_proven_until[runner] ≥ H } from parent state, indexed against
// registry(H−1) as a [presence.Set]; [Source] adapts it to
// [presence.BlockPresenceSource]. [MemState] is an in-memory state with
// full history.
//
// Whether Mode A is in force at all is the §8.4 K_HARD_MIN guard,
// [validators.Snapshot.ModeAEffective]. The package is pure: no I/O, no
// clock, no goroutines, no globals besides its sentinel errors.
package modea
