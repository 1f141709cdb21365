package wire

import "fmt"

// Version is this specification's wire version, `(major << 8) | minor`
// = 0x0100 (§12.3).
const Version uint16 = 0x0100

// VersionReceipts is minor version 0x0101: [Version] plus the two Mode-A
// receipt frames PresenceReceiptRequest (0x14) and PresenceReceipt (0x15)
// (§8.3, §12.3: an addition that changes no existing frame bytes,
// preimage or validation rule bumps only the minor). SPEC-NOTES N18.
const VersionReceipts uint16 = 0x0101

// VersionMajor returns the major half of a §12.3 version.
func VersionMajor(v uint16) uint8 { return uint8(v >> 8) }

// VersionMinor returns the minor half of a §12.3 version.
func VersionMinor(v uint16) uint8 { return uint8(v) }

// CheckVersion applies §12.3 to a peer's Hello.version against ours: a
// different major is ErrUnsupportedVersion (close with
// Goodbye{UnsupportedVersion}); a higher minor is accepted only if
// acceptHigherMinor (the spec's "MAY reject" policy choice); a lower or
// equal minor is always accepted.
func CheckVersion(ours, peer uint16, acceptHigherMinor bool) error {
	switch {
	case VersionMajor(peer) != VersionMajor(ours):
		return fmt.Errorf("%w: peer major %d, ours %d", ErrUnsupportedVersion, VersionMajor(peer), VersionMajor(ours))
	case VersionMinor(peer) > VersionMinor(ours) && !acceptHigherMinor:
		return fmt.Errorf("%w: peer minor %d above ours %d", ErrUnsupportedVersion, VersionMinor(peer), VersionMinor(ours))
	}
	return nil
}

// NegotiatedVersion is the version folded into connection_id (§12.6): the
// lower of the two Hello versions, so both ends compute the same value
// when minors differ (see conformance/SPEC-NOTES.md).
func NegotiatedVersion(a, b uint16) uint16 { return min(a, b) }
