package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cip11/cip11/adapters/cometbft"
	"github.com/cip11/cip11/adapters/node"
)

// joinHP is host:port (IPv6 bracketed).
func joinHP(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// readHomes opens dir/v0 … dir/v<n-1> with cometbft.ReadHome.
func readHomes(t *testing.T, dir string, n int) []*cometbft.Home {
	t.Helper()
	hs := make([]*cometbft.Home, n)
	for i := range hs {
		h, err := cometbft.ReadHome(filepath.Join(dir, fmt.Sprintf("v%d", i)))
		if err != nil {
			t.Fatalf("v%d: %v", i, err)
		}
		hs[i] = h
	}
	return hs
}

// checkHomeAddrs checks that home i of hs listens on and advertises
// hosts[i] at p2p ports[i] (QUIC +1, HTTP +2): its CometBFT p2p listen
// address, its genesis validator entry, its entry in every home's
// validator_set, and every other home's persistent peer for it (the peer
// id its node key's, host:port the same).
func checkHomeAddrs(t *testing.T, hs []*cometbft.Home, hosts []string, ports []int) {
	t.Helper()
	hp := func(i, off int) string { return joinHP(hosts[i], ports[i]+off) }
	for i, h := range hs {
		if got, want := h.Config.P2P.ListenAddress, "tcp://"+hp(i, 0); got != want {
			t.Errorf("v%d: p2p laddr %q, want %q", i, got, want)
		}
		if h.Genesis.Validator.QUIC != hp(i, 1) || h.Genesis.Validator.HTTP != hp(i, 2) {
			t.Errorf("v%d: genesis validator quic %q http %q, want %q %q", i, h.Genesis.Validator.QUIC, h.Genesis.Validator.HTTP, hp(i, 1), hp(i, 2))
		}
		var want []string
		for j, o := range hs {
			if j != i {
				want = append(want, string(o.NodeKey.ID())+"@"+hp(j, 0))
			}
		}
		if got := strings.Split(h.Config.P2P.PersistentPeers, ","); !slices.Equal(got, want) {
			t.Errorf("v%d: persistent peers %q, want %q", i, got, want)
		}
		for _, o := range hs {
			k := slices.IndexFunc(o.Genesis.Set, func(v node.GenesisValidator) bool { return v.PeerPubKey == h.Genesis.Validator.PeerPubKey })
			if k < 0 && len(o.Genesis.Epochs) > 0 {
				continue // a joiner: not in epoch 0's set
			}
			if k < 0 || o.Genesis.Set[k].QUIC != hp(i, 1) || o.Genesis.Set[k].HTTP != hp(i, 2) {
				t.Errorf("v%d in %s's validator_set: %+v, want quic %s http %s", i, o.Dir, o.Genesis.Set, hp(i, 1), hp(i, 2))
			}
		}
	}
}

// TestGenesisHosts (issue 28, hosts): cip11 genesis -validators N -hosts
// H0,…,H(N-1) (or -hosts-file, or both: -hosts first) writes homes whose
// CometBFT p2p listen address, persistent peers, QUIC and HTTP addresses
// are the named hosts: home v<i> on H<i>. Distinct hosts all use the same
// ports (-base-port, +1, +2); a host named again gets the next port block
// (+10 per earlier home on it, names compared case-insensitively, IPs in
// canonical form); IPv6 addresses are bracketed. With -reconfigure the
// joiner v<N> takes the (N+1)th host.
func TestGenesisHosts(t *testing.T) {
	tmp := t.TempDir()
	hostsFile := filepath.Join(tmp, "hosts.txt")
	if err := os.WriteFile(hostsFile, []byte("# the machines, in home order\n\n10.0.0.3\n  val-4.example.org  # the last\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		n     int
		hosts []string
		ports []int
	}{
		{"distinct", []string{"-hosts", "10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4"}, 4,
			[]string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}, []int{26600, 26600, 26600, 26600}},
		{"distinct, base port", []string{"-hosts", "10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4", "-base-port", "65500"}, 4,
			[]string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}, []int{65500, 65500, 65500, 65500}},
		{"shared", []string{"-hosts", "a.example,A.example,10.0.0.3,a.EXAMPLE", "-base-port", "30000"}, 4,
			[]string{"a.example", "A.example", "10.0.0.3", "a.EXAMPLE"}, []int{30000, 30010, 30000, 30020}},
		{"file", []string{"-hosts-file", hostsFile, "-hosts", "10.0.0.1,db-2"}, 4,
			[]string{"10.0.0.1", "db-2", "10.0.0.3", "val-4.example.org"}, []int{26600, 26600, 26600, 26600}},
		{"ipv6", []string{"-hosts", "fd00::1,FD00:0::1,fd00::2"}, 3,
			[]string{"fd00::1", "FD00:0::1", "fd00::2"}, []int{26600, 26610, 26600}},
		{"reconfigure", []string{"-hosts", "h0,h1,h2,h3,h4", "-reconfigure"}, 5,
			[]string{"h0", "h1", "h2", "h3", "h4"}, []int{26600, 26600, 26600, 26600, 26600}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "net")
			v := tc.n
			if slices.Contains(tc.args, "-reconfigure") {
				v--
			}
			code, out, errOut := cli(append([]string{"genesis", "-validators", fmt.Sprint(v), "-o", dir, "-runners", "1"}, tc.args...)...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			hs := readHomes(t, dir, tc.n)
			checkHomeAddrs(t, hs, tc.hosts, tc.ports)
			for i := range tc.n {
				if line := fmt.Sprintf("p2p %s  quic %s  http %s\n", joinHP(tc.hosts[i], tc.ports[i]), joinHP(tc.hosts[i], tc.ports[i]+1), joinHP(tc.hosts[i], tc.ports[i]+2)); !strings.Contains(out, line) {
					t.Errorf("stdout lacks v%d's %q:\n%s", i, line, out)
				}
			}
		})
	}
	// Without -hosts every home is on 127.0.0.1, validator i at
	// -base-port + 10·i, as before.
	dir := filepath.Join(tmp, "loopback")
	if code, _, errOut := cli("genesis", "-validators", "3", "-o", dir, "-runners", "0", "-base-port", "30000"); code != 0 {
		t.Fatal(errOut)
	}
	checkHomeAddrs(t, readHomes(t, dir, 3), []string{"127.0.0.1", "127.0.0.1", "127.0.0.1"}, []int{30000, 30010, 30020})
}

