package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
	strs      interner
	// notes say what was dropped (a connection line cut short).
	notes []Note
	// openConn is the line of the last connection recorded whose via
	// string may be cut short (a NET line without a device index), 0 if none.
	openConn int
	// cutName is the line of the last connection dropped for a partial
	// transport name, 0 if none.
	cutName  int
	commSeen map[int]int // ranks -> index in log.Comms
}

// knownTransports are the transport names NCCL prints after "via" in
// connection lines (nccl-facts §7), and the old "direct shared memory".
var knownTransports = []string{"P2P", "SHM", "NET", "CollNet", "NVLS", "direct shared memory"}

func newLogParser() *logParser {
	return &logParser{
		log:      NCCLLog{Env: map[string]string{}, Lines: map[string]int{}},
		rankHost: map[int]string{},
		ringSeen: map[int]bool{},
		hcaSeen:  map[string]bool{},
		warnSeen: map[string]bool{},
		hostSeen: map[string]bool{},
		commSeen: map[int]int{},
	}
}

// partialTransport reports whether name is the start of a known transport
// name but not one: "NE" of a line cut inside "NET/...".
func partialTransport(name string) bool {
	for _, t := range knownTransports {
		if len(name) < len(t) && strings.HasPrefix(t, name) {
			return true
		}
	}
	return false
}

// endInput is told the last line's number and whether the input ended
// without a line break after it. A connection on that line whose via
// string may be incomplete is then the end of a cut line: dropped, with a
// note.
func (p *logParser) endInput(last int, noNewline bool) {
	if noNewline && p.cutName == last && len(p.notes) > 0 && p.notes[len(p.notes)-1].Line == last {
		n := &p.notes[len(p.notes)-1]
		n.Message = "the file ends inside this line (no line break after it): the log is truncated; " + n.Message
		return
	}
	if !noNewline || p.openConn == 0 || p.openConn != last {
		return
	}
	l := &p.log
	n := len(l.Connections)
	if n == 0 || l.Connections[n-1].Line != last {
		return
	}
	c := l.Connections[n-1]
	l.Connections = l.Connections[:n-1]
	p.notes = append(p.notes, Note{Line: last, Message: fmt.Sprintf("the file ends inside this line (no line break after \"via %s/%s\"): the log is truncated; the connection is ignored", c.Transport, c.Detail)})
}

// comm records a communicator size stated on line num.
func (p *logParser) comm(num, ranks, nodes int) {
	if i, ok := p.commSeen[ranks]; ok {
		// NCCL prints "Init START ... nranks N" before the line that gives
		// the node count: the later line completes the communicator.
		if c := &p.log.Comms[i]; c.Nodes == 0 && nodes > 0 {
			c.Nodes, c.Line = nodes, num
		}
		return
	}
	if len(p.log.Comms) >= maxListItems {
		return
	}
	p.commSeen[ranks] = len(p.log.Comms)
	p.log.Comms = append(p.log.Comms, Comm{Ranks: ranks, Nodes: nodes, Line: num})
}

// logLine is one NCCL log line split into its parts.
type logLine struct {
	// text is the line from its "host:pid:tid" prefix (or "NCCL") on.
	text string
	// host, level and msg come from the "host:pid:tid [dev] NCCL LEVEL msg"
	// prefix (prefixed) or a bare "NCCL LEVEL msg" line; for other lines
	// (a bare "NCCL version ...") msg is the text.
	host, level, msg string
	prefixed         bool
}

// splitLogLine finds an NCCL log line in s. It returns the text before it
// (non-empty when a log line was written into the middle of another line),
// the log line, and whether one was found. A line that starts with the
// log prefix, the common case, costs one scan without regular expressions.
func splitLogLine(s string) (before string, l logLine, ok bool) {
	if !strings.Contains(s, "NCCL") {
		return s, logLine{}, false
	}
	if strings.HasPrefix(s, "NCCL\t") {
		// A bare line copied with its spaces turned into tabs ("NCCL
		// version 2.26.2" through some terminals and editors).
		s = strings.Join(strings.Fields(s), " ")
	}
	if l, ok := parseLogLine(s); ok {
		return "", l, true
	}
	if loc := reLogInside.FindStringIndex(s); loc != nil {
		if l, ok := parseLogLine(s[loc[0]:]); ok {
			return s[:loc[0]], l, true
		}
	}
	if i := strings.Index(s, "NCCL version "); i > 0 {
		return s[:i], logLine{text: s[i:], level: "INFO", msg: strings.TrimSpace(s[i:])}, true
	}
	return s, logLine{}, false
}

