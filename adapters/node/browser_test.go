package node_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/job"
)

// findChromium is the first Chromium or Chrome binary on PATH ("" if none).
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// consoleLog collects the page's console errors, uncaught exceptions and
// browser-log errors, each tagged with the phase it arrived in.
type consoleLog struct {
	mu      sync.Mutex
	phase   string
	entries []string
}

func (c *consoleLog) setPhase(p string) {
	c.mu.Lock()
	c.phase = p
	c.mu.Unlock()
}

func (c *consoleLog) add(m chromedp.ConsoleMessage) {
	if m.Type != chromedp.ConsoleError && !m.IsException() {
		return
	}
	c.mu.Lock()
	c.entries = append(c.entries, c.phase+": "+m.String())
	c.mu.Unlock()
}

// errorsIn lists the entries of one phase.
func (c *consoleLog) errorsIn(phase string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.entries {
		if strings.HasPrefix(e, phase+": ") {
			out = append(out, e)
		}
	}
	return out
}

// TestBrowserDashboard drives the dashboard (issue 18 F) in headless
// Chromium against a validator and four runners over real QUIC on
// loopback: the page loads with no console error, shows the runner count
// and a completed job (also through the job lookup, GET /jobs/{id}), fills
// its failures panel when a runner holding jobs is killed (its jobs time
// out and are re-selected, §11.2), and shows the unreachable state once the
// validator's HTTP server stops.
func TestBrowserDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the browser test starts Chromium and a validator")
	}
	bin := findChromium()
	if bin == "" {
		t.Skip("no chromium, chromium-browser or google-chrome on PATH (apt-get install chromium; .ci/run installs it)")
	}
	const runners = 4
	const blockTime = 200 * time.Millisecond
	// Mode-A certificates on (§8.3): one validator, k = 1, t_hard = 1; the
	// §8.4 guard is false, so they are shadow state and change no draw.
	p := node.DefaultGenesisParams()
	p.PresenceHardExcludeEnabled, p.THard = true, 1
	d, err := node.GenerateGenesis(node.GenesisOptions{Seed: 18, Runners: runners, QUIC: "127.0.0.1:0", Params: &p})
	if err != nil {
		t.Fatal(err)
	}
	v, err := node.NewValidator(node.ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, NoSync: true, BlockTime: blockTime})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	h, err := httpapi.NewHandler(node.Backend{V: v}, httpapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	stopHTTP := sync.OnceFunc(func() {
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("HTTP server: %v", err)
		}
	})
	t.Cleanup(stopHTTP)
	base := "http://" + ln.Addr().String() + "/"

	rs := make([]*node.Runner, runners)
	for i := range rs {
		r, err := node.NewRunner(context.Background(), node.RunnerConfig{Genesis: d.Genesis, Key: d.RunnerKeys[i], Chain: node.LocalChain{V: v},
			WorkTime: 20 * time.Millisecond, Tick: 10 * time.Millisecond, Validator: v.Addr().String(), Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
		t.Cleanup(func() { r.Close() })
	}

	// the block producer, stopped before the validator closes (or by
	// the stall phase)
	pctx, cancelProducer := context.WithCancel(context.Background())
	produced := make(chan error, 1)
	go func() { produced <- v.Run(pctx) }()
	stopProducer := sync.OnceFunc(func() {
		cancelProducer()
		if err := <-produced; err != nil {
			t.Errorf("validator Run: %v", err)
		}
	})
	t.Cleanup(stopProducer)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1400, 1000))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil { // start the browser
		t.Fatalf("starting %s: %v", bin, err)
	}
	logs := &consoleLog{phase: "live"}
	messages := chromedp.Console(bctx)
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			logs.add(m)
		}
	}()
	defer func() { cancelBrowser(); <-consoleDone }()

	// wait polls a JavaScript predicate in the page until it holds.
	wait := func(what, expr string, timeout time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](expr,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout))); err != nil {
			text, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("%s: %v\npage text:\n%s", what, err, text)
		}
	}
	// shot saves a full-page screenshot to $CIP11_DASH_SCREENSHOTS/name.png
	// when that is set (for looking at the page; nothing is asserted).
	shot := func(name string) {
		t.Helper()
		dir := os.Getenv("CIP11_DASH_SCREENSHOTS")
		if dir == "" {
			return
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
		}
		if err != nil {
			t.Logf("screenshot %s: %v", name, err)
		}
	}
	text := func(id string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById(`+strconv.Quote(id)+`).textContent`))
		if err != nil {
			t.Fatalf("reading #%s: %v", id, err)
		}
		return s
	}

	if err := chromedp.Do(bctx, chromedp.Navigate(base)); err != nil {
		t.Fatalf("navigate %s: %v", base, err)
	}

	// 1. The runner count: every runner connected and registered; the
	// validator healthy (green), its last block under a second old, no
	// health banner, no consensus panel (a single validator).
	wait("runner count", fmt.Sprintf(`document.body.dataset.state === 'live' && document.getElementById('connected').textContent === '%d' && document.getElementById('registered').textContent === '%d'`, runners, runners), 20*time.Second)
	wait("healthy", `document.body.dataset.health === 'ok' && document.getElementById('health').textContent === 'healthy' &&
		getComputedStyle(document.getElementById('health')).color === 'rgb(76, 208, 125)' &&
		/ms ago$/.test(document.getElementById('blockAge').textContent) &&
		getComputedStyle(document.getElementById('healthBanner')).display === 'none' &&
		document.getElementById('consensusPanel').hidden`, 10*time.Second)
	wait("runner table", fmt.Sprintf(`document.querySelectorAll('#runnerRows tr').length === %d`, runners), 5*time.Second)
	// The Mode-A card: every runner's certificate accepted, proven-until
	// coverage runners of runners, labelled shadow.
	wait("Mode-A proven coverage", fmt.Sprintf(`!document.getElementById('modeACard').hidden && document.getElementById('modeAProven').textContent === '%d / %d' && document.getElementById('modeALabel').textContent.includes('shadow')`, runners, runners), 20*time.Second)

	// 2. A completed job, on the pipeline and through the job lookup.
	submitter := cip11.Address{0x18}
	quick := &node.JobSpec{Submitter: submitter, Kind: 1, Runners: 1, TimeoutBlocks: 20, WorkMillis: 20, Nonce: 1}
	quickID, err := v.SubmitJob(quick)
	if err != nil {
		t.Fatal(err)
	}
	wait("a completed job on the pipeline", `Number(document.getElementById('job-completed').textContent) >= 1`, 15*time.Second)
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('jobId').value = `+strconv.Quote(hex.EncodeToString(quickID[:]))+`;
		document.getElementById('jobForm').requestSubmit();`)); err != nil {
		t.Fatal(err)
	}
	wait("job lookup shows the job completed", `(document.getElementById('jobState') || {dataset: {}}).dataset.state === 'completed'`, 5*time.Second)
	if got := text("job-completed"); got != "1" {
		t.Fatalf("pipeline completed = %q, want 1", got)
	}
	if errs := logs.errorsIn("live"); len(errs) > 0 {
		t.Fatalf("console errors while live:\n%s", strings.Join(errs, "\n"))
	}
	shot("1-live")
	if got := text("failureEmpty"); !strings.Contains(got, "no failure events") {
		t.Fatalf("failures panel before any failure: %q", got)
	}

	// 3. Kill a runner while it holds jobs: its jobs time out and are
	// re-selected (§11.2), and the failures panel fills.
	// The live runners finish in 1.5 s, well inside the 20-block (4 s)
	// timeout: only the killed runner's jobs are re-selected.
	const slowTimeout = 20 // blocks
	for n := range uint64(2 * runners) {
		spec := &node.JobSpec{Submitter: submitter, Kind: 2, Runners: 1, TimeoutBlocks: slowTimeout, WorkMillis: 1500, Nonce: 100 + n}
		if _, err := v.SubmitJob(spec); err != nil {
			t.Fatal(err)
		}
	}
	var victim cip11.Address
	deadline := time.Now().Add(10 * time.Second)
	for victim == (cip11.Address{}) {
		if time.Now().After(deadline) {
			t.Fatal("no runner took a slow job")
		}
		for _, r := range dashboardOf(t, v).Runners {
			if r.InFlight > 0 && r.Connected {
				victim = r.Address
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	killed := false
	for _, r := range rs {
		if r.Address() == victim {
			if err := r.Close(); err != nil {
				t.Fatalf("closing runner %s: %v", victim, err)
			}
			killed = true
		}
	}
	if !killed {
		t.Fatalf("runner %s holds jobs but is not one of ours", victim)
	}
	vhex := hex.EncodeToString(victim[:])
	wait("the killed runner shown disconnected", `[...document.querySelectorAll('#runnerRows tr')].some(tr => tr.cells[0].textContent === '`+vhex+`' && tr.cells[1].textContent === 'no')`, 10*time.Second)
	wait("failures panel fills with a re-selection", `document.querySelector('#failureRows tr[data-kind="reselected"]') !== null &&
		Number(document.querySelector('#failureKinds tr[data-kind="reselected"]').cells[1].textContent) >= 1 &&
		getComputedStyle(document.getElementById('failureEmpty')).display === 'none'`, 20*time.Second)
	shot("2-failures")
	// every re-selected job was the killed runner's
	for _, f := range dashboardOf(t, v).Failures {
		if f.Kind != httpapi.FailureReselected || f.Job == nil {
			continue
		}
		jv, ok := v.Job(*f.Job)
		if !ok || len(jv.Events) == 0 {
			t.Fatalf("re-selected job %s unknown", f.Job)
		}
		first := ""
		for _, e := range jv.Events {
			if e.Kind == job.EventSelected {
				first = e.Detail
				break
			}
		}
		if !strings.Contains(first, victim.String()) {
			t.Fatalf("job %s re-selected, but its first committee (%s) is not the killed runner %s", f.Job, first, victim)
		}
	}
	if errs := logs.errorsIn("live"); len(errs) > 0 {
		t.Fatalf("console errors while live:\n%s", strings.Join(errs, "\n"))
	}

	// 4. Block production stops: past 8 block times (1.6 s) the
	// validator says stalled, and the page turns its health red with the
	// age of the last block, in the badge and in a banner.
	stopProducer()
	wait("stalled state", `document.body.dataset.health === 'stalled' &&
		/^stalled · last block \d+(\.\d)? s ago$/.test(document.getElementById('health').textContent) &&
		getComputedStyle(document.getElementById('health')).color === 'rgb(255, 107, 107)' &&
		getComputedStyle(document.getElementById('healthBanner')).display !== 'none' &&
		/^Stalled: no new block for \d+(\.\d)? s \(height \d+; stalled after 1\.6 s\)/.test(document.getElementById('healthBanner').textContent)`, 15*time.Second)
	shot("3-stalled")
	if errs := logs.errorsIn("live"); len(errs) > 0 {
		t.Fatalf("console errors while stalled:\n%s", strings.Join(errs, "\n"))
	}

	// 5. The validator's HTTP server stops: the page greys out and says how
	// old its data is. (The browser logs the refused fetches; that phase's
	// log is not checked.)
	logs.setPhase("stopped")
	stopHTTP()
	wait("unreachable state", `document.body.dataset.state === 'unreachable' &&
		getComputedStyle(document.getElementById('banner')).display !== 'none' &&
		/unreachable/.test(document.getElementById('banner').textContent) &&
		/\d+ s old/.test(document.getElementById('banner').textContent) &&
		/grayscale/.test(getComputedStyle(document.querySelector('main')).filter)`, 10*time.Second)
	shot("4-unreachable")
	for _, e := range logs.errorsIn("stopped") {
		if strings.Contains(e, "exception") || !strings.Contains(e, "ERR_CONNECTION_REFUSED") {
			t.Errorf("unexpected console entry after the stop: %s", e)
		}
	}
}

// dashboardOf is the validator's GET /dashboard.json data.
func dashboardOf(t *testing.T, v *node.Validator) httpapi.Dashboard {
	t.Helper()
	d, err := (node.Backend{V: v}).Dashboard(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
