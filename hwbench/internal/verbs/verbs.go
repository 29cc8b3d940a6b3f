package verbs

import (
	"fmt"
	"net"
)

// Sonames are the libibverbs libraries Load tries.
var Sonames = []string{"libibverbs.so.1"}

// GID is a port GID (16 bytes, network order).
type GID [16]byte

// IsZero reports whether the GID is all zeros (an unused table slot).
func (g GID) IsZero() bool { return g == GID{} }

// String prints the GID as an IPv6 address, e.g. "fe80::b859:9f03:d4:1234"
// or, for an IPv4-mapped RoCE v2 GID, "::ffff:10.0.0.1".
func (g GID) String() string {
	ip := net.IP(g[:])
	if v4 := ip.To4(); v4 != nil && ip[10] == 0xff && ip[11] == 0xff {
		return "::ffff:" + v4.String()
	}
	return ip.String()
}

// Port is what ibv_query_port and ibv_query_gid report about one port.
type Port struct {
	// Num is the 1-based port number.
	Num int
	// State, PhysState and LinkLayer are the raw enum values; see
	// StateName, PhysStateName and LinkLayerName.
	State, PhysState, LinkLayer int
	// ActiveMTU and MaxMTU are ibv_mtu values; MTUBytes converts them.
	ActiveMTU, MaxMTU int
	// Width and Speed are active_width and active_speed codes; see
	// WidthLanes and SpeedGbps.
	Width, Speed int
	// LID is the port's local identifier (0 on Ethernet).
	LID int
	// GIDTableLen is the size of the GID table; GIDs holds its non-zero
	// entries by index.
	GIDTableLen int
	GIDs        map[int]GID
}

// Device is one RDMA device.
type Device struct {
	// Name is the kernel device name, e.g. "mlx5_0".
	Name string
	// FirmwareVersion is fw_ver from ibv_query_device.
	FirmwareVersion string
	// NodeGUID is the device's node GUID as printed by ibv_devinfo.
	NodeGUID string
	// VendorID and PartID identify the adapter (0x02c9 Mellanox/NVIDIA).
	VendorID, PartID uint32
	Ports            []Port
}

// Port states (enum ibv_port_state).
const (
	PortDown   = 1
	PortInit   = 2
	PortArmed  = 3
	PortActive = 4
)

// Link layers.
const (
	LinkLayerUnspecified = 0
	LinkLayerInfiniBand  = 1
	LinkLayerEthernet    = 2
)

// StateName returns ibstat's word for a port state ("Active", "Down", ...).
func StateName(s int) string {
	switch s {
	case 0:
		return "Nop"
	case PortDown:
		return "Down"
	case PortInit:
		return "Initializing"
	case PortArmed:
		return "Armed"
	case PortActive:
		return "Active"
	case 5:
		return "ActiveDefer"
	}
	return fmt.Sprintf("State%d", s)
}

// PhysStateName returns ibstat's word for a physical port state.
func PhysStateName(s int) string {
	switch s {
	case 1:
		return "Sleep"
	case 2:
		return "Polling"
	case 3:
		return "Disabled"
	case 4:
		return "PortConfigurationTraining"
	case 5:
		return "LinkUp"
	case 6:
		return "LinkErrorRecovery"
	case 7:
		return "PhyTest"
	}
	return fmt.Sprintf("PhysState%d", s)
}

// LinkLayerName returns "InfiniBand", "Ethernet" or "Unspecified".
func LinkLayerName(l int) string {
	switch l {
	case LinkLayerInfiniBand:
		return "InfiniBand"
	case LinkLayerEthernet:
		return "Ethernet"
	}
	return "Unspecified"
}

// MTUBytes converts an ibv_mtu value (1..5) to bytes (256..4096); 0 for
// anything else.
func MTUBytes(m int) int {
	if m < 1 || m > 5 {
		return 0
	}
	return 128 << m
}

// MTUEnum converts a size in bytes to the ibv_mtu value, 0 if not an MTU.
func MTUEnum(bytes int) int {
	for m := 1; m <= 5; m++ {
		if MTUBytes(m) == bytes {
			return m
		}
	}
	return 0
}

// WidthLanes converts active_width (1, 2, 4, 8, 16) to lanes (1X, 4X, 8X,
// 12X, 2X); 0 if unknown.
func WidthLanes(w int) int {
	switch w {
	case 1:
		return 1
	case 2:
		return 4
	case 4:
		return 8
	case 8:
		return 12
	case 16:
		return 2
	}
	return 0
}

// SpeedGbps converts active_speed to the per-lane data rate in Gb/s as
// ibstat rounds it (SDR 2.5, DDR 5, QDR 10, FDR10 10, FDR 14, EDR 25, HDR
// 50, NDR 100, XDR 200); 0 if unknown.
func SpeedGbps(s int) float64 {
	switch s {
	case 1:
		return 2.5
	case 2:
		return 5
	case 4:
		return 10
	case 8:
		return 10
	case 16:
		return 14
	case 32:
		return 25
	case 64:
		return 50
	case 128:
		return 100
	case 256:
		return 200
	}
	return 0
}

// RateGbps is the port's active rate: lanes times per-lane speed (an NDR 4X
// port gives 400); 0 when either is unknown.
func (p Port) RateGbps() float64 { return float64(WidthLanes(p.Width)) * SpeedGbps(p.Speed) }

// Error is a failed verbs call.
type Error struct {
	Op  string
	Msg string
}

func (e *Error) Error() string { return "verbs: " + e.Op + ": " + e.Msg }
