package model

import (
	"fmt"
	"strings"
)

// NetStack is the network plugin (or built-in transport) NCCL moves
// inter-node traffic with. The NIC kind says what the wire is; the stack
// says which software drives it, and so which achieved rate and per-step
// latency apply (a RoCE NIC driven by NCCL's own NET/IB and by GCP's gIB
// plugin are one kind, two stacks).
type NetStack string

// Network stacks.
const (
	// StackIBVerbs is NCCL's built-in NET/IB over InfiniBand.
	StackIBVerbs NetStack = "ib-verbs"
	// StackRoCE is NCCL's built-in NET/IB over RoCEv2.
	StackRoCE NetStack = "roce"
	// StackEFAOFI is aws-ofi-nccl (NET/Libfabric) over AWS EFA.
	StackEFAOFI NetStack = "efa-ofi"
	// StackGIB is GCP's gIB plugin (an NET/IB build) over RoCEv2 on
	// A3 Ultra / A4 machines.
	StackGIB NetStack = "gib"
	// StackTCPX is GPUDirect-TCPX (A3 High): TCP whose payload moves
	// between GPU memory and the NIC without a host copy.
	StackTCPX NetStack = "tcpx"
	// StackTCPXO is GPUDirect-TCPXO, the "FasTrak" plugin of A3 Mega.
	StackTCPXO NetStack = "tcpxo"
	// StackSocket is NCCL's built-in NET/Socket: TCP staged through host
	// memory, one stream per channel.
	StackSocket NetStack = "socket"
)

// stackInfo is what collsim knows of a stack: the NIC kind it runs on and
// the name NCCL logs for it ("NET/<name>").
type stackInfo struct {
	kind NICKind
	net  string
}

var stacks = map[NetStack]stackInfo{
	StackIBVerbs: {NICIB, "IB"},
	StackRoCE:    {NICRoCE, "IB"},
	StackEFAOFI:  {NICEFA, "Libfabric"},
	StackGIB:     {NICRoCE, "gIB"},
	StackTCPX:    {NICTCP, "GPUDirectTCPX"},
	StackTCPXO:   {NICTCP, "FasTrak"},
	StackSocket:  {NICTCP, "Socket"},
}

// ReadsIBDisable reports whether NCCL_IB_DISABLE turns the stack off:
// NCCL's built-in NET/IB over InfiniBand or RoCE, and gIB, an NET/IB
// build (assumption: it keeps NET/IB's IB_DISABLE check). The external
// plugins aws-ofi-nccl and GPUDirect-TCPX/TCPXO do not read it: NCCL loads
// the plugin first and uses it whatever the variable says (NCCL's
// environment documentation: NCCL_IB_DISABLE disables "the IB/RoCE
// transport"). NET/Socket is what the variable falls back to.
func (s NetStack) ReadsIBDisable() bool {
	return s == StackIBVerbs || s == StackRoCE || s == StackGIB
}

// NetStacks lists the known stacks in a fixed order (sim indexes its
// per-stack terms by it).
func NetStacks() []NetStack {
	return []NetStack{StackIBVerbs, StackRoCE, StackEFAOFI, StackGIB, StackTCPX, StackTCPXO, StackSocket}
}

// StackIndex is s's position in NetStacks, or -1 for an unknown stack.
func StackIndex(s NetStack) int {
	for i, k := range NetStacks() {
		if k == s {
			return i
		}
	}
	return -1
}

func stackList() string {
	names := make([]string, 0, len(stacks))
	for _, s := range NetStacks() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// ParseNetStack reads a stack name; an unknown one is an error listing the
// known names.
func ParseNetStack(s string) (NetStack, error) {
	k := NetStack(strings.ToLower(strings.TrimSpace(s)))
	if _, ok := stacks[k]; !ok {
		return "", fmt.Errorf("unknown network stack %q (known: %s)", s, stackList())
	}
	return k, nil
}

// DefaultStack is the stack a NIC kind gets when none is named: NCCL's
// built-in transport for it, or aws-ofi-nccl for EFA (which has no
// built-in one).
func DefaultStack(k NICKind) NetStack {
	switch k {
	case NICRoCE:
		return StackRoCE
	case NICEFA:
		return StackEFAOFI
	case NICTCP:
		return StackSocket
	}
	return StackIBVerbs
}

// Kind is the NIC kind the stack runs on.
func (s NetStack) Kind() NICKind { return stacks[s].kind }

// NCCLNet is the network name NCCL reports for the stack ("IB", "Socket",
// a plugin's name).
func (s NetStack) NCCLNet() string { return stacks[s].net }

// Native reports whether s is its kind's default stack, whose achieved
// rate and latency are the NIC kind's own terms.
func (s NetStack) Native() bool { return s != "" && DefaultStack(s.Kind()) == s }

// GPUDirect reports whether the stack can move payload between GPU memory
// and the NIC without staging it in host memory: RDMA stacks through
// GPUDirect RDMA, TCPX/TCPXO through device-memory TCP. NET/Socket never
// can.
func (s NetStack) GPUDirect() bool { return s != StackSocket && s != "" }

// ResolveStack returns the stack named (or the kind's default when name is
// empty) and checks that it runs on that NIC kind.
func ResolveStack(name string, k NICKind) (NetStack, error) {
	if strings.TrimSpace(name) == "" {
		return DefaultStack(k), nil
	}
	s, err := ParseNetStack(name)
	if err != nil {
		return "", err
	}
	if s.Kind() != k {
		return "", fmt.Errorf("network stack %s runs on %s NICs, not %s", s, s.Kind(), k)
	}
	return s, nil
}

// EFAPlatformLatencyUs is the network latency aws-ofi-nccl reports to NCCL
// (props->latency, which NCCL >= 2.18 adds to its NET hop latency, twice
// for Simple) by EC2 platform, as src/platform-aws.cpp sets it: 75 us on
// p4d/p4de and p5/p5e (since v1.7.0-aws, "Variable internode latency
// reported to NCCL"), 150 on p3dn, 35 on p5en and p6 (v1.16.0, "based on
// empirical search"). These are NCCL tuning inputs chosen empirically,
// not measured wire latencies. The second result is false for a platform
// the table lacks.
func EFAPlatformLatencyUs(platform string) (float64, bool) {
	p := strings.ToLower(strings.TrimSpace(platform))
	switch {
	case strings.HasPrefix(p, "p5en"), strings.HasPrefix(p, "p6"):
		return 35, true
	case strings.HasPrefix(p, "p4d"), strings.HasPrefix(p, "p5"):
		return 75, true
	case strings.HasPrefix(p, "p3dn"):
		return 150, true
	}
	return 0, false
}
