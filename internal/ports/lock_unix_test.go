//go:build unix

package ports

import "testing"

// TestSlotLockExclusive: a block Base handed out holds its slots' locks,
// so no other open of a slot's lock file (another process's, or another
// one here: flock(2) locks belong to the open file) takes them.
func TestSlotLockExclusive(t *testing.T) {
	b := Base(2)
	if b == 0 || b%10 != 0 {
		t.Fatalf("base %d", b)
	}
	for _, slot := range []int{b, b + 10} {
		if lockSlot(slot) {
			t.Fatalf("slot %d locked twice", slot)
		}
	}
	p, err := Free("tcp")
	if err != nil {
		t.Fatal(err)
	}
	if lockSlot(p - p%10) {
		t.Fatalf("the slot of port %d locked twice", p)
	}
}
