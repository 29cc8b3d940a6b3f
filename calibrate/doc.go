// Package calibrate reads what real machines print and holds the model to it.
//
// Parsers turn nccl-tests output (text and -J JSON), NCCL_DEBUG=INFO logs,
// nvidia-smi topo -m, NCCL topology XML, p2pBandwidthLatencyTest, nvbandwidth,
// perftest, ibstat/ibstatus and collsim hwbench JSON into Artifacts: measurement
// records, topologies and findings. Fitting (gonum/optimize, gonum/stat) turns
// records into a calibration profile, and the gap analysis compares model and
// measurement point by point and names likely causes.
//
// calibrate imports model and sim; it never imports hwbench: hwbench JSON is
// one of its input formats, so fitting works on a laptop.
package calibrate
