package ingest

import (
	"regexp"
	"strconv"
	"strings"
)

// NCCL_DEBUG=INFO line formats: nccl-facts §7. Every line starts with
// "host:pid:tid [cudaDev] NCCL INFO "; warnings put "file:line " before NCCL.
var (
	reLogLine = regexp.MustCompile(`^([^\s:]+):(\d+):(\d+) \[(\d+)\] (?:\S+:\d+ )?NCCL (INFO|WARN|TRACE|ABORT)\b ?(.*)$`)
	// reLogInside finds a log line that starts in the middle of another line
	// (an interleaved write, as in the Snellius 2x4 all_reduce 2 MB row).
	// Hostnames are assumed to start with a letter here.
	reLogInside = regexp.MustCompile(`[A-Za-z][\w.\-]*:\d+:\d+ \[\d+\] (?:\S+:\d+ )?NCCL (?:INFO|WARN|TRACE|ABORT)\b`)
	reBareLog   = regexp.MustCompile(`^NCCL (INFO|WARN) ?(.*)$`)
	reVersion   = regexp.MustCompile(`^NCCL version (\d+\.\d+\.\d+)(\S*)`)

	reCommSummary = regexp.MustCompile(`\brank (\d+) nRanks (\d+) nNodes (\d+) localRanks (\d+) localRank (\d+)`)
	reCommRank    = regexp.MustCompile(`\bcomm 0x[0-9a-fA-F]+ rank (\d+) nranks (\d+)\b`)
	reRing        = regexp.MustCompile(`^Channel (\d+)/(\d+) :((?:\s+-?\d+)+)\s*$`)
	reConn        = regexp.MustCompile(`^Channel (\d+)(?:/\d+)? : (\d+)\[([0-9a-fA-Fx]+)\] -> (\d+)\[([0-9a-fA-Fx]+)\](?: \[(send|receive)\])? via (.+?)\s*$`)
	reChanSum     = regexp.MustCompile(`^(\d+) coll channels,`)
	reNVLSCh      = regexp.MustCompile(`(\d+) nvls channels`)
	reHCA         = regexp.MustCompile(`\[(\d+)\]([^\s:\[\]]+)(?::(\d+))?(?:/(IB|RoCE))?`)
	reEnvSet      = regexp.MustCompile(`^(NCCL_\w+) set (?:by environment )?to (.*?)\.?\s*$`)
	reEnvAdd      = regexp.MustCompile(`Adding (NCCL_\w+)=(\S+) to environment`)
	reRingsDone   = regexp.MustCompile(`^Connected all rings, use ring PXN (\d) GDR (\d)`)
	reNetDev      = regexp.MustCompile(`^(\d+)(?:\((\d+)\))?$`)
)

// logParser accumulates NCCL_DEBUG lines into an NCCLLog.
type logParser struct {
	log       NCCLLog
	any       bool
	rankHost  map[int]string
	ringSeen  map[int]bool
	hcaSeen   map[string]bool
	warnSeen  map[string]bool
	hostSeen  map[string]bool
	inEnabled bool     // inside the unprefixed "Enabled ... Matrix" block
	enabled   []string // its column names
	tuneAlgos []string // TUNING table "Algorithm" groups
	tuneProto [][]string
}

func newLogParser() *logParser {
	return &logParser{
		log:      NCCLLog{Env: map[string]string{}, Lines: map[string]int{}},
		rankHost: map[int]string{},
		ringSeen: map[int]bool{},
		hcaSeen:  map[string]bool{},
		warnSeen: map[string]bool{},
		hostSeen: map[string]bool{},
	}
}

// splitLogLine finds an NCCL log line in s. It returns the text before it
// (non-empty when a log line was written into the middle of another line),
// the log line, and whether one was found.
func splitLogLine(s string) (before, logText string, ok bool) {
	if strings.Contains(s, "NCCL") {
		if reLogLine.MatchString(s) || reBareLog.MatchString(s) || reVersion.MatchString(s) {
			return "", s, true
		}
		if loc := reLogInside.FindStringIndex(s); loc != nil {
			return s[:loc[0]], s[loc[0]:], true
		}
		if i := strings.Index(s, "NCCL version "); i > 0 {
			return s[:i], s[i:], true
		}
	}
	return s, "", false
}

