package hwbench

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
)

// pciDev is one PCI function as sysfs shows it.
type pciDev struct {
	// Addr is the PCI address, "0000:18:00.0".
	Addr string
	// Dir is its real sysfs directory ("sys/devices/pci0000:17/.../0000:18:00.0").
	Dir string
	// Chain is the path from the root: the host bridge ("pci0000:17"), then
	// every bridge, then the device itself.
	Chain []string
	NUMA  int
	// Link is the device's own PCIe link (current and maximum).
	Link PCIeLink
}

var reBusID = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// readText returns a sysfs attribute with surrounding space removed, "" when
// it is missing.
func readText(fsys fs.FS, name string) string {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readInt(fsys fs.FS, name string, def int) int {
	s := readText(fsys, name)
	if s == "" {
		return def
	}
	if v, err := strconv.ParseInt(s, 0, 64); err == nil {
		return int(v)
	}
	return def
}

// resolveLink follows the symlink at name (one level) and returns the
// target as a clean path relative to the root of fsys.
func resolveLink(fsys fs.FS, name string) (string, error) {
	t, err := fs.ReadLink(fsys, name)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(t, "/") {
		return path.Clean(strings.TrimPrefix(t, "/")), nil
	}
	return path.Join(path.Dir(name), t), nil
}

func readLink(fsys fs.FS, dir string) PCIeLink {
	return PCIeLink{
		Gen:      model.PCIeGenOfSpeed(readText(fsys, dir+"/current_link_speed")),
		Width:    readInt(fsys, dir+"/current_link_width", 0),
		MaxGen:   model.PCIeGenOfSpeed(readText(fsys, dir+"/max_link_speed")),
		MaxWidth: readInt(fsys, dir+"/max_link_width", 0),
	}
}

// readPCI finds the PCI function addr (sysfs form) and its path from the
// root complex.
func readPCI(fsys fs.FS, addr string) (*pciDev, error) {
	if fsys == nil {
		return nil, fmt.Errorf("no sysfs")
	}
	addr = strings.ToLower(addr)
	dir, err := resolveLink(fsys, "sys/bus/pci/devices/"+addr)
	if err != nil {
		return nil, fmt.Errorf("pci %s: %w", addr, err)
	}
	parts := strings.Split(dir, "/")
	start := -1
	for i, p := range parts {
		if strings.HasPrefix(p, "pci") && strings.Contains(p, ":") {
			start = i
			break
		}
	}
	if start < 0 || parts[len(parts)-1] != addr {
		return nil, fmt.Errorf("pci %s: unexpected sysfs path %q", addr, dir)
	}
	d := &pciDev{Addr: addr, Dir: dir, Chain: parts[start:]}
	d.NUMA = readInt(fsys, dir+"/numa_node", -1)
	d.Link = readLink(fsys, dir)
	return d, nil
}

// bridgeDir returns the sysfs directory of Chain[i] of d.
func (d *pciDev) bridgeDir(i int) string {
	n := len(d.Chain) - 1 - i
	dir := d.Dir
	for ; n > 0; n-- {
		dir = path.Dir(dir)
	}
	return dir
}

// hostBridge is the root complex the device hangs off ("pci0000:17").
func (d *pciDev) hostBridge() string { return d.Chain[0] }

// switches groups the bridges between the root port and the device into
// PCIe switches, top first, each named by its upstream port. A switch shows
// in sysfs as an upstream port and one downstream port per device below it;
// the first bridge below the host bridge is the root port and belongs to
// the host bridge. A lone bridge at the end counts as a switch too.
func (d *pciDev) switches() []string {
	bridges := d.Chain[1 : len(d.Chain)-1] // without host bridge and device
	if len(bridges) == 0 {
		return nil
	}
	bridges = bridges[1:] // root port
	var out []string
	for i := 0; i < len(bridges); i += 2 {
		out = append(out, bridges[i])
	}
	return out
}

// switchLevel counts the PCIe switches on the path between two devices of
// the same host bridge: 0 when they meet at the host bridge.
func switchPath(a, b *pciDev) (common, total int) {
	sa, sb := a.switches(), b.switches()
	for common < len(sa) && common < len(sb) && sa[common] == sb[common] {
		common++
	}
	if common == 0 {
		return 0, 0
	}
	return common, len(sa) - common + len(sb) - common + 1
}

// pathType classifies how two PCI devices reach each other, as nvidia-smi
// topo -m prints it: "PIX" (one PCIe switch), "PXB" (several switches, no
// host bridge), "PHB" (through the host bridge), "NODE" (between host
// bridges of one NUMA node), "SYS" (across the SMP interconnect). Two
// functions of one device are "PIX".
func pathType(a, b *pciDev) string {
	if a.Addr == b.Addr {
		return "X"
	}
	if a.hostBridge() != b.hostBridge() {
		if a.NUMA >= 0 && b.NUMA >= 0 && a.NUMA != b.NUMA {
			return "SYS"
		}
		return "NODE"
	}
	if sameDevice(a.Addr, b.Addr) {
		return "PIX"
	}
	_, n := switchPath(a, b)
	switch {
	case n == 0:
		return "PHB"
	case n == 1:
		return "PIX"
	}
	return "PXB"
}

// sameDevice reports whether two addresses are functions of one device.
func sameDevice(a, b string) bool {
	ia, ib := strings.LastIndexByte(a, '.'), strings.LastIndexByte(b, '.')
	return ia > 0 && ib > 0 && a[:ia] == b[:ib]
}

// sysHCA is an RDMA device as sysfs shows it.
type sysHCA struct {
	HCA
	pci *pciDev
}

// readHCAs lists /sys/class/infiniband: each device's PCI function, driver
// and ports (state, rate, link layer, LID, GIDs with their types).
func readHCAs(fsys fs.FS) ([]sysHCA, error) {
	if fsys == nil {
		return nil, nil
	}
	ents, err := fs.ReadDir(fsys, "sys/class/infiniband")
	if err != nil {
		return nil, nil // no RDMA devices (or no RDMA stack): not an error
	}
	var out []sysHCA
	for _, e := range ents {
		name := e.Name()
		dir := "sys/class/infiniband/" + name
		if real, err := resolveLink(fsys, dir); err == nil {
			dir = real
		}
		h := sysHCA{HCA: HCA{Name: name, NUMA: -1}}
		// The PCI function is the directory above "infiniband/<name>"
		// (class entries link into the device's directory), or what
		// "device" points at.
		addr := ""
		if p := path.Dir(path.Dir(dir)); reBusID.MatchString(path.Base(p)) {
			addr = path.Base(p)
		} else if t, err := resolveLink(fsys, dir+"/device"); err == nil {
			addr = path.Base(t)
		}
		if addr != "" {
			h.BusID = addr
			if d, err := readPCI(fsys, addr); err == nil {
				h.pci = d
				h.NUMA = d.NUMA
				if drv, err := fs.ReadLink(fsys, d.Dir+"/driver"); err == nil {
					h.Driver = path.Base(drv)
				}
			}
		}
		h.FirmwareVersion = readText(fsys, dir+"/fw_ver")
		if g := readText(fsys, dir+"/node_guid"); g != "" {
			h.NodeGUID = g
		}
		ports, _ := fs.ReadDir(fsys, dir+"/ports")
		for _, pe := range ports {
			num, err := strconv.Atoi(pe.Name())
			if err != nil {
				continue
			}
			h.Ports = append(h.Ports, readSysPort(fsys, dir+"/ports/"+pe.Name(), num))
		}
		sort.Slice(h.Ports, func(i, j int) bool { return h.Ports[i].Port < h.Ports[j].Port })
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return naturalLess(out[i].Name, out[j].Name) })
	return out, nil
}

