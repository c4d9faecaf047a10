package main

import (
	"context"
	"errors"

	"github.com/urfave/cli/v3"
)

// abCommand is plload ab: one scenario against two targets in the same window (SPEC §14).
func abCommand() *cli.Command {
	return &cli.Command{
		Name:      "ab",
		Usage:     "run one scenario against two targets in the same window and compare them",
		ArgsUsage: "SCENARIO.yaml --target A=URL --target B=URL",
		Action: func(context.Context, *cli.Command) error {
			return &exitError{code: exitBadInput, err: errors.New("ab: not ready yet")}
		},
	}
}
