package sim_test

import (
	"context"
	"fmt"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
)

// Two 1 MB transfers share a 100 GB/s link, then a 2 us reduction runs: the
// transfers take 2 MB / 100 GB/s = 20 us together, 22 us in all.
func ExampleExecute() {
	link := []model.LinkID{0}
	var s sim.Schedule
	a := s.Add(sim.Op{Kind: sim.OpTransfer, Route: link, Bytes: 1e6})
	b := s.Add(sim.Op{Kind: sim.OpTransfer, Route: link, Bytes: 1e6})
	s.Add(sim.Op{Kind: sim.OpDelay, Latency: 2 * model.Microsecond, Deps: []sim.OpID{a, b}})

	capacity := []float64{model.GBps(100).BytesPerPs()}
	res, err := sim.Execute(context.Background(), &s, capacity, sim.ExecOptions{RecordOpTimes: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("makespan:", res.Makespan)
	fmt.Println("transfers end:", res.OpEnd[a], res.OpEnd[b])
	fmt.Println("link bytes:", res.LinkBytes[0], "busy:", res.LinkBusy[0])
	// Output:
	// makespan: 22us
	// transfers end: 20us 20us
	// link bytes: 2e+06 busy: 20us
}
