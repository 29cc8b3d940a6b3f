package cli

import (
	"fmt"
	"strings"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
	"github.com/urfave/cli/v2"
)

// clusterFlags are the options every command that models a cluster takes.
func clusterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "cluster", Usage: "cluster YAML `FILE` (see README: YAML schema)"},
		&cli.StringFlag{Name: "node", Usage: "node template `NAME` (collsim presets lists them)"},
		&cli.StringFlag{Name: "topo", Usage: "node layout from a nvidia-smi topo -m or NCCL topology XML `FILE`"},
		&cli.IntFlag{Name: "nodes", Usage: "number of nodes `N`"},
		&cli.IntFlag{Name: "gpus-per-node", Usage: "use only the first `G` GPUs of each node"},
		&cli.StringFlag{Name: "gpu", Usage: "GPU `MODEL` (e.g. H100-SXM, L40S)"},
		&cli.StringFlag{Name: "nics", Usage: "NICs per node as `COUNTxSPEED-KIND` (4x200G-ib, 2x100G-roce, 1x10G-tcp, 4x100G-efa)"},
		&cli.StringFlag{Name: "net-stack", Usage: "network stack `NAME` driving the NICs: ib-verbs, roce, efa-ofi, gib, tcpx, tcpxo, socket (default: the NIC kind's own)"},
		&cli.StringSliceFlag{Name: "set", Usage: "NCCL variable `NCCL_X=VALUE` (repeatable)"},
		&cli.StringFlag{Name: "launch", Usage: "how processes drive the GPUs, `MODE`: process-per-gpu (mpirun -np N, torchrun) or single-process (one process per node drives all its GPUs, nccl-tests -g G) (default: the cluster file's run.launch; calibrate and validate take single-process when the measured files say nGpus > 1; else process-per-gpu)"},
		&cli.BoolFlag{Name: "vm", Usage: "the hosts are virtual machines (GPUs and NICs passed through): every call pays vm.lat.us more (default: the cluster file's run.vm)"},
		&cli.StringFlag{Name: "nccl-version", Usage: "NCCL release whose defaults to model, e.g. `2.21` (default: newest)"},
		&cli.Uint64Flag{Name: "seed", Usage: "seed `N` of the fabric's randomness (ECMP hashing); the same seed gives the same result"},
		profileFlag(),
	}
}

// profileFlag is --profile: a calibration profile for the model.
func profileFlag() cli.Flag {
	return &cli.StringFlag{Name: "profile", Usage: "calibration profile `FILE` from collsim calibrate"}
}

// clusterSpec builds the ClusterSpec the flags describe.
func clusterSpec(c *cli.Context) (model.ClusterSpec, error) {
	o := scenarios.Overrides{
		Cluster:     c.String("cluster"),
		Node:        c.String("node"),
		Nodes:       c.Int("nodes"),
		GPUsPerNode: c.Int("gpus-per-node"),
		GPU:         c.String("gpu"),
		NICs:        c.String("nics"),
		NetStack:    c.String("net-stack"),
		Set:         c.StringSlice("set"),
		NCCLVersion: c.String("nccl-version"),
		Launch:      c.String("launch"),
	}
	if c.IsSet("vm") {
		vm := c.Bool("vm")
		o.VM = &vm
	}
	if v := c.String("launch"); v != "" {
		if _, err := model.ParseLaunch(v); err != nil {
			return model.ClusterSpec{}, badInputf("--launch: %w", err)
		}
	}
	var given []string
	for _, f := range []string{"node", "topo", "cluster"} {
		if c.String(f) != "" {
			given = append(given, "--"+f)
		}
	}
	if len(given) > 1 {
		// Each describes the whole node: one would silently override the other.
		return model.ClusterSpec{}, badInputf("use one of --node, --topo, --cluster (got %s)", strings.Join(given, " and "))
	}
	if v := c.String("nccl-version"); v != "" {
		if _, err := model.ParseVersion(v); err != nil {
			return model.ClusterSpec{}, badInputf("--nccl-version: %w", err)
		}
	}
	if c.IsSet("nodes") && c.Int("nodes") <= 0 {
		return model.ClusterSpec{}, badInputf("--nodes must be at least 1, got %d", c.Int("nodes"))
	}
	if c.IsSet("gpus-per-node") && c.Int("gpus-per-node") <= 0 {
		return model.ClusterSpec{}, badInputf("--gpus-per-node must be at least 1, got %d", c.Int("gpus-per-node"))
	}
	if f := c.String("topo"); f != "" {
		ns, _, err := topoNode(c)
		if err != nil {
			return model.ClusterSpec{}, err
		}
		if cnt, _, _, err := scenarios.ParseNICs(c.String("nics")); err == nil && cnt > 0 {
			// --nics with a count is applied by topoNode, not again by Resolve.
			o.NICs = ""
		}
		o.Topo = &ns
	}
	spec, err := o.Resolve()
	if err != nil {
		return spec, badInput(err)
	}
	spec.Seed = c.Uint64("seed")
	return spec, nil
}