var reRate = regexp.MustCompile(`^([0-9.]+)\s*Gb/sec`)

func readSysPort(fsys fs.FS, dir string, num int) HCAPort {
	p := HCAPort{Port: num}
	p.State = stateWord(readText(fsys, dir+"/state"))
	p.PhysState = stateWord(readText(fsys, dir+"/phys_state"))
	p.LinkLayer = readText(fsys, dir+"/link_layer")
	p.Rate = readText(fsys, dir+"/rate")
	if m := reRate.FindStringSubmatch(p.Rate); m != nil {
		p.RateGbps, _ = strconv.ParseFloat(m[1], 64)
	}
	p.LID = readInt(fsys, dir+"/lid", 0)
	gids, _ := fs.ReadDir(fsys, dir+"/gids")
	for _, g := range gids {
		idx, err := strconv.Atoi(g.Name())
		if err != nil {
			continue
		}
		v := readText(fsys, dir+"/gids/"+g.Name())
		if v == "" || isZeroGID(v) {
			continue
		}
		p.GIDs = append(p.GIDs, GID{Index: idx, GID: formatGID(v), Type: readText(fsys, fmt.Sprintf("%s/gid_attrs/types/%d", dir, idx))})
	}
	sort.Slice(p.GIDs, func(i, j int) bool { return p.GIDs[i].Index < p.GIDs[j].Index })
	return p
}

// stateWord turns sysfs "4: ACTIVE" or "5: LinkUp" into ibstat's "Active"
// and "LinkUp".
func stateWord(s string) string {
	if _, after, ok := strings.Cut(s, ":"); ok {
		s = strings.TrimSpace(after)
	}
	switch strings.ToUpper(s) {
	case "ACTIVE":
		return "Active"
	case "DOWN":
		return "Down"
	case "INIT":
		return "Initializing"
	case "ARMED":
		return "Armed"
	}
	return s
}

func isZeroGID(s string) bool { return strings.Trim(s, "0:") == "" }

