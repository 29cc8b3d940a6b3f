//go:build cgo && linux

package nvmlinfo

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

// maxLinks bounds the NVLink loop (NVML_NVLINK_MAX_LINKS).
const maxLinks = nvml.NVLINK_MAX_LINKS

func nvmlErr(op string, r nvml.Return) error {
	return fmt.Errorf("nvml: %s: %s", op, r.Error())
}

// Query loads NVML, reads the inventory and shuts NVML down again. A
// missing libnvidia-ml.so.1 is an error wrapping dl.ErrLibraryNotFound with
// the loader's message.
func Query() (*Info, error) {
	// go-nvml reports only ERROR_LIBRARY_NOT_FOUND; probing first keeps the
	// loader's message for the error.
	if err := dl.Probe(Sonames); err != nil {
		return nil, err
	}
	lib := nvml.New()
	if r := lib.Init(); r != nvml.SUCCESS {
		return nil, nvmlErr("nvmlInit", r)
	}
	defer lib.Shutdown()
	info := &Info{}
	if v, r := lib.SystemGetDriverVersion(); r == nvml.SUCCESS {
		info.Driver = v
	}
	if v, r := lib.SystemGetCudaDriverVersion(); r == nvml.SUCCESS {
		info.CUDADriver = v
	}
	if v, r := lib.SystemGetNVMLVersion(); r == nvml.SUCCESS {
		info.NVMLVersion = v
	}
	n, r := lib.DeviceGetCount()
	if r != nvml.SUCCESS {
		return nil, nvmlErr("nvmlDeviceGetCount", r)
	}
	devs := make([]nvml.Device, n)
	byBus := map[string]int{}
	for i := 0; i < n; i++ {
		d, r := lib.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			return nil, nvmlErr(fmt.Sprintf("nvmlDeviceGetHandleByIndex(%d)", i), r)
		}
		devs[i] = d
		g := GPU{Index: i, NUMA: -1}
		if g.Name, r = d.GetName(); r != nvml.SUCCESS {
			return nil, nvmlErr("nvmlDeviceGetName", r)
		}
		pci, r := d.GetPciInfo()
		if r != nvml.SUCCESS {
			return nil, nvmlErr("nvmlDeviceGetPciInfo", r)
		}
		g.BusID = NormalizeBusID(cstr(pci.BusId[:]))
		byBus[g.BusID] = i
		g.UUID, _ = d.GetUUID()
		if m, r := d.GetMemoryInfo(); r == nvml.SUCCESS {
			g.MemoryBytes, g.FreeBytes = m.Total, m.Free
		}
		if v, r := d.GetNumaNodeId(); r == nvml.SUCCESS {
			g.NUMA = v
		}
		g.CCMajor, g.CCMinor, _ = d.GetCudaComputeCapability()
		g.PCIeGen, _ = d.GetCurrPcieLinkGeneration()
		g.PCIeWidth, _ = d.GetCurrPcieLinkWidth()
		g.PCIeMaxGen, _ = d.GetMaxPcieLinkGeneration()
		g.PCIeMax, _ = d.GetMaxPcieLinkWidth()
		for l := 0; l < maxLinks; l++ {
			st, r := d.GetNvLinkState(l)
			if r != nvml.SUCCESS {
				// NOT_SUPPORTED / INVALID_ARGUMENT past the last link.
				continue
			}
			link := NVLink{Link: l, Active: st == nvml.FEATURE_ENABLED}
			if v, r := d.GetNvLinkVersion(l); r == nvml.SUCCESS {
				link.Version = int(v)
			}
			if rp, r := d.GetNvLinkRemotePciInfo(l); r == nvml.SUCCESS {
				link.Remote = NormalizeBusID(cstr(rp.BusId[:]))
			}
			if t, r := d.GetNvLinkRemoteDeviceType(l); r == nvml.SUCCESS {
				link.RemoteType = RemoteTypeName(int(t))
			}
			g.NVLinks = append(g.NVLinks, link)
		}
		info.GPUs = append(info.GPUs, g)
	}
	caps := []struct {
		name string
		idx  nvml.GpuP2PCapsIndex
	}{{"read", nvml.P2P_CAPS_INDEX_READ}, {"write", nvml.P2P_CAPS_INDEX_WRITE}, {"nvlink", nvml.P2P_CAPS_INDEX_NVLINK}, {"atomics", nvml.P2P_CAPS_INDEX_ATOMICS}}
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			p := Pair{A: a, B: b, P2P: map[string]string{}}
			if lvl, r := devs[a].GetTopologyCommonAncestor(devs[b]); r == nvml.SUCCESS {
				p.Ancestor = AncestorName(int(lvl))
			}
			for _, c := range caps {
				if s, r := devs[a].GetP2PStatus(devs[b], c.idx); r == nvml.SUCCESS {
					p.P2P[c.name] = P2PStatusName(int(s))
				}
			}
			info.Pairs = append(info.Pairs, p)
		}
	}
	// Links whose remote end is another GPU are "gpu" even where the driver
	// does not report the remote type.
	for i := range info.GPUs {
		for j := range info.GPUs[i].NVLinks {
			l := &info.GPUs[i].NVLinks[j]
			if _, ok := byBus[l.Remote]; ok && (l.RemoteType == "" || l.RemoteType == "unknown") {
				l.RemoteType = "gpu"
			}
		}
	}
	return info, nil
}

func cstr(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
