// Package sim predicts how long a collective takes on a model.Cluster.
//
// Schedules are data: an algorithm (ring, double binary tree, NVLS, direct)
// builds a DAG of transfers and delays per channel and pipeline step; the
// discrete-event engine executes any DAG over a flow-level network in which
// concurrent transfers share each link max-min fairly. An analytic engine
// evaluates NCCL's latency + size/bandwidth cost model on the same terms, as a
// fast path for sweeps and as a cross-check of the simulator.
//
// sim imports model only.
package sim
