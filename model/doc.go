// Package model describes the hardware a collective runs on and how NCCL
// would use it.
//
// It holds the units (Bytes, GBps, Time in picoseconds), the hardware catalog
// (GPUs, NVLink and NVSwitch generations, PCIe generations, NICs and CPUs),
// declarative node and cluster specifications, the topology graph built from
// them, the fabric between nodes (single switch, fat-tree of 2 or 3 tiers,
// rail-optimized, rail-only, planes, degraded links) with a deterministic
// route for every flow (static D-mod-K, seeded ECMP, adaptive bundles), and the NCCL-faithful resolution of paths and transports (path types
// NVL/NVB/PIX/PXB/PHB/SYS/NET, P2P, SHM, GPUDirect RDMA, PXN, NET/IB versus
// NET/Socket), channel counts and the NCCL tuning model used to select an
// algorithm and protocol.
//
// model imports nothing else from collsim. sim executes schedules over the
// topology built here; scenarios turns YAML and presets into the specs defined
// here; calibrate and hwbench produce topologies and parameters in these terms.
package model