// topoNode builds the node of --topo FILE with --gpu and --nics, and says
// what it read from the file and what it assumed (the file's notes first).
func topoNode(c *cli.Context) (model.NodeSpec, []string, error) {
	f := c.String("topo")
	ti, err := ingest.LoadTopology(f)
	if err != nil {
		return model.NodeSpec{}, nil, badInput(err)
	}
	gpu := c.String("gpu")
	if gpu == "" {
		gpu = ti.Node.GPU
	}
	if gpu == "" {
		return model.NodeSpec{}, nil, badInputf("%s does not name the GPU model: add --gpu MODEL", f)
	}
	count, speed, kind := 0, "", model.NICKind("")
	if n := c.String("nics"); n != "" {
		var err error
		if count, speed, kind, err = scenarios.ParseNICs(n); err != nil {
			return model.NodeSpec{}, nil, badInputf("--nics: %w", err)
		}
	}
	ns, assumed, err := ti.NodeSpecAssuming(gpu, speed, kind)
	if err != nil {
		return model.NodeSpec{}, nil, badInputf("%s: %w", f, err)
	}
	if count > 0 {
		ns = ns.WithNICs(count, speed, kind)
	}
	return ns, append(append([]string(nil), ti.Notes...), assumed...), nil
}

// buildEnv builds the cluster and the simulation environment.
func buildEnv(c *cli.Context) (*sim.Env, error) {
	spec, err := clusterSpec(c)
	if err != nil {
		return nil, err
	}
	return envFromSpec(c, spec)
}

// envFromSpec builds the Env of spec with the --profile parameters.
func envFromSpec(c *cli.Context, spec model.ClusterSpec) (*sim.Env, error) {
	cl, err := spec.Build()
	if err != nil {
		return nil, badInput(err)
	}
	params, err := profileParams(c.String("profile"))
	if err != nil {
		return nil, err
	}
	env, err := sim.NewEnv(cl, params)
	if err != nil {
		return nil, badInput(err)
	}
	return env, nil
}

// profileParams returns the model parameters: the defaults, with the
// calibration profile at path applied when path is not empty.
func profileParams(path string) (sim.Params, error) {
	params := sim.DefaultParams()
	if path == "" {
		return params, nil
	}
	prof, err := calibrate.LoadProfile(path)
	if err != nil {
		return params, badInput(err)
	}
	if params, err = prof.Apply(params); err != nil {
		return params, badInput(fmt.Errorf("%s: %w", path, err))
	}
	return params, nil
}

// profileJSON says which calibration profile a prediction used and which
// of its terms reach the cluster predicted.
type profileJSON struct {
	File          string   `json:"file"`
	FittedOn      string   `json:"fitted_on"`
	Applied       []string `json:"terms_applied"`
	NotApplicable []string `json:"terms_not_applicable,omitempty"`
}

// profileInfo describes the --profile at path for cluster cl; nil when
// path is empty.
func profileInfo(path string, cl *model.Cluster) (*profileJSON, error) {
	if path == "" {
		return nil, nil
	}
	prof, err := calibrate.LoadProfile(path)
	if err != nil {
		return nil, badInput(err)
	}
	applies, inert := prof.Applies(cl)
	// terms_applied is a list even when empty: none applies is an answer.
	return &profileJSON{File: path, FittedOn: prof.Cluster, Applied: append([]string{}, applies...), NotApplicable: inert}, nil
}

// line is the profile's line in a table's header (writeComments adds
// the "# ").
func (p *profileJSON) line() string {
	n := len(p.Applied) + len(p.NotApplicable)
	var b strings.Builder
	fmt.Fprintf(&b, "Profile: %s, fitted on %s: ", p.File, p.FittedOn)
	if len(p.Applied) == 0 {
		fmt.Fprintf(&b, "none of its %d term(s) applies to this cluster (%s), so the prediction is the defaults'", n, strings.Join(p.NotApplicable, ", "))
		return b.String()
	}
	fmt.Fprintf(&b, "%d of its %d term(s) applied (%s)", len(p.Applied), n, strings.Join(p.Applied, ", "))
	if len(p.NotApplicable) > 0 {
		fmt.Fprintf(&b, "; not applicable to this cluster: %s", strings.Join(p.NotApplicable, ", "))
	}
	return b.String()
}

// envForSpec builds a cluster and its simulation environment from a spec.
func envForSpec(spec model.ClusterSpec, params sim.Params) (*sim.Env, error) {
	cl, err := spec.Build()
	if err != nil {
		return nil, badInput(err)
	}
	env, err := sim.NewEnv(cl, params)
	if err != nil {
		return nil, badInput(err)
	}
	return env, nil
}
