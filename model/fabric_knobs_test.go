package model

import (
	"strings"
	"testing"
)

// TestFabricKnobs: the NCCL variables that change the wire, as NCCL reads
// them (v2.30.7 net_ib/init.cc, connect.cc, common.cc; init.cc for
// CollNet): NCCL_IB_ADAPTIVE_ROUTING=0 on an adaptive InfiniBand fabric
// routes statically and leaves RoCE alone; NCCL_IB_SPLIT_DATA_ON_QPS
// defaults to 1 in 2.18-2.19 and 0 from 2.20; NCCL_COLLNET_ENABLE takes
// only 1 as on, and NCCL_ALGO=CollNetDirect alone does not enable CollNet;
// CollNet needs a SHARP fabric, 2+ nodes and an NVSwitch for Direct.
func TestFabricKnobs(t *testing.T) {
	f := FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Routing: "adaptive", SHARP: true}
	ib := buildFab(t, ClusterSpec{Node: fabNode(2, "NDR", "ib"), Nodes: 4, Fabric: f})
	if ib.Fabric.Plan.Routing != RoutingAdaptive {
		t.Errorf("IB adaptive fabric routes %s by default", ib.Fabric.Plan.Routing)
	}
	off := buildFab(t, ClusterSpec{Node: fabNode(2, "NDR", "ib"), Nodes: 4, Fabric: f, Env: map[string]string{"NCCL_IB_ADAPTIVE_ROUTING": "0"}})
	if off.Fabric.Plan.Routing != RoutingStatic || !strings.Contains(off.Fabric.Describe(), "static") {
		t.Errorf("NCCL_IB_ADAPTIVE_ROUTING=0 on IB: %s", off.Fabric.Describe())
	}
	roce := buildFab(t, ClusterSpec{Node: fabNode(2, "400G", "roce"), Nodes: 4, Fabric: f, Env: map[string]string{"NCCL_IB_ADAPTIVE_ROUTING": "0"}})
	if roce.Fabric.Plan.Routing != RoutingAdaptive {
		t.Errorf("NCCL_IB_ADAPTIVE_ROUTING=0 changed a RoCE fabric to %s", roce.Fabric.Plan.Routing)
	}
	k, err := ParseKnobs(nil)
	if err != nil {
		t.Fatal(err)
	}
	if k.IBQPsPerConn != 1 || k.SplitDataOnQPs(Version{2, 20}) || !k.SplitDataOnQPs(Version{2, 19}) || k.SplitDataOnQPs(Version{2, 17}) {
		t.Errorf("QP defaults: %d QPs, split %v/%v/%v at 2.20/2.19/2.17", k.IBQPsPerConn, k.SplitDataOnQPs(Version{2, 20}), k.SplitDataOnQPs(Version{2, 19}), k.SplitDataOnQPs(Version{2, 17}))
	}
	if _, err := ParseKnobs(map[string]string{"NCCL_IB_QPS_PER_CONNECTION": "0"}); err == nil {
		t.Errorf("NCCL_IB_QPS_PER_CONNECTION=0 accepted")
	}
	for v, want := range map[string]bool{"1": true, "0": false, "2": false} {
		k, err := ParseKnobs(map[string]string{"NCCL_COLLNET_ENABLE": v})
		if err != nil || k.CollNetEnable != want || k.Algos[AlgoCollNetDirect] != want {
			t.Errorf("NCCL_COLLNET_ENABLE=%s: on %v, want %v (%v)", v, k.CollNetEnable, want, err)
		}
	}
	k, _ = ParseKnobs(map[string]string{"NCCL_ALGO": "CollNetDirect"})
	if k.Algos[AlgoCollNetDirect] {
		t.Errorf("NCCL_ALGO=CollNetDirect enabled CollNet without NCCL_COLLNET_ENABLE")
	}
	on := map[string]string{"NCCL_COLLNET_ENABLE": "1"}
	if ok, why := buildFab(t, ClusterSpec{Node: fabNode(2, "NDR", "ib"), Nodes: 4, Fabric: f, Env: on}).CollNetAble(AlgoCollNetDirect); !ok {
		t.Errorf("CollNetDirect not able on a SHARP IB fabric: %s", why)
	}
	plain := f
	plain.SHARP = false
	if ok, _ := buildFab(t, ClusterSpec{Node: fabNode(2, "NDR", "ib"), Nodes: 4, Fabric: plain, Env: on}).CollNetAble(AlgoCollNetChain); ok {
		t.Errorf("CollNet able without sharp: true")
	}
	if ok, _ := buildFab(t, ClusterSpec{Node: fabNode(2, "400G", "roce"), Nodes: 4, Fabric: f, Env: on}).CollNetAble(AlgoCollNetChain); ok {
		t.Errorf("CollNet able on RoCE")
	}
}
