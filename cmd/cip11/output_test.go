package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cip11/cip11/adapters/node"
)

// outputJob is the part of GET /jobs/{id} these tests read.
type outputJob struct {
	State     string   `json:"state"`
	Payload   string   `json:"payload"`
	Output    *string  `json:"output"`
	Committee []string `json:"committee"`
	Members   []struct {
		Runner   string `json:"runner"`
		Revealed bool   `json:"revealed"`
		Matched  bool   `json:"matched"`
	} `json:"members"`
}

// postPayloadJob submits a job with payload to the API at base.
func postPayloadJob(t *testing.T, base string, m, nonce int, payload string) string {
	t.Helper()
	body := fmt.Sprintf(`{"submitter":"%040x","job_kind":1,"runners":%d,"timeout_blocks":"40","nonce":"%d","payload":"%s"}`,
		7, m, nonce, hex.EncodeToString([]byte(payload)))
	resp, err := http.Post(base+"/jobs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var jv struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&jv) != nil {
		t.Fatalf("POST /jobs: %s", resp.Status)
	}
	return jv.ID
}

// waitEnded waits until the job at base is completed or expired and
// returns its view.
func waitEnded(t *testing.T, base, id string, d time.Duration) outputJob {
	t.Helper()
	var jv outputJob
	waitFor(t, "job "+id+" ended at "+base, d, func() bool {
		jv = outputJob{}
		return getJSON(base+"/jobs/"+id, &jv) == nil && (jv.State == "completed" || jv.State == "expired")
	})
	return jv
}

func hexOf(s string) string { return hex.EncodeToString([]byte(s)) }

// singleValidator starts a validator process with len(cmds) runner
// processes, runner i running -exec cmds[i], and waits until every runner
// is present; it returns the API base and the runners' addresses.
func singleValidator(t *testing.T, cmds []string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	qport, hport := freePort(t, "udp"), freePort(t, "tcp")
	api := fmt.Sprintf("http://127.0.0.1:%d", hport)
	if code, out, errOut := cli("genesis", "-o", dir, "-runners", fmt.Sprint(len(cmds)), "-quic", fmt.Sprintf("127.0.0.1:%d", qport),
		"-http", fmt.Sprintf("127.0.0.1:%d", hport)); code != 0 {
		t.Fatalf("genesis: exit %d: %s%s", code, out, errOut)
	}
	gen := filepath.Join(dir, "genesis.json")
	start(t, "validator", "-genesis", gen, "-key", filepath.Join(dir, "validator.key"), "-data", filepath.Join(dir, "data"),
		"-block-time", "200ms", "-log", "warn")
	addrs := make([]string, len(cmds))
	for i, c := range cmds {
		kp := filepath.Join(dir, fmt.Sprintf("runner-%04d.key", i))
		k, err := node.LoadRunnerKey(kp)
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = k.Address().String()
		start(t, "runner", "-genesis", gen, "-key", kp, "-exec", c, "-exec-timeout", "20s", "-block-time", "200ms", "-log", "warn")
	}
	var st struct {
		Present int `json:"present"`
	}
	waitFor(t, "every runner present", 60*time.Second, func() bool { return getJSON(api+"/status", &st) == nil && st.Present == len(cmds) })
	return api, addrs
}

// Issue 30: two runner processes running `tr a-z A-Z` through -exec; a
// job with M = 2 and payload "hello cip11" completes, and GET /jobs/{id}
// has the payload, the output "HELLO CIP11" and both members revealed and
// matched. An M = 1 job has the one runner's output.
func TestExecOutputOneValidator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	api, _ := singleValidator(t, []string{"tr a-z A-Z", "tr a-z A-Z"})
	id2 := postPayloadJob(t, api, 2, 1, "hello cip11")
	id1 := postPayloadJob(t, api, 1, 2, "one runner")
	jv := waitEnded(t, api, id2, 60*time.Second)
	if jv.State != "completed" || jv.Payload != hexOf("hello cip11") || jv.Output == nil || *jv.Output != hexOf("HELLO CIP11") {
		t.Fatalf("M = 2 job: %+v", jv)
	}
	if len(jv.Members) != 2 {
		t.Fatalf("M = 2 job members %+v", jv.Members)
	}
	for i, m := range jv.Members {
		if !m.Revealed || !m.Matched || m.Runner != jv.Committee[i] {
			t.Errorf("member %d: %+v (committee %v)", i, m, jv.Committee)
		}
	}
	jv = waitEnded(t, api, id1, 60*time.Second)
	if jv.State != "completed" || jv.Output == nil || *jv.Output != hexOf("ONE RUNNER") || len(jv.Members) != 1 || !jv.Members[0].Matched {
		t.Fatalf("M = 1 job: %+v", jv)
	}
}

