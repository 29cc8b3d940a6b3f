package ingest

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

// ibstat prints "CA 'mlx5_0'" blocks with "Port N:" sections of "Key: value"
// lines (State, Physical state, Rate, Link layer); excerpts made with grep
// may keep only the port sections, separated by "--". ibstatus prints
// "Infiniband device 'mlx5_0' port 1 status:" followed by lower-case keys
// ("state: 4: ACTIVE", "rate: 100 Gb/sec (4X EDR)", "link_layer: Ethernet").

var (
	reIBCA     = regexp.MustCompile(`^CA '([^']+)'`)
	reIBPort   = regexp.MustCompile(`^Port (\d+):`)
	reIBStatus = regexp.MustCompile(`^Infiniband device '([^']+)' port (\d+) status:`)
	reIBNumPfx = regexp.MustCompile(`^\d+:\s*`)
)

func detectIBStat(h *head) bool {
	if bytes.Contains(h.raw, []byte("Infiniband device '")) && bytes.Contains(h.raw, []byte("status:")) {
		return true
	}
	phys := h.count(1, func(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "Physical state:") })
	rate := h.count(1, func(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "Rate:") })
	return phys > 0 && rate > 0
}

func parseIBStat(name string, data []byte) (*Artifact, error) {
	sk := &skipper{}
	lines := collectLines(data, sk)
	a := &Artifact{Kind: KindIBStat}
	dev := ""
	var cur *IBPort
	push := func(p IBPort) {
		if len(a.Ports) < maxListItems {
			a.Ports = append(a.Ports, p)
			cur = &a.Ports[len(a.Ports)-1]
		} else {
			cur = &IBPort{}
		}
	}
	first := 0
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		if m := reIBCA.FindStringSubmatch(t); m != nil {
			dev, cur = m[1], nil
			continue
		}
		if m := reIBStatus.FindStringSubmatch(t); m != nil {
			p, _ := strconv.Atoi(m[2])
			push(IBPort{Device: m[1], Port: p})
			if first == 0 {
				first = l.num
			}
			continue
		}
		if m := reIBPort.FindStringSubmatch(t); m != nil {
			p, _ := strconv.Atoi(m[1])
			push(IBPort{Device: dev, Port: p})
			if first == 0 {
				first = l.num
			}
			continue
		}
		if t == "--" {
			cur = nil
			continue
		}
		k, v, ok := strings.Cut(t, ":")
		if !ok || cur == nil {
			continue
		}
		v = strings.TrimSpace(reIBNumPfx.ReplaceAllString(strings.TrimSpace(v), ""))
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "state":
			cur.State = titleWord(v)
		case "physical state", "phys state":
			cur.Physical = v
		case "rate":
			if f := strings.Fields(v); len(f) > 0 {
				if r, err := strconv.ParseFloat(f[0], 64); err == nil && r >= 0 && r < 1e6 {
					cur.RateGbps = int(r)
				} else {
					sk.add(l.num, "rate is not a number", t)
				}
			}
		case "link layer", "link_layer":
			cur.LinkLayer = v
		case "mtu", "active_mtu":
			if f := strings.Fields(v); len(f) > 0 {
				cur.MTU, _ = strconv.Atoi(f[0])
			}
		}
	}
	a.Skipped = sk.result()
	if len(a.Ports) == 0 {
		return nil, errNoData(name, 1, "ibstat/ibstatus output without any port")
	}
	return a, nil
}

// titleWord turns "ACTIVE" or "active" into "Active".
func titleWord(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + strings.ToLower(s[1:])
}
