package scale

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cip11/cip11"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

const (
	helperEnv   = "CIP11_SCALE_HELPER"   // helper mode: "cip11" or "bare"
	helperNEnv  = "CIP11_SCALE_HELPER_N" // registered runners in the world
	floorEnv    = "CIP11_SCALE_FLOOR"    // bare helper: do the floor crypto per message
	scaleEnv    = "CIP11_SCALE"          // 1: run the full measurements
	chainID     = 7
	startHeight = 10

	bareRequestLen = 80 // a HeartbeatPing frame (pinned in adapters/quic's TestFloorMessageSizes)
	bareReplyLen   = 81 // a HeartbeatPong frame
)

// world is the chain both processes derive from n: one validator, n
// registered runners.
type world struct {
	p    cip11.Params
	vk   *wire.ValidatorKey
	sets *cquic.StaticValidatorSets
	reg  *state.MemRegistry
	keys []*wire.RunnerKey
	addr []cip11.Address
}

func runnerKey(i int) (*wire.RunnerKey, error) {
	return wire.NewRunnerKey(cip11.Keccak256([]byte(fmt.Sprintf("scale runner %d", i))))
}

func newWorld(n int) (*world, error) {
	w := &world{p: cip11.DefaultParams(), vk: wire.NewValidatorKey(cip11.Keccak256([]byte("scale validator")))}
	w.p.TransportEnabled = true
	snap, err := validators.NewSnapshot(0, []validators.Record{{PeerPubKey: validators.PeerKey(w.vk.PubKey().Raw()), Stake: cip11.U128From64(1)}}, 0)
	if err != nil {
		return nil, err
	}
	e, err := validators.NewEpochs(nil, snap)
	if err != nil {
		return nil, err
	}
	w.sets = cquic.NewStaticValidatorSets(e)
	w.reg = state.NewMemRegistry(state.DefaultReputationConfig())
	for i := range n {
		k, err := runnerKey(i)
		if err != nil {
			return nil, err
		}
		w.keys = append(w.keys, k)
		w.addr = append(w.addr, k.Address())
		if err := w.reg.Register(1, state.Runner{Address: k.Address(), LastHeartbeat: 1, Stake: cip11.U128From64(1), ReputationX1e9: 1e9}); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// jobFor is runner i's job in the push round at height h.
func jobFor(h uint64, i int) (cip11.Hash, []byte) {
	spec := []byte(fmt.Sprintf("scale job spec h=%d i=%d ................................................", h, i))
	return cip11.Keccak256(spec), spec
}

func memTx(from cip11.Address, job cip11.Hash) []byte {
	t := &wire.MemTx{From: from, Kind: wire.InstructionJobResultSubmit, JobID: job, Valid: true}
	return t.Bytes()
}

// ---- process measurements ----

func cpuNanos() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// vmRSS is this process's VmRSS in KiB from /proc/self/status.
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n
			}
		}
	}
	return -1
}

// rssReport is VmRSS as found and after a full GC returned freed memory.
type rssReport struct {
	RawKiB, SettledKiB int64
	HeapInuseKiB       uint64
	Goroutines         int
}

func measureRSS() rssReport {
	r := rssReport{RawKiB: vmRSS()}
	runtime.GC()
	debug.FreeOSMemory()
	r.SettledKiB = vmRSS()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.HeapInuseKiB = ms.HeapInuse / 1024
	r.Goroutines = runtime.NumGoroutine()
	return r
}

// udpRcvbufErrors is the host's Udp RcvbufErrors counter (/proc/net/snmp):
// datagrams dropped because a socket's receive buffer was full. It is
// machine-wide.
func udpRcvbufErrors() int64 {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return -1
	}
	var head []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if head == nil {
			head = f
			continue
		}
		for i, h := range head {
			if h == "RcvbufErrors" && i < len(f) {
				n, _ := strconv.ParseInt(f[i], 10, 64)
				return n
			}
		}
	}
	return -1
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// ---- latency statistics ----

type latStats struct {
	N, Got             int
	P50, P90, P99, Max float64 // milliseconds
}

func latencies(ds []time.Duration, want int) latStats {
	s := latStats{N: want, Got: len(ds)}
	if len(ds) == 0 {
		return s
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	// Missing answers count as infinitely late: percentiles are over want.
	q := func(p float64) float64 {
		i := int(p*float64(want)+0.999999) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(ds) {
			return -1 // not reached
		}
		return float64(ds[i].Microseconds()) / 1e3
	}
	s.P50, s.P90, s.P99 = q(0.50), q(0.90), q(0.99)
	s.Max = float64(ds[len(ds)-1].Microseconds()) / 1e3
	return s
}

// ---- helper process main loop ----

// commander is a helper's command set; each command answers one line.
type commander interface {
	do(cmd string, args []string) (any, error)
}

// serveHelper prints "ready ADDR", then answers each stdin line with "ok
// JSON" or "err TEXT" until stdin closes.
func serveHelper(addr string, c commander) int {
	fmt.Println("ready", addr)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var v any
		var err error
		switch f[0] {
		case "cpu":
			v = cpuNanos()
		case "rss":
			v = measureRSS()
		default:
			v, err = c.do(f[0], f[1:])
		}
		if err != nil {
			fmt.Println("err", strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		b, _ := json.Marshal(v)
		fmt.Println("ok", string(b))
	}
	return 0
}

// ---- bare quic-go TLS (the transport's own is unexported) ----

func selfSignedTLS() (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bare"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<33, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos: []string{cquic.ALPN}, MinVersion: tls.VersionTLS13}, nil
}

func bareClientTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, NextProtos: []string{cquic.ALPN}, MinVersion: tls.VersionTLS13, ServerName: "bare"} //nolint:gosec // loopback baseline
}

// udpDrops reads the kernel's per-socket drop counters (/proc/net/udp,
// last column: datagrams dropped, mostly for a full receive buffer): the
// socket bound to port, and every other socket summed.
func udpDrops(port int) (server, others int64) {
	b, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return -1, -1
	}
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 13 {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		p, _ := strconv.ParseInt(hexPort, 16, 32)
		d, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
		if int(p) == port {
			server += d
		} else {
			others += d
		}
	}
	return server, others
}

// dropMeter reports per-socket drops since it was made.
type dropMeter struct {
	port         int
	srv0, other0 int64
}

func newDropMeter(port int) dropMeter {
	s, o := udpDrops(port)
	return dropMeter{port, s, o}
}

func (m dropMeter) String() string {
	s, o := udpDrops(m.port)
	return fmt.Sprintf("UDP drops: validator socket +%d, runner sockets +%d", s-m.srv0, o-m.other0)
}
