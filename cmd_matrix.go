package main

import (
	"context"
	"errors"

	"github.com/urfave/cli/v3"
)

func matrixCommand() *cli.Command {
	return &cli.Command{
		Name:      "matrix",
		Usage:     "run the seed's run matrix (A closed-loop ladder, B open loop at mean/peak/peak+30 %, C replay, D ramp) from one scenario",
		ArgsUsage: "SCENARIO.yaml",
		Action: func(context.Context, *cli.Command) error {
			return &exitError{code: exitBadInput, err: errors.New("matrix: not implemented yet")}
		},
	}
}
