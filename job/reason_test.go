package job

import (
	"strings"
	"testing"
)

func TestExpiredReasonOf(t *testing.T) {
	ev := func(k EventKind, detail string) Event { return Event{Kind: k, Detail: detail} }
	cases := []struct {
		events    []Event
		committee int
		want      ExpiredReason
	}{
		{nil, 1, ExpiredNoRunner},
		{[]Event{ev(EventPushed, ""), ev(EventPushFailed, "dial")}, 1, ExpiredNoRunner},
		{[]Event{ev(EventAcked, "Reject(UnverifiableAssignment)"), ev(EventSoftFailure, "rejected")}, 1, ExpiredNoRunner},
		{[]Event{ev(EventAcked, "Accepted")}, 1, ExpiredNoResult},
		{[]Event{ev(EventSuccess, "")}, 0, ExpiredNoResult},
		{[]Event{ev(EventSuccess, ""), ev(EventResult, "")}, 2, ExpiredReselectionsUsedUp},
		{[]Event{ev(EventCommit, "")}, 0, ExpiredReselectionsUsedUp},
	}
	for i, c := range cases {
		got, why := ExpiredReasonOf(c.events, c.committee)
		if got != c.want || why == "" {
			t.Errorf("case %d: %q (%s), want %q", i, got, why, c.want)
		}
		if c.committee == 0 && !strings.Contains(why, "no eligible runner was left") {
			t.Errorf("case %d: an empty committee is not named: %s", i, why)
		}
	}
	for _, c := range []struct {
		m    uint32
		n    int
		want string
	}{{3, 3, ""}, {1, 1, ""}, {3, 1, "asked for 3 runners, the committee has 1: its result is unchecked by any other runner"},
		{3, 2, "asked for 3 runners, the committee has 2"}, {1, 0, "asked for 1 runner, the committee has 0"}} {
		if got := CommitteeShortOf(c.m, c.n); got != c.want {
			t.Errorf("CommitteeShortOf(%d, %d) = %q, want %q", c.m, c.n, got, c.want)
		}
	}
}