// isContinuation reports whether s continues a multi-line log block (the
// unprefixed rows of "Enabled NCCL Func/Proto/Algo Matrix").
func (p *logParser) isContinuation(s string) bool {
	if !p.inEnabled {
		return false
	}
	if strings.Contains(s, "|") {
		return true
	}
	p.inEnabled = false
	return false
}

func (p *logParser) mark(key string, num int) {
	if _, ok := p.log.Lines[key]; !ok {
		p.log.Lines[key] = num
	}
}

// feed handles one log line (already split from other text).
func (p *logParser) feed(num int, s string) {
	p.any = true
	host, dev, level, msg := "", -1, "INFO", ""
	if m := reLogLine.FindStringSubmatch(s); m != nil {
		host, level, msg = m[1], m[5], m[6]
		dev, _ = strconv.Atoi(m[4])
	} else if m := reBareLog.FindStringSubmatch(s); m != nil {
		level, msg = m[1], m[2]
	} else {
		msg = strings.TrimSpace(s)
	}
	_ = dev
	if host != "" && !p.hostSeen[host] {
		p.hostSeen[host] = true
		p.log.Hosts = appendCapped(p.log.Hosts, host)
	}
	msg = strings.TrimSpace(msg)
	if level == "WARN" || level == "ABORT" {
		if !p.warnSeen[msg] {
			p.warnSeen[msg] = true
			p.log.Warnings = appendCapped(p.log.Warnings, lineRef(num, msg))
		}
		return
	}
	p.message(num, host, msg)
}

// lineRef formats "line N: text" for list entries that carry their line.
func lineRef(num int, s string) string { return "line " + strconv.Itoa(num) + ": " + s }

func (p *logParser) message(num int, host, msg string) {
	l := &p.log
	switch {
	case strings.HasPrefix(msg, "NCCL version "):
		if m := reVersion.FindStringSubmatch(msg); m != nil && l.Version == "" {
			l.Version = m[1]
			p.mark("version", num)
		}
	case strings.HasPrefix(msg, "Using network "):
		if l.Network == "" {
			l.Network = strings.TrimSpace(strings.TrimPrefix(msg, "Using network "))
			p.mark("network", num)
		}
	case strings.HasPrefix(msg, "NET/IB : No device found"), strings.HasPrefix(msg, "NET/IB: No device found"):
		l.NoIBDevice = true
		p.mark("no_ib_device", num)
	case strings.HasPrefix(msg, "NET/IB : Using"), strings.HasPrefix(msg, "NET/IB: Using"),
		strings.HasPrefix(msg, "NET/Socket : Using"), strings.HasPrefix(msg, "NET/Socket: Using"):
		p.hcas(num, msg)
	case strings.HasPrefix(msg, "Channel "):
		p.channel(num, host, msg)
	case strings.HasPrefix(msg, "Trees "):
		l.Trees = appendCapped(l.Trees, strings.TrimSpace(strings.TrimPrefix(msg, "Trees ")))
	case strings.HasPrefix(msg, "Connected all rings"):
		if m := reRingsDone.FindStringSubmatch(msg); m != nil && l.RingGDR == nil {
			g, x := m[2] == "1", m[1] == "1"
			l.RingGDR, l.RingPXN = &g, &x
			p.mark("ring_gdr", num)
		}
	case strings.Contains(msg, "coll channels,"):
		if m := reChanSum.FindStringSubmatch(msg); m != nil && l.ChannelSummary == "" {
			l.ChannelSummary = msg
			l.Channels, _ = strconv.Atoi(m[1])
			if n := reNVLSCh.FindStringSubmatch(msg); n != nil {
				l.NVLSChannels, _ = strconv.Atoi(n[1])
			}
			p.mark("channel_summary", num)
		}
	case strings.HasPrefix(msg, "NVLS multicast support is"):
		if l.NVLSAvailable == nil {
			ok := !strings.Contains(msg, "not available")
			l.NVLSAvailable = &ok
			p.mark("nvls", num)
		}
	case strings.Contains(msg, "Could not find a path"):
		l.Fallbacks = appendCapped(l.Fallbacks, lineRef(num, msg))
	case strings.HasPrefix(msg, "Enabled NCCL Func/Proto/Algo Matrix"):
		p.inEnabled = true
		p.enabled = nil
	case strings.HasPrefix(msg, "cudaDriverVersion "):
		// recorded by the caller in Machine
	default:
		if m := reCommSummary.FindStringSubmatch(msg); m != nil {
			r, _ := strconv.Atoi(m[1])
			if l.Ranks == 0 {
				l.Ranks, _ = strconv.Atoi(m[2])
			}
			if l.Nodes == 0 {
				l.Nodes, _ = strconv.Atoi(m[3])
				l.LocalRanks, _ = strconv.Atoi(m[4])
			}
			p.setHost(r, host)
			return
		}
		if m := reCommRank.FindStringSubmatch(msg); m != nil {
			r, _ := strconv.Atoi(m[1])
			if l.Ranks == 0 {
				l.Ranks, _ = strconv.Atoi(m[2])
			}
			p.setHost(r, host)
			return
		}
		if m := reEnvSet.FindStringSubmatch(msg); m != nil {
			if _, ok := l.Env[m[1]]; !ok && len(l.Env) < maxListItems {
				l.Env[m[1]] = strings.TrimSpace(m[2])
				p.mark("env:"+m[1], num)
			}
			return
		}
		if m := reEnvAdd.FindStringSubmatch(msg); m != nil {
			if _, ok := l.Env[m[1]]; !ok && len(l.Env) < maxListItems {
				l.Env[m[1]] = m[2]
			}
			return
		}
		p.tuning(msg)
	}
}

