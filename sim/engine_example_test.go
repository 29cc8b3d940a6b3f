package sim_test

import (
	"context"
	"fmt"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
)

// An engine runs events in time order; late events run after every normal
// event of the same picosecond, which is how the network batches its rate
// recomputations.
func ExampleEngine() {
	e := sim.NewEngine()
	e.ScheduleLate(10*model.Nanosecond, func(now model.Time) error {
		fmt.Println(now, "late: after everything else at 10ns")
		return nil
	})
	e.Schedule(10*model.Nanosecond, func(now model.Time) error {
		fmt.Println(now, "normal")
		e.Schedule(now+5*model.Nanosecond, func(now model.Time) error {
			fmt.Println(now, "scheduled by the 10ns event")
			return nil
		})
		return nil
	})
	if err := e.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("events:", e.Events())
	// Output:
	// 10ns normal
	// 10ns late: after everything else at 10ns
	// 15ns scheduled by the 10ns event
	// events: 3
}
