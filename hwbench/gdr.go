package hwbench

import (
	"context"
	"fmt"
	"strings"
)

// GDRResult is the gdr probe: for every active RDMA port, whether GPU
// memory can be registered with the HCA (GPUDirect RDMA), and RDMA WRITE
// bandwidth and latency between two queue pairs of that port (loopback)
// from and to GPU memory and pinned host memory. Loopback traffic turns
// around inside the adapter, so it measures the PCIe path between memory
// and NIC, not the wire; bandwidth is capped by the port rate.
type GDRResult struct {
	Stamp
	// GPUDirectModule is true when nvidia_peermem (or nv_peer_mem) is loaded.
	GPUDirectModule bool      `json:"gpudirect_module"`
	Ports           []GDRPort `json:"ports"`
}

// GDRPort is one port's results.
type GDRPort struct {
	HCA       string  `json:"hca"`
	Port      int     `json:"port"`
	LinkLayer string  `json:"link_layer"`
	RateGbps  float64 `json:"rate_gbps"`
	// GPU is the CUDA ordinal of the GPU used (the closest to the HCA);
	// Path is how they connect (PIX, PXB, PHB, NODE, SYS; "" unknown).
	GPU   int    `json:"gpu"`
	Path  string `json:"path,omitempty"`
	Route string `json:"route"`
	// GPUDirect is true when registering GPU memory succeeded;
	// RegisterError is the error when it did not.
	GPUDirect     bool   `json:"gpudirect"`
	RegisterError string `json:"register_error,omitempty"`
	// Mechanism is how GPU memory was registered for the GPU rows:
	// "dmabuf" (cuMemGetHandleForAddressRange + ibv_reg_dmabuf_mr, NCCL's
	// first choice), "peermem" (ibv_reg_mr through nvidia-peermem) or
	// "none". DMABuf and PeerMem are each way's outcome: "ok" or why not.
	Mechanism string `json:"gpudirect_mechanism,omitempty"`
	DMABuf    string `json:"dmabuf,omitempty"`
	PeerMem   string `json:"peermem,omitempty"`
	// HostNUMA is the node the host rows' pinned memory was bound to:
	// the HCA's (sysfs numa_node); -1 when unknown or not bound.
	HostNUMA int `json:"host_numa"`
	// Bandwidth and Latency rows; GPU rows are absent without GPUDirect.
	Bandwidth []RDMABandwidth `json:"bandwidth,omitempty"`
	Latency   []RDMALatency   `json:"latency,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// RDMABandwidth is one loopback RDMA WRITE bandwidth measurement: Iters
// writes of Bytes from Src to Dst memory ("host" or "gpu") with Depth in
// flight; GBps is 1e9 bytes per second.
type RDMABandwidth struct {
	Src   string `json:"src"`
	Dst   string `json:"dst"`
	Bytes int64  `json:"bytes"`
	Iters int    `json:"iters"`
	Depth int    `json:"depth"`
	GBps  Num    `json:"gbps"`
}

// RDMALatency is one loopback RDMA WRITE latency measurement: the mean
// time from posting one write to reaping its completion.
type RDMALatency struct {
	Src   string `json:"src"`
	Dst   string `json:"dst"`
	Bytes int64  `json:"bytes"`
	Iters int    `json:"iters"`
	Us    Num    `json:"us"`
}

// GDR measurement sizes.
var (
	gdrBWSizes  = []int64{64 << 10, 1 << 20, 8 << 20}
	gdrLatSizes = []int64{8, 4096}
)

const (
	gdrBytesPerRun = 4 << 30 // bytes moved per bandwidth measurement
	gdrDepth       = 128
	gdrLatIters    = 1000
)

// gdrIters picks the iteration count for a bandwidth measurement of size
// bytes: about gdrBytesPerRun in all, between 100 and 100000 writes.
func gdrIters(size int64) int {
	return int(min(max(gdrBytesPerRun/size, 100), 100000))
}

// chooseRoute picks how the loopback queue pairs address each other on p:
// the port LID on InfiniBand; on Ethernet (RoCE) the GID whose type is
// RoCE v2, preferring an IPv4-mapped one, else any GID.
func chooseRoute(p HCAPort) (Route, error) {
	r := Route{Port: p.Port, GIDIndex: -1, MTU: p.ActiveMTU}
	if r.MTU == 0 {
		r.MTU = 1024
	}
	if p.LinkLayer != "Ethernet" {
		if p.LID == 0 {
			return r, fmt.Errorf("port %d has no LID (is a subnet manager running?)", p.Port)
		}
		r.LID = p.LID
		return r, nil
	}
	best, score := -1, -1
	for i, g := range p.GIDs {
		s := 0
		if strings.Contains(g.Type, "v2") {
			s += 2
		}
		if strings.HasPrefix(g.GID, "::ffff:") {
			s++
		}
		if s > score {
			best, score = i, s
		}
	}
	if best < 0 {
		return r, fmt.Errorf("port %d has no GID", p.Port)
	}
	r.GIDIndex, r.GID = p.GIDs[best].Index, p.GIDs[best].GID
	return r, nil
}

// routeString describes a route for the report.
func routeString(r Route) string {
	if r.GIDIndex >= 0 {
		return fmt.Sprintf("GID %d (%s), MTU %d", r.GIDIndex, r.GID, r.MTU)
	}
	return fmt.Sprintf("LID %d, MTU %d", r.LID, r.MTU)
}

// closestGPU returns the CUDA device nearest to the HCA and the path type,
// preferring PIX over PXB over PHB over NODE over SYS; GPU 0 and "" when
// the PCI paths are unknown.
func closestGPU(h *sysHCA, devs []DeviceInfo, fsys interface{ pci(string) *pciDev }) (int, string) {
	rank := map[string]int{"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4}
	best, bestPath, bestRank := -1, "", 99
	if h != nil && h.pci != nil {
		for _, d := range devs {
			g := fsys.pci(d.BusID)
			if g == nil {
				continue
			}
			p := pathType(g, h.pci)
			if rk, ok := rank[p]; ok && rk < bestRank {
				best, bestPath, bestRank = d.Index, p, rk
			}
		}
	}
	if best < 0 && len(devs) > 0 {
		return devs[0].Index, ""
	}
	return best, bestPath
}

type pciCache struct {
	r *runner
	m map[string]*pciDev
}

func (c *pciCache) pci(bus string) *pciDev {
	if d, ok := c.m[bus]; ok {
		return d
	}
	d, err := readPCI(c.r.b.Files(), bus)
	if err != nil {
		d = nil
	}
	c.m[bus] = d
	return d
}

func (r *runner) probeGDR(ctx context.Context) error {
	rd, err := r.b.RDMA()
	if err != nil {
		return err
	}
	rt, devs, err := r.gpus()
	if err != nil {
		return err
	}
	vh, err := rd.HCAs()
	if err != nil {
		return err
	}
	sys, _ := readHCAs(r.b.Files())
	bySys := map[string]*sysHCA{}
	for i := range sys {
		bySys[sys[i].Name] = &sys[i]
	}
	res := &GDRResult{GPUDirectModule: peerMemLoaded(r.b.Files())}
	res.Stamp = r.stamp() // a probe that stops early still says where and when
	r.rep.GDR = res
	cache := &pciCache{r: r, m: map[string]*pciDev{}}
	var failures []string
	for _, h := range vh {
		if s := bySys[h.Name]; s != nil {
			merged := s.HCA
			mergeHCA(&merged, h)
			h = merged
		}
		for _, p := range h.Ports {
			if err := ctx.Err(); err != nil {
				return err
			}
			if p.State != "Active" {
				continue
			}
			gp := GDRPort{HCA: h.Name, Port: p.Port, LinkLayer: p.LinkLayer, RateGbps: p.RateGbps}
			gp.GPU, gp.Path = closestGPU(bySys[h.Name], devs, cache)
			nicNUMA := -1
			if s := bySys[h.Name]; s != nil && s.pci != nil {
				nicNUMA = s.pci.NUMA
			}
			if err := r.gdrPort(rt, rd, &gp, p, nicNUMA); err != nil {
				gp.Error = err.Error()
				failures = append(failures, fmt.Sprintf("%s port %d: %v", h.Name, p.Port, err))
			}
			res.Ports = append(res.Ports, gp)
			res.Stamp = r.stamp()
			r.progressf("gdr %s port %d (GPU %d, %s): gpudirect=%v %s", h.Name, p.Port, gp.GPU, gp.Path, gp.GPUDirect, gdrSummary(gp))
			if err := r.flush(); err != nil {
				return err
			}
		}
	}
	if len(res.Ports) == 0 {
		res.Stamp = r.stamp()
		return fmt.Errorf("no active RDMA port: %w", errSkip)
	}
	if len(failures) > 0 {
		return fmt.Errorf("%s", joinShort(failures))
	}
	return nil
}

func gdrSummary(p GDRPort) string {
	var parts []string
	for _, b := range p.Bandwidth {
		if b.Bytes == gdrBWSizes[len(gdrBWSizes)-1] {
			parts = append(parts, fmt.Sprintf("%s->%s %.1f GB/s", b.Src, b.Dst, float64(b.GBps)))
		}
	}
	return strings.Join(parts, ", ")
}

// registerGPU registers GPU buffer b with the loopback's HCA both ways
// NCCL knows, DMA-BUF first (NCCL's choice where the kernel, driver and
// rdma-core support it), then nvidia-peermem, and records in gp which
// worked and why the other did not. It returns the region of the way the
// GPU rows use (DMA-BUF when both work), nil when neither works.
func (r *runner) registerGPU(rt Runtime, lb Loopback, b Buffer, gp *GDRPort) Region {
	var use Region
	gp.Mechanism = "none"
	if reg, err := registerWith(rt, lb, b, "dmabuf"); err != nil {
		gp.DMABuf = oneLine(err.Error())
	} else {
		gp.DMABuf, gp.Mechanism, use = "ok", "dmabuf", reg
	}
	reg, err := registerWith(rt, lb, b, "peermem")
	switch {
	case err != nil:
		gp.PeerMem = oneLine(err.Error())
		if !peerMemLoaded(r.b.Files()) {
			gp.PeerMem += " (the nvidia_peermem module is not loaded)"
		}
	case use == nil:
		gp.PeerMem, gp.Mechanism, use = "ok", "peermem", reg
	default:
		gp.PeerMem = "ok"
		reg.Close()
	}
	gp.GPUDirect = use != nil
	if use == nil {
		gp.RegisterError = "dmabuf: " + gp.DMABuf + "; peermem: " + gp.PeerMem
	}
	return use
}

// registerWith registers GPU buffer b through one mechanism.
func registerWith(rt Runtime, lb Loopback, b Buffer, mech string) (Region, error) {
	if mech == "peermem" {
		return lb.Register(b)
	}
	d, err := rt.ExportDMABuf(b)
	if err != nil {
		return nil, err
	}
	reg, err := lb.RegisterDMABuf(b, d)
	// The registration holds its own reference to the buffer; the
	// descriptor is not needed after it (NCCL closes it the same way).
	if cerr := rt.CloseDMABuf(d); err == nil && cerr != nil {
		reg.Close()
		return nil, cerr
	}
	return reg, err
}

func (r *runner) gdrPort(rt Runtime, rd RDMA, gp *GDRPort, p HCAPort, nicNUMA int) error {
	route, err := chooseRoute(p)
	if err != nil {
		return err
	}
	gp.Route = routeString(route)
	lb, err := rd.Loopback(gp.HCA, route)
	if err != nil {
		return err
	}
	defer lb.Close()
	a := &allocator{rt: rt}
	defer a.freeAll()
	size := gdrBWSizes[len(gdrBWSizes)-1]
	mem := map[string][2]Region{}
	var regs []Region
	defer func() {
		for i := len(regs) - 1; i >= 0; i-- {
			regs[i].Close()
		}
	}()
	gp.HostNUMA = -1
	for k := 0; k < 2; k++ {
		b, err := a.allocPinned(size, nicNUMA)
		if err != nil {
			return err
		}
		gp.HostNUMA = b.NUMA
		reg, err := lb.Register(b)
		if err != nil {
			return err
		}
		regs = append(regs, reg)
		pair := mem["host"]
		pair[k] = reg
		mem["host"] = pair
	}
	var gpu [2]Region
	for k := 0; k < 2; k++ {
		b, err := a.alloc(DeviceMem, gp.GPU, size)
		if err != nil {
			return err
		}
		var reg Region
		if k == 0 {
			reg = r.registerGPU(rt, lb, b, gp)
		} else if gp.GPUDirect {
			reg, err = registerWith(rt, lb, b, gp.Mechanism)
			if err != nil {
				return fmt.Errorf("second GPU buffer through %s: %w", gp.Mechanism, err)
			}
		}
		if reg == nil {
			break
		}
		regs = append(regs, reg)
		gpu[k] = reg
	}
	if gp.GPUDirect {
		mem["gpu"] = gpu
	}
	combos := [][2]string{{"host", "host"}, {"gpu", "gpu"}, {"gpu", "host"}, {"host", "gpu"}}
	for _, c := range combos {
		src, okS := mem[c[0]]
		dst, okD := mem[c[1]]
		if !okS || !okD {
			continue
		}
		for _, sz := range gdrBWSizes {
			it := gdrIters(sz)
			el, err := lb.WriteBandwidth(src[0], dst[1], sz, it, gdrDepth)
			if err != nil {
				return fmt.Errorf("%s to %s, %d bytes: %w", c[0], c[1], sz, err)
			}
			gp.Bandwidth = append(gp.Bandwidth, RDMABandwidth{Src: c[0], Dst: c[1], Bytes: sz, Iters: it, Depth: gdrDepth, GBps: gbps(float64(sz)*float64(it), el)})
		}
	}
	for _, c := range [][2]string{{"host", "host"}, {"gpu", "gpu"}} {
		src, okS := mem[c[0]]
		dst, okD := mem[c[1]]
		if !okS || !okD {
			continue
		}
		for _, sz := range gdrLatSizes {
			el, err := lb.WriteLatency(src[0], dst[1], sz, gdrLatIters)
			if err != nil {
				return fmt.Errorf("latency %s to %s, %d bytes: %w", c[0], c[1], sz, err)
			}
			gp.Latency = append(gp.Latency, RDMALatency{Src: c[0], Dst: c[1], Bytes: sz, Iters: gdrLatIters, Us: Num(el.Seconds() * 1e6 / gdrLatIters)})
		}
	}
	return nil
}