// A disagreeing committee: runners 0 and 1 upper-case, runner 2's command
// differs (`tr a-z A-Z | tr H J`). The devnet's CIP-2 verifier completes a
// job whose whole committee revealed (§10.3), with matching = the members
// whose result is the majority's, a tie going to the result of the
// earliest committee member (chain.majority). So for M = 3 the output is
// "HELLO CIP11", runner 2 revealed but did not match; for M = 2 with
// runner 2 on the committee the result is a 1–1 tie: the output is the
// first member's and only it matched.
func TestExecDisagreeingCommittee(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	api, addrs := singleValidator(t, []string{"tr a-z A-Z", "tr a-z A-Z", "tr a-z A-Z | tr H J"})
	outOf := func(r string) string {
		if r == addrs[2] {
			return hexOf("JELLO CIP11")
		}
		return hexOf("HELLO CIP11")
	}
	id3 := postPayloadJob(t, api, 3, 1, "hello cip11")
	var twos []string
	for n := range 4 {
		twos = append(twos, postPayloadJob(t, api, 2, 10+n, "hello cip11"))
	}
	jv := waitEnded(t, api, id3, 60*time.Second)
	if jv.State != "completed" || jv.Output == nil || *jv.Output != hexOf("HELLO CIP11") || len(jv.Members) != 3 {
		t.Fatalf("M = 3 job: %+v", jv)
	}
	for _, m := range jv.Members {
		if want := m.Runner != addrs[2]; !m.Revealed || m.Matched != want {
			t.Errorf("M = 3 member %+v: matched should be %v", m, want)
		}
	}
	for _, id := range twos {
		jv := waitEnded(t, api, id, 60*time.Second)
		if jv.State != "completed" || len(jv.Members) != 2 || jv.Output == nil {
			t.Fatalf("M = 2 job: %+v", jv)
		}
		split := slices.Contains(jv.Committee, addrs[2])
		if want := outOf(jv.Committee[0]); *jv.Output != want {
			t.Errorf("M = 2 job, committee %v: output %s, want the first member's %s", jv.Committee, *jv.Output, want)
		}
		if !jv.Members[0].Matched || jv.Members[1].Matched == split {
			t.Errorf("M = 2 job, committee %v (split %v): members %+v", jv.Committee, split, jv.Members)
		}
		t.Logf("M = 2 committee %v: output %s, members %+v", jv.Committee, *jv.Output, jv.Members)
	}
}

// A network of 4 validator processes and two `tr a-z A-Z` runners: a job
// submitted to validator 0 has the same output and members on every
// validator (they come from blocks: the reveals a block carries).
func TestExecOutputNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four validator processes")
	}
	const n = 4
	dir := filepath.Join(t.TempDir(), "net")
	base := freeNetworkBase(t, n)
	if code, out, errOut := cli("genesis", "-validators", "4", "-o", dir, "-runners", "2", "-base-port", fmt.Sprint(base)); code != 0 {
		t.Fatalf("genesis: exit %d: %s%s", code, out, errOut)
	}
	home := func(i int) string { return filepath.Join(dir, fmt.Sprintf("v%d", i)) }
	api := func(i int) string { return fmt.Sprintf("http://127.0.0.1:%d", base+10*i+2) }
	for i := range n {
		start(t, "validator", "-home", home(i), "-log", "warn")
	}
	waitFor(t, "every validator past height 3", 120*time.Second, func() bool {
		for i := range n {
			var st struct {
				Height uint64 `json:"height,string"`
			}
			if getJSON(api(i)+"/status", &st) != nil || st.Height <= 3 {
				return false
			}
		}
		return true
	})
	for i := range 2 {
		start(t, "runner", "-genesis", filepath.Join(home(i), "cip11.json"), "-key", filepath.Join(dir, fmt.Sprintf("runner-%04d.key", i)),
			"-exec", "tr a-z A-Z", "-log", "warn")
	}
	id := postPayloadJob(t, api(0), 2, 1, "hello cip11")
	jv := waitEnded(t, api(3), id, 120*time.Second)
	if jv.State != "completed" || jv.Output == nil || *jv.Output != hexOf("HELLO CIP11") || jv.Payload != hexOf("hello cip11") {
		t.Fatalf("validator 3's view: %+v", jv)
	}
	want, _ := json.Marshal(jv.Members)
	for i := range n {
		v := waitEnded(t, api(i), id, 60*time.Second)
		got, _ := json.Marshal(v.Members)
		if v.State != "completed" || v.Output == nil || *v.Output != *jv.Output || string(got) != string(want) {
			t.Errorf("validator %d: %+v, validator 3 had output %s members %s", i, v, *jv.Output, want)
		}
	}
	for _, m := range jv.Members {
		if !m.Revealed || !m.Matched {
			t.Errorf("member %+v", m)
		}
	}
}
