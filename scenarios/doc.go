// Package scenarios turns what a user writes (cluster YAML files, command-line
// overrides, built-in node templates, training workloads, what-if sweeps and
// price catalogs) into plain data for the model.
//
// It holds the node templates listed by `collsim presets`, the cluster YAML
// schema (errors carry file:line:column), the flag overrides (--node,
// --nodes, --gpus-per-node, --gpu, --nics, --set) and the embedded default
// scenario. Workload describes a data-parallel training step (DDP or FSDP
// gradient and parameter collectives, compute time, overlap) and turns
// predicted collective times into step times; Sweep expands a grid of
// designs around a base cluster; PriceCatalog holds the prices of GPUs,
// NICs, switch ports, servers and energy, with an embedded catalog of
// EXAMPLE prices. Pricing a design and timing its collectives is the
// caller's job (package study, with sim). scenarios imports model only.
package scenarios