// TestGenesisBadHosts: a -hosts or -hosts-file that does not name exactly
// one valid host per home is a usage error (exit 2, nothing written,
// stderr naming the flag and what is wrong).
func TestGenesisBadHosts(t *testing.T) {
	tmp := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	two := file("two.txt", "10.0.0.1\n10.0.0.2\n")
	pair := file("pair.txt", "10.0.0.1 10.0.0.2\n10.0.0.3\n10.0.0.4\n")
	badLine := file("bad.txt", "10.0.0.1\n10.0.0.2\n# ok\nnot_a_host\n10.0.0.4\n")
	for _, tc := range []struct {
		args []string
		want []string // stderr must contain each
	}{
		{[]string{"-validators", "4", "-hosts", "10.0.0.1,10.0.0.2,10.0.0.3"}, []string{"-hosts", "3 hosts", "4 homes"}},
		{[]string{"-validators", "4", "-hosts", "10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.5"}, []string{"5 hosts", "4 homes"}},
		{[]string{"-validators", "4", "-reconfigure", "-hosts", "10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4"}, []string{"4 hosts", "5 homes", "-reconfigure"}},
		{[]string{"-validators", "4", "-hosts", "10.0.0.1,,10.0.0.3,10.0.0.4"}, []string{"-hosts", "entry 2 is empty"}},
		{[]string{"-validators", "2", "-hosts", ""}, []string{"-hosts", "empty"}},
		{[]string{"-validators", "2", "-hosts", "10.0.0.1:26600,10.0.0.2"}, []string{"-hosts", `"10.0.0.1:26600"`, "no port"}},
		{[]string{"-validators", "2", "-hosts", "[fd00::1],fd00::2"}, []string{"-hosts", `"[fd00::1]"`}},
		{[]string{"-validators", "2", "-hosts", "0.0.0.0,10.0.0.2"}, []string{"-hosts", `"0.0.0.0"`, "unspecified"}},
		{[]string{"-validators", "2", "-hosts", "10.0.0.1,::"}, []string{"-hosts", `"::"`, "unspecified"}},
		{[]string{"-validators", "2", "-hosts", "10.0.0.1,224.0.0.1"}, []string{"-hosts", `"224.0.0.1"`, "multicast"}},
		{[]string{"-validators", "2", "-hosts", "10.0.0.1,10.0.0.256"}, []string{"-hosts", `"10.0.0.256"`}},
		{[]string{"-validators", "2", "-hosts", "10.0.0.1,bad_host"}, []string{"-hosts", `"bad_host"`}},
		{[]string{"-validators", "2", "-hosts", "10.0.0.1,-a.example"}, []string{"-hosts", `"-a.example"`}},
		{[]string{"-validators", "2", "-hosts", "10.0.0.1,a..example"}, []string{"-hosts", `"a..example"`}},
		{[]string{"-validators", "2", "-hosts", "10.0.0.1," + strings.Repeat("a", 64) + ".example"}, []string{"-hosts", "63"}},
		{[]string{"-validators", "2", "-hosts", "10.0.0.1, 10.0.0.2"}, []string{"-hosts", `" 10.0.0.2"`}},
		{[]string{"-validators", "4", "-hosts-file", two}, []string{"2 hosts", "4 homes"}},
		{[]string{"-validators", "4", "-hosts-file", pair}, []string{"-hosts-file", "pair.txt:1", "one host per line"}},
		{[]string{"-validators", "4", "-hosts-file", badLine}, []string{"-hosts-file", "bad.txt:4", `"not_a_host"`}},
		{[]string{"-validators", "4", "-hosts-file", filepath.Join(tmp, "none.txt")}, []string{"-hosts-file", "none.txt"}},
		{[]string{"-validators", "4", "-hosts-file", two, "-hosts", "10.0.0.3"}, []string{"3 hosts", "4 homes"}},
		{[]string{"-hosts", "10.0.0.1"}, []string{"-hosts does not apply without -validators"}},
		{[]string{"-hosts-file", two}, []string{"-hosts-file does not apply without -validators"}},
		{[]string{"-validators", "4", "-hosts", "h,h,h,h", "-base-port", "65510"}, []string{"-base-port 65510", "4 validators on one host"}},
	} {
		dir := filepath.Join(tmp, "net")
		code, out, errOut := cli(append([]string{"genesis", "-o", dir}, tc.args...)...)
		if code != 2 || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and no stdout", tc.args, code, out, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%q: stderr %q lacks %q", tc.args, errOut, w)
			}
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%q: wrote %s", tc.args, dir)
		}
	}
}

