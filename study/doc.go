// Package study answers the questions asked of whole cluster designs:
// which of several designs runs a collective faster (Compare), how one
// design scales with its node count (Scale), and which designs of a
// what-if grid are worth their price (Sweep, in slices joined by
// MergeSweep; RankCheck compares the engines' rankings), for a collective
// at one size or for a training step (TrainingStep: the layout of TP, PP,
// EP, CP and ZeRO data parallelism on the cluster, each collective on its
// communicator's sub-topology, the overlap timeline, memory and I/O;
// StepTerms lists its sources). What a design costs
// at a price catalog (Price, with the switch ports of its fabric,
// FabricPorts) and the Pareto frontier of cost against throughput
// (ParetoFrontier) are computed here too.
//
// Every entry point takes a context.Context and a plain option struct and
// returns a result to print; it reads no flags and writes nothing. Designs
// are modelled in parallel on up to GOMAXPROCS goroutines (SweepOptions.
// Workers bounds a sweep's); results do not depend on it; when several
// fail, the error is that of the first in the order given, so errors do
// not depend on scheduling. Cluster specs come resolved (scenarios
// resolves YAML files, presets and overrides); the simulation is sim's.
package study
