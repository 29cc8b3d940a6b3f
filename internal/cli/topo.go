package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
	"github.com/urfave/cli/v2"
)

func topoCommand(e *env) *cli.Command {
	flags := append(clusterFlags(),
		&cli.StringFlag{Name: "from", Usage: "print the node collsim builds from a nvidia-smi topo -m or NCCL XML `FILE` (same as --topo)"},
		&cli.IntFlag{Name: "show-node", Usage: "which node's matrix to print", Value: 0},
	)
	return &cli.Command{
		Name:      "topo",
		Usage:     "print the resolved topology: a nvidia-smi topo -m style matrix and NCCL_DEBUG-style channel and transport lines",
		UsageText: "collsim topo [--node NAME --nodes N ... | --from FILE --gpu MODEL]",
		Flags:     flags,
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return badInputf("topo takes no arguments, got %q", c.Args().First())
			}
			if f := c.String("from"); f != "" {
				if c.String("topo") != "" {
					return badInputf("give either --from or --topo, not both")
				}
				if err := c.Set("topo", f); err != nil {
					return err
				}
			}
			envr, err := buildEnv(c)
			if err != nil {
				return err
			}
			node := c.Int("show-node")
			if node < 0 || node >= envr.Cluster.NumNodes() {
				return badInputf("--show-node %d: the cluster has nodes 0..%d", node, envr.Cluster.NumNodes()-1)
			}
			var notes []string
			if c.String("topo") != "" {
				if _, notes, err = topoNode(c); err != nil {
					return err
				}
			}
			if err := writeTopo(e.stdout, envr, node); err != nil {
				return err
			}
			for _, n := range notes {
				fmt.Fprintf(e.stdout, "# Note: %s.\n", strings.TrimSuffix(n, "."))
			}
			return nil
		},
	}
}

func writeTopo(w io.Writer, e *sim.Env, node int) error {
	c := e.Cluster
	r := e.Res
	fmt.Fprintf(w, "# collsim %s topology: %s\n", Version, c.Topo.Describe())
	if c.Fabric != nil {
		fmt.Fprintf(w, "# fabric: %s\n", c.Fabric.Describe())
	}
	fmt.Fprintf(w, "# node%d as nvidia-smi topo -m would print it\n", node)
	labels, cells, aff := r.Matrix(node)
	fmt.Fprintf(w, "%-8s", "")
	for _, l := range labels {
		fmt.Fprintf(w, "%-8s", l)
	}
	fmt.Fprintf(w, "%s\n", "NUMA Affinity")
	for i, l := range labels {
		fmt.Fprintf(w, "%-8s", l)
		for _, v := range cells[i] {
			fmt.Fprintf(w, "%-8s", v)
		}
		if i < len(aff) {
			fmt.Fprintf(w, "%s", aff[i])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Legend:")
	fmt.Fprintln(w, "  X = Self, NV# = # bonded NVLinks, PIX = at most one PCIe bridge, PXB = several PCIe bridges,")
	fmt.Fprintln(w, "  PHB = a PCIe host bridge, NODE = between host bridges of one NUMA node, SYS = across sockets")
	ne := c.Nodes[node]
	if len(ne.NICs) > 0 {
		fmt.Fprintln(w, "\nNIC Legend:")
		for i, nic := range ne.NICs {
			info := c.Topo.Elem(nic).NIC
			fmt.Fprintf(w, "  NIC%d: %s (%s %s)\n", i, info.Device, info.Speed.Name, info.Kind)
		}
	}
	fmt.Fprintf(w, "\n# NCCL's view as collsim models it (P2P level %s, GDR level %s)\n", r.P2PLevel, r.GDRLevel)
	host := fmt.Sprintf("node%d:0:0 [0] NCCL INFO ", node)
	for _, l := range r.NCCLLog(e.Tuner) {
		fmt.Fprintln(w, host+l)
	}
	s := r.Summarize(e.Tuner.Graphs.Ring)
	fmt.Fprintf(w, "\n# Transports: %s.\n", s)
	for _, reason := range s.Reasons {
		fmt.Fprintf(w, "# Why: %s\n", reason)
	}
	return nil
}

// transportSummary is the one-paragraph summary under a prediction table.
func transportSummary(e *sim.Env, pts []sim.Point) string {
	s := e.Res.Summarize(e.Tuner.Graphs.Ring)
	out := "Transports: " + s.String() + "."
	if len(s.Reasons) > 0 {
		out += " Why: " + strings.Join(s.Reasons, "; ") + "."
	}
	if n := len(pts); n > 0 && pts[n-1].Bottleneck != "" {
		last := pts[n-1]
		where := fmt.Sprintf("%s (%s", last.BottleneckClass, last.Bottleneck)
		if last.BottleneckClass == "channel ceiling" {
			where = last.Bottleneck + " ("
		} else if len(last.Utilisation) > 0 {
			where += fmt.Sprintf(", %.0f%% busy; ", 100*last.Utilisation[0].Busy)
		} else {
			where += "; "
		}
		out += fmt.Sprintf(" Bottleneck at %d B: %s%s/%s on %d channels).",
			last.Size, where, last.Choice.Algo, last.Choice.Proto, last.Choice.Channels)
	}
	return out + inertSettings(e.Cluster)
}

// inertSettings names settings of the cluster that change nothing on it,
// so that a design is not read as having them: SHARP asked for where NCCL
// would not run CollNet, RoCE settings on NICs that are not RoCE.
func inertSettings(c *model.Cluster) string {
	var out string
	switch ok, why := c.CollNetAble(model.AlgoCollNetChain); {
	case c.Knobs.CollNetEnable && !ok:
		out += " NCCL_COLLNET_ENABLE=1 runs no CollNet here: " + why + "."
	case !c.Knobs.CollNetEnable && c.Fabric.SHARP() && c.Fabric.LinkLayer != model.NICIB:
		out += " The fabric's sharp: true changes nothing: SHARP runs on InfiniBand Quantum switches only."
	}
	if st := c.Knobs.IBDisableInert; st != "" {
		out += fmt.Sprintf(" NCCL_IB_DISABLE=1 changes nothing here: the %s stack is a network plugin, which NCCL loads and uses whatever NCCL_IB_DISABLE says (it turns off NCCL's own NET/IB).", st)
	}
	if n := c.Spec.Node.NICs; n.RoCE != nil && n.Kind != "" && n.Kind != "roce" {
		out += fmt.Sprintf(" The nics.roce settings change nothing: the NICs are %s, not RoCE.", n.Kind)
	}
	return out
}