// parseLogLine recognises, from the start of s, the prefixed form
// "host:pid:tid [dev] (file:line )?NCCL (INFO|WARN|TRACE|ABORT) msg"
// (nccl-facts §7; what reLogLine describes), the bare "NCCL INFO msg" /
// "NCCL WARN msg", and "NCCL version x.y.z".
func parseLogLine(s string) (logLine, bool) {
	if host, level, msg, ok := parseLogPrefix(s); ok {
		return logLine{text: s, host: host, level: level, msg: msg, prefixed: true}, true
	}
	if strings.HasPrefix(s, "NCCL INFO") || strings.HasPrefix(s, "NCCL WARN") {
		return logLine{text: s, level: s[5:9], msg: strings.TrimPrefix(s[9:], " ")}, true
	}
	if strings.HasPrefix(s, "NCCL version ") && reVersion.MatchString(s) {
		return logLine{text: s, level: "INFO", msg: strings.TrimSpace(s)}, true
	}
	return logLine{}, false
}

// parseLogPrefix matches reLogLine by hand (the regular expression
// backtracks on every line of a large log).
func parseLogPrefix(s string) (host, level, msg string, ok bool) {
	i := 0
	for i < len(s) && s[i] != ':' && !isRESpace(s[i]) {
		i++
	}
	if i == 0 || i >= len(s) || s[i] != ':' {
		return
	}
	host = s[:i]
	i++
	for _, end := range []byte{':', ' '} {
		j := skipDigits(s, i)
		if j == i || j >= len(s) || s[j] != end {
			return
		}
		i = j + 1
	}
	if i >= len(s) || s[i] != '[' {
		return
	}
	j := skipDigits(s, i+1)
	if j == i+1 || j+1 >= len(s) || s[j] != ']' || s[j+1] != ' ' {
		return
	}
	rest := s[j+2:]
	if !strings.HasPrefix(rest, "NCCL ") {
		// an optional "file:line " (warnings)
		k := strings.IndexFunc(rest, func(r rune) bool { return r < 0x80 && isRESpace(byte(r)) })
		if k <= 0 || rest[k] != ' ' {
			return
		}
		tok := rest[:k]
		c := strings.LastIndexByte(tok, ':')
		if c <= 0 || skipDigits(tok, c+1) != len(tok) || c+1 == len(tok) {
			return
		}
		rest = rest[k+1:]
		if !strings.HasPrefix(rest, "NCCL ") {
			return
		}
	}
	rest = rest[len("NCCL "):]
	for _, lv := range [...]string{"INFO", "WARN", "TRACE", "ABORT"} {
		if !strings.HasPrefix(rest, lv) {
			continue
		}
		after := rest[len(lv):]
		if after != "" && isWordByte(after[0]) {
			return
		}
		return host, lv, strings.TrimPrefix(after, " "), true
	}
	return
}

// isRESpace is \s of Go regular expressions: [\t\n\f\r ].
func isRESpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// isWordByte is \w: [0-9A-Za-z_].
func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// skipDigits returns the index of the first non-digit of s at or after i.
func skipDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
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

