package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/collsim/collsim/scenarios"
	"github.com/urfave/cli/v2"
)

func presetsCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "presets",
		Usage: "list the built-in node templates",
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return badInputf("presets takes no arguments, got %q", c.Args().First())
			}
			w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tGPUS\tDESCRIPTION")
			for _, p := range scenarios.Presets() {
				fmt.Fprintf(w, "%s\t%d\t%s\n", p.Name, p.Node.GPUs, p.Node.Description)
			}
			return w.Flush()
		},
	}
}