func (p *logParser) setHost(rank int, host string) {
	if host == "" || rank < 0 || len(p.rankHost) >= maxListItems {
		return
	}
	if _, ok := p.rankHost[rank]; !ok {
		p.rankHost[rank] = host
	}
}

func (p *logParser) hcas(num int, msg string) {
	rest := msg[strings.Index(msg, "Using")+len("Using"):]
	if i := strings.Index(rest, ";"); i >= 0 {
		rest = rest[:i]
	}
	for _, m := range reHCA.FindAllStringSubmatch(rest, -1) {
		key := m[1] + "/" + m[2]
		if p.hcaSeen[key] {
			continue
		}
		p.hcaSeen[key] = true
		idx, _ := strconv.Atoi(m[1])
		port, _ := strconv.Atoi(m[3])
		if strings.HasPrefix(msg, "NET/Socket") {
			port = 0 // "[0]eth0:10.0.0.1<0>": the number after ':' is an address
		}
		p.log.HCAs = appendCapped(p.log.HCAs, HCA{Index: idx, Name: m[2], Port: port, LinkLayer: m[4]})
	}
	p.mark("hcas", num)
}

func (p *logParser) channel(num int, host, msg string) {
	l := &p.log
	if m := reRing.FindStringSubmatch(msg); m != nil {
		ch, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		if l.Channels == 0 {
			l.Channels = n
		}
		if p.ringSeen[ch] || len(l.Rings) >= maxListItems {
			return
		}
		p.ringSeen[ch] = true
		f := strings.Fields(m[3])
		if len(f) > maxListItems {
			f = f[:maxListItems]
		}
		ring := make([]int, 0, len(f))
		for _, t := range f {
			v, _ := strconv.Atoi(t)
			ring = append(ring, v)
		}
		l.Rings = append(l.Rings, ring)
		return
	}
	m := reConn.FindStringSubmatch(msg)
	if m == nil {
		return
	}
	if len(l.Connections) >= maxConnections {
		l.DroppedConnections++
		return
	}
	ch, _ := strconv.Atoi(m[1])
	from, _ := strconv.Atoi(m[2])
	to, _ := strconv.Atoi(m[4])
	c := Connection{Line: num, Channel: ch, From: from, To: to, Dir: m[6], Host: host}
	via := m[7]
	switch {
	case strings.HasPrefix(via, "P2P/"):
		c.Transport, c.Detail, c.SameHost = "P2P", strings.TrimPrefix(via, "P2P/"), true
	case strings.HasPrefix(via, "SHM/"):
		c.Transport, c.Detail, c.SameHost = "SHM", strings.TrimPrefix(via, "SHM/"), true
	case strings.HasPrefix(via, "direct shared memory"):
		c.Transport, c.Detail, c.SameHost = "SHM", via, true
	case strings.HasPrefix(via, "NET/"):
		c.Transport, c.Detail = "NET", strings.TrimPrefix(via, "NET/")
		segs := strings.Split(c.Detail, "/")
		for i, sg := range segs {
			if reNetDev.MatchString(sg) {
				c.Net = strings.Join(segs[:i], "/")
				break
			}
		}
		if c.Net == "" {
			c.Net = segs[0]
		}
		c.GDR = strings.Contains(c.Detail, "GDRDMA")
	case strings.HasPrefix(via, "CollNet/"):
		c.Transport, c.Detail = "CollNet", strings.TrimPrefix(via, "CollNet/")
	default:
		c.Transport, c.Detail = via, ""
		if i := strings.IndexByte(via, '/'); i > 0 {
			c.Transport, c.Detail = via[:i], via[i+1:]
		}
	}
	local := from
	if c.Dir == "receive" {
		local = to
	}
	p.setHost(local, host)
	l.Connections = append(l.Connections, c)
}

