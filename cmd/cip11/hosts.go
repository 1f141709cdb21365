package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cip11/cip11/adapters/cometbft"
)

// The hosts of cip11 genesis -validators N (issue 28): -hosts names them
// on the command line, -hosts-file in a file, one per home in home order
// (v0, v1, …; with both, -hosts first). cometbft.NetworkOptions.Hosts
// says what a home does with its host.

// hostList checks -hosts: comma-separated hosts, none empty, each
// cometbft.CheckHost's.
func hostList(s string) error {
	_, err := splitHosts(s)
	return err
}

// splitHosts splits and checks a -hosts value.
func splitHosts(s string) ([]string, error) {
	if s == "" {
		return nil, errors.New("empty: name one host per validator, separated by commas (10.0.0.1,10.0.0.2,…)")
	}
	hs := strings.Split(s, ",")
	for i, h := range hs {
		if h == "" {
			return nil, fmt.Errorf("entry %d is empty (one host per validator, separated by commas)", i+1)
		}
		if err := cometbft.CheckHost(h); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
	}
	return hs, nil
}

// readHostsFile reads a -hosts-file: one host per line; blank lines and
// what follows a # are ignored.
func readHostsFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hs []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fs := strings.Fields(line)
		switch {
		case len(fs) == 0:
			continue
		case len(fs) > 1:
			return nil, fmt.Errorf("%s:%d: %q: one host per line", path, n, strings.TrimSpace(line))
		}
		if err := cometbft.CheckHost(fs[0]); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		hs = append(hs, fs[0])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return hs, nil
}

// genesisHosts is the hosts list -hosts and -hosts-file give (nil when
// neither is given), checked against the number of homes.
func genesisHosts(c *command, hostsFlag, file string, homes int, reconfigure bool) ([]string, error) {
	var hs []string
	if c.given("hosts") {
		var err error
		if hs, err = splitHosts(hostsFlag); err != nil {
			return nil, fmt.Errorf("-hosts: %w", err)
		}
	}
	if c.given("hosts-file") {
		fh, err := readHostsFile(file)
		if err != nil {
			return nil, fmt.Errorf("-hosts-file: %w", err)
		}
		hs = append(hs, fh...)
	}
	if hs == nil && !c.given("hosts") && !c.given("hosts-file") {
		return nil, nil
	}
	if len(hs) != homes {
		from := "-hosts"
		switch {
		case c.given("hosts") && c.given("hosts-file"):
			from = "-hosts and -hosts-file"
		case c.given("hosts-file"):
			from = "-hosts-file"
		}
		plus := ""
		if reconfigure {
			plus = ", the -reconfigure joiner included"
		}
		return nil, fmt.Errorf("%s name %d hosts for %d homes%s: one host per validator home, in home order (v0, v1, …)", from, len(hs), homes, plus)
	}
	return hs, nil
}