// feedLine handles one log line (already split from other text).
func (p *logParser) feedLine(num int, l logLine) {
	p.any = true
	host, level, msg := l.host, l.level, l.msg
	if level == "" {
		level = "INFO"
	}
	if host != "" && !p.hostSeen[host] {
		host = p.strs.get(host)
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
		// Cheap substring checks keep the regular expressions off most lines.
		if !strings.Contains(msg, " nRanks ") && !strings.Contains(msg, " nranks ") &&
			!strings.HasPrefix(msg, "NCCL_") && !strings.Contains(msg, "Adding NCCL_") {
			p.tuning(msg)
			return
		}
		if m := reCommSummary.FindStringSubmatch(from(msg, " nRanks ", "rank ")); m != nil {
			r, _ := strconv.Atoi(m[1])
			if l.Ranks == 0 {
				l.Ranks, _ = strconv.Atoi(m[2])
			}
			if l.Nodes == 0 {
				l.Nodes, _ = strconv.Atoi(m[3])
				l.LocalRanks, _ = strconv.Atoi(m[4])
			}
			nr, _ := strconv.Atoi(m[2])
			nn, _ := strconv.Atoi(m[3])
			p.comm(num, nr, nn)
			p.setHost(r, host)
			return
		}
		if m := reCommRank.FindStringSubmatch(from(msg, " nranks ", "comm 0x")); m != nil {
			r, _ := strconv.Atoi(m[1])
			if l.Ranks == 0 {
				l.Ranks, _ = strconv.Atoi(m[2])
			}
			nr, _ := strconv.Atoi(m[2])
			p.comm(num, nr, 0)
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

// from returns msg from the last start before the first key, when start
// begins a word there, or "" otherwise: the place where an unanchored
// expression beginning with \bstart and containing key could match, so
// that it need not be tried at every offset of a long line.
func from(msg, key, start string) string {
	i := strings.Index(msg, key)
	if i < 0 {
		return ""
	}
	j := strings.LastIndex(msg[:i], start)
	if j < 0 || j > 0 && isWordByte(msg[j-1]) {
		return ""
	}
	return msg[j:]
}

func (p *logParser) setHost(rank int, host string) {
	if host == "" || rank < 0 || len(p.rankHost) >= maxListItems {
		return
	}
	if _, ok := p.rankHost[rank]; !ok {
		p.rankHost[rank] = p.strs.get(host)
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
	if !strings.Contains(msg, "->") {
		p.ring(msg)
		return
	}
	p.connection(num, host, msg)
}

// ring handles "Channel 00/02 : 0 1 2 3".
func (p *logParser) ring(msg string) {
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
	}
}

// connection handles "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM".
func (p *logParser) connection(num int, host, msg string) {
	l := &p.log
	head, via, ok := strings.Cut(msg, " via ")
	via = strings.TrimRight(via, " \t\r\n\f\v")
	if !ok || via == "" {
		return
	}
	ch, from, to, dir, ok := parseConnHead(head)
	if !ok {
		return
	}
	if len(l.Connections) >= maxConnections {
		l.DroppedConnections++
		return
	}
	c := Connection{Line: num, Channel: ch, From: from, To: to, Dir: dir, Host: host}
	open := false
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
			// No device index: complete only if more follows on the line.
			c.Net, open = segs[0], true
		}
		if last := segs[len(segs)-1]; len(last) < len("GDRDMA") && strings.HasPrefix("GDRDMA", last) {
			open = true // "GDR" of a line cut inside "GDRDMA"
		}
		c.GDR = strings.Contains(c.Detail, "GDRDMA")
	case strings.HasPrefix(via, "CollNet/"):
		c.Transport, c.Detail = "CollNet", strings.TrimPrefix(via, "CollNet/")
	default:
		c.Transport, c.Detail = via, ""
		if i := strings.IndexByte(via, '/'); i > 0 {
			c.Transport, c.Detail = via[:i], via[i+1:]
		}
		if c.Detail == "" && partialTransport(c.Transport) {
			// "via NE": a line cut inside a transport name, not a transport.
			p.notes = appendNote(p.notes, Note{Line: num, Message: fmt.Sprintf("transport %q is the start of a transport name (%s), not one: the line is cut short; the connection is ignored", c.Transport, strings.Join(knownTransports[:5], ", "))})
			p.openConn, p.cutName = 0, num
			return
		}
	}
	p.openConn = 0
	if open {
		p.openConn = num
	}
	local := from
	if c.Dir == "receive" {
		local = to
	}
	p.setHost(local, host)
	// Interned copies: substrings would keep every connection's whole
	// line alive.
	c.Transport, c.Detail, c.Net, c.Host = p.strs.get(c.Transport), p.strs.get(c.Detail), p.strs.get(c.Net), p.strs.get(c.Host)
	l.Connections = append(l.Connections, c)
}

// parseConnHead reads the part of a connection line before " via ":
// "Channel 00/0 : 0[0] -> 1[1] [send]", that is
// ^Channel (\d+)(?:/\d+)? : (\d+)\[[0-9a-fA-Fx]+\] -> (\d+)\[[0-9a-fA-Fx]+\](?: \[(send|receive)\])?$
// (nccl-facts §7; the peers' bracketed values are bus IDs or devices).
func parseConnHead(s string) (ch, from, to int, dir string, ok bool) {
	rest, found := strings.CutPrefix(s, "Channel ")
	if !found {
		return
	}
	num := func() (int, bool) {
		j := skipDigits(rest, 0)
		if j == 0 {
			return 0, false
		}
		v, _ := strconv.Atoi(rest[:j])
		rest = rest[j:]
		return v, true
	}
	lit := func(p string) bool {
		var ok bool
		rest, ok = strings.CutPrefix(rest, p)
		return ok
	}
	peer := func() (int, bool) {
		v, ok := num()
		if !ok || !lit("[") {
			return 0, false
		}
		j := 0
		for j < len(rest) && (rest[j] >= '0' && rest[j] <= '9' || rest[j] >= 'a' && rest[j] <= 'f' || rest[j] >= 'A' && rest[j] <= 'F' || rest[j] == 'x') {
			j++
		}
		if j == 0 {
			return 0, false
		}
		rest = rest[j:]
		return v, lit("]")
	}
	if ch, ok = num(); !ok {
		return
	}
	if lit("/") {
		if _, ok = num(); !ok {
			return
		}
	}
	if !lit(" : ") {
		return 0, 0, 0, "", false
	}
	if from, ok = peer(); !ok || !lit(" -> ") {
		return 0, 0, 0, "", false
	}
	if to, ok = peer(); !ok {
		return
	}
	switch rest {
	case "":
	case " [send]":
		dir = "send"
	case " [receive]":
		dir = "receive"
	default:
		return 0, 0, 0, "", false
	}
	return ch, from, to, dir, true
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
	return streamNCCLLog(name, bytes.NewReader(data), data)
}

// streamNCCLLog is parseNCCLLog reading r in one pass; head is the start of
// the input, searched for an nvidia-smi topo -m listing (see streamNCCLTests).
func streamNCCLLog(name string, r io.Reader, head []byte) (*Artifact, error) {
	p, err := scanText(name, r)
	if err != nil {
		return nil, err
	}
	a, err := p.tests(name)
	if err == nil {
		attachTopo(name, head, a)
		return a, nil
	}
	if te := (*truncatedError)(nil); errors.As(err, &te) {
		return nil, err
	}
	a = p.log(name)
	if a.Log == nil {
		return nil, errNoData(name, 1, "no NCCL log line found")
	}
	a.Kind = KindNCCLLog
	attachTopo(name, head, a)
	return a, nil
}

// detectNCCLLog accepts files with NCCL_DEBUG lines (INFO or WARN).
func detectNCCLLog(h *head) bool {
	return h.count(2, func(s string) bool {
		_, l, ok := splitLogLine(s)
		return ok && (l.prefixed || reLogInside.MatchString(l.text))
	}) >= 1
}

// appendNote appends n unless the list already holds maxSkipped notes.
func appendNote(notes []Note, n Note) []Note {
	if len(notes) >= maxSkipped {
		return notes
	}
	return append(notes, n)
}

// GDRReceivesOnly reports whether the log's network connections use
// GPUDirect RDMA to receive but stage their sends through host memory:
// NCCL's GDR read policy, not a missing GPUDirect RDMA path. NCCL turns
// GDR reads (the NIC reading GPU memory to send) off by default on GPUs
// before Ampere that have no NVLink peer, and on every GPU without one in
// releases before that rule (NCCL_NET_GDR_READ; ncclTopoCheckGdr in
// src/graph/paths.cc), while receives keep GDRDMA.
func (l *NCCLLog) GDRReceivesOnly() bool {
	recvGDR, stagedSend, stagedOther := false, false, false
	for _, c := range l.Connections {
		if c.Transport != "NET" || c.Net == "Socket" {
			continue
		}
		switch {
		case c.GDR && c.Dir == "receive":
			recvGDR = true
		case !c.GDR && c.Dir == "send":
			stagedSend = true
		case !c.GDR:
			stagedOther = true
		}
	}
	return recvGDR && stagedSend && !stagedOther
}