// NetDevice returns the NET device index of a NET connection ("IB/2(0)/GDRDMA" -> 2).
func (c Connection) NetDevice() (int, bool) {
	if c.Transport != "NET" {
		return 0, false
	}
	for _, sg := range strings.Split(c.Detail, "/") {
		if m := reNetDev.FindStringSubmatch(sg); m != nil {
			v, err := strconv.Atoi(m[1])
			return v, err == nil
		}
	}
	return 0, false
}

// continuation handles an unprefixed row of the "Enabled NCCL
// Func/Proto/Algo Matrix" block:
//
//	 Function |       LL     LL128    Simple   |          Tree           Ring ...
//	Broadcast |        1         2         1   |             0              1 ...
func (p *logParser) continuation(s string) {
	parts := strings.Split(s, "|")
	name := strings.TrimSpace(parts[0])
	var cells []string
	for _, pt := range parts[1:] {
		cells = append(cells, strings.Fields(pt)...)
	}
	if name == "Function" {
		p.enabled = cells
		return
	}
	if len(p.enabled) == 0 || name == "" {
		return
	}
	if p.log.Enabled == nil {
		p.log.Enabled = map[string]map[string]int{}
	}
	if len(p.log.Enabled) >= 64 {
		return
	}
	row := map[string]int{}
	for i, c := range cells {
		if i >= len(p.enabled) {
			break
		}
		if v, err := strconv.Atoi(c); err == nil {
			row[p.enabled[i]] = v
		}
	}
	p.log.Enabled[name] = row
}

