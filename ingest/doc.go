// Package ingest reads what real machines print.
//
// Parsers turn nccl-tests output (text and -J JSON), NCCL_DEBUG=INFO logs,
// nvidia-smi topo -m, NCCL topology XML, p2pBandwidthLatencyTest, nvbandwidth,
// perftest, ibstat/ibstatus, published free-text statements and collsim
// hwbench JSON into Artifacts: measurement records (Run, Matrix,
// PerftestResult), topologies (TopoInfo) and findings. ParseFile and Parse
// detect the format from the content, never from the file name;
// LoadTopology turns a topology file into a model.NodeSpec.
//
// ingest imports only model of collsim: it never imports sim, calibrate or
// hwbench (hwbench JSON is one of its input formats), so every reader of
// measurements (calibrate, inspect, predict --topo) shares one parser. Its
// error messages keep the "calibrate:" prefix they have always had, so that
// scripts matching them keep working.
package ingest
