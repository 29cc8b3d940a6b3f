// Command collsim predicts, measures and validates GPU collective
// communication performance. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/collsim/collsim/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
