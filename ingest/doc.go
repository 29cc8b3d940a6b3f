// Package ingest reads what real machines print.
//
// Parsers turn nccl-tests output (text and -J JSON), NCCL_DEBUG=INFO logs,
// nvidia-smi topo -m, NCCL topology XML (dumps, and the bare-<pci> files
// cloud images ship), NCCL graph files, p2pBandwidthLatencyTest,
// nvbandwidth, perftest, ibstat/ibstatus, published free-text statements
// and collsim hwbench JSON into Artifacts: measurement records (Run,
// Matrix, PerftestResult), topologies (TopoInfo), channel graphs
// (model.ChannelGraph), findings, and notes on values kept but distrusted.
// ParseFile and Parse detect the format from the content, never from the
// file name; ParseFileWith adds a progress callback. nccl-tests text and
// NCCL logs are parsed line by line as they are read, so memory follows
// the records kept, not the input. LoadTopology turns a topology file into
// a model.NodeSpec, LoadGraph reads a graph file.
//
// ingest imports only model of collsim: it never imports sim, calibrate or
// hwbench (hwbench JSON is one of its input formats), so every reader of
// measurements (calibrate, inspect, predict --topo) shares one parser. Its
// error messages keep the "calibrate:" prefix they have always had, so that
// scripts matching them keep working.
package ingest
