// Package study answers the questions asked of whole cluster designs:
// which of several designs runs a collective faster (Compare), how one
// design scales with its node count (Scale), and which designs of a
// what-if grid are worth their price (Sweep), for a collective at one size
// or for a data-parallel training step (WorkloadStep). What a design costs
// at a price catalog (Price, with the switch ports of its fabric,
// FabricPorts) and the Pareto frontier of cost against throughput
// (ParetoFrontier) are computed here too.
//
// Every entry point takes a context.Context and a plain option struct and
// returns a result to print; it reads no flags and writes nothing. Designs
// are modelled in parallel on up to GOMAXPROCS goroutines; when several
// fail, the error is that of the first in the order given, so errors do
// not depend on scheduling. Cluster specs come resolved (scenarios
// resolves YAML files, presets and overrides); the simulation is sim's.
package study
