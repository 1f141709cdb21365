package quic

import (
	"bytes"
	"slices"

	"github.com/cip11/cip11"
)

// ConnectedRunners lists the runners with at least one admitted connection
// (§6.2), ascending by address — a superset of Present, for operators.
func (s *Server) ConnectedRunners() []cip11.Address {
	s.mu.Lock()
	out := make([]cip11.Address, 0, len(s.byRunner))
	for a, l := range s.byRunner {
		if len(l) > 0 {
			out = append(out, a)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b cip11.Address) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// RunnerCounts is len(ConnectedRunners()) and len(Present()) without
// building or sorting the lists (GET /status, which every runner
// process's chain view asks each tick).
func (s *Server) RunnerCounts() (connected, present int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.byRunner {
		if len(l) > 0 {
			connected++
		}
	}
	return connected, s.pres.CountPresent(s.height)
}

// LastPing is the height of runner's last valid HeartbeatPing on this
// server (§6.3); false if none. For operators (the dashboard's runner
// table).
func (s *Server) LastPing(runner cip11.Address) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pres.LastPing(runner)
}