// TestCheckHostErrors: cometbft.CheckHost and NewNetwork's refusals are
// cometbft.ErrBadHost and node.ErrBadRequest (errors.Is), and a good host
// is nil.
func TestCheckHostErrors(t *testing.T) {
	for _, h := range []string{"10.0.0.1", "127.0.0.2", "fd00::1", "localhost", "val-1.example.org", "a1.b2.c3"} {
		if err := cometbft.CheckHost(h); err != nil {
			t.Errorf("CheckHost(%q): %v", h, err)
		}
	}
	for _, h := range []string{"", "0.0.0.0", "::", "ff02::1", "1.2.3", "1.2.3.4.5", "a_b", "a.-b", "b-.a", "x:1", "[::1]", "fe80::1%eth0", strings.Repeat("a.", 127) + "ab"} {
		if err := cometbft.CheckHost(h); !errors.Is(err, cometbft.ErrBadHost) || !errors.Is(err, node.ErrBadRequest) {
			t.Errorf("CheckHost(%q): %v, want ErrBadHost and ErrBadRequest", h, err)
		}
	}
	_, err := cometbft.NewNetwork(cometbft.NetworkOptions{Validators: 2, Hosts: []string{"10.0.0.1", "nope!"}})
	if !errors.Is(err, cometbft.ErrBadHost) || !strings.Contains(err.Error(), "v1") {
		t.Errorf("NewNetwork with a bad host: %v", err)
	}
	_, err = cometbft.NewNetwork(cometbft.NetworkOptions{Validators: 2, Hosts: []string{"10.0.0.1"}})
	if !errors.Is(err, node.ErrBadRequest) || errors.Is(err, cometbft.ErrBadHost) {
		t.Errorf("NewNetwork with 1 host for 2 homes: %v", err)
	}
}
