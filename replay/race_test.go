package replay

import "runtime/debug"

// raceEnabled reports whether the test binary runs under the race
// detector (it records -race in its build settings).
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// RaceEnabled exports raceEnabled to the external test package.
func RaceEnabled() bool { return raceEnabled() }