// formatGID turns sysfs "fe80:0000:0000:0000:b859:9f03:00d4:1234" into the
// short IPv6 form ("fe80::b859:9f03:d4:1234"; "::ffff:10.0.0.1" for an
// IPv4-mapped RoCE v2 GID).
func formatGID(s string) string {
	var b [16]byte
	groups := strings.Split(s, ":")
	if len(groups) != 8 {
		return s
	}
	for i, g := range groups {
		v, err := strconv.ParseUint(g, 16, 16)
		if err != nil {
			return s
		}
		b[2*i], b[2*i+1] = byte(v>>8), byte(v)
	}
	return gidString(b)
}

func gidString(b [16]byte) string {
	if bytes.Equal(b[:10], make([]byte, 10)) && b[10] == 0xff && b[11] == 0xff {
		return fmt.Sprintf("::ffff:%d.%d.%d.%d", b[12], b[13], b[14], b[15])
	}
	// Standard IPv6 text: the longest run of zero groups becomes "::".
	var g [8]uint16
	for i := range g {
		g[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	bestStart, bestLen := -1, 1
	for i := 0; i < 8; {
		if g[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && g[j] == 0 {
			j++
		}
		if j-i > bestLen {
			bestStart, bestLen = i, j-i
		}
		i = j
	}
	var parts []string
	for i := 0; i < 8; i++ {
		if i == bestStart {
			parts = append(parts, "")
			if i == 0 {
				parts = append(parts, "")
			}
			i += bestLen - 1
			if i == 7 {
				parts = append(parts, "")
			}
			continue
		}
		parts = append(parts, strconv.FormatUint(uint64(g[i]), 16))
	}
	return strings.Join(parts, ":")
}

// naturalLess orders "mlx5_2" before "mlx5_10".
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		if da && db {
			ia, ib := digitsEnd(a), digitsEnd(b)
			na, _ := strconv.Atoi(a[:ia])
			nb, _ := strconv.Atoi(b[:ib])
			if na != nb {
				return na < nb
			}
			a, b = a[ia:], b[ib:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digitsEnd(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) && i < 18 {
		i++
	}
	return i
}

// cpuVendor reads the CPU vendor from /proc/cpuinfo in model terms
// ("intel", "amd", "arm"); "" when unknown.
func cpuVendor(fsys fs.FS) string {
	if fsys == nil {
		return ""
	}
	b, err := fs.ReadFile(fsys, "proc/cpuinfo")
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case k == "vendor_id" && v == "GenuineIntel":
			return "intel"
		case k == "vendor_id" && (v == "AuthenticAMD" || v == "HygonGenuine"):
			return "amd"
		case k == "CPU implementer":
			return "arm"
		case k == "cpu" && strings.HasPrefix(v, "POWER"):
			return "power"
		}
	}
	return ""
}

// kernelRelease reads /proc/sys/kernel/osrelease.
func kernelRelease(fsys fs.FS) string {
	if fsys == nil {
		return ""
	}
	return readText(fsys, "proc/sys/kernel/osrelease")
}

// driverFromProc reads the NVIDIA driver version from
// /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel
// Module  550.90.07  ...").
func driverFromProc(fsys fs.FS) string {
	if fsys == nil {
		return ""
	}
	s := readText(fsys, "proc/driver/nvidia/version")
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "NVRM version:") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if strings.Count(f, ".") >= 1 && isDigit(f[0]) {
				return f
			}
		}
	}
	return ""
}

// peerMemLoaded reports whether a GPUDirect RDMA kernel module is loaded
// (nvidia_peermem, or the older nv_peer_mem).
func peerMemLoaded(fsys fs.FS) bool {
	if fsys == nil {
		return false
	}
	for _, m := range []string{"sys/module/nvidia_peermem", "sys/module/nv_peer_mem"} {
		if _, err := fs.Stat(fsys, m); err == nil {
			return true
		}
	}
	return false
}

// numaNodes lists the online NUMA nodes (sys/devices/system/node/online,
// "0-1" or "0,2-3"); nil when unknown.
func numaNodes(fsys fs.FS) []int {
	if fsys == nil {
		return nil
	}
	var out []int
	for _, part := range strings.Split(readText(fsys, "sys/devices/system/node/online"), ",") {
		if part == "" {
			continue
		}
		lo, hi, found := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if found {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || b < a || b-a > 1024 {
			return nil
		}
		for n := a; n <= b; n++ {
			out = append(out, n)
		}
	}
	return out
}

// pciNUMA returns the NUMA node of PCI function bus from sysfs, -1 when
// unknown (no sysfs entry, or numa_node -1 on a one-node machine).
func pciNUMA(fsys fs.FS, bus string) int {
	d, err := readPCI(fsys, bus)
	if err != nil {
		return -1
	}
	return d.NUMA
}