// tuning handles the TUNING subsystem table (NCCL_DEBUG_SUBSYS=TUNING):
//
//	Algorithm   |      Tree      |      Ring      | ...
//	Protocol    |   LL  LL128  Simple  |   LL  LL128  Simple  | ...
//	 Max NThreads |  512  640  512 | ...
//	    AllReduce |  14.0/ 4.8  21.2/ 18.7  41.0/ 50.4 | ...
//
// Cells are latency (us) / bandwidth (GB/s) per algorithm and protocol.
func (p *logParser) tuning(msg string) {
	if !strings.Contains(msg, "|") {
		return
	}
	parts := strings.Split(msg, "|")
	name := strings.TrimSpace(parts[0])
	groups := parts[1:]
	switch name {
	case "Algorithm":
		p.tuneAlgos = p.tuneAlgos[:0]
		for _, g := range groups {
			if t := strings.TrimSpace(g); t != "" {
				p.tuneAlgos = append(p.tuneAlgos, t)
			}
		}
		p.tuneProto = nil
		return
	case "Protocol":
		p.tuneProto = p.tuneProto[:0]
		for _, g := range groups {
			if f := strings.Fields(g); len(f) > 0 {
				p.tuneProto = append(p.tuneProto, f)
			}
		}
		return
	}
	if len(p.tuneAlgos) == 0 || len(p.tuneProto) == 0 || strings.Contains(name, "NThreads") || name == "" {
		return
	}
	row := map[string][2]float64{}
	for gi, g := range groups {
		if gi >= len(p.tuneAlgos) || gi >= len(p.tuneProto) {
			break
		}
		cells := reTuneCell.FindAllStringSubmatch(g, -1)
		for ci, c := range cells {
			if ci >= len(p.tuneProto[gi]) {
				break
			}
			lat, _ := strconv.ParseFloat(c[1], 64)
			bw, _ := strconv.ParseFloat(c[2], 64)
			row[p.tuneAlgos[gi]+"/"+p.tuneProto[gi][ci]] = [2]float64{lat, bw}
		}
	}
	if len(row) == 0 {
		return
	}
	if p.log.Tuning == nil {
		p.log.Tuning = map[string]map[string][2]float64{}
	}
	if len(p.log.Tuning) < 64 {
		p.log.Tuning[name] = row
	}
}

var reTuneCell = regexp.MustCompile(`(-?\d+(?:\.\d+)?)\s*/\s*(-?\d+(?:\.\d+)?)`)

// finish completes the log: host-based facts and GDR. known maps ranks to
// hosts from other sources (nccl-tests device lines). It returns nil when no
// log line was seen.
func (p *logParser) finish(known map[int]string) *NCCLLog {
	if !p.any {
		return nil
	}
	l := &p.log
	for r, h := range known {
		if _, ok := p.rankHost[r]; !ok && h != "" {
			p.rankHost[r] = h
		}
	}
	for i := range l.Connections {
		c := &l.Connections[i]
		if c.Transport != "NET" && c.Transport != "CollNet" {
			continue
		}
		a, okA := p.rankHost[c.From]
		b, okB := p.rankHost[c.To]
		c.SameHost = okA && okB && a == b
	}
	if l.Nodes == 0 && len(p.rankHost) > 0 {
		hs := map[string]bool{}
		for _, h := range p.rankHost {
			hs[h] = true
		}
		if len(p.rankHost) >= l.Ranks {
			l.Nodes = len(hs)
		}
	}
	netAll, netAny := true, false
	for _, c := range l.Connections {
		if c.Transport == "NET" && c.Net != "Socket" {
			netAny = true
			netAll = netAll && c.GDR
		}
	}
	switch {
	case netAny:
		l.GDR = &netAll
	case l.RingGDR != nil:
		g := *l.RingGDR
		l.GDR = &g
	}
	if len(l.Env) == 0 {
		l.Env = nil
	}
	if len(l.Lines) == 0 {
		l.Lines = nil
	}
	return l
}

// parseNCCLLog parses a file of NCCL_DEBUG=INFO lines. A results table
// further down than the detection window (a large job's log) makes it an
// nccl-tests artifact after all.
func parseNCCLLog(name string, data []byte) (*Artifact, error) {
	if a, err := parseNCCLTests(name, data); err == nil {
		return a, nil
	}
	a, err := parseText(name, data, false)
	if err != nil {
		return nil, err
	}
	if a.Log == nil {
		return nil, errNoData(name, 1, "no NCCL log line found")
	}
	a.Kind = KindNCCLLog
	attachTopo(name, data, a)
	return a, nil
}

// detectNCCLLog accepts files with NCCL_DEBUG lines (INFO or WARN).
func detectNCCLLog(h *head) bool {
	return h.count(2, func(s string) bool {
		_, l, ok := splitLogLine(s)
		return ok && (reLogLine.MatchString(l) || reLogInside.MatchString(l))
	}) >= 1
}
